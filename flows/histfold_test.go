package flows

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"tributary/schema"
)

// randomHistory returns n events in sequence order (sequences from 1, in steps of 1 or 2) of rows
// (name STRING, amount DECIMAL, seq BIGINT) drawn from few values, so that tracked columns often
// repeat; about one in five is a delete, and with nulls some values are NULL.
func randomHistory(r *rand.Rand, n int, nulls bool) []histEvent {
	out := make([]histEvent, 0, n)
	seq := int64(0)
	for range n {
		seq += 1 + r.Int64N(2)
		if r.IntN(5) == 0 {
			out = append(out, histEvent{seq: []any{seq}, delete: true})
			continue
		}
		row := []any{[]string{"a", "b"}[r.IntN(2)], schema.Decimal(r.Int64N(2)), int64(r.IntN(2))}
		if nulls {
			for i := range row {
				if r.IntN(4) == 0 {
					row[i] = nil
				}
			}
		}
		out = append(out, histEvent{seq: []any{seq}, row: row})
	}
	return out
}

// TestFoldOntoSplit: folding a history cut anywhere, the second part onto the versions of the
// first, gives the versions of the whole history, for any tracked columns, with and without
// ignore_null_updates.
func TestFoldOntoSplit(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	trackeds := [][]int{{0, 1, 2}, {0}, {2, 1}, {}}
	for range 2000 {
		nulls := r.IntN(2) == 0
		hist := randomHistory(r, 1+r.IntN(12), nulls)
		tracked := trackeds[r.IntN(len(trackeds))]
		want := render(foldHistory(hist, tracked, nulls, nil))
		for cut := 0; cut <= len(hist); cut++ {
			head := foldOnto(nil, false, hist[:cut], tracked, nulls, nil)
			open := cut > 0 && !hist[cut-1].delete
			if got := render(foldOnto(head, open, hist[cut:], tracked, nulls, nil)); got != want {
				t.Fatalf("cut at %d of %v (tracked %v, nulls %v):\ngot  %s\nwant %s", cut, hist, tracked, nulls, got, want)
			}
		}
	}
}

// TestCheapFirst: the tracked columns come back as the same set, numbers before strings, each
// group in its order.
func TestCheapFirst(t *testing.T) {
	t.Parallel()
	sch, err := schema.ParseDDL("name STRING, id BIGINT, note STRING, amount DECIMAL(10,2), tags ARRAY<STRING>, day DATE")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cheapFirst([]int{0, 2, 3, 4, 5}, sch), []int{3, 5, 0, 2, 4}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSameColumns: the fast paths agree with schema.Equal, NULLs included.
func TestSameColumns(t *testing.T) {
	t.Parallel()
	vals := []any{nil, int64(1), int64(2), "a", "b", "", schema.Decimal(1), schema.Decimal(2), 1.5, int32(1), []any{int64(1)}, []any{int64(2)}}
	for _, a := range vals {
		for _, b := range vals {
			if fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b) && a != nil && b != nil {
				continue // a column holds values of one type
			}
			if got, want := sameColumns([]any{a}, []any{b}, []int{0}), schema.Equal(a, b); got != want {
				t.Errorf("sameColumns(%v, %v) = %v, want %v", a, b, got, want)
			}
		}
	}
}

// TestVersionsSharedPrefix: for a stored history and a random batch, the change rows that
// versions and versionDiff make from the histories' shared prefix are those of folding and
// diffing both histories whole, and the versions after are the fold of the merged history; the
// first position mergeHistoryAt reports is where the two histories part.
func TestVersionsSharedPrefix(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	toRow := func(v version) []any {
		return append(append([]any(nil), v.row...), seqValue(v.start), seqValue(v.end))
	}
	diff := func(old, cur []version) string {
		rows := make([][]any, len(cur))
		for i, v := range cur {
			rows[i] = toRow(v)
		}
		cdc, types, ups, dels := versionDiff(nil, nil, old, cur, toRow, rows)
		var b []string
		for i := range cdc {
			b = append(b, fmt.Sprintf("%s%v", types[i], cdc[i]))
		}
		slices.Sort(b) // versionDiff's order is not part of its contract
		return fmt.Sprintf("%d/%d %s", ups, dels, strings.Join(b, " "))
	}
	var oldBuf, curBuf []version
	for range 3000 {
		nulls := r.IntN(3) == 0
		mode := historyMode{scd2: true, tracked: [][]int{{0, 1, 2}, {0}, {2}}[r.IntN(3)], ignoreNulls: nulls}
		stored := randomHistory(r, r.IntN(10), nulls)
		// The batch: new sequences anywhere (late, between, after), re-delivered and tied ones.
		fresh := randomHistory(r, 1+r.IntN(6), nulls)
		evs := make([]event, 0, len(fresh)+2)
		for i, e := range fresh {
			seq := e.seq[0].(int64) + int64(r.IntN(12))
			evs = append(evs, event{seq: []any{seq}, row: e.row, delete: e.delete, arrival: i})
		}
		if len(stored) > 0 && r.IntN(2) == 0 {
			s := stored[r.IntN(len(stored))]
			evs = append(evs, event{seq: s.seq, row: s.row, delete: s.delete || r.IntN(3) == 0, arrival: len(evs)})
		}
		batch := make([]*event, len(evs))
		for i := range evs {
			batch[i] = &evs[i]
		}
		merged, first, _ := mergeHistoryAt(stored, batch)
		if first < 0 {
			if !slices.EqualFunc(merged, stored, func(a, b histEvent) bool { return compareSeq(a.seq, b.seq) == 0 && a.delete == b.delete }) {
				t.Fatalf("unchanged, but the history is %v, was %v", merged, stored)
			}
			continue
		}
		for i := range first {
			if compareSeq(merged[i].seq, stored[i].seq) != 0 || merged[i].delete != stored[i].delete || !sameRow(merged[i].row, stored[i].row) {
				t.Fatalf("first = %d, but the histories part at %d: %v vs %v", first, i, merged, stored)
			}
		}
		if first < len(stored) && compareSeq(merged[first].seq, stored[first].seq) == 0 && merged[first].delete == stored[first].delete && sameRow(merged[first].row, stored[first].row) {
			t.Fatalf("first = %d, but the histories agree there: %v vs %v", first, merged, stored)
		}
		wholeOld := foldHistory(stored, mode.tracked, nulls, nil)
		wholeCur := foldHistory(merged, mode.tracked, nulls, nil)
		want := diff(wholeOld, wholeCur)
		old, cur, common := mode.versions(stored, merged, first, nil, nil, oldBuf, curBuf)
		if got, w := render(cur), render(wholeCur); got != w {
			t.Fatalf("versions after: got %s, want %s", got, w)
		}
		if got := diff(old, cur[common:]); got != want {
			t.Fatalf("stored %v, merged %v (first %d, common %d):\ngot  %s\nwant %s", stored, merged, first, common, got, want)
		}
		if got, w := render(cur[:common]), render(wholeOld[:common]); got != w {
			t.Fatalf("common versions %s are not the first versions before, %s", got, w)
		}
		oldBuf, curBuf = old[:0], cur[:0] // as applyHistory reuses them
	}
}

// TestEncodeAppended: a history that grew at its end, encoded as the stored encoding followed by
// the new events, is encoded as the whole history is; the stored encoding, a view of larger
// memory as a segment's bytes are, is left as it was, and so is what follows it.
func TestEncodeAppended(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	sch, err := schema.ParseDDL("name STRING, amount DECIMAL(10,2), seq BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	s := &histState{dataSch: sch}
	for range 500 {
		hist := randomHistory(r, 1+r.IntN(10), r.IntN(2) == 0)
		n := r.IntN(len(hist) + 1)
		seg := append(encodeHistEvents(nil, hist[:n]), "next key"...)
		blob := seg[:len(seg)-len("next key")] // with room after it, as a view of a segment has
		if n == 0 {
			blob = nil
		}
		before := string(seg)
		hk := &histKey{}
		hk.setEvents(hist)
		s.encodeAppended(hk, blob, n)
		if got, want := string(hk.blob), string(encodeHistEvents(nil, hist)); got != want || hk.events != nil {
			t.Fatalf("%d of %d events stored: got %x, want %x (events kept: %v)", n, len(hist), got, want, hk.events != nil)
		}
		if string(seg) != before {
			t.Fatalf("the stored encoding or what follows it changed")
		}
	}
}

// TestGroupByKeyKinds: keys of one BIGINT (looked up by value) and other keys (by encoding) are
// grouped alike: keys in order of first arrival, each with its events in arrival order, and the
// index holds every key's encoding.
func TestGroupByKeyKinds(t *testing.T) {
	t.Parallel()
	keys := [][]any{{int64(5)}, {"5"}, {int64(5), "a"}, {int64(-1)}, {"5"}, {int64(5)}, {int32(5)}, {int64(-1)}, {int64(5), "a"}}
	evs := make([]event, len(keys))
	for i, k := range keys {
		evs[i] = event{key: k, arrival: i}
	}
	g := groupByKey(evs)
	var got []string
	for i, k := range g.keys {
		if g.index[k] != i {
			t.Errorf("index of key %d is %d", i, g.index[k])
		}
		var arr []int
		for _, ev := range g.events(i) {
			arr = append(arr, ev.arrival)
		}
		got = append(got, fmt.Sprintf("%v:%v", keys[arr[0]], arr))
	}
	if s, want := strings.Join(got, " "), "[5]:[0 5] [5]:[1 4] [5 a]:[2 8] [-1]:[3 7] [5]:[6]"; s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}

// TestTailOf: the tail read from a key's encoded events has the last sequence of its history and,
// when the last version is open, the start and row of the fold's last version; the bounds of
// the events are those of each event's own encoding, and damaged bytes are refused.
func TestTailOf(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(15, 16))
	sch, err := schema.ParseDDL("name STRING, amount DECIMAL(10,2), seq BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	s := &histState{dataSch: sch}
	var offs []int
	for range 2000 {
		hist := randomHistory(r, 1+r.IntN(12), false)
		tracked := [][]int{{0, 1, 2}, {0}, {1}, {}}[r.IntN(4)]
		blob := encodeHistEvents(nil, hist)
		bounds, ok := histEventBounds(nil, blob)
		want, end := []int{}, 0
		for _, e := range hist {
			want = append(want, end)
			end += len(encodeHistEvents(nil, []histEvent{e}))
		}
		if want = append(want, end); !ok || !slices.Equal(bounds, want) {
			t.Fatalf("bounds %v (ok %v), want %v", bounds, ok, want)
		}
		hk := &histKey{blob: blob, nEvents: len(hist)}
		var tail histTail
		if tail, offs, ok = s.tailOf(hk, tracked, offs); !ok {
			t.Fatalf("tailOf refused %v", hist)
		}
		vs := foldHistory(hist, tracked, false, nil)
		last := vs[max(len(vs)-1, 0):]
		if compareSeq(tail.lastSeq, hist[len(hist)-1].seq) != 0 || tail.open != (len(last) > 0 && last[0].end == nil) {
			t.Fatalf("%v: tail %+v, versions %s", hist, tail, render(vs))
		}
		if tail.open {
			if got, want := render([]version{{start: tail.openStart, row: tail.openRow}}), render(last); got != want {
				t.Fatalf("%v (tracked %v): open version %s, want %s", hist, tracked, got, want)
			}
		}
		if _, _, ok := s.tailOf(&histKey{blob: blob[:len(blob)-1], nEvents: len(hist)}, tracked, offs); ok {
			t.Fatalf("a cut blob was read")
		}
		if _, _, ok := s.tailOf(&histKey{blob: blob, nEvents: len(hist) + 1}, tracked, offs); ok {
			t.Fatalf("a blob of fewer events than the key's was read")
		}
	}
}
