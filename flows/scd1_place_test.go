package flows

import (
	"testing"
	"time"
)

// TestSCD1InsertsAcrossDataFiles: a batch of more new keys than one data file holds
// (targetFileRows) writes its inserts to two files, and the CDC state records for each key the
// file that holds it (applySCD1 places the inserted rows by their state slots): a next batch
// that updates and deletes keys of both files rewrites exactly those files and finds every key.
func TestSCD1InsertsAcrossDataFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a table of a million rows")
	}
	t.Parallel()
	p := newSCD1(t, "172800")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := int64(targetFileRows + 500)
	events := make([][]any, n)
	for id := range n {
		events[id] = ch("I", id, "v", 1)
	}
	m, err := apply(t, p, now, events...)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := readTable(t, p, "items")
	if m.NumUpsertedRows != n || len(snap.Files) != 2 {
		t.Fatalf("batch 1: %d upserted in %d files, want %d in 2", m.NumUpsertedRows, len(snap.Files), n)
	}
	// Key 3 is in the first file, n-7 and n-1 in the second (inserts are written in arrival order).
	m, err = apply(t, p, now, ch("U", 3, "three", 2), ch("U", n-7, "last", 2), ch("D", n-1, "", 2))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumUpsertedRows != 2 || m.NumDeletedRows != 1 {
		t.Fatalf("batch 2: %d upserted, %d deleted, want 2 and 1", m.NumUpsertedRows, m.NumDeletedRows)
	}
	snap, rows := readTable(t, p, "items")
	if int64(len(rows)) != n-1 || len(snap.Files) != 2 {
		t.Fatalf("after batch 2: %d rows in %d files, want %d in 2", len(rows), len(snap.Files), n-1)
	}
	got := map[int64]any{}
	for _, r := range rows {
		if id := r[0].(int64); id == 3 || id == n-7 || id == n-1 {
			got[id] = r[1]
		}
	}
	if got[3] != "three" || got[n-7] != "last" || len(got) != 2 {
		t.Fatalf("after batch 2: keys 3, %d, %d hold %v; want three, last and no row", n-7, n-1, got)
	}
}
