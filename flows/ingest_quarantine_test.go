package flows

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// namedRows returns the rows of the table of name as jsonl-style text, one row a line.
func namedRows(t *testing.T, storage, name string) []string {
	t.Helper()
	tb := delta.New(TableDir(storage, name))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tb.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		var b []byte
		for i, f := range snap.Metadata.Schema.Fields {
			if i > 0 {
				b = append(b, ' ')
			}
			b = schema.AppendJSON(b, f.Type, r[i])
		}
		out = append(out, string(b))
	}
	return out
}

// TestIngestQuarantine: rows violating a quarantine expectation go to <dataset>_quarantine with
// every expectation they failed listed in _failed_expectations; clean rows (and rows failing only
// a warn rule) go on; a row that also fails a drop rule is dropped; the metrics count each rule
// and the quarantined rows. A second batch appends to both tables once.
func TestIngestQuarantine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, amount DECIMAL(10,2)"
    expectations:
      - {name: has_id, expect: "id != nil", on_violation: quarantine}
      - {name: positive, expect: "amount > 0", on_violation: quarantine}
      - {name: small, expect: "amount < 100"}
      - {name: not_minus_2, expect: "amount != -2", on_violation: drop}
`)
	landing := filepath.Join(dir, "landing")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1, "amount": 5}
{"id": 2, "amount": -1}
{"amount": 3}
{"amount": 0}
{"id": 5, "amount": 500}
{"id": 13, "amount": -2}
`))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rawRows(t, p), "\n"), "1 5.00\n5 500.00"; got != want {
		t.Fatalf("raw rows:\n%s\nwant:\n%s", got, want)
	}
	wantQ := []string{
		`2 -1.00 "[\"positive\"]"`,
		`null 3.00 "[\"has_id\"]"`,
		`null 0.00 "[\"has_id\",\"positive\"]"`,
	}
	if got := namedRows(t, p.Storage, "raw_quarantine"); strings.Join(got, "\n") != strings.Join(wantQ, "\n") {
		t.Fatalf("quarantine rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantQ, "\n"))
	}
	q := m.Quality
	if q.QuarantinedRecords != 3 || q.DroppedRecords != 1 || m.NumOutputRows != 2 {
		t.Fatalf("quality %+v, output %d: want 3 quarantined, 1 dropped, 2 output", q, m.NumOutputRows)
	}
	for i, want := range [][2]int64{{4, 2}, {3, 3}, {5, 1}, {5, 1}} {
		if r := q.Expectations[i]; r.PassedRecords != want[0] || r.FailedRecords != want[1] {
			t.Errorf("%s: passed %d failed %d, want %v", r.Name, r.PassedRecords, r.FailedRecords, want)
		}
	}
	if d := q.Details(); d["quarantined_records"] != int64(3) {
		t.Errorf("details = %v, want quarantined_records 3", d)
	}

	write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 7, "amount": -7}`+"\n"+`{"id": 8, "amount": 8}`+"\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if got := namedRows(t, p.Storage, "raw_quarantine"); len(got) != 4 || got[3] != `7 -7.00 "[\"positive\"]"` {
		t.Fatalf("quarantine after batch 2: %v", got)
	}
	if got := rawRows(t, p); len(got) != 3 {
		t.Fatalf("raw after batch 2: %v", got)
	}
}

// TestIngestQuarantineCrash: a process killed after the quarantine table's commit and before the
// dataset's commit leaves batch 1 half done; the next update replays batch 1 from its offsets
// file (the same files, not the file landed since), commits its clean rows without writing its
// quarantine rows twice, then reads the new file as batch 2.
func TestIngestQuarantineCrash(t *testing.T) {
	if dir := os.Getenv("TRIBUTARY_QUARANTINE_CHILD"); dir != "" {
		p, err := spec.Load(filepath.Join(dir, "pipeline.yaml"), nil)
		if err != nil {
			t.Fatal(err)
		}
		ingest(t, p)
		t.Fatal("the fault point did not kill the process")
	}
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
    expectations:
      - {name: positive, expect: "id > 0", on_violation: quarantine}
`)
	landing := filepath.Join(dir, "landing")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+`{"id": -1}`+"\n"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestIngestQuarantineCrash$")
	cmd.Env = append(os.Environ(), "TRIBUTARY_QUARANTINE_CHILD="+dir, "TRIBUTARY_FAULT=ingest.after-quarantine-commit")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := namedRows(t, p.Storage, "raw_quarantine"); strings.Join(got, ",") != `-1 "[\"positive\"]"` {
		t.Fatalf("quarantine after the crash: %v", got)
	}
	if got := rawRows(t, p); len(got) != 0 {
		t.Fatalf("raw after the crash: %v", got)
	}
	write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 2}`+"\n"+`{"id": -2}`+"\n"))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 2 || strings.Join(rawRows(t, p), ",") != "1,2" {
		t.Fatalf("replay: %d files, raw %v; want a.json replayed, then b.json", m.Files, rawRows(t, p))
	}
	for batch, want := range map[int64]string{1: "a.json", 2: "b.json"} {
		o, err := readOffsets(CheckpointDir(p.Storage, "raw"), batch)
		if err != nil || len(o.Files) != 1 || o.Files[0].Path != want {
			t.Fatalf("batch %d: %+v %v, want %s only", batch, o, err, want)
		}
	}
	if got := namedRows(t, p.Storage, "raw_quarantine"); strings.Join(got, ",") != `-1 "[\"positive\"]",-2 "[\"positive\"]"` {
		t.Fatalf("quarantine after batch 2: %v", got)
	}
}
