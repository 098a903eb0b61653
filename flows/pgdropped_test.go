package flows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"tributary/delta"
	"tributary/spec"
)

// droppedState returns the live data files and rows of w's dropped table, and its live rows'
// notes by key ("id=note"), read from the table's latest snapshot.
func droppedState(t *testing.T, w *pgWriter) (files int, rows int64, notes map[int64][]string) {
	t.Helper()
	snap, err := w.dropped.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	notes = map[int64][]string{}
	for _, a := range snap.Files {
		if err := w.dropped.FileRowGroupsReused(snap.Metadata, a, func(group [][]any) error {
			for _, r := range group {
				rows++
				notes[r[0].(int64)] = append(notes[r[0].(int64)], r[1].(string))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return len(snap.Files), rows, notes
}

// TestPGDroppedCompaction: many batches whose changes a drop expectation drops, all of the same
// three keys, leave the dropped table bounded: with pipelines.autoOptimize.minNumFiles 4, never
// more than 3 data files after a batch, and, of each key, only the rows of the batches since the
// last compaction. The compaction keeps each key's latest row, a key changed once (4, whose
// insert was dropped in the first batch) included, so that an update leaving the TOASTed note
// unchanged still takes the latest dropped change's note. Batch 7 is committed twice, its
// dropped rows with the same LSNs, as a run killed between the dropped table's commit and the
// bronze table's leaves them.
func TestPGDroppedCompaction(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	w, _ := pgBronze(t, tbl, [][][]any{{pgRow(1, "s1", "r", 0), pgRow(2, "s2", "r", 0), pgRow(3, "s3", "r", 0)}})
	w.d = &spec.Dataset{Name: "t", Schema: tbl.src.Schema, TableProperties: map[string]string{delta.ConfigAutoOptimizeMinFiles: "4"},
		Expectations: []spec.Expectation{{Name: "small_amount", Expect: "amount == nil or amount < 100", OnViolation: spec.OnViolationDrop}}}
	change := func(lsn pglogrepl.LSN, insert bool, id, note, amount string) []any {
		t.Helper()
		var msg pglogrepl.Message = &pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple(id, "x", note, amount, "NULL")}
		if insert {
			msg = &pglogrepl.InsertMessage{RelationID: 7, Tuple: tuple(id, "x", note, amount, "NULL")}
		}
		r, err := tbl.changeRows(msg, lsn, time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	ctx := context.Background()
	const batches = 30
	compactions := 0
	for b := 0; b < batches; b++ {
		lsn := pglogrepl.LSN(100 * (b + 1))
		rows := [][]any{change(lsn+1, false, "1", fmt.Sprintf("n1-%d", b), "200"), change(lsn+2, false, "2", fmt.Sprintf("n2-%d", b), "200"),
			change(lsn+3, false, "3", fmt.Sprintf("n3-%d", b), "200")}
		if b == 0 {
			rows = append(rows, change(lsn+4, true, "4", "n4", "300"))
		}
		before := w.droppedSnap
		for range map[bool]int{true: 2, false: 1}[b == 7] {
			if _, err := w.commit(ctx, rows, lsn+10, "stream"); err != nil {
				t.Fatal(err)
			}
		}
		if before != nil && len(w.droppedSnap.Files) < len(before.Files) {
			compactions++
		}
		files, n, notes := droppedState(t, w)
		if files > 3 {
			t.Fatalf("after batch %d the dropped table has %d data files, want at most 3 (minNumFiles 4)", b, files)
		}
		if n > 3*4+1 {
			t.Fatalf("after batch %d the dropped table has %d rows, want at most %d", b, n, 3*4+1)
		}
		for id := int64(1); id <= 3; id++ {
			if got := notes[id]; len(got) == 0 || got[len(got)-1] != fmt.Sprintf("n%d-%d", id, b) {
				t.Fatalf("after batch %d key %d's dropped notes are %q, want the last %q", b, id, got, fmt.Sprintf("n%d-%d", id, b))
			}
		}
		if got := notes[4]; len(got) != 1 || got[0] != "n4" {
			t.Fatalf("after batch %d key 4's dropped notes are %q, want [n4]", b, got)
		}
	}
	if compactions < batches/4 {
		t.Fatalf("%d compactions in %d batches, want at least %d", compactions, batches, batches/4)
	}
	// Every note unchanged (TOASTed), every change kept: the notes come from the dropped table.
	var rows [][]any
	for id := 1; id <= 4; id++ {
		rows = append(rows, change(pglogrepl.LSN(100*(batches+1)+id), false, fmt.Sprint(id), "TOAST", "1"))
	}
	if _, err := w.commit(ctx, rows, pglogrepl.LSN(100*(batches+1)+10), "stream"); err != nil {
		t.Fatal(err)
	}
	got := map[int64]any{}
	for _, a := range w.snap.Files {
		if err := w.table.FileRowGroupsReused(w.snap.Metadata, a, func(group [][]any) error {
			for _, r := range group {
				if r[tbl.data+1].(int64) > 100*(batches+1) {
					got[r[0].(int64)] = r[1]
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]any{1: fmt.Sprintf("n1-%d", batches-1), 2: fmt.Sprintf("n2-%d", batches-1), 3: fmt.Sprintf("n3-%d", batches-1), 4: "n4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the unchanged notes were filled with %v, want %v", got, want)
	}
}

// TestPGDroppedCompactionOff: pipelines.autoOptimize.managed "false" leaves the dropped table
// as its batches wrote it, a data file per batch.
func TestPGDroppedCompactionOff(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	w, _ := pgBronze(t, tbl, [][][]any{{pgRow(1, "s1", "r", 0)}})
	w.d = &spec.Dataset{Name: "t", Schema: tbl.src.Schema, TableProperties: map[string]string{delta.ConfigAutoOptimizeMinFiles: "2", delta.ConfigAutoOptimize: "false"},
		Expectations: []spec.Expectation{{Name: "small_amount", Expect: "amount == nil or amount < 100", OnViolation: spec.OnViolationDrop}}}
	for b := 0; b < 5; b++ {
		r, err := tbl.changeRows(&pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple("1", "x", fmt.Sprint(b), "200", "NULL")}, pglogrepl.LSN(10*b+1), time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.commit(context.Background(), r, pglogrepl.LSN(10*b+5), "stream"); err != nil {
			t.Fatal(err)
		}
	}
	if files, rows, _ := droppedState(t, w); files != 5 || rows != 5 {
		t.Fatalf("the dropped table has %d files of %d rows, want 5 of 5 (no compaction)", files, rows)
	}
}

// TestDroppedCompactFrom: the compaction rewrites the files from the first whose rows are at
// most those of the files after it: a large file of an earlier compaction waits until as many
// rows came after it.
func TestDroppedCompactFrom(t *testing.T) {
	t.Parallel()
	of := func(rows ...int) []delta.Add {
		var out []delta.Add
		for _, n := range rows {
			out = append(out, delta.Add{Stats: fmt.Sprintf(`{"numRecords":%d}`, n)})
		}
		return out
	}
	for _, c := range []struct {
		rows []int
		want int
	}{
		{[]int{3, 3, 3, 3}, 0},
		{[]int{100, 3, 3, 3}, 1},
		{[]int{100, 40, 3, 3, 3}, 2},
		{[]int{100, 40, 30, 30, 20}, 0},
		{[]int{100, 40, 30, 20, 5}, 1},
		{[]int{10, 3, 3, 4}, 0},
		{[]int{8, 4, 2, 1}, 0}, // none: all of them
	} {
		if got := droppedCompactFrom(of(c.rows...)); got != c.want {
			t.Errorf("droppedCompactFrom of files of %v rows = %d, want %d", c.rows, got, c.want)
		}
	}
}
