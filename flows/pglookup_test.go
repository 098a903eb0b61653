package flows

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"tributary/delta"
	"tributary/spec"
)

// pgBronze is a bronze table of pgTestTable's source with commits of the given rows, one data
// file each; stripStats[i] commits the i-th file without stats. It returns the writer and the
// files in commit order.
func pgBronze(t testing.TB, tbl *pgTable, commits [][][]any, stripStats ...bool) (*pgWriter, []delta.Add) {
	t.Helper()
	table := delta.New(t.TempDir())
	tx := table.Begin(nil)
	tx.SetMetadata(delta.Metadata{Schema: tbl.src.Schema})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	var files []delta.Add
	for i, rows := range commits {
		snap, err := table.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		a, err := table.WriteFile(tbl.src.Schema, rows)
		if err != nil {
			t.Fatal(err)
		}
		if i < len(stripStats) && stripStats[i] {
			a.Stats = ""
		}
		tx := table.Begin(snap)
		tx.Add(a)
		if _, err := tx.Commit("STREAMING UPDATE", nil); err != nil {
			t.Fatal(err)
		}
		files = append(files, a)
	}
	snap, err := table.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	w := &pgWriter{table: table, snap: snap, tbl: tbl}
	if err := w.openDroppedTable(filepath.Join(t.TempDir(), "dropped"), true); err != nil {
		t.Fatal(err)
	}
	return w, files
}

// pgRow is a bronze row of pgTestTable: id, note, op and _lsn (amount, time and xid NULL).
func pgRow(id int64, note, op string, lsn int64) []any {
	return []any{id, note, nil, nil, op, lsn, nil, nil}
}

// removeDataFile deletes a's data file, so that a read of it fails.
func removeDataFile(t *testing.T, w *pgWriter, a delta.Add) {
	t.Helper()
	if err := os.Remove(filepath.Join(w.table.Dir, filepath.FromSlash(a.Path))); err != nil {
		t.Fatal(err)
	}
}

// notesOf renders storedRows' result as key=note pairs for the keys given.
func notesOf(tbl *pgTable, stored map[string][]any, ids ...int64) string {
	var out []string
	for _, id := range ids {
		r, ok := stored[tbl.keyText([]any{id})]
		switch {
		case !ok:
			out = append(out, "-")
		default:
			out = append(out, r[1].(string))
		}
	}
	return strings.Join(out, " ")
}

// needOf is needsLookup of an update with an unchanged TOASTed note for each key.
func needOf(t testing.TB, tbl *pgTable, lsn pglogrepl.LSN, ids ...string) ([][]any, map[string]bool) {
	t.Helper()
	var rows [][]any
	for _, id := range ids {
		r, err := tbl.changeRows(&pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple(id, "x", "TOAST", "1", "NULL")}, lsn, time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	return rows, tbl.needsLookup(rows)
}

// TestPGStoredRowsLatest: the TOAST lookup finds each key's latest image by _lsn (deletes and
// truncates have none), across a snapshot file and stream files, whatever file holds it.
func TestPGStoredRowsLatest(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	var snapshot [][]any
	for id := int64(1); id <= 100; id++ {
		snapshot = append(snapshot, pgRow(id, "s"+strings.Repeat("x", int(id%3)), "r", 5))
	}
	w, _ := pgBronze(t, tbl, [][][]any{
		snapshot,
		{pgRow(7, "u7", "u", 20), pgRow(8, "", "d", 20), pgRow(7, "u7b", "u", 20)}, // the later of equal LSNs wins
		{pgRow(200, "c200", "c", 30), pgRow(9, "", "d", 30)},
	})
	rows, need := needOf(t, tbl, 40, "7", "50", "200", "9")
	stored, err := w.storedRows(need, rows)
	if err != nil {
		t.Fatal(err)
	}
	// Key 9's last image is the snapshot's: the delete after it leaves no values, and a
	// re-insert would have come with all of them.
	if got, want := notesOf(tbl, stored, 7, 50, 200, 9, 8), "u7b sxx c200 s -"; got != want {
		t.Fatalf("notes of keys 7 50 200 9 8 = %q, want %q", got, want)
	}
}

// TestPGStoredRowsOpenTransaction: the rows of a transaction written before its commit (the
// writer's open files, which no commit names yet) are newer than every committed file, so the
// TOAST lookup of its later rows finds a key's image there: key 7 updated earlier in the same
// transaction, key 300 inserted by it; key 8, which the transaction has not changed, keeps its
// committed image, and key 9, deleted by it, the image before the delete.
func TestPGStoredRowsOpenTransaction(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	w, _ := pgBronze(t, tbl, [][][]any{
		{pgRow(7, "s7", "r", 0), pgRow(8, "s8", "r", 0), pgRow(9, "s9", "r", 0)},
		{pgRow(7, "u7", "u", 20)},
	})
	for _, rows := range [][][]any{
		{pgRow(7, "o7a", "u", 50), pgRow(300, "c300", "c", 51)},
		{pgRow(7, "o7b", "u", 60), pgRow(9, "", "d", 61)},
	} {
		a, err := w.table.WriteFile(tbl.src.Schema, rows)
		if err != nil {
			t.Fatal(err)
		}
		w.open = append(w.open, a)
	}
	rows, need := needOf(t, tbl, 70, "7", "8", "300", "9")
	stored, err := w.storedRows(need, rows)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := notesOf(tbl, stored, 7, 8, 300, 9), "o7b s8 c300 s9"; got != want {
		t.Fatalf("notes of keys 7 8 300 9 = %q, want %q", got, want)
	}
	files, _ := lookupFiles([]lookupSet{{w.table, w.snap.Metadata, w.snap.Files}, {w.table, w.snap.Metadata, w.open}}, tbl, map[string]bool{tbl.keyText([]any{int64(300)}): true}, rows)
	if len(files) != 1 || files[0].add.Path != w.open[0].Path {
		t.Fatalf("the lookup of key 300 reads %d files, want the one open file whose key bounds hold it", len(files))
	}
}

// TestPGStoredRowsReadsOnlyWhatItNeeds: the lookup leaves out the files whose key bounds do not
// hold a needed key, and stops before the files older than the images it found: a file it must
// not read is removed, so that reading it would fail.
func TestPGStoredRowsReadsOnlyWhatItNeeds(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	var snapshot [][]any
	for id := int64(1); id <= 100; id++ {
		snapshot = append(snapshot, pgRow(id, "s", "r", 5))
	}
	w, files := pgBronze(t, tbl, [][][]any{
		snapshot,
		{pgRow(7, "u7", "u", 20)},
		{pgRow(300, "c300", "c", 30), pgRow(400, "c400", "c", 31)},
		{pgRow(7, "u7 again", "u", 40)},
	})
	// Key 7: its latest image is in the last file; the others are older (the snapshot, the
	// second file) or leave key 7 out (300-400).
	removeDataFile(t, w, files[0])
	removeDataFile(t, w, files[1])
	removeDataFile(t, w, files[2])
	rows, need := needOf(t, tbl, 50, "7")
	stored, err := w.storedRows(need, rows)
	if err != nil {
		t.Fatalf("the lookup read a file it did not need: %v", err)
	}
	if got := notesOf(tbl, stored, 7); got != "u7 again" {
		t.Fatalf("key 7's note = %q, want %q", got, "u7 again")
	}
	// Key 50 lives in the snapshot file, which is gone: the lookup reads it and says so.
	rows, need = needOf(t, tbl, 50, "50")
	if _, err := w.storedRows(need, rows); err == nil {
		t.Fatal("key 50's lookup read no file, want it to read the snapshot's (removed) file")
	}
}

// TestPGLookupFilesOrder: files without stats come first (they may hold anything), then by
// their highest _lsn, the later in the table's order first among equals; a file whose key
// bounds leave out every needed key is left out, unless the key is one only its text names.
func TestPGLookupFilesOrder(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	w, files := pgBronze(t, tbl, [][][]any{
		{pgRow(1, "a", "r", 5), pgRow(100, "b", "r", 5)},
		{pgRow(2, "c", "u", 20)},
		{pgRow(50, "d", "u", 20)},
		{pgRow(500, "e", "u", 10)},
		{pgRow(60, "f", "u", 15)},
	}, false, false, false, false, true)
	name := map[string]int{}
	for i, a := range files {
		name[a.Path] = i
	}
	order := func(ids ...string) []int {
		rows, need := needOf(t, tbl, 90, ids...)
		var out []int
		files, _ := lookupFiles([]lookupSet{{w.table, w.snap.Metadata, w.snap.Files}}, tbl, need, rows)
		for _, f := range files {
			out = append(out, name[f.add.Path])
		}
		return out
	}
	for _, tc := range []struct {
		ids  []string
		want []int
	}{
		{[]string{"50"}, []int{4, 2, 0}},          // 1 (2..2) and 3 (500..500) leave 50 out
		{[]string{"2", "500"}, []int{4, 1, 3, 0}}, // 2 (50..50) leaves both out
		{[]string{"1000"}, []int{4}},              // only the file without stats may hold it
		{[]string{"50", "2"}, []int{4, 2, 1, 0}},  // equal _lsn bounds: the later file first
		{[]string{"2", "50", "500"}, []int{4, 2, 1, 3, 0}},
	} {
		if got := order(tc.ids...); !slices.Equal(got, tc.want) {
			t.Errorf("keys %v: files read %v, want %v", tc.ids, got, tc.want)
		}
	}
	// A needed key the batch names only by its text (an update that changed the key, whose old
	// key's row is not in the batch) leaves no file out.
	if got, keys := lookupFiles([]lookupSet{{w.table, w.snap.Metadata, w.snap.Files}}, tbl, map[string]bool{tbl.keyText([]any{int64(2)}): true}, nil); len(got) != len(files) || keys != nil {
		t.Errorf("a key without its typed value: %d files and keys %v, want all %d files and no keys", len(got), keys, len(files))
	}
}

// BenchmarkPGToastLookup measures the TOAST lookup of an update batch against a bronze table of
// a 1,000,000-row initial snapshot (20 files, keys in order) and 30 stream files of 1,000 random
// keys each: "whole-table" reads every row, as the lookup did before it read only the files that
// may hold the keys; "recent" looks up 10 keys of the last stream file, "snapshot" 10 keys last
// written by the snapshot.
func BenchmarkPGToastLookup(b *testing.B) {
	tbl := pgTestTable(b)
	note := strings.Repeat("n", 200)
	var commits [][][]any
	lsn := int64(5)
	for f := range 20 {
		var rows [][]any
		for id := int64(f*50_000 + 1); id <= int64(f+1)*50_000; id++ {
			rows = append(rows, pgRow(id, note, "r", lsn))
		}
		commits = append(commits, rows)
	}
	rng := uint64(1)
	for range 30 {
		lsn += 10
		var rows [][]any
		for range 1000 {
			rng = rng*6364136223846793005 + 1442695040888963407
			rows = append(rows, pgRow(int64(rng>>44)%1_000_000+1, note, "u", lsn))
		}
		commits = append(commits, rows)
	}
	w, _ := pgBronze(b, tbl, commits)
	last := commits[len(commits)-1]
	var recent, old []string
	for i := range 10 {
		recent = append(recent, fmt.Sprint(last[i*50][0]))
		old = append(old, fmt.Sprint(int64(i*99_991+7)))
	}
	b.Run("whole-table", func(b *testing.B) {
		for b.Loop() {
			if _, err := w.table.Rows(w.snap); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		ids  []string
	}{{"recent", recent}, {"snapshot", old}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rows, need := needOf(b, tbl, pglogrepl.LSN(lsn+1), c.ids...)
				stored, err := w.storedRows(need, rows)
				if err != nil || len(stored) != len(need) {
					b.Fatalf("found %d of %d keys: %v", len(stored), len(need), err)
				}
			}
		})
	}
}

// TestPGOpenTransactionDroppedRowFillsToast: an unchanged TOASTed value of a transaction written
// in chunks takes the key's previous value from an earlier change of the transaction even when
// a drop expectation dropped that change in an earlier chunk, as it does when the transaction is
// one batch ("an earlier change of the batch"): key 5's note set to "new" by a change dropped in
// the first chunk, then left unchanged by one kept in the second, is "new", not the snapshot's
// "s5"; key 6's change dropped in the first chunk and kept in the second fills its third from
// the kept one's "kept6". The files that hold the dropped rows for the lookup are the dropped
// table's: the bronze table's folder holds no file its log does not name.
func TestPGOpenTransactionDroppedRowFillsToast(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	w, _ := pgBronze(t, tbl, [][][]any{{pgRow(5, "s5", "r", 0), pgRow(6, "s6", "r", 0)}})
	w.d = &spec.Dataset{Name: "t", Schema: tbl.src.Schema, Expectations: []spec.Expectation{
		{Name: "small_amount", Expect: "amount == nil or amount < 100", OnViolation: spec.OnViolationDrop},
	}}
	update := func(lsn pglogrepl.LSN, id, note, amount string) []any {
		t.Helper()
		r, err := tbl.changeRows(&pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple(id, "x", note, amount, "NULL")}, lsn, time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	ctx := context.Background()
	if _, err := w.writeOpen(ctx, [][]any{update(10, "5", "new", "200"), update(11, "6", "dropped6", "300")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.writeOpen(ctx, [][]any{update(20, "6", "kept6", "1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.commit(ctx, [][]any{update(30, "5", "TOAST", "1"), update(31, "6", "TOAST", "2")}, 40, "stream"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range w.snap.Files {
		if err := w.table.FileRowGroupsReused(w.snap.Metadata, a, func(group [][]any) error {
			for _, r := range group {
				if lsn := r[tbl.data+1].(int64); lsn >= 30 {
					got = append(got, fmt.Sprintf("%d=%v", r[0], r[1]))
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	if want := "5=new 6=kept6"; strings.Join(got, " ") != want {
		t.Fatalf("the transaction's last rows have notes %q, want %q", strings.Join(got, " "), want)
	}
	// The dropped rows' files were for the lookup alone: the commit leaves none behind.
	names, err := filepath.Glob(filepath.Join(w.table.Dir, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(w.snap.Files) {
		t.Fatalf("after the commit the table folder holds %d data files, its snapshot names %d; want every file named", len(names), len(w.snap.Files))
	}
}
