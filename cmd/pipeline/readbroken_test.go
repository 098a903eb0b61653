package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadCommandsWithSpecProblems: `show`, `history`, `changes` and `events` read what the
// storage holds under a spec with a problem in a dataset (a misspelt key, being fixed), with a
// note on stderr naming the problem; `run` still refuses it (exit 2). A problem in the storage
// (a ${} that is not set) leaves them nothing to read: they refuse too.
func TestReadCommandsWithSpecProblems(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "in"), "a.json", `{"id":1,"v":"a"}`+"\n")
	ok := `name: t
storage: ./storage
datasets:
  - name: c
    source: {path: ./in, format: json, schema: "id BIGINT, v STRING"}
  - name: tgt
    apply_changes: {source: c, keys: [id], sequence_by: id}
`
	writeFile(t, tmp, "ok.yaml", ok)
	mustRun(t, "run", filepath.Join(tmp, "ok.yaml"))
	writeFile(t, tmp, "broken.yaml", strings.Replace(ok, "keys: [id]", "keys: [idd]", 1))
	broken := filepath.Join(tmp, "broken.yaml")
	const note = "pipeline: note: the spec has a problem, which this command does not need fixed: "
	for _, args := range [][]string{
		{"show", broken, "tgt", "--format", "jsonl"},
		{"show", broken, "c", "--format", "jsonl"},
		{"history", broken, "tgt"},
		{"changes", broken, "tgt", "--from-version", "0"},
		{"events", broken},
	} {
		r := pipeline(t, nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stderr, note) || !strings.Contains(r.stderr, "unknown column idd") {
			t.Errorf("%s: exit %d, stderr %q; want exit 0 and the note naming the problem", args[0], r.code, r.stderr)
		}
		if args[0] == "show" {
			assertRows(t, "show "+args[2], readJSONL(t, r.stdout), rowsOf(t, `{"id": 1, "v": "a"}`))
		}
	}
	// Two problems (a misspelt key, an unknown column): the note names both.
	writeFile(t, tmp, "kyes.yaml", strings.NewReplacer("keys: [id]", "kyes: [id]", "sequence_by: id", "sequence_by: idd").Replace(ok))
	r := pipeline(t, nil, "show", filepath.Join(tmp, "kyes.yaml"), "c", "--format", "jsonl")
	if r.code != 0 || !strings.HasPrefix(r.stderr, "pipeline: note: the spec has problems, which this command does not need fixed: ") ||
		!strings.Contains(r.stderr, "unknown key kyes") || !strings.Contains(r.stderr, "unknown column idd") {
		t.Errorf("show with kyes: exit %d, stderr %q; want the note naming both problems", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "run", broken); r.code != 2 || !strings.Contains(r.stderr, "unknown column idd") {
		t.Errorf("run: exit %d, stderr %q; want exit 2 and the problem", r.code, r.stderr)
	}
	writeFile(t, tmp, "nostorage.yaml", strings.Replace(ok, "storage: ./storage", "storage: ${NOPE_STORAGE_X}", 1))
	if r := pipeline(t, nil, "show", filepath.Join(tmp, "nostorage.yaml"), "c"); r.code != 2 || !strings.Contains(r.stderr, "${NOPE_STORAGE_X} is not set") {
		t.Errorf("show with the storage not set: exit %d, stderr %q; want exit 2", r.code, r.stderr)
	}
}
