package flows

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"tributary/schema"
)

// TestTypedFoldMatchesFolder: for BIGINT keys and sequences and every primitive column kind
// (NULLs, NaN, empty strings included), typedFold picks the same winners (key, sequence, row,
// kind, arrival) in the same key order, and counts the same ties with the same sequences, as
// folder does: many equal sequences, deletes and identical replays make every tie rule fire.
// Strings come from a buffer overwritten after each event, as a view's input blocks are reused,
// so a kept string that was not cloned would change.
//
// The arena is compacted often (arenaSlack 8), and strings are longer, so that a winner's string
// moves many times before finish.
func TestTypedFoldMatchesFolder(t *testing.T) {
	saved := arenaSlack
	arenaSlack = 8
	t.Cleanup(func() { arenaSlack = saved })
	kinds := []schema.Kind{schema.Long, schema.Long, schema.Integer, schema.String, schema.Double, schema.Boolean, schema.Long, schema.DecimalKind, schema.DateKind, schema.TimestampKind}
	var data schema.Schema
	for i, k := range kinds {
		data.Fields = append(data.Fields, schema.Field{Name: fmt.Sprintf("c%d", i), Type: schema.Type{Kind: k, Precision: 10, Scale: 2}, Nullable: true})
	}
	long := schema.Schema{Fields: []schema.Field{{Name: "k", Type: schema.Type{Kind: schema.Long}}}}
	// The last seed folds 30,000 keys: finish then boxes the winners in parts (inParts).
	for _, seed := range []uint64{1, 2, 3, 4} {
		keys, events := int64(300), 20000
		if seed == 4 {
			keys, events = 30000, 90000
		}
		r := rand.New(rand.NewPCG(seed, 9))
		gen := func(kind schema.Kind, buf []byte) any {
			if r.IntN(8) == 0 {
				return nil
			}
			x := r.Int64N(3) // few distinct values: ties between equal rows happen
			switch kind {
			case schema.Long:
				return x
			case schema.Integer:
				return int32(x)
			case schema.String:
				// Lengths 0 to 32: a string of up to 16 bytes is held inline until its column
				// needs an arena slot; a longer one fits the slot of the one it beats, or needs
				// a new one; an empty string reserves none.
				if r.IntN(10) == 0 {
					return blockText(buf[:0])
				}
				n := copy(buf, fmt.Sprintf("s%d-%s", x, strings.Repeat("y", int(r.Int64N(30)))))
				return blockText(buf[:n])
			case schema.Double:
				if x == 2 {
					return 0.5
				}
				return float64(x)
			case schema.Boolean:
				return x == 1
			case schema.DecimalKind:
				return schema.Decimal(x)
			case schema.DateKind:
				return schema.Date(x)
			}
			return schema.Timestamp(x)
		}
		// Columns 1 and 6 hold the key and the sequence, as a target's do: the fold takes them
		// from its entries.
		tf := typedFoldFor(long, long, data, 1, 6)
		if tf == nil {
			t.Fatal("typedFoldFor refused primitive columns")
		}
		f := newFolder(0)
		// Events go to typedFold one at a time and in groups of up to 37 (addAll), a group's
		// input memory overwritten once it is folded.
		var group []event
		var bufs [][]byte
		flush := func() {
			if len(group) == 1 {
				tf.add(&group[0])
			} else {
				tf.addAll(group)
			}
			for _, b := range bufs {
				copy(b, strings.Repeat("X", len(b)))
			}
			group, bufs = group[:0], bufs[:0]
		}
		for i := range events {
			buf := make([]byte, 32)
			k, s := r.Int64N(keys), r.Int64N(40)
			ev := event{key: []any{k}, seq: []any{s}, delete: r.IntN(5) == 0, arrival: i, row: make([]any, len(kinds))}
			for c, kind := range kinds {
				ev.row[c] = gen(kind, buf)
			}
			ev.row[1], ev.row[6] = k, s
			owned := event{key: ev.key, seq: ev.seq, delete: ev.delete, arrival: ev.arrival, row: append([]any(nil), ev.row...)}
			ownValues(owned.row)
			f.add(&owned)
			group, bufs = append(group, ev), append(bufs, buf)
			if r.IntN(37) == 0 {
				flush()
			}
		}
		flush()
		want, got := f.finish(), tf.finish()
		if !reflect.DeepEqual(got.order, want.order) || !reflect.DeepEqual(got.keyIndex(), want.keyIndex()) {
			t.Fatalf("seed %d: key order differs", seed)
		}
		for i := range want.winners {
			w, g := want.winners[i], got.winners[i]
			if !reflect.DeepEqual(*g, *w) {
				t.Fatalf("seed %d: key %v: winner %+v, folder's %+v", seed, w.key, *g, *w)
			}
		}
		if got.ties != want.ties || !reflect.DeepEqual(got.tieList, want.tieList) || want.ties == 0 {
			t.Fatalf("seed %d: %d ties, folder %d", seed, got.ties, want.ties)
		}
	}
}

// BenchmarkTypedFold folds 2,000,000 events over 200,000 BIGINT keys with rising sequences (as a
// change feed's bulk load: nearly every event wins), four columns, one a string.
func BenchmarkTypedFold(b *testing.B) {
	long := schema.Schema{Fields: []schema.Field{{Name: "k", Type: schema.Type{Kind: schema.Long}}}}
	data := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}}, {Name: "name", Type: schema.Type{Kind: schema.String}},
		{Name: "amount", Type: schema.Type{Kind: schema.DecimalKind, Precision: 10, Scale: 2}}, {Name: "seq", Type: schema.Type{Kind: schema.Long}},
	}}
	r := rand.New(rand.NewPCG(1, 2))
	evs := make([]event, 2_000_000)
	for i := range evs {
		k := r.Int64N(200_000)
		evs[i] = event{key: []any{k}, seq: []any{int64(i)}, arrival: i, row: []any{k, fmt.Sprint("name-", i), schema.Decimal(i), int64(i)}}
	}
	b.ResetTimer()
	for range b.N {
		tf := typedFoldFor(long, long, data, 0, 3)
		if os.Getenv("ONEBYONE") != "" {
			for i := range evs {
				tf.add(&evs[i])
			}
		} else {
			tf.addAll(evs)
		}
		b.StopTimer()
		tf.finish()
		b.StartTimer()
	}
}

// TestFoldGroupsPanic: a fold that panics on a group (here a typedFold given a string in its
// BIGINT column) makes foldGroups return an error naming the dataset, and the groups sent after
// it are still taken, so that the reading side is never left waiting.
func TestFoldGroupsPanic(t *testing.T) {
	long := schema.Schema{Fields: []schema.Field{{Name: "k", Type: schema.Type{Kind: schema.Long}}}}
	data := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}}, {Name: "n", Type: schema.Type{Kind: schema.Long}}}}
	tf := typedFoldFor(long, long, data, 0, -1)
	in := make(chan *eventBuf)
	errc := make(chan error, 1)
	go func() { errc <- foldGroups("target", tf, in, make(chan *eventBuf, 2)) }()
	in <- &eventBuf{evs: []event{{key: []any{int64(1)}, seq: []any{int64(1)}, row: []any{int64(1), int64(5)}}}}
	in <- &eventBuf{evs: []event{{key: []any{int64(2)}, seq: []any{int64(1)}, row: []any{int64(2), "five"}}}}
	for range 3 {
		in <- &eventBuf{evs: []event{{key: []any{int64(3)}, seq: []any{int64(1)}, row: []any{int64(3), int64(5)}}}}
	}
	close(in)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "folding the change events of target") {
		t.Fatalf("foldGroups returned %v", err)
	}
}

// TestTypedFoldStringSlots follows one record's strings through the cases of inline and arena
// storage, compacting before every write to a known key (arenaSlack far below zero): a short
// string is held inline, a string longer than inlineString takes an arena slot, a longer one
// than its slot a new slot, a shorter one is written over its slot, a NULL keeps its slot until
// a compaction drops it, and after that an empty or short string is held inline again, at a
// record whose old arena offset lies beyond the compacted arena.
func TestTypedFoldStringSlots(t *testing.T) {
	saved := arenaSlack
	arenaSlack = -1 << 20
	t.Cleanup(func() { arenaSlack = saved })
	long := schema.Schema{Fields: []schema.Field{{Name: "k", Type: schema.Type{Kind: schema.Long}}}}
	data := schema.Schema{Fields: []schema.Field{
		{Name: "k", Type: schema.Type{Kind: schema.Long}},
		{Name: "s", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "q", Type: schema.Type{Kind: schema.Long}},
	}}
	tf := typedFoldFor(long, long, data, 0, 2)
	steps := []struct {
		key, seq int64
		s        any
	}{
		{1, 1, strings.Repeat("a", 16)}, // inline
		{2, 1, strings.Repeat("b", 17)}, // too long to be inline: a slot of 24 at 0
		{1, 2, strings.Repeat("a", 24)}, // a slot of 24 at 24
		{2, 2, strings.Repeat("b", 40)}, // longer than its slot: a new one at the end (48)
		{2, 3, nil},                     // NULL: its slot (at 24 once compacted) is kept
		{1, 3, "a"},                     // fits: written over; the compaction dropped key 2's slot
		{2, 4, ""},                      // empty: inline, its old offset beyond the arena
		{2, 5, "bb"},                    // inline
		{1, 5, "c"},                     // over key 1's slot, which it keeps
	}
	want := map[int64]any{}
	for i, st := range steps {
		buf := []byte(fmt.Sprint(st.s))
		var v any
		if st.s != nil {
			v = blockText(buf)
		}
		tf.add(&event{key: []any{st.key}, seq: []any{st.seq}, arrival: i, row: []any{st.key, v, st.seq}})
		copy(buf, "XXXXXXXXXXXXXXXXXXXXXXXXX") // the input memory is reused once folded
		want[st.key] = st.s
	}
	res := tf.finish()
	if len(res.winners) != 2 {
		t.Fatalf("%d winners, want 2", len(res.winners))
	}
	for _, w := range res.winners {
		k := w.key[0].(int64)
		if !reflect.DeepEqual(w.row[1], want[k]) {
			t.Errorf("key %d: s = %#v, want %#v", k, w.row[1], want[k])
		}
	}
}

// TestTypedFoldManyStrings checks typedFold against folder with four string columns whose values
// are NULL, empty, or 1 to 200 bytes long (lengths around multiples of 8, where a slot fits or
// not), deletes, and the input memory overwritten after each group, at arena slacks from far
// below zero (a compaction before every write to a known key) to 1 MiB.
func TestTypedFoldManyStrings(t *testing.T) {
	saved := arenaSlack
	t.Cleanup(func() { arenaSlack = saved })
	kinds := []schema.Kind{schema.String, schema.Long, schema.String, schema.Long, schema.String, schema.Double, schema.String}
	var data schema.Schema
	for i, k := range kinds {
		data.Fields = append(data.Fields, schema.Field{Name: fmt.Sprintf("c%d", i), Type: schema.Type{Kind: k}, Nullable: true})
	}
	long := schema.Schema{Fields: []schema.Field{{Name: "k", Type: schema.Type{Kind: schema.Long}}}}
	for _, slack := range []int{-1 << 20, 0, 8, 1000, 1 << 20} {
		arenaSlack = slack
		for seed := uint64(1); seed <= 6; seed++ {
			r := rand.New(rand.NewPCG(seed, 77))
			tf := typedFoldFor(long, long, data, 1, 3)
			f := newFolder(0)
			keys := int64(50 + 200*int(seed%3))
			var group []event
			var bufs [][]byte
			flush := func() {
				if len(group) == 1 {
					tf.add(&group[0])
				} else if len(group) > 1 {
					tf.addAll(group)
				}
				for _, b := range bufs {
					copy(b, strings.Repeat("X", len(b)))
				}
				group, bufs = group[:0], bufs[:0]
			}
			for i := range 20000 {
				k, s := r.Int64N(keys), r.Int64N(1000)
				ev := event{key: []any{k}, seq: []any{s}, delete: r.IntN(7) == 0, arrival: i, row: make([]any, len(kinds))}
				buf := make([]byte, 0, 1024)
				for c, kind := range kinds {
					switch {
					case c == 1:
						ev.row[c] = k
					case c == 3:
						ev.row[c] = s
					case kind == schema.Long:
						ev.row[c] = r.Int64N(5)
					case kind == schema.Double:
						ev.row[c] = float64(r.IntN(3))
					default:
						switch r.IntN(6) {
						case 0:
							ev.row[c] = nil
						case 1:
							ev.row[c] = blockText(buf[len(buf):len(buf)])
						default:
							n := []int{1, 7, 8, 9, 15, 16, 17, 31, 64, 65, 200}[r.IntN(11)]
							st := len(buf)
							buf = append(buf, fmt.Sprintf("%d:%d:%d:", k, s, c)...)
							for len(buf)-st < n {
								buf = append(buf, byte('a'+r.IntN(26)))
							}
							ev.row[c] = blockText(buf[st:len(buf)])
						}
					}
				}
				owned := event{key: ev.key, seq: ev.seq, delete: ev.delete, arrival: ev.arrival, row: append([]any(nil), ev.row...)}
				ownValues(owned.row)
				f.add(&owned)
				group, bufs = append(group, ev), append(bufs, buf[:cap(buf)])
				if r.IntN(20) == 0 {
					flush()
				}
			}
			flush()
			want, got := f.finish(), tf.finish()
			if !reflect.DeepEqual(got.order, want.order) {
				t.Fatalf("slack %d seed %d: key order differs", slack, seed)
			}
			for i := range want.winners {
				w, g := want.winners[i], got.winners[i]
				if !reflect.DeepEqual(*g, *w) {
					t.Fatalf("slack %d seed %d: key %v: winner %+v, folder's %+v", slack, seed, w.key, *g, *w)
				}
			}
		}
	}
}
