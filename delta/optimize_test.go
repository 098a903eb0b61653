package delta

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestOptimizeCompactsWithoutChangingData appends 20 one-row files to a table partitioned by
// region (two partitions), runs Optimize, and checks the Delta rules for a rearrangement
// (Delta PROTOCOL.md "Add File and Remove File": dataChange false): one file per partition,
// every old file removed and every new one added with dataChange false, the same rows at the
// new version as before, stats that count the rows, no rows in the change data feed of the
// OPTIMIZE version, operation OPTIMIZE with its metrics; the independent reader agrees. A second
// Optimize has nothing to do.
func TestOptimizeCompactsWithoutChangingData(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, region STRING")
	tbl := createTable(t, s, "region")
	var want [][]any
	for i := 0; i < 20; i++ {
		region := []string{"eu", "us"}[i%2]
		row := []any{int64(i), region}
		want = append(want, row)
		snap := mustSnapshot(t, tbl, -1)
		adds, err := tbl.WriteData(snap.Metadata, [][]any{row})
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		tx.Add(adds...)
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatal(err)
		}
	}
	before := mustSnapshot(t, tbl, -1)
	res, err := tbl.Optimize(OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 21 || res.FilesRemoved != 20 || res.FilesAdded != 2 || res.Rows != 20 {
		t.Fatalf("optimize %+v", res)
	}
	c, err := tbl.ReadCommit(res.Version)
	if err != nil {
		t.Fatal(err)
	}
	if c.Info.Operation != "OPTIMIZE" || c.Info.OperationMetrics["numRemovedFiles"] != "20" || c.Info.OperationMetrics["numAddedFiles"] != "2" ||
		*c.Info.IsBlindAppend || len(c.CDCs) != 0 || len(c.Txns) != 0 || c.Metadata != nil {
		t.Errorf("commit %+v", c)
	}
	removed := map[string]bool{}
	for _, r := range c.Removes {
		removed[r.Path] = true
		if r.DataChange || !r.ExtendedFileMetadata {
			t.Errorf("remove %+v: want dataChange false, extendedFileMetadata true", r)
		}
	}
	if got, exp := len(removed), len(before.Files); got != exp {
		t.Errorf("%d files removed, want all %d", got, exp)
	}
	for _, a := range c.Adds {
		n, _ := a.NumRecords()
		if a.DataChange || n != 10 || len(a.PartitionValues) != 1 || !strings.HasPrefix(a.Path, "region="+a.PartitionValues["region"]+"/") {
			t.Errorf("add %+v: want dataChange false, 10 records, in its partition folder", a)
		}
	}
	after := mustSnapshot(t, tbl, -1)
	got, err := tbl.Rows(after)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := canonical(s, got), canonical(s, want); !slices.Equal(g, w) {
		t.Errorf("rows after optimize %v, want %v", g, w)
	}
	if _, changes, err := tbl.Changes(res.Version, res.Version); err != nil || len(changes) != 0 {
		t.Errorf("change data feed of the OPTIMIZE version: %v, %v; want no rows", changes, err)
	}
	if _, changes, err := tbl.Changes(0, -1); err != nil || len(changes) != 20 {
		t.Errorf("change data feed: %d rows, %v; want the 20 inserts", len(changes), err)
	}
	if again, err := tbl.Optimize(OptimizeOptions{}); err != nil || again.Version != -1 {
		t.Errorf("second optimize: %+v, %v", again, err)
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if g, w := canonical(s, theirs), canonical(s, want); !slices.Equal(g, w) {
			t.Errorf("deltacheck rows %v, want %v", g, w)
		}
	}
}

// TestOptimizeBinPacking: with a target of about three files' size, bins hold at most that
// many bytes of input, and files at or above the target are left alone.
func TestOptimizeBinPacking(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	var sizes []int64
	for i := 0; i < 9; i++ {
		_, a := appendRows(t, tbl, [][]any{{int64(i)}})
		sizes = append(sizes, a.Size)
	}
	big := make([][]any, 5000)
	for i := range big {
		big[i] = []any{int64(1000 + i)}
	}
	_, large := appendRows(t, tbl, big)
	target := sizes[0]*3 + sizes[0]/2
	res, err := tbl.Optimize(OptimizeOptions{TargetSize: target})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tbl.ReadCommit(res.Version)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Removes {
		if r.Path == large.Path {
			t.Errorf("the file of %d bytes (above the target %d) was rewritten", large.Size, target)
		}
	}
	if res.FilesRemoved != 9 || res.FilesAdded != 3 {
		t.Errorf("optimize %+v: want 9 small files in 3 bins of 3", res)
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil || len(rows) != 5009 {
		t.Errorf("%d rows, %v; want 5009", len(rows), err)
	}
}

// TestOptimizeConflictsWithConcurrentDelete: a DELETE that read the table before an OPTIMIZE and
// removes a file the OPTIMIZE compacted fails with ErrConflict instead of resurrecting or losing
// rows; an append that read the same snapshot commits.
func TestOptimizeConflictsWithConcurrentDelete(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	for i := 0; i < 3; i++ {
		appendRows(t, tbl, [][]any{{int64(i)}})
	}
	stale := mustSnapshot(t, tbl, -1)
	if res, err := tbl.Optimize(OptimizeOptions{}); err != nil || res.FilesRemoved != 3 {
		t.Fatalf("optimize %+v, %v", res, err)
	}
	del := tbl.Begin(stale)
	del.Remove(tbl.RemoveFor(stale.Files[0], 0))
	if _, err := del.Commit("DELETE", nil); !errors.Is(err, ErrConflict) {
		t.Errorf("stale DELETE: %v, want ErrConflict", err)
	}
	a, err := tbl.WriteFile(s, [][]any{{int64(9)}})
	if err != nil {
		t.Fatal(err)
	}
	app := tbl.Begin(stale)
	app.Add(a)
	if _, err := app.Commit("WRITE", nil); err != nil {
		t.Errorf("stale append: %v", err)
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil || len(rows) != 4 {
		t.Errorf("%d rows, %v; want 4", len(rows), err)
	}
}

// TestAutoOptimize: compaction starts once a partition holds pipelines.autoOptimize.minNumFiles
// small files, and never when pipelines.autoOptimize.managed is "false".
func TestAutoOptimize(t *testing.T) {
	t.Parallel()
	for _, managed := range []string{"", "false"} {
		s := mustDDL(t, "id BIGINT")
		tbl := New(t.TempDir())
		conf := map[string]string{ConfigAutoOptimizeMinFiles: "5"}
		if managed != "" {
			conf[ConfigAutoOptimize] = managed
		}
		tx := tbl.Begin(nil)
		tx.SetMetadata(Metadata{Schema: s, Configuration: conf})
		if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			appendRows(t, tbl, [][]any{{int64(i)}})
			res, err := tbl.AutoOptimize()
			if err != nil {
				t.Fatal(err)
			}
			wantRun := managed == "" && i == 4
			if (res.Version >= 0) != wantRun {
				t.Errorf("managed=%q, after %d files: %+v", managed, i+1, res)
			}
		}
		if n := len(mustSnapshot(t, tbl, -1).Files); (managed == "" && n != 1) || (managed == "false" && n != 5) {
			t.Errorf("managed=%q: %d files", managed, n)
		}
	}
}
