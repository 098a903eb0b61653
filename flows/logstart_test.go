package flows

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// TestFirstCommit: a reader of a table whose log starts at version 0 reads on from the version
// after its last; once the log starts at a checkpoint (metadata cleanup), a reader that has read
// nothing starts with the snapshot there (its files as adds with dataChange true), one that read
// versions still in the log reads on, and one that read part of the deleted versions gets an
// error naming the full refresh.
func TestFirstCommit(t *testing.T) {
	t.Parallel()
	p := &spec.Pipeline{Name: "lc", File: "pipeline.yaml"}
	tbl, _ := idTable(t, 12)
	if c, from, err := firstCommit(p, tbl, latest(t, tbl), "raw", "items", -1); c != nil || from != 0 || err != nil {
		t.Fatalf("whole log, nothing read: %v, %d, %v; want nil, 0", c, from, err)
	}
	for v := 0; v < 10; v++ { // as metadata cleanup leaves it: the log starts at the checkpoint at 10
		if err := os.Remove(filepath.Join(tbl.Dir, delta.LogDir, fmt.Sprintf("%020d.json", v))); err != nil {
			t.Fatal(err)
		}
	}
	c, from, err := firstCommit(p, tbl, latest(t, tbl), "raw", "items", -1)
	if err != nil || c == nil || from != 10 || c.Version != 10 || len(c.Adds) != 10 {
		t.Fatalf("log from 10, nothing read: %+v, %d, %v; want a commit at 10 with the 10 files of the snapshot there", c, from, err)
	}
	for _, a := range c.Adds {
		if !a.DataChange {
			t.Fatalf("add %s without dataChange", a.Path)
		}
	}
	if c, from, err := firstCommit(p, tbl, latest(t, tbl), "raw", "items", 10); c != nil || from != 11 || err != nil {
		t.Fatalf("log from 10, read up to 10: %v, %d, %v; want nil, 11", c, from, err)
	}
	_, _, err = firstCommit(p, tbl, latest(t, tbl), "raw", "items", 5)
	if err == nil || !strings.Contains(err.Error(), "items read raw up to version 5, but the log of raw now starts at version 10") || !strings.Contains(err.Error(), "--full-refresh items") {
		t.Fatalf("log from 10, read up to 5: %v", err)
	}
}

func latest(t *testing.T, tbl *delta.Table) *delta.Snapshot {
	t.Helper()
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestFirstCommitCompactedBeforeLogStart: the files of the snapshot at the log's first version
// (added before it, by commits metadata cleanup deleted) that OPTIMIZE compacted and VACUUM
// deleted since cannot be read: a reader that has read nothing starts from the latest snapshot,
// whose one compacted file holds the same rows.
func TestFirstCommitCompactedBeforeLogStart(t *testing.T) {
	t.Parallel()
	p := &spec.Pipeline{Name: "lc", File: "pipeline.yaml"}
	tbl, sch := idTable(t, 9)
	snap := latest(t, tbl) // version 10 adds no file
	tx := tbl.Begin(snap)
	tx.SetMetadata(delta.Metadata{ID: snap.Metadata.ID, Schema: sch, Configuration: map[string]string{"owner": "x"}})
	if _, err := tx.Commit("SET TBLPROPERTIES", nil); err != nil {
		t.Fatal(err)
	}
	for v := 0; v < 10; v++ { // metadata cleanup: the log starts at the checkpoint at 10
		if err := os.Remove(filepath.Join(tbl.Dir, delta.LogDir, fmt.Sprintf("%020d.json", v))); err != nil {
			t.Fatal(err)
		}
	}
	before := latest(t, tbl)
	res, err := tbl.Optimize(delta.OptimizeOptions{})
	if err != nil || res.Version != 11 {
		t.Fatalf("optimize: %+v, %v; want version 11", res, err)
	}
	for _, a := range before.Files { // VACUUM of the compacted files
		if err := os.Remove(filepath.Join(tbl.Dir, filepath.FromSlash(a.Path))); err != nil {
			t.Fatal(err)
		}
	}
	c, from, err := firstCommit(p, tbl, latest(t, tbl), "raw", "items", -1)
	if err != nil || c == nil || from != 11 || c.Version != 11 || len(c.Adds) != 1 {
		t.Fatalf("log from 10, compacted and vacuumed at 11: %+v, %d, %v; want a commit at 11 with the one compacted file", c, from, err)
	}
	if gone, err := tbl.Missing(c.Adds); gone != "" || err != nil {
		t.Fatalf("the stand-in names a missing file %q (%v)", gone, err)
	}
}

// idTable makes a table of one BIGINT column id: version 0 creates it, versions 1..n each append
// the row {v} in a file of its own (checkpoints at every tenth version).
func idTable(t *testing.T, n int) (*delta.Table, schema.Schema) {
	t.Helper()
	tbl := delta.New(t.TempDir())
	sch, err := schema.ParseDDL("id BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(nil)
	tx.SetMetadata(delta.Metadata{Schema: sch})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= n; v++ {
		a, err := tbl.WriteFile(sch, [][]any{{int64(v)}})
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(latest(t, tbl))
		tx.Add(a)
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatal(err)
		}
	}
	return tbl, sch
}
