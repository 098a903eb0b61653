package delta

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVacuumSafety builds a table with every kind of file VACUUM meets (live files, files
// removed by OPTIMIZE and by a DELETE, change data files, a file never committed, a temporary
// file of a crashed write) and checks Delta's rule: a file goes only when no version within the
// retention window needs it and it is older than the window; every version inside the window
// stays readable; the latest snapshot's files are never touched; a dry run deletes nothing; a
// retention below the table's delta.deletedFileRetentionDuration is refused.
func TestVacuumSafety(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	for i := 0; i < 4; i++ {
		appendRows(t, tbl, [][]any{{int64(i)}})
	}
	if _, err := tbl.Optimize(OptimizeOptions{}); err != nil { // version 5: the 4 files removed
		t.Fatal(err)
	}
	_, extra := appendRows(t, tbl, [][]any{{int64(9)}}) // version 6
	snap := mustSnapshot(t, tbl, -1)
	cdc, err := tbl.WriteCDCFile(s, [][]any{{int64(9)}}, []string{ChangeDelete})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(snap) // version 7: DELETE of the row 9 with a change data file
	tx.Remove(tbl.RemoveFor(extra, 0))
	tx.AddCDC(cdc)
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	orphan, err := tbl.WriteFile(s, [][]any{{int64(100)}}) // written, never committed
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tbl.Dir, ".part-crashed.parquet.tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	latest := mustSnapshot(t, tbl, -1)
	rowsAt := func(t *testing.T, v int64) int {
		t.Helper()
		rows, err := New(tbl.Dir).Rows(mustSnapshot(t, New(tbl.Dir), v))
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		return len(rows)
	}
	wantRows := []int{0, 1, 2, 3, 4, 4, 5, 4}

	// Within the default 7 days nothing may go, not even the orphan (it may belong to a commit
	// in progress).
	now := time.Now()
	for _, at := range []time.Time{now, now.Add(6 * 24 * time.Hour)} {
		res, err := tbl.Vacuum(VacuumOptions{Retain: -1, Now: at, KeepFromVersion: -1})
		if err != nil || len(res.Files) != 0 || res.Retain != 7*24*time.Hour {
			t.Fatalf("vacuum at %s: %+v, %v; want nothing deleted", at, res, err)
		}
	}
	for v := int64(0); v <= latest.Version; v++ {
		if n := rowsAt(t, v); n != wantRows[v] {
			t.Errorf("version %d: %d rows, want %d", v, n, wantRows[v])
		}
	}

	if _, err := tbl.Vacuum(VacuumOptions{Retain: time.Hour, KeepFromVersion: -1}); !errors.Is(err, ErrRetentionTooShort) {
		t.Errorf("vacuum retaining 1h: %v, want ErrRetentionTooShort", err)
	}

	// 8 days later: the 4 compacted files, the deleted file, the change data file, the orphan
	// and the temporary file are past the window.
	later := now.Add(8 * 24 * time.Hour)
	var want []string
	for _, v := range []int64{1, 2, 3, 4} {
		c, _ := tbl.ReadCommit(v)
		want = append(want, c.Adds[0].Path)
	}
	want = append(want, extra.Path, cdc.Path, orphan.Path, ".part-crashed.parquet.tmp")
	slices.Sort(want)
	dry, err := tbl.Vacuum(VacuumOptions{Retain: -1, Now: later, DryRun: true, KeepFromVersion: -1})
	if err != nil || !slices.Equal(dry.Files, want) {
		t.Fatalf("dry run: %v, %v\nwant %v", dry.Files, err, want)
	}
	for _, p := range want {
		if _, err := os.Stat(filepath.Join(tbl.Dir, p)); err != nil {
			t.Errorf("the dry run deleted %s", p)
		}
	}
	// A reader that has not read versions 6 and 7 keeps their files.
	kept, err := tbl.Vacuum(VacuumOptions{Retain: -1, Now: later, DryRun: true, KeepFromVersion: 6})
	if err != nil || slices.Contains(kept.Files, extra.Path) || slices.Contains(kept.Files, cdc.Path) || len(kept.Files) != len(want)-2 {
		t.Errorf("keeping versions 6 on: %v, %v", kept.Files, err)
	}
	// A reader that has not read versions 4 on (a snapshot flow reads version 4 whole, the
	// files of versions 1 to 3 with the one version 4 adds) keeps the files of version 3 too.
	kept, err = tbl.Vacuum(VacuumOptions{Retain: -1, Now: later, DryRun: true, KeepFromVersion: 4})
	for _, v := range []int64{1, 2, 3, 4} {
		c, _ := tbl.ReadCommit(v)
		if err != nil || slices.Contains(kept.Files, c.Adds[0].Path) {
			t.Errorf("keeping versions 4 on: %v, %v; want the file of version %d kept", kept.Files, err, v)
		}
	}
	// A reader waiting for versions the table does not have yet (a starting_version ahead of
	// it) keeps nothing more.
	if ahead, err := tbl.Vacuum(VacuumOptions{Retain: -1, Now: later, DryRun: true, KeepFromVersion: 20}); err != nil || !slices.Equal(ahead.Files, want) {
		t.Errorf("keeping versions 20 on: %v, %v; want %v", ahead.Files, err, want)
	}
	res, err := tbl.Vacuum(VacuumOptions{Retain: -1, Now: later, KeepFromVersion: -1})
	if err != nil || !slices.Equal(res.Files, want) || res.Bytes <= 0 {
		t.Fatalf("vacuum: %+v, %v", res, err)
	}
	for _, p := range want {
		if _, err := os.Stat(filepath.Join(tbl.Dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	for _, f := range latest.Files {
		if _, err := os.Stat(filepath.Join(tbl.Dir, f.Path)); err != nil {
			t.Errorf("a live file is gone: %v", err)
		}
	}
	if n := rowsAt(t, latest.Version); n != 4 {
		t.Errorf("latest version: %d rows, want 4", n)
	}
	if os.Getenv("DELTACHECK") != "" {
		if theirs := deltacheck(t, "rows", tbl.Dir); len(theirs) != 4 {
			t.Errorf("deltacheck reads %d rows after vacuum, want 4", len(theirs))
		}
	}
}

// TestVacuumShortRetentionByProperty: with delta.deletedFileRetentionDuration lowered to 0
// hours, VACUUM RETAIN 0 HOURS deletes removed files at once but never a live one.
func TestVacuumShortRetentionByProperty(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigDeletedFileRetention: "interval 0 hours"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		appendRows(t, tbl, [][]any{{int64(i)}})
	}
	if _, err := tbl.Optimize(OptimizeOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	res, err := tbl.Vacuum(VacuumOptions{Retain: 0, KeepFromVersion: -1})
	if err != nil || len(res.Files) != 3 {
		t.Fatalf("vacuum: %+v, %v; want the 3 compacted files", res, err)
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil || len(rows) != 3 {
		t.Errorf("%d rows, %v; want 3", len(rows), err)
	}
	if _, err := tbl.Rows(mustSnapshot(t, tbl, 2)); err == nil {
		t.Errorf("version 2 still reads after its files were vacuumed with a 0 retention")
	}
	// The change data feed of a vacuumed version says what happened and what to do.
	_, _, err = tbl.Changes(2, 3)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "changes of version 2: its file") ||
		!strings.Contains(err.Error(), "VACUUM") || !strings.Contains(err.Error(), "read the changes from a later version") {
		t.Errorf("changes of vacuumed versions: %v", err)
	}
}

// TestVacuumCrashedLogTemps: a process killed while it commits (or writes a checkpoint) leaves
// its temporary file in _delta_log, which no commit and no metadata cleanup removes. VACUUM
// deletes such a file once it is older than the retention (an hour at least, even with a
// retention of 0: a writer in progress puts its file in place within moments), and never a
// commit, a checkpoint or _last_checkpoint.
func TestVacuumCrashedLogTemps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		retain string // delta.deletedFileRetentionDuration
		age    time.Duration
		gone   bool
	}{
		{"older than the default 7 days", "", 8 * 24 * time.Hour, true},
		{"younger than the default 7 days", "", 6 * 24 * time.Hour, false},
		{"retention 0, older than an hour", "interval 0 hours", 2 * time.Hour, true},
		{"retention 0, younger than an hour", "interval 0 hours", time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tbl := New(t.TempDir())
			conf := map[string]string{}
			if c.retain != "" {
				conf[ConfigDeletedFileRetention] = c.retain
			}
			tx := tbl.Begin(nil)
			tx.SetMetadata(Metadata{Schema: mustDDL(t, "id BIGINT"), Configuration: conf})
			if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
				t.Fatal(err)
			}
			appendRows(t, tbl, [][]any{{int64(1)}})
			if err := tbl.WriteCheckpoint(mustSnapshot(t, tbl, -1)); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(tbl.Dir, LogDir)
			before, err := os.ReadDir(log)
			if err != nil {
				t.Fatal(err)
			}
			temps := []string{
				".0c9a6f0e-6c51-4f0e-9a43-1d2b7e0f9a11.json.tmp",
				".5b1e2d3c-7a44-4c1b-8f0e-2a9b8c7d6e5f.checkpoint.parquet.tmp",
				".9f8e7d6c-5b4a-4321-8fed-cba987654321.last_checkpoint.tmp",
			}
			now := time.Now()
			for _, name := range temps {
				p := filepath.Join(log, name)
				if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, now.Add(-c.age), now.Add(-c.age)); err != nil {
					t.Fatal(err)
				}
			}
			res, err := tbl.Vacuum(VacuumOptions{Retain: -1, Now: now, KeepFromVersion: -1})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if c.gone {
				for _, name := range temps {
					want = append(want, LogDir+"/"+name)
				}
				slices.Sort(want)
			}
			if !slices.Equal(res.Files, want) {
				t.Fatalf("vacuum deleted %v, want %v", res.Files, want)
			}
			for _, name := range temps {
				if _, err := os.Stat(filepath.Join(log, name)); errors.Is(err, fs.ErrNotExist) != c.gone {
					t.Errorf("%s: %v after vacuum, want it gone: %v", name, err, c.gone)
				}
			}
			for _, e := range before {
				if _, err := os.Stat(filepath.Join(log, e.Name())); err != nil {
					t.Errorf("vacuum removed %s of the log: %v", e.Name(), err)
				}
			}
			if rows, err := New(tbl.Dir).Rows(mustSnapshot(t, New(tbl.Dir), -1)); err != nil || len(rows) != 1 {
				t.Errorf("after vacuum: %d rows, %v; want 1", len(rows), err)
			}
		})
	}
}

func TestParseInterval(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"interval 7 days": 7 * 24 * time.Hour, "interval 1 hour": time.Hour, "30 days": 30 * 24 * time.Hour,
		"168h": 168 * time.Hour, "INTERVAL 2 WEEKS": 14 * 24 * time.Hour, "7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "interval 0 seconds": 0, "90m": 90 * time.Minute,
	} {
		if got, err := ParseInterval(in); err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "7", "interval seven days", "-1h", "interval 3 fortnights"} {
		if _, err := ParseInterval(bad); err == nil {
			t.Errorf("ParseInterval(%q): no error", bad)
		}
	}
}

// TestVacuumPartitionColumnWithUnderscore: a partition folder "_tag=x" (a partition column
// whose name starts with "_") is not a hidden folder: VACUUM deletes the files OPTIMIZE removed
// from it, as Delta's VACUUM does, and keeps the live one.
func TestVacuumPartitionColumnWithUnderscore(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, _tag STRING")
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s, PartitionColumns: []string{"_tag"}, Configuration: map[string]string{ConfigDeletedFileRetention: "interval 0 hours"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		snap := mustSnapshot(t, tbl, -1)
		adds, err := tbl.WriteData(snap.Metadata, [][]any{{int64(i), "x"}})
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		tx.Add(adds...)
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.Optimize(OptimizeOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	res, err := tbl.Vacuum(VacuumOptions{Retain: 0, KeepFromVersion: -1})
	if err != nil || len(res.Files) != 3 {
		t.Fatalf("vacuum: %+v, %v; want the 3 compacted files of _tag=x", res, err)
	}
	for _, f := range res.Files {
		if !strings.HasPrefix(f, "_tag=x/") {
			t.Errorf("vacuum deleted %s, want only files of _tag=x/", f)
		}
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil || len(rows) != 3 {
		t.Errorf("%d rows, %v; want 3", len(rows), err)
	}
}
