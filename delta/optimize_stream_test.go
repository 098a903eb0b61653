package delta

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestOptimizeStreamsBins: a bin is read and written a few files at a time (compactFlushRows
// rows, here 25), so the compacted file holds several row groups; its rows are the bin's rows
// in snapshot order, and its statistics (numRecords, min, max, nullCount) cover every row, not
// only the last row group.
func TestOptimizeStreamsBins(t *testing.T) {
	saved := compactFlushRows
	compactFlushRows = 25
	defer func() { compactFlushRows = saved }()
	s := mustDDL(t, "id BIGINT, name STRING")
	tbl := createTable(t, s)
	var want [][]any
	for f := 0; f < 12; f++ { // 12 files of 10 rows: flushes after files 3, 6, 9 and at the end
		var rows [][]any
		for i := 0; i < 10; i++ {
			id := int64(f*10 + i)
			var name any = string(rune('a' + (id % 26)))
			if id%7 == 0 {
				name = nil
			}
			rows = append(rows, []any{id, name})
		}
		want = append(want, rows...)
		snap := mustSnapshot(t, tbl, -1)
		adds, err := tbl.WriteData(snap.Metadata, rows)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		tx.Add(adds...)
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tbl.Optimize(OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 12 || res.FilesAdded != 1 || res.Rows != 120 {
		t.Fatalf("optimize %+v", res)
	}
	snap := mustSnapshot(t, tbl, -1)
	if len(snap.Files) != 1 {
		t.Fatalf("%d files after optimize, want 1", len(snap.Files))
	}
	a := snap.Files[0]
	got, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := canonical(s, got), canonical(s, want); !slices.Equal(g, w) {
		t.Errorf("rows %v, want %v", g, w)
	}
	for i := range got { // in snapshot order, file after file
		if got[i][0] != want[i][0] {
			t.Fatalf("row %d has id %v, want %v", i, got[i][0], want[i][0])
		}
	}
	st, err := ParseStats(a.Stats, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumRecords != 120 || st.Min["id"] != int64(0) || st.Max["id"] != int64(119) || st.NullCount["name"] != 18 || st.Min["name"] != "a" || st.Max["name"] != "z" {
		t.Errorf("stats %+v", st)
	}
	f, err := os.Open(filepath.Join(tbl.Dir, a.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	var groups []int64
	for _, rg := range pf.RowGroups() {
		groups = append(groups, rg.NumRows())
	}
	if !slices.Equal(groups, []int64{30, 30, 30, 30}) {
		t.Errorf("row groups %v, want [30 30 30 30]", groups)
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if g, w := canonical(s, theirs), canonical(s, want); !slices.Equal(g, w) {
			t.Errorf("deltacheck rows %v, want %v", g, w)
		}
	}
}
