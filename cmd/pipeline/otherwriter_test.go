package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOtherPipelinesTable: `show`, `changes` and `history` under a spec whose pipeline name
// differs from the one that wrote the table (a renamed spec on the same storage) print that
// table's rows, versions and changes all the same, and say on stderr whose table it is, since
// `run` with that spec refuses to write to it. Under the writer's own name they say nothing.
func TestReadOtherPipelinesTable(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "in"), "a.json", `{"id":1,"name":"a"}
{"id":2,"name":"b"}
`)
	body := `
storage: ./storage
datasets:
  - name: t
    source: {path: ./in, format: json, schema: "id BIGINT, name STRING"}
`
	writeFile(t, tmp, "old.yaml", "name: orders_v1"+body)
	writeFile(t, tmp, "new.yaml", "name: orders_v2"+body)
	oldSpec, newSpec := filepath.Join(tmp, "old.yaml"), filepath.Join(tmp, "new.yaml")
	mustRun(t, "run", oldSpec)
	want := rowsOf(t, `{"id": 1, "name": "a"}`, `{"id": 2, "name": "b"}`)
	for _, spec := range []string{oldSpec, newSpec} {
		r := pipeline(t, nil, "show", spec, "t", "--format", "jsonl")
		if r.code != 0 {
			t.Fatalf("show with %s: exit %d: %s", spec, r.code, r.stderr)
		}
		assertRows(t, "show with "+filepath.Base(spec), readJSONL(t, r.stdout), want)
		note := strings.Contains(r.stderr, "written by pipeline orders_v1, and this spec names pipeline orders_v2")
		if note != (spec == newSpec) {
			t.Errorf("show with %s: stderr %q; want the note about pipeline orders_v1 only under orders_v2", filepath.Base(spec), r.stderr)
		}
	}
	for _, args := range [][]string{{"history", newSpec, "t"}, {"changes", newSpec, "t", "--from-version", "0"}} {
		r := pipeline(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stderr, "pipeline: note: the table of t in the storage") || !strings.Contains(r.stderr, "keep the name orders_v1") {
			t.Errorf("%s: exit %d, stderr %q; want the note naming orders_v1", args[0], r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "1") {
			t.Errorf("%s: printed nothing: %q", args[0], r.stdout)
		}
	}
	// events under the new name: the log holds orders_v1's updates only, which it prints, with
	// a note; under the writer's name, none.
	if r := pipeline(t, nil, "events", newSpec); r.code != 0 || !strings.Contains(r.stderr, "holds the updates of pipeline orders_v1 and none of pipeline orders_v2") || !strings.Contains(r.stdout, "COMPLETED") {
		t.Errorf("events under the new name: exit %d, stderr %q; want the note", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "events", oldSpec); r.code != 0 || r.stderr != "" {
		t.Errorf("events under the writer's name: exit %d, stderr %q; want no note", r.code, r.stderr)
	}
	// The writer's own name: no note.
	if r := pipeline(t, nil, "history", oldSpec, "t"); r.code != 0 || r.stderr != "" {
		t.Errorf("history with the writer's spec: exit %d, stderr %q; want no note", r.code, r.stderr)
	}
	// And run with the new name still refuses.
	if r := pipeline(t, nil, "run", newSpec); r.code == 0 || !strings.Contains(r.stderr, "were written by pipeline orders_v1") {
		t.Errorf("run with the new name: exit %d, stderr %q; want the refusal", r.code, r.stderr)
	}
}
