package update

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// TestStorageOwner: a table keeps its flow's progress under the pipeline's name, so a spec of
// another name (renamed, or a second spec given the same storage) that writes a dataset whose
// table another pipeline wrote is refused before it reads anything (it would read every input
// file again into the same table), naming the datasets and the full refresh that rebuilds them;
// with that full refresh the tables are the new name's (each row once). A second spec whose
// datasets are its own shares the storage.
func TestStorageOwner(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n"+`{"op": "I", "id": 2, "seq": 2}`+"\n")
	rows := func() int64 { return tableRows(t, p, "changes") }
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	p.Name = "t_v2"
	_, err := Run(context.Background(), p, Options{})
	if err == nil || !strings.Contains(err.Error(), "the tables of changes, items in the storage "+p.Storage+" were written by pipeline t, and this spec names pipeline t_v2") || !strings.Contains(err.Error(), "--full-refresh changes,items") {
		t.Fatalf("a renamed spec: %v", err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after the refused update, want 2", n)
	}
	if _, err := Run(context.Background(), p, Options{FullRefreshAll: true}); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after --full-refresh-all under the new name, want 2", n)
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatalf("the new name after its full refresh: %v", err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after a second update under the new name, want 2", n)
	}
	// A second spec with datasets of its own, in the same storage.
	other, err := spec.Parse(filepath.Join(filepath.Dir(p.File), "other.yaml"), []byte(strings.NewReplacer("name: t\n", "name: other\n", "name: changes", "name: o_changes", "name: items", "name: o_items", "source: changes", "source: o_changes").Replace(failSpec)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), other, Options{}); err != nil {
		t.Fatalf("a second spec with its own datasets: %v", err)
	}
	if n := tableRows(t, other, "o_changes"); n != 2 {
		t.Fatalf("o_changes has %d rows, want 2", n)
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatalf("the first spec after the second: %v", err)
	}
}

// TestInterruptedFullRefresh: a full refresh killed while it removed tables (the pending reset
// file still there, a table half removed) is finished by the next update, which rebuilds those
// datasets from their input (each row once) and says so in the event log, instead of failing on
// a table whose source was re-created.
func TestInterruptedFullRefresh(t *testing.T) {
	t.Parallel()
	p := interruptedRefresh(t)
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatalf("the update after an interrupted full refresh: %v", err)
	}
	for _, name := range []string{"changes", "items"} {
		if n := tableRows(t, p, name); n != 2 {
			t.Errorf("%s has %d rows, want 2", name, n)
		}
	}
	if _, err := os.Stat(filepath.Join(p.Storage, pendingResetFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pending reset file is still there: %v", err)
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	resumed := 0
	for _, e := range evs {
		if strings.Contains(e.Message, "an earlier update began its full refresh and did not finish it") {
			resumed++
		}
	}
	if resumed != 2 {
		t.Errorf("%d events say the full refresh was finished, want 2 (changes, items)", resumed)
	}
}

// tableRows returns the rows of dataset's table, by its files' statistics (0: no table yet).
func tableRows(t *testing.T, p *spec.Pipeline, dataset string) int64 {
	t.Helper()
	snap, err := delta.New(flows.TableDir(p.Storage, dataset)).Snapshot(-1)
	if err != nil {
		return 0
	}
	var n int64
	for _, a := range snap.Files {
		c, _ := a.NumRecords()
		n += c
	}
	return n
}

// TestInterruptedFullRefreshSelection: the datasets of an unfinished full refresh run in the next
// update even when it selects others (--refresh), so that their tables are not left empty.
func TestInterruptedFullRefreshSelection(t *testing.T) {
	t.Parallel()
	p := interruptedRefresh(t)
	res, err := Run(context.Background(), p, Options{Refresh: []string{"items"}})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Flows["changes"].State; st == FlowExcluded {
		t.Fatalf("changes was %s", st)
	}
	for _, name := range []string{"changes", "items"} {
		if n := tableRows(t, p, name); n != 2 {
			t.Fatalf("%s has %d rows after the --refresh items update, want 2", name, n)
		}
	}
}

// interruptedRefresh returns a pipeline of two rows updated once, then left as an update killed
// in the resets of a full refresh of both datasets leaves it: the pending reset file written,
// changes removed, items not yet.
func interruptedRefresh(t *testing.T) *spec.Pipeline {
	t.Helper()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n"+`{"op": "I", "id": 2, "seq": 2}`+"\n")
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := writePendingReset(p.Storage, []string{"changes", "items"}); err != nil {
		t.Fatal(err)
	}
	if err := flows.Reset(p, p.Dataset("changes")); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStorageOwnerQueries: the ownership check covers a streaming table defined by a query (its
// progress is kept per source, under ids that name the pipeline) and a materialized view (its
// commit names its writer): after a rename, the full refresh the error names rebuilds them too,
// each row once; a second spec with a materialized view of the same name is refused rather than
// overwriting it.
func TestStorageOwnerQueries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "1.json"), []byte(`{"id": 1}`+"\n"+`{"id": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const text = `name: q
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: clean
    type: streaming_table
    query: SELECT id FROM STREAM(LIVE.raw)
  - name: summary
    query: SELECT count(*) AS n FROM LIVE.clean
`
	load := func(name, body string) *spec.Pipeline {
		t.Helper()
		p, err := spec.Parse(filepath.Join(dir, name+".yaml"), []byte(strings.Replace(body, "name: q\n", "name: "+name+"\n", 1)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := load("q", text)
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	r := load("q_v2", text)
	_, err := Run(context.Background(), r, Options{})
	if err == nil || !strings.Contains(err.Error(), "the tables of raw, clean, summary in the storage") || !strings.Contains(err.Error(), "--full-refresh raw,clean,summary") {
		t.Fatalf("a renamed spec with queries: %v", err)
	}
	if _, err := Run(context.Background(), r, Options{FullRefresh: []string{"raw", "clean", "summary"}}); err != nil {
		t.Fatal(err)
	}
	if n := tableRows(t, r, "clean"); n != 2 {
		t.Fatalf("clean has %d rows after the full refresh under the new name, want 2", n)
	}
	// Another spec in the same storage with a materialized view of the same name.
	o := load("other", `name: q
storage: ./storage
datasets:
  - name: summary
    query: SELECT 42 AS n
`)
	if _, err := Run(context.Background(), o, Options{}); err == nil || !strings.Contains(err.Error(), "the tables of summary in the storage") {
		t.Fatalf("a second spec's materialized view of the same name: %v", err)
	}
}

// TestSourceFolderChangedHint: the full refresh that a source folder change asks for names the
// datasets that read the source too (rebuilt from scratch, a table is a new source to them).
func TestSourceFolderChangedHint(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(p.File), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "1.json"), []byte(`{"op": "I", "id": 2, "seq": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Dataset("changes").Source.Path = other
	_, err := Run(context.Background(), p, Options{})
	if err == nil || !strings.Contains(err.Error(), "the source folder of changes is "+other) || !strings.Contains(err.Error(), "--full-refresh changes,items`") {
		t.Fatalf("another source folder: %v", err)
	}
}
