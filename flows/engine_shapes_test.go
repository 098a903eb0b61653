package flows

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"tributary/schema"
)

// TestReduceKeyAndSequenceShapes: whatever the types of the key and the sequence (the BIGINT
// fast path, INT, STRING, TIMESTAMP, several columns, and a fold that leaves the fast path on a
// NULL sequence), reduce picks per key what the rules of semantics.md pick: the highest sequence;
// on a tie a delete beats an upsert, and between upserts the later arrival wins; keys in order of
// first arrival.
func TestReduceKeyAndSequenceShapes(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name     string
		key, seq func(k, s int64) []any
	}{
		{"BIGINT key, BIGINT sequence", func(k, _ int64) []any { return []any{k} }, func(_, s int64) []any { return []any{s} }},
		{"INT key, INT sequence", func(k, _ int64) []any { return []any{int32(k)} }, func(_, s int64) []any { return []any{int32(s)} }},
		{"STRING key, TIMESTAMP sequence", func(k, _ int64) []any { return []any{fmt.Sprintf("k%d", k)} }, func(_, s int64) []any { return []any{schema.Timestamp(s * 1000)} }},
		{"BIGINT key, STRING sequence", func(k, _ int64) []any { return []any{k} }, func(_, s int64) []any { return []any{fmt.Sprintf("%06d", s)} }},
		{"composite key, two-column sequence", func(k, _ int64) []any { return []any{k % 7, fmt.Sprint(k / 7)} }, func(_, s int64) []any { return []any{s / 5, int32(s % 5)} }},
		{"BIGINT key, BIGINT sequence, NULL sequence half-way", func(k, _ int64) []any { return []any{k} }, func(k, s int64) []any {
			if s == 37 && k == 3 {
				return []any{nil}
			}
			return []any{s}
		}},
	}
	for _, sh := range shapes {
		r := rand.New(rand.NewPCG(5, 6))
		evs := make([]event, 2000)
		ids := make([]int64, len(evs))
		for i := range evs {
			k, s := r.Int64N(50), r.Int64N(60)
			ids[i] = k
			del := r.IntN(6) == 0
			evs[i] = event{key: sh.key(k, s), seq: sh.seq(k, s), delete: del, arrival: i, row: []any{k, fmt.Sprint("v", i)}}
			if del {
				evs[i].row = []any{k, nil}
			}
		}
		nulls := 0
		for _, e := range evs {
			if e.seq[0] == nil {
				nulls++
			}
		}
		if (nulls > 0) != strings.Contains(sh.name, "NULL") {
			t.Fatalf("%s: %d events with a NULL sequence", sh.name, nulls)
		}
		red := reduce(evs)
		// The rules, one key at a time.
		want := map[string]*event{}
		var order []string
		for i := range evs {
			e := &evs[i]
			k := string(appendValues(nil, e.key))
			cur, ok := want[k]
			if !ok {
				want[k] = e
				order = append(order, k)
				continue
			}
			c := schema.CompareTuple(e.seq, cur.seq)
			if c > 0 || c == 0 && (e.delete && !cur.delete || !e.delete && !cur.delete) {
				want[k] = e
			}
		}
		if len(red.order) != len(order) {
			t.Fatalf("%s: %d keys, want %d", sh.name, len(red.order), len(order))
		}
		for i, k := range order {
			if red.order[i] != k || red.index[k] != i {
				t.Fatalf("%s: key %d is %q (index %d), want %q", sh.name, i, red.order[i], red.index[k], k)
			}
			w, e := red.winners[i], want[k]
			if w.delete != e.delete || fmt.Sprint(w.seq) != fmt.Sprint(e.seq) || fmt.Sprint(w.row) != fmt.Sprint(e.row) || w.arrival != e.arrival {
				t.Errorf("%s: key %q: winner %v %v %v (arrival %d), want %v %v %v (arrival %d)", sh.name, k, w.seq, w.delete, w.row, w.arrival, e.seq, e.delete, e.row, e.arrival)
			}
		}
	}
}
