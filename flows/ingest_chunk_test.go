package flows

import (
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
)

func TestRowBytes(t *testing.T) {
	t.Parallel()
	// 24 (slice) + 4×16 (interfaces) + 8 (int64) + 16+3 ("abc") + 0 (NULL) + nested []any{"xy"}:
	// 24 + 16 + 16+2.
	row := []any{int64(1), "abc", nil, []any{"xy"}}
	if got, want := rowBytes(row), 24+4*16+8+16+3+24+16+16+2; got != want {
		t.Errorf("rowBytes = %d, want %d", got, want)
	}
}

// TestIngestChunks: a batch larger than one chunk is written as several data files as it is
// read, all committed in the batch's one commit, rows in input order. It is not parallel: it
// changes chunkBytes.
func TestIngestChunks(t *testing.T) {
	saved := chunkBytes
	chunkBytes = 200 // rows of 3 values take 24+3×16+3×8 = 96: three rows a chunk
	defer func() { chunkBytes = saved }()
	p, landing := newIngest(t, "permissive", "")
	var lines []string
	for i := range 7 {
		lines = append(lines, `{"id": `+string(rune('1'+i))+`, "amount": 1.5, "at": "2024-01-01T00:00:00Z"}`)
	}
	write(t, filepath.Join(landing, "a.json"), []byte(strings.Join(lines, "\n")))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumOutputRows != 7 {
		t.Errorf("%d rows, want 7", m.NumOutputRows)
	}
	snap, err := delta.New(TableDir(p.Storage, "raw")).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1 || len(snap.Files) != 3 {
		t.Errorf("version %d with %d files, want version 1 (one commit after setup) with 3 files", snap.Version, len(snap.Files))
	}
	var want []string
	for i := range 7 {
		want = append(want, string(rune('1'+i))+` 1.50 "2024-01-01T00:00:00.000000Z"`)
	}
	if got := rawRows(t, p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
