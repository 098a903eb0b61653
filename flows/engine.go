package flows

import (
	"tributary/schema"
)

// event is one change event of an APPLY CHANGES batch, in arrival order.
type event struct {
	key     []any
	seq     []any
	delete  bool
	row     []any // the target's columns
	arrival int   // position in the batch (file order, then line order)
}

// decision is what a batch does to one key of an SCD type 1 target.
type decision int

const (
	noop          decision = iota
	insertRow              // the key becomes live (new key, or newer than its tombstone)
	updateRow              // the live row is replaced
	deleteRow              // the live row leaves the table; a tombstone stays
	tombstoneOnly          // a delete for a key that is not live: only the tombstone moves
	truncateRow            // a truncate removes the live row (SCD type 1)
)

// keyChange is the outcome for one key.
type keyChange struct {
	kb    string // encoded key
	win   *event
	what  decision
	entry *cdcEntry // the state before the batch (nil for a key never seen)
}

// reduceResult is the batch reduced to one winning event per key.
type reduceResult struct {
	winners map[string]*event
	order   []string // keys in order of first arrival, so output is deterministic
	ties    int64
}

// reduce picks per key the event with the highest sequence. On equal sequences a delete beats
// an upsert and, between upserts, the later arrival wins (semantics.md, Decision on ties); each
// tie between events that differ is counted.
func reduce(events []event) reduceResult {
	res := reduceResult{winners: make(map[string]*event, len(events))}
	var kb []byte
	for i := range events {
		ev := &events[i]
		kb = schema.AppendKey(kb[:0], ev.key)
		cur, ok := res.winners[string(kb)]
		if !ok {
			k := string(kb)
			res.winners[k] = ev
			res.order = append(res.order, k)
			continue
		}
		c := schema.CompareTuple(ev.seq, cur.seq)
		switch {
		case c > 0:
			res.winners[string(kb)] = ev
		case c == 0:
			if !sameEvent(ev, cur) {
				res.ties++
			}
			if ev.delete && !cur.delete {
				res.winners[string(kb)] = ev
			} else if !ev.delete && !cur.delete && ev.arrival > cur.arrival {
				res.winners[string(kb)] = ev
			}
		}
	}
	return res
}

func sameEvent(a, b *event) bool {
	if a.delete != b.delete {
		return false
	}
	if a.delete {
		return true
	}
	for i := range a.row {
		if !schema.Equal(a.row[i], b.row[i]) {
			return false
		}
	}
	return true
}

// decide compares each winner with the stored state (semantics.md, APPLY CHANGES): an event at
// or below the stored sequence of a live row or tombstone changes nothing, except that a delete
// at the live row's own sequence wins the tie. It returns the changes in first-arrival order and
// the number of ties with stored rows.
func decide(red reduceResult, state map[string]*cdcEntry) ([]keyChange, int64) {
	out := make([]keyChange, 0, len(red.order))
	var ties int64
	for _, k := range red.order {
		w := red.winners[k]
		e := state[k]
		ch := keyChange{kb: k, win: w, entry: e}
		switch {
		case e == nil:
			if w.delete {
				ch.what = tombstoneOnly
			} else {
				ch.what = insertRow
			}
		case e.deleted:
			if schema.CompareTuple(w.seq, e.seq) > 0 {
				if w.delete {
					ch.what = tombstoneOnly
				} else {
					ch.what = insertRow
				}
			}
		default:
			c := schema.CompareTuple(w.seq, e.seq)
			switch {
			case c > 0 && w.delete:
				ch.what = deleteRow
			case c > 0:
				ch.what = updateRow
			case c == 0 && w.delete:
				ch.what = deleteRow
				ties++
			}
		}
		if ch.what != noop {
			out = append(out, ch)
		}
	}
	return out, ties
}
