package flows

import (
	"sort"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// TestHistoryMergeOnReadThenCopyOnWrite: SCD type 2, merge-on-read for three batches (so the key's
// rows lie in three files), then delta.enableDeletionVectors set to "false" and a late event deep
// in the key's history: copy-on-write must drop the versions it replaces from every file that
// holds them. Key 1 then has the versions [10,15), [15,20), [20,30) and [30,).
func TestHistoryMergeOnReadThenCopyOnWrite(t *testing.T) {
	dir := t.TempDir()
	text := benchSpec + "      stored_as_scd_type: 2\n"
	on := text + "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
	off := text + "    table_properties:\n      delta.enableDeletionVectors: \"false\"\n"
	p := loadPipeline(t, dir, on)
	ev := func(seq int64, amt int64) []any {
		return []any{"U", int64(1), "n", schema.Decimal(amt), seq}
	}
	for i, e := range [][]any{ev(10, 1), ev(20, 2), ev(30, 3)} {
		appendEvents(t, p, [][]any{e, {"U", int64(100 + i), "x", schema.Decimal(5), int64(5)}})
		applyTarget(t, p, false)
	}
	p = loadPipeline(t, dir, off)
	appendEvents(t, p, [][]any{ev(15, 9)})
	applyTarget(t, p, false)
	_, rows := readTable(t, p, "target")
	var got []string
	for _, r := range rows {
		if r[0].(int64) == 1 {
			got = append(got, rowTexts([][]any{r}, nil)[0])
		}
	}
	// id|name|amount (unscaled)|seq|__START_AT|__END_AT, sorted
	sort.Strings(got)
	want := []string{"1|n|1|10|10|15", "1|n|2|20|20|30", "1|n|3|30|30|<nil>", "1|n|9|15|15|20"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("key 1 has the rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHistoryMergeOnReadStaleFile: SCD type 2, merge-on-read and copy-on-write fed the same
// batches. A delete tying the sequence of the key's open version removes that version and
// writes no row, so the key's file (which held only that row) goes and the state's file for the
// key is stale; then later and late events for the key. Rows and change data feed must agree.
func TestHistoryMergeOnReadStaleFile(t *testing.T) {
	text := benchSpec + "      stored_as_scd_type: 2\n"
	on := text + "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
	for _, fresh := range []bool{false, true} {
		cow, mor := loadPipeline(t, t.TempDir(), text), loadPipeline(t, t.TempDir(), on)
		u := func(id, seq, amt int64) []any { return []any{"U", id, "n", schema.Decimal(amt), seq} }
		d := func(id, seq int64) []any { return []any{"D", id, nil, nil, seq} }
		batches := [][][]any{
			{u(1, 10, 1), d(1, 20), u(2, 10, 1)},
			{u(1, 30, 2)},
			{d(1, 30)},
			{u(1, 100, 3)},
			{u(1, 25, 4), u(2, 5, 7)},
			{d(1, 100), u(1, 15, 5)},
			{u(1, 1, 6)},
		}
		for bi, b := range batches {
			for _, p := range []*spec.Pipeline{cow, mor} {
				appendEvents(t, p, b)
				applyTarget(t, p, fresh)
			}
			if bi == 2 {
				sm, _ := readTable(t, mor, "target")
				c, err := delta.New(TableDir(mor.Storage, "target")).ReadCommit(sm.Version)
				if err != nil || len(c.Removes) != 1 || len(c.Adds) != 0 {
					t.Fatalf("batch 2 of merge-on-read: want the open version's file removed for good; commit %+v, %v", c, err)
				}
			}
			_, rc := readTable(t, cow, "target")
			_, rm := readTable(t, mor, "target")
			if a, b := strings.Join(rowTexts(rc, nil), "\n"), strings.Join(rowTexts(rm, nil), "\n"); a != b {
				t.Fatalf("fresh %v batch %d: copy-on-write\n%s\nmerge-on-read\n%s", fresh, bi, a, b)
			}
			skip := map[string]bool{"_commit_timestamp": true, "_commit_version": true}
			sc, _ := readTable(t, cow, "target")
			sm, _ := readTable(t, mor, "target")
			if a, b := cdfText(t, delta.New(TableDir(cow.Storage, "target")), sc.Version, skip), cdfText(t, delta.New(TableDir(mor.Storage, "target")), sm.Version, skip); a != b {
				t.Fatalf("fresh %v batch %d: change data feed copy-on-write\n%s\nmerge-on-read\n%s", fresh, bi, a, b)
			}
		}
	}
}

// TestHistoryMergeOnReadThenEmptiedFile: SCD type 2, merge-on-read for two batches, so that key
// 1's closed version [10,20) lies in one file and its open version [30,) alone in another (the
// file its state names). Then copy-on-write: a delete tying 30 removes the open version, which
// empties the state's file (renamed to ""), while the key still has its closed version in the
// first file. A later upsert must not write the closed version a second time.
func TestHistoryMergeOnReadThenEmptiedFile(t *testing.T) {
	text := benchSpec + "      stored_as_scd_type: 2\n"
	on := text + "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
	off := text + "    table_properties:\n      delta.enableDeletionVectors: \"false\"\n"
	for _, c := range []struct {
		fresh bool
		next  int64 // the sequence of the upsert after the delete: later, or late
	}{{false, 100}, {true, 100}, {false, 15}, {true, 15}} {
		fresh := c.fresh
		refDir, subDir := t.TempDir(), t.TempDir()
		ref, sub := loadPipeline(t, refDir, text), loadPipeline(t, subDir, on)
		u := func(id, seq, amt int64) []any { return []any{"U", id, "n", schema.Decimal(amt), seq} }
		d := func(id, seq int64) []any { return []any{"D", id, nil, nil, seq} }
		batches := [][][]any{
			{u(1, 10, 1), d(1, 20), u(2, 10, 1)},
			{u(1, 30, 2)},
			{d(1, 30)}, // copy-on-write from here on
			{u(1, c.next, 3)},
			{u(1, 5, 4)},
		}
		for bi, b := range batches {
			if bi == 2 {
				sub = loadPipeline(t, subDir, off)
			}
			appendEvents(t, ref, b)
			appendEvents(t, sub, b)
			applyTarget(t, ref, fresh)
			applyTarget(t, sub, fresh)
			_, rr := readTable(t, ref, "target")
			_, rs := readTable(t, sub, "target")
			if a, b := strings.Join(rowTexts(rr, nil), "\n"), strings.Join(rowTexts(rs, nil), "\n"); a != b {
				t.Errorf("next %d fresh %v batch %d: reference (copy-on-write throughout)\n%s\nmerge-on-read, then copy-on-write\n%s", c.next, fresh, bi, a, b)
				break
			}
		}
	}
}
