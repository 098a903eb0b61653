package flows

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/spec"
)

// TestIngestMaxFilesPerTrigger: with max_files_per_trigger 2, five files are read in name order
// as three batches (2, 2, 1 files) of one update, each its own commit with its own txn version;
// the flow's metrics add up; a second update is idle.
func TestIngestMaxFilesPerTrigger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT", max_files_per_trigger: 2}
`)
	for i := 1; i <= 5; i++ {
		write(t, filepath.Join(dir, "landing", fmt.Sprintf("f%d.json", i)), []byte(fmt.Sprintf(`{"id": %d}`+"\n", i)))
	}
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 5 || m.NumOutputRows != 5 || m.Idle {
		t.Fatalf("metrics %+v, want 5 files, 5 rows", m)
	}
	if got := strings.Join(rawRows(t, p), ","); got != "1,2,3,4,5" {
		t.Fatalf("rows %s", got)
	}
	snap, err := delta.New(TableDir(p.Storage, "raw")).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 3 || snap.AppTxns[AppID(p, "raw")] != 3 {
		t.Fatalf("version %d txn %d, want 3 and 3 (create + three batches)", snap.Version, snap.AppTxns[AppID(p, "raw")])
	}
	assertBatchFiles(t, p, map[int64]string{1: "f1.json f2.json", 2: "f3.json f4.json", 3: "f5.json"})
	if m, _, err := ingest(t, p); err != nil || !m.Idle {
		t.Fatalf("second update: idle %v err %v", m.Idle, err)
	}
}

// TestIngestIncludeMetadata: include_metadata adds _file_path (the file's absolute path) and
// _file_modification_time (its modification time, as TIMESTAMP) after the rescued-data column.
func TestIngestIncludeMetadata(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT", "      options: {header: true}\n      rescued_data_column: _rescued\n      include_metadata: true\n")
	path := filepath.Join(landing, "a.csv")
	write(t, path, []byte("id\n1\n"))
	at := time.Date(2024, 1, 31, 10, 0, 0, 123000000, time.UTC)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	want := `1 null "` + path + `" "2024-01-31T10:00:00.123000Z"`
	if got := strings.Join(rawRows(t, p), "\n"); got != want {
		t.Fatalf("rows %s\nwant %s", got, want)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "id INT, _rescued STRING, _file_path STRING, _file_modification_time TIMESTAMP" {
		t.Errorf("schema %s", got)
	}
}

// TestIngestListsOncePerUpdate: the batches of one update take their files from the update's
// first listing (unreadFiles), as Spark keeps a listing's unread files for the next batches: a
// file landed after it is the next update's, a listed file removed before its batch is left out
// without failing the batch (a WARN names it), and the offsets of every batch name exactly the files it read. The
// view over files path shares unreadFiles (planViewBatch).
func TestIngestListsOncePerUpdate(t *testing.T) {
	t.Parallel()
	p, landing, batch, rec := twoFilesABatch(t, 5)
	if m := batch(true); m.Files != 2 || !m.more {
		t.Fatalf("batch 1: %d files, more %v; want 2 and more", m.Files, m.more)
	}
	// Landed after the listing, and one listed file removed before its batch.
	write(t, filepath.Join(landing, "f0.json"), []byte(`{"id": 0}`+"\n"))
	write(t, filepath.Join(landing, "f6.json"), []byte(`{"id": 6}`+"\n"))
	if err := os.Remove(filepath.Join(landing, "f4.json")); err != nil {
		t.Fatal(err)
	}
	if m := batch(false); m.Files != 2 || m.more {
		t.Fatalf("batch 2: %d files, more %v; want 2 (f3, f5) and no more", m.Files, m.more)
	}
	if got := strings.Join(rawRows(t, p), ","); got != "1,2,3,5" {
		t.Fatalf("after the first update: rows %s, want 1,2,3,5", got)
	}
	if want := "WARN 1 listed file(s) were removed before their batch read them, so they were skipped: landing/f4.json"; !strings.Contains(rec.all(), want) {
		t.Errorf("events:\n%s\nwant:\n%s", rec.all(), want)
	}
	// The next update lists again: the files landed meanwhile, in name order.
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 2 || m.NumOutputRows != 2 {
		t.Fatalf("second update: %+v, want f0 and f6", m)
	}
	if got := strings.Join(rawRows(t, p), ","); got != "1,2,3,5,0,6" {
		t.Fatalf("after the second update: rows %s, want 1,2,3,5,0,6", got)
	}
	assertBatchFiles(t, p, map[int64]string{1: "f1.json f2.json", 2: "f3.json f5.json", 3: "f0.json f6.json"})
}

// assertBatchFiles checks the files the offsets of each batch of dataset raw name (want: batch
// to the paths, space-separated, in order).
func assertBatchFiles(t *testing.T, p *spec.Pipeline, want map[int64]string) {
	t.Helper()
	for batch, w := range want {
		o, err := readOffsets(CheckpointDir(p.Storage, "raw"), batch)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range o.Files {
			names = append(names, f.Path)
		}
		if strings.Join(names, " ") != w {
			t.Errorf("batch %d read %v, want %s", batch, names, w)
		}
	}
}

// twoFilesABatch makes a pipeline whose dataset raw ingests ./landing with max_files_per_trigger
// 2, lands files f1.json..fN.json of one row each ({"id": i}), and returns a function that runs
// the update's next batch (first: the update's first), all batches sharing one unreadFiles.
func twoFilesABatch(t *testing.T, n int) (p *spec.Pipeline, landing string, batch func(first bool) Metrics, rec *recorder) {
	t.Helper()
	dir := t.TempDir()
	p = loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT", max_files_per_trigger: 2}
`)
	landing = filepath.Join(dir, "landing")
	for i := 1; i <= n; i++ {
		write(t, filepath.Join(landing, fmt.Sprintf("f%d.json", i)), []byte(fmt.Sprintf(`{"id": %d}`+"\n", i)))
	}
	rec = &recorder{}
	env := &Env{Pipeline: p, Events: rec}
	unread := &unreadFiles{}
	return p, landing, func(first bool) Metrics {
		t.Helper()
		m, err := ingestBatch(context.Background(), env, p.Dataset("raw"), first, unread, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, rec
}
