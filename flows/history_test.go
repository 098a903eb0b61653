package flows

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func he(seq int64, v string) histEvent {
	if v == "" {
		return histEvent{seq: []any{seq}, delete: true}
	}
	parts := strings.Split(v, "/")
	row := make([]any, len(parts))
	for i, p := range parts {
		row[i] = p
	}
	return histEvent{seq: []any{seq}, row: row}
}

func render(vs []version) string {
	var b []string
	for _, v := range vs {
		end := "null"
		if v.end != nil {
			end = fmt.Sprint(v.end[0])
		}
		b = append(b, fmt.Sprintf("%v[%v,%s)", v.row, v.start[0], end))
	}
	return strings.Join(b, " ")
}

func TestFoldHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		events  []histEvent
		tracked []int
		want    string
	}{
		{"each tracked change opens a version", []histEvent{he(1, "a/x"), he(3, "b/x"), he(5, "c/x")}, []int{0, 1},
			"[a x][1,3) [b x][3,5) [c x][5,null)"},
		{"untracked change rewrites in place", []histEvent{he(1, "a/x"), he(3, "a/y"), he(5, "b/z")}, []int{0},
			"[a y][1,5) [b z][5,null)"},
		{"no change opens nothing", []histEvent{he(1, "a/x"), he(3, "a/x")}, []int{0, 1},
			"[a x][1,null)"},
		{"delete closes, re-insert opens", []histEvent{he(1, "a/x"), he(4, ""), he(6, "a/x")}, []int{0, 1},
			"[a x][1,4) [a x][6,null)"},
		{"delete of nothing", []histEvent{he(2, ""), he(3, "a/x")}, []int{0, 1},
			"[a x][3,null)"},
	}
	for _, c := range cases {
		if got := render(foldHistory(c.events, c.tracked, false, nil)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestMergeHistoryLateEvents(t *testing.T) {
	t.Parallel()
	// In order: 1 a, 3 b, 5 c. The event at 3 arrives last: history must equal in-order arrival.
	hist := []histEvent{he(1, "a"), he(5, "c")}
	late := event{seq: []any{int64(3)}, row: []any{"b"}}
	hist, changed, ties := mergeHistory(hist, []*event{&late})
	if !changed || ties != 0 {
		t.Fatalf("changed=%v ties=%d", changed, ties)
	}
	if got, want := render(foldHistory(hist, []int{0}, false, nil)), "[a][1,3) [b][3,5) [c][5,null)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// A re-delivered event changes nothing; a delete at a stored sequence wins the tie.
	dup := event{seq: []any{int64(3)}, row: []any{"b"}}
	if _, changed, ties = mergeHistory(hist, []*event{&dup}); changed || ties != 0 {
		t.Errorf("duplicate: changed=%v ties=%d", changed, ties)
	}
	del := event{seq: []any{int64(5)}, delete: true}
	hist, changed, ties = mergeHistory(hist, []*event{&del})
	if !changed || ties != 1 {
		t.Errorf("delete tie: changed=%v ties=%d", changed, ties)
	}
	if got, want := render(foldHistory(hist, []int{0}, false, nil)), "[a][1,3) [b][3,5)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestMergeHistoryKeepsStored: merging returns a new history and leaves the stored one as it was
// (the versions before the batch are folded from it), whatever the batch does to it: a late
// event between stored ones, an event after them, and a delete that beats a stored upsert at
// its sequence. The batch arrives out of order; within it, at one sequence, a delete beats an
// upsert and the later of two upserts wins.
func TestMergeHistoryKeepsStored(t *testing.T) {
	t.Parallel()
	stored := []histEvent{he(1, "a"), he(5, "c"), he(9, "e")}
	before := render(foldHistory(stored, []int{0}, false, nil))
	evs := []event{
		{seq: []any{int64(7)}, row: []any{"d"}, arrival: 0},
		{seq: []any{int64(3)}, row: []any{"b"}, arrival: 1},
		{seq: []any{int64(9)}, delete: true, arrival: 2},
		{seq: []any{int64(11)}, row: []any{"f"}, arrival: 3},
		{seq: []any{int64(11)}, row: []any{"g"}, arrival: 4}, // the later arrival wins
		{seq: []any{int64(13)}, row: []any{"h"}, arrival: 5},
		{seq: []any{int64(13)}, delete: true, arrival: 6}, // a delete beats the upsert
	}
	batch := make([]*event, len(evs))
	for i := range evs {
		batch[i] = &evs[i]
	}
	merged, changed, ties := mergeHistory(stored, batch)
	if !changed || ties != 3 {
		t.Errorf("changed=%v ties=%d, want true and 3 (9 delete against stored e, 11 f/g, 13 h/delete)", changed, ties)
	}
	if got, want := render(foldHistory(merged, []int{0}, false, nil)), "[a][1,3) [b][3,5) [c][5,7) [d][7,9) [g][11,13)"; got != want {
		t.Errorf("merged: got %s, want %s", got, want)
	}
	if got := render(foldHistory(stored, []int{0}, false, nil)); got != before || len(stored) != 3 || stored[2].delete {
		t.Errorf("the stored history changed: %s, was %s", got, before)
	}
	// Nothing new: the stored history comes back unchanged.
	again := event{seq: []any{int64(5)}, row: []any{"c"}}
	if got, changed, ties := mergeHistory(stored, []*event{&again}); changed || ties != 0 || len(got) != 3 {
		t.Errorf("re-delivered event: changed=%v ties=%d len=%d", changed, ties, len(got))
	}
}

// TestGroupByKey: keys come in order of their first event, each key's events in arrival order.
func TestGroupByKey(t *testing.T) {
	t.Parallel()
	ids := []int64{3, 1, 3, 2, 1, 3}
	evs := make([]event, len(ids))
	for i, id := range ids {
		evs[i] = event{key: []any{id}, seq: []any{int64(i)}, arrival: i}
	}
	// The same events in one part, and in parts of 2, 0, 3 and 1 events (a view's groups).
	for _, parts := range [][][]event{{evs}, {evs[:2], evs[2:2], evs[2:5], evs[5:]}} {
		checkGroups(t, groupByKey(parts...))
	}
}

// checkGroups checks the groups of TestGroupByKey's events.
func checkGroups(t *testing.T, g *keyGroups) {
	t.Helper()
	var got []string
	for i, k := range g.keys {
		key, err := decodeValues([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		var arr []string
		for _, e := range g.events(i) {
			if e.key[0] != key[0] {
				t.Errorf("key %v holds an event of key %v", key[0], e.key[0])
			}
			arr = append(arr, fmt.Sprint(e.arrival))
		}
		if g.index[k] != i {
			t.Errorf("index of key %v = %d, want %d", key[0], g.index[k], i)
		}
		got = append(got, fmt.Sprintf("%v:%s", key[0], strings.Join(arr, ",")))
	}
	if want := "3:0,2,5 1:1,4 2:3"; strings.Join(got, " ") != want {
		t.Errorf("groups %q, want %q", strings.Join(got, " "), want)
	}
	g.index["extra"] = len(g.keys)
	if n := len(g.events(len(g.keys))); n != 0 {
		t.Errorf("a key added after grouping has %d events, want none", n)
	}
}

// TestRowSlab: rows from a slab are distinct, of the slab's width, and stay apart across
// backing arrays.
func TestRowSlab(t *testing.T) {
	t.Parallel()
	s := rowSlab{width: 3}
	var rows [][]any
	for i := range slabRows + 2 {
		r := s.row()
		if len(r) != 3 || cap(r) != 3 {
			t.Fatalf("row %d: len %d cap %d, want 3 and 3", i, len(r), cap(r))
		}
		r[0], r[2] = i, i
		rows = append(rows, append(r[:0:0], r...))
		rows = append(rows, r)
	}
	for i := 0; i < len(rows); i += 2 {
		if rows[i+1][0] != rows[i][0] || rows[i+1][2] != rows[i][2] || rows[i+1][1] != nil {
			t.Fatalf("row %d was overwritten: %v, want %v", i/2, rows[i+1], rows[i])
		}
	}
}

// TestCutBetweenKeys: runs hold at most the limit of rows and end only between keys; a key
// larger than the limit is a run of its own, and keys of no rows ride along.
func TestCutBetweenKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sizes []int
		limit int
		want  string
	}{
		{nil, 10, "[]"},
		{[]int{3, 3, 3}, 10, "[[0 3]]"},
		{[]int{3, 3, 3, 3}, 10, "[[0 3] [3 4]]"},
		{[]int{5, 5, 5}, 10, "[[0 2] [2 3]]"},
		{[]int{2, 12, 2}, 10, "[[0 1] [1 2] [2 3]]"},
		{[]int{12}, 10, "[[0 1]]"},
		{[]int{0, 10, 0, 1}, 10, "[[0 3] [3 4]]"},
	} {
		if got := fmt.Sprint(cutBetweenKeys(tc.sizes, tc.limit)); got != tc.want {
			t.Errorf("cutBetweenKeys(%v, %d) = %s, want %s", tc.sizes, tc.limit, got, tc.want)
		}
	}
}

// TestCutEvenly: n runs of about equal rows, cut between keys at the first boundary at or past
// each share, with no short run of leftovers at the end (keys of 3 rows cut in two, where a
// greedy cut to half the rows leaves a last run of one key), never more than limit rows in a run
// unless one key has more (then it ends before the key that would pass the limit, and a share
// ending inside that key is not cut again right after it), and keys without rows at a cut going
// with the run after.
func TestCutEvenly(t *testing.T) {
	tens := make([]int, 50_000)
	for i := range tens {
		tens[i] = 10
	}
	if got := fmt.Sprint(cutEvenly(tens, 2, 1_000_000)); got != "[[0 25000] [25000 50000]]" {
		t.Errorf("cutEvenly(50,000 × 10, 2) = %s", got)
	}
	odd := append(slices.Clone(tens[:49_999]), 9) // 499,999 rows
	if got := fmt.Sprint(cutEvenly(odd, 2, 1_000_000)); got != "[[0 25000] [25000 50000]]" {
		t.Errorf("cutEvenly(49,999 × 10 + 9, 2) = %s", got)
	}
	threes := []int{3, 3, 3, 3, 3}
	if greedy, even := fmt.Sprint(cutBetweenKeys(threes, 8)), fmt.Sprint(cutEvenly(threes, 2, 100)); greedy != "[[0 2] [2 4] [4 5]]" || even != "[[0 3] [3 5]]" {
		t.Errorf("keys of 3 rows in two: greedy to 8 %s, evenly %s", greedy, even)
	}
	// 2,000,000 rows in keys of 3 cannot go in two runs of at most 1,000,000: the limit cuts.
	many := make([]int, 666_667)
	for i := range many {
		many[i] = 3
	}
	many[len(many)-1] = 2
	got := cutEvenly(many, 2, 1_000_000)
	for _, run := range got {
		rows := 0
		for _, sz := range many[run[0]:run[1]] {
			rows += sz
		}
		if rows > 1_000_000 {
			t.Errorf("cutEvenly(666,666 × 3 + 2, 2, 1,000,000): a run of %d rows: %v", rows, got)
		}
	}
	if fmt.Sprint(got) != "[[0 333333] [333333 666666] [666666 666667]]" {
		t.Errorf("cutEvenly(666,666 × 3 + 2, 2, 1,000,000) = %v", got)
	}
	for _, tc := range []struct {
		sizes    []int
		n, limit int
		want     string
	}{
		{nil, 2, 10, "[]"},
		{[]int{3, 3, 3}, 1, 10, "[[0 3]]"},
		{[]int{3, 3, 3, 3}, 2, 10, "[[0 2] [2 4]]"},
		{[]int{3, 3, 3, 3}, 3, 10, "[[0 2] [2 3] [3 4]]"},
		{[]int{1, 20, 1, 1}, 3, 100, "[[0 2] [2 4]]"},
		{[]int{1, 20, 1, 1}, 3, 10, "[[0 1] [1 2] [2 4]]"},
		{[]int{20, 1, 1}, 2, 100, "[[0 1] [1 3]]"},
		{[]int{4, 0, 0, 4}, 2, 10, "[[0 1] [1 4]]"},
		{[]int{0, 0, 5}, 2, 10, "[[0 3]]"},
		{[]int{999_990, 5_000, 995_010}, 2, 1_000_000, "[[0 1] [1 2] [2 3]]"},
	} {
		if got := fmt.Sprint(cutEvenly(tc.sizes, tc.n, tc.limit)); got != tc.want {
			t.Errorf("cutEvenly(%v, %d, %d) = %s, want %s", tc.sizes, tc.n, tc.limit, got, tc.want)
		}
	}
}
