package flows

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestFolderAddAll: folding events in groups (folder.addAll, as the folding goroutine of
// readChangeBatch does) gives exactly what the general fold by encoded key gives, one event at
// a time: the same keys in the same order, winners and ties, also when a key comes back within
// one group (ties included), when an event of another shape (a NULL sequence, a STRING key)
// comes half-way through a group, when the winners fill several blocks of values, and when the
// caller overwrites each group's events once addAll returns (the folder must have copied what
// it keeps).
func TestFolderAddAll(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		keys   int64
		seqs   int64
		n      int
		mutate func(evs []event)
	}{
		{"few keys: repeats and ties within a group", 5, 4, 2000, nil},
		{"many keys: the table grows", 5000, 30, 30_000, nil},
		{"rising sequences", 3000, 0, 20_000, nil},
		{"more keys than a block of values holds", 3 * valsBlock, 0, 8 * valsBlock, nil},
		{"a NULL sequence half-way through a group", 40, 10, 3000, func(evs []event) { evs[1530].seq = []any{nil} }},
		{"a STRING key half-way through a group", 40, 10, 3000, func(evs []event) { evs[777].key = []any{"k"} }},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(11, uint64(ci)))
			events := make([]event, c.n)
			for i := range events {
				seq := int64(i)
				if c.seqs > 0 {
					seq = r.Int64N(c.seqs)
				}
				events[i] = ev(r.Int64N(c.keys), seq, string(rune('a'+r.IntN(2))), r.IntN(7) == 0, i)
			}
			if c.mutate != nil {
				c.mutate(events)
			}
			// The reference: the general fold by encoded key, one event at a time.
			one := &folder{res: reduceResult{index: map[string]int{}}}
			for i := range events {
				one.add(&events[i])
			}
			want := one.finish()

			// The same events in groups of random sizes, each group a copy that is overwritten
			// once folded, as readChangeBatch reuses an eventBuf.
			all := newFolder(0)
			buf := make([]event, 0, 200)
			for at := 0; at < len(events); {
				n := min(len(events)-at, 1+r.IntN(200))
				buf = buf[:0]
				for _, e := range events[at : at+n] {
					e.key = append([]any(nil), e.key...)
					e.seq = append([]any(nil), e.seq...)
					e.row = append([]any(nil), e.row...)
					buf = append(buf, e)
				}
				all.addAll(buf)
				for i := range buf {
					clear(buf[i].key)
					clear(buf[i].seq)
					for j := range buf[i].row {
						buf[i].row[j] = "overwritten"
					}
				}
				at += n
			}
			got := all.finish()
			if !reflect.DeepEqual(got.order, want.order) || got.ties != want.ties || !reflect.DeepEqual(got.tieList, want.tieList) {
				t.Fatalf("%d keys and %d ties, want %d keys and %d ties in the same order", len(got.order), got.ties, len(want.order), want.ties)
			}
			if c.seqs > 0 && c.seqs < 20 && want.ties == 0 {
				t.Fatal("the events do not exercise ties")
			}
			for i := range want.winners {
				if !reflect.DeepEqual(got.winners[i], want.winners[i]) {
					t.Fatalf("key %q: winner %+v, want %+v", want.order[i], *got.winners[i], *want.winners[i])
				}
			}
		})
	}
}
