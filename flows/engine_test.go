package flows

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// ev builds an event with key id, sequence seq, value v ("" with del for a delete).
func ev(id, seq int64, v string, del bool, arrival int) event {
	e := event{key: []any{id}, seq: []any{seq}, delete: del, arrival: arrival}
	if !del {
		e.row = []any{id, v}
	} else {
		e.row = []any{id, nil}
	}
	return e
}

func keyOf(id int64) string { return string(appendValues(nil, []any{id})) }

func TestReduce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		events   []event
		wantVal  map[int64]string // "" = delete wins
		wantTies int64
	}{
		{"highest sequence wins whatever the arrival order",
			[]event{ev(1, 5, "b", false, 0), ev(1, 3, "a", false, 1), ev(1, 6, "c", false, 2), ev(1, 4, "x", false, 3)},
			map[int64]string{1: "c"}, 0},
		{"delete beats upsert on a tie, in either order",
			[]event{ev(1, 5, "a", false, 0), ev(1, 5, "", true, 1), ev(2, 5, "", true, 2), ev(2, 5, "b", false, 3)},
			map[int64]string{1: "", 2: ""}, 2},
		{"between upserts on a tie the later arrival wins",
			[]event{ev(1, 5, "first", false, 0), ev(1, 5, "second", false, 1)},
			map[int64]string{1: "second"}, 1},
		{"exact duplicates are not ties",
			[]event{ev(1, 5, "a", false, 0), ev(1, 5, "a", false, 1)},
			map[int64]string{1: "a"}, 0},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			red := reduce(c.events)
			if red.ties != c.wantTies {
				t.Errorf("ties = %d, want %d", red.ties, c.wantTies)
			}
			for id, want := range c.wantVal {
				w := red.winners[red.index[keyOf(id)]]
				got := ""
				if !w.delete {
					got = w.row[1].(string)
				}
				if got != want {
					t.Errorf("key %d: winner %q, want %q", id, got, want)
				}
			}
		})
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	state := map[string]*cdcEntry{
		keyOf(1): {seq: []any{int64(5)}, file: "f1"},              // live at 5
		keyOf(2): {seq: []any{int64(6)}, deleted: true},           // tombstone at 6
		keyOf(3): {seq: []any{int64(5)}, file: "f1"},              // live at 5
		keyOf(4): {seq: []any{int64(5)}, file: "f2"},              // live at 5
		keyOf(5): {seq: []any{int64(2)}, deleted: true, file: ""}, // tombstone at 2
		keyOf(6): {seq: []any{int64(5)}, file: "f2"},              // live at 5
		keyOf(9): {seq: []any{int64(4)}, deleted: true},           // tombstone at 4
	}
	events := []event{
		ev(1, 4, "late", false, 0),          // late update: no-op
		ev(2, 3, "late insert", false, 1),   // below the tombstone: no-op
		ev(3, 5, "", true, 2),               // delete at the live row's own sequence: delete wins
		ev(4, 5, "same seq", false, 3),      // upsert at the stored sequence: no-op
		ev(5, 3, "back", false, 4),          // newer than the tombstone: re-insert
		ev(6, 9, "newer", false, 5),         // update
		ev(7, 1, "", true, 6),               // delete of an unknown key: tombstone only
		ev(8, 1, "new", false, 7),           // update of a never-inserted key: insert
		ev(9, 4, "at the delete", false, 8), // upsert at the tombstone's sequence: the delete wins, a tie
	}
	changes, ties, same := decide(reduce(events), func(kb string) *cdcEntry { return state[kb] })
	want := map[int64]decision{3: deleteRow, 5: insertRow, 6: updateRow, 7: tombstoneOnly, 8: insertRow}
	if len(changes) != len(want) {
		t.Fatalf("got %d changes, want %d: %+v", len(changes), len(want), changes)
	}
	for _, ch := range changes {
		id := ch.win.key[0].(int64)
		if want[id] != ch.what {
			t.Errorf("key %d: decision %d, want %d", id, ch.what, want[id])
		}
	}
	// Key 3's delete and key 9's upsert tie with what is stored (semantics.md, Decision on ties:
	// a delete beats an upsert across batches). Key 4's upsert at its live row's sequence is a
	// no-op, and a tie only if its row differs from the stored one: decide leaves that to the
	// caller, which reads the row.
	if ties.n != 2 {
		t.Errorf("ties with stored rows = %d, want 2", ties.n)
	}
	if len(same) != 1 || same[0].win.key[0].(int64) != 4 {
		t.Errorf("upserts at the stored sequence = %+v, want key 4's", same)
	}
}

// TestReduceAbove: reducing every event and then leaving out what is at or below a truncate
// sequence (reduceResult.above, as a batch reduced while read does) gives the winners and the
// ties of reducing only the events above it.
func TestReduceAbove(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 200 {
		events := make([]event, 40)
		for i := range events {
			events[i] = ev(r.Int64N(6), r.Int64N(8), []string{"a", "b"}[r.IntN(2)], r.IntN(4) == 0, i)
		}
		trunc := []any{r.Int64N(8)}
		var live []event
		for _, e := range events {
			if compareSeq(e.seq, trunc) > 0 {
				live = append(live, e)
			}
		}
		want, got := reduce(live), reduce(events).above(trunc)
		if got.ties != want.ties || len(got.order) != len(want.order) {
			t.Fatalf("iteration %d: %d keys and %d ties, want %d and %d", iter, len(got.order), got.ties, len(want.order), want.ties)
		}
		for k, i := range want.index {
			j, ok := got.index[k]
			if !ok || !reflect.DeepEqual(*got.winners[j], *want.winners[i]) {
				t.Fatalf("iteration %d: key %q: winner %+v, want %+v", iter, k, got.winners[j], want.winners[i])
			}
		}
	}
}

// TestFolderIntPath: the fold of events whose key and sequence are each one BIGINT (looked up
// through folder.ints) gives exactly what the general fold by encoded key gives: the same keys
// in the same order, the same winners, the same ties; so does a fold that leaves that path
// half-way, when an event with a NULL sequence comes.
func TestFolderIntPath(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 9))
	events := make([]event, 3000)
	for i := range events {
		events[i] = ev(r.Int64N(60), r.Int64N(40), string(rune('a'+r.IntN(3))), r.IntN(8) == 0, i)
	}
	general := func(evs []event) reduceResult {
		f := &folder{res: reduceResult{index: map[string]int{}}}
		for i := range evs {
			f.add(&evs[i])
		}
		return f.finish()
	}
	check := func(name string, evs []event) {
		want, got := general(evs), reduce(evs)
		if !reflect.DeepEqual(got.order, want.order) || !reflect.DeepEqual(got.index, want.index) {
			t.Fatalf("%s: keys %d in order %v..., want %d in order %v...", name, len(got.order), got.order[:3], len(want.order), want.order[:3])
		}
		if got.ties != want.ties || !reflect.DeepEqual(got.tieList, want.tieList) {
			t.Errorf("%s: %d ties, want %d", name, got.ties, want.ties)
		}
		for i := range want.winners {
			if !reflect.DeepEqual(got.winners[i], want.winners[i]) {
				t.Errorf("%s: key %d: winner %+v, want %+v", name, i, *got.winners[i], *want.winners[i])
			}
		}
		if want.ties == 0 || len(want.order) != 60 {
			t.Fatalf("%s: %d ties over %d keys: the events do not exercise ties", name, want.ties, len(want.order))
		}
	}
	check("BIGINT keys and sequences", events)
	mixed := append([]event(nil), events...)
	mixed[1500].seq = []any{nil}
	if _, ok := reduce(mixed[:1500]).index[keyOf(0)]; !ok {
		t.Fatal("key 0 has no event before the NULL sequence")
	}
	check("a NULL sequence half-way", mixed)

	// Thousands of keys, each with a few events, folded from an empty table as a batch read
	// group by group is (the table of winners grows several times).
	many := make([]event, 40_000)
	for i := range many {
		many[i] = ev(r.Int64N(9000)-4500, r.Int64N(6), string(rune('a'+r.IntN(2))), r.IntN(9) == 0, i)
	}
	grown := newFolder(0)
	for i := range many {
		grown.add(&many[i])
	}
	want, got := general(many), grown.finish()
	if len(want.order) < 8000 || !reflect.DeepEqual(got.order, want.order) || got.ties != want.ties || !reflect.DeepEqual(got.tieList, want.tieList) {
		t.Fatalf("many keys: %d keys and %d ties, want %d keys and %d ties in the same order", len(got.order), got.ties, len(want.order), want.ties)
	}
	for i := range want.winners {
		if !reflect.DeepEqual(got.winners[i], want.winners[i]) {
			t.Fatalf("many keys: key %d: winner %+v, want %+v", i, *got.winners[i], *want.winners[i])
		}
	}
}
