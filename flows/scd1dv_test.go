package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// morSpec is benchSpec with the target merge-on-read.
var morSpec = benchSpec + "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"

// rowTexts renders rows as sorted lines (columns joined by |), leaving out the columns at skip.
func rowTexts(rows [][]any, skip map[int]bool) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		var parts []string
		for i, v := range r {
			if !skip[i] {
				parts = append(parts, fmt.Sprint(v))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

func applyTarget(t *testing.T, p *spec.Pipeline, fresh bool) Metrics {
	t.Helper()
	if fresh { // as a new process would: read the CDC state from its segments
		stateCache.Delete(StateDir(p.Storage, "target"))
		loadedStates.Delete(StateDir(p.Storage, "target"))
		histCache.Delete(StateDir(p.Storage, "target"))
	}
	m, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMergeOnReadMatchesCopyOnWrite: the same batches (updates, deletes, re-inserts, late and
// duplicate events) into a copy-on-write target and a merge-on-read one give, after every batch,
// the same rows, the same change data feed rows and the same metrics; the merge-on-read commits
// rewrite no data file: they add the files they change back with a deletion vector holding
// exactly the deleted rows, and write the new rows to new files. An OPTIMIZE (which drops the
// deleted rows and so moves every row) is followed by batches that still agree.
func TestMergeOnReadMatchesCopyOnWrite(t *testing.T) {
	t.Parallel()
	cow, mor := loadPipeline(t, t.TempDir(), benchSpec), loadPipeline(t, t.TempDir(), morSpec)
	morTable := delta.New(TableDir(mor.Storage, "target"))
	r := rand.New(rand.NewPCG(11, 12))
	var seq int64
	for batch := range 9 {
		evs := changeEvents(r, 3000, 2000, &seq)
		if batch%3 == 2 {
			for i := range evs[:300] { // late events, below what their keys already hold
				evs[i][4] = evs[i][4].(int64) - 2500
			}
			evs = append(evs, evs[1000:1100]...) // duplicates
		}
		if batch == 6 {
			if _, err := morTable.Optimize(delta.OptimizeOptions{}); err != nil {
				t.Fatal(err)
			}
			snap, err := morTable.Snapshot(-1)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range snap.Files {
				if f.DeletionVector != nil {
					t.Fatalf("after OPTIMIZE, file %s still has a deletion vector", f.Path)
				}
			}
		}
		var ms [2]Metrics
		for k, p := range []*spec.Pipeline{cow, mor} {
			appendEvents(t, p, evs)
			ms[k] = applyTarget(t, p, batch%2 == 1)
		}
		if ms[0].NumUpsertedRows != ms[1].NumUpsertedRows || ms[0].NumDeletedRows != ms[1].NumDeletedRows || ms[0].NumOutputRows != ms[1].NumOutputRows {
			t.Fatalf("batch %d: metrics copy-on-write %+v, merge-on-read %+v", batch, ms[0], ms[1])
		}
		snaps := [2]*delta.Snapshot{}
		var rows, changes [2][]string
		for k, p := range []*spec.Pipeline{cow, mor} {
			var rs [][]any
			snaps[k], rs = readTable(t, p, "target")
			rows[k] = rowTexts(rs, nil)
			tb := delta.New(TableDir(p.Storage, "target"))
			cs, crs, err := tb.Changes(snaps[k].Version, snaps[k].Version)
			if err != nil {
				t.Fatal(err)
			}
			changes[k] = rowTexts(crs, map[int]bool{cs.Index("_commit_version"): true, cs.Index("_commit_timestamp"): true})
		}
		if strings.Join(rows[0], "\n") != strings.Join(rows[1], "\n") {
			t.Fatalf("batch %d: %d rows copy-on-write, %d merge-on-read; they differ", batch, len(rows[0]), len(rows[1]))
		}
		if strings.Join(changes[0], "\n") != strings.Join(changes[1], "\n") {
			t.Fatalf("batch %d: change data feed differs:\ncopy-on-write %d rows, merge-on-read %d rows", batch, len(changes[0]), len(changes[1]))
		}
		if want := int64(len(rows[1])); snaps[1].NumRecords() != want {
			t.Errorf("batch %d: NumRecords() %d, want %d live rows", batch, snaps[1].NumRecords(), want)
		}
		if batch == 0 {
			continue
		}
		// The merge-on-read commit: every removed file comes back with a deletion vector (or is
		// gone when all its rows are), and the new files hold exactly the upserted rows.
		newRows, _, _, _ := morCommit(t, morTable, snaps[1].Version, mor.Dataset("target").Schema)
		if newRows != ms[1].NumUpsertedRows {
			t.Fatalf("batch %d: new files hold %d rows, want the %d upserted", batch, newRows, ms[1].NumUpsertedRows)
		}
	}
}

// TestMergeOnReadTruncate: a truncate marks every row at or below its sequence deleted in the
// deletion vectors, and the change data feed has a delete per such row with its values.
func TestMergeOnReadTruncate(t *testing.T) {
	t.Parallel()
	text := strings.Replace(morSpec, `apply_as_deletes: op == "D"`, "apply_as_deletes: op == \"D\"\n      apply_as_truncates: op == \"T\"", 1)
	p := loadPipeline(t, t.TempDir(), text)
	ev := func(op string, id int64, name string, seq int64) []any {
		return []any{op, id, name, schema.Decimal(100 * id), seq}
	}
	appendEvents(t, p, [][]any{ev("I", 1, "a", 1), ev("I", 2, "b", 2), ev("I", 3, "c", 3), ev("I", 5, "e", 7)})
	applyTarget(t, p, true)
	appendEvents(t, p, [][]any{ev("U", 3, "c2", 10), ev("T", 0, "", 5), ev("I", 4, "d", 6)})
	m := applyTarget(t, p, true)
	snap, rows := readTable(t, p, "target")
	got := rowTexts(rows, nil)
	want := []string{"3|c2|300|10", "4|d|400|6", "5|e|500|7"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if m.NumDeletedRows != 2 || m.NumUpsertedRows != 2 {
		t.Errorf("metrics %+v, want 2 deleted and 2 upserted", m)
	}
	cs, crs, err := delta.New(TableDir(p.Storage, "target")).Changes(snap.Version, snap.Version)
	if err != nil {
		t.Fatal(err)
	}
	gotC := rowTexts(crs, map[int]bool{cs.Index("_commit_version"): true, cs.Index("_commit_timestamp"): true})
	wantC := []string{"1|a|100|1|delete", "2|b|200|2|delete", "3|c2|300|10|update_postimage", "3|c|300|3|update_preimage", "4|d|400|6|insert"}
	if strings.Join(gotC, "\n") != strings.Join(wantC, "\n") {
		t.Fatalf("change data feed\n%s\nwant\n%s", strings.Join(gotC, "\n"), strings.Join(wantC, "\n"))
	}
	var dv *delta.DeletionVector
	for _, f := range snap.Files {
		if f.DeletionVector != nil {
			dv = f.DeletionVector
		}
	}
	if dv == nil || dv.Cardinality != 3 {
		t.Fatalf("the first file's deletion vector %+v, want 3 rows (keys 1, 2 and the old row of 3)", dv)
	}
}

// TestMergeOnReadFromCopyOnWriteState: a target filled by copy-on-write batches that then gets
// delta.enableDeletionVectors goes on merge-on-read (the state learns the rows' positions and
// images from the table once) and agrees with a target that stayed copy-on-write.
func TestMergeOnReadFromCopyOnWriteState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cow, later := loadPipeline(t, t.TempDir(), benchSpec), loadPipeline(t, dir, benchSpec)
	r := rand.New(rand.NewPCG(21, 22))
	var seq int64
	for batch := range 5 {
		evs := changeEvents(r, 1000, 700, &seq)
		if batch == 2 {
			later = loadPipeline(t, dir, morSpec) // the property set on the existing table
		}
		for _, p := range []*spec.Pipeline{cow, later} {
			appendEvents(t, p, evs)
			applyTarget(t, p, true)
		}
		_, a := readTable(t, cow, "target")
		_, b := readTable(t, later, "target")
		if x, y := rowTexts(a, nil), rowTexts(b, nil); strings.Join(x, "\n") != strings.Join(y, "\n") {
			t.Fatalf("batch %d: rows differ (%d and %d)", batch, len(x), len(y))
		}
	}
	snap, _ := readTable(t, later, "target")
	dvs := 0
	for _, f := range snap.Files {
		if f.DeletionVector != nil {
			dvs++
		}
	}
	if dvs == 0 {
		t.Fatal("no data file has a deletion vector after the property was set")
	}
}

// TestDeltaSegmentsMerge: a target of 2,000 keys takes 45 small batches, each in a fresh process
// (a partial load of the state). Once the log reaches maxSegments, a batch merges the delta
// segments into one instead of rewriting the whole state: the base segment is never rewritten,
// the log never has more than maxSegments segments, and the table stays equal to a target whose
// state is always loaded whole, for both merge-on-read and copy-on-write.
func TestDeltaSegmentsMerge(t *testing.T) {
	t.Parallel()
	for _, text := range []string{benchSpec, morSpec} {
		partial, whole := loadPipeline(t, t.TempDir(), text), loadPipeline(t, t.TempDir(), text)
		r := rand.New(rand.NewPCG(31, 32))
		var seq int64
		initial := make([][]any, 2000)
		for i := range initial {
			seq++
			initial[i] = []any{"I", int64(i), "n", schema.Decimal(i), seq}
		}
		base := ""
		merged := false
		for batch := range 45 {
			evs := initial
			if batch > 0 {
				evs = changeEvents(r, 20, 2000, &seq)
			}
			for _, p := range []*spec.Pipeline{partial, whole} {
				appendEvents(t, p, evs)
				applyTarget(t, p, p == partial)
			}
			tb := delta.New(TableDir(partial.Storage, "target"))
			snap, _ := tb.Snapshot(-1)
			id, _, _, err := lastApply(tb, snap)
			if err != nil {
				t.Fatal(err)
			}
			l := &stateLog{dir: StateDir(partial.Storage, "target")}
			m, err := l.readManifest(tb, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Segments) > maxSegments {
				t.Fatalf("batch %d: %d segments, want at most %d", batch, len(m.Segments), maxSegments)
			}
			if base == "" {
				base = m.Segments[0].Name
			} else if m.Segments[0].Name != base {
				t.Fatalf("batch %d: the base segment was rewritten (%s, was %s)", batch, m.Segments[0].Name, base)
			}
			if batch > maxSegments && len(m.Segments) < maxSegments/2 {
				merged = true
			}
			_, a := readTable(t, partial, "target")
			_, b := readTable(t, whole, "target")
			if x, y := rowTexts(a, nil), rowTexts(b, nil); strings.Join(x, "\n") != strings.Join(y, "\n") {
				t.Fatalf("batch %d: the tables differ (%d and %d rows)", batch, len(x), len(y))
			}
		}
		if !merged {
			t.Error("the delta segments were never merged")
		}
	}
}
