package flows

import (
	"unsafe"

	"tributary/schema"
)

// keyGroups is a batch's events grouped by key: keys in order of their first event, each key's
// events in arrival order, all of them in one slice.
type keyGroups struct {
	keys   []string       // the encoded keys (appendValues), in order of first arrival
	index  map[string]int // position in keys by encoded key
	start  []int          // the events of keys[i] are byKey[start[i]:start[i+1]]
	byKey  []*event
	nBatch int   // the keys of the batch; keys added to index later have no events
	sink   int64 // the loads of touchEvents, kept so that they are made
}

// touchAhead is how many keys' events applyHistory loads ahead of folding them (touchEvents).
const touchAhead = 8

// touchEvents loads the values of evs (their sequences, and each row's values and the first byte
// of its strings) and returns a sum of them. A batch's events are grouped by key but lie in
// memory in arrival order, so that folding a key's history misses the cache on nearly every
// value: loads made together, independent of each other, overlap their misses, and the fold that
// follows finds the lines in cache.
func touchEvents(evs []*event) int64 {
	var sink int64
	for _, e := range evs {
		for _, v := range e.seq {
			if x, ok := v.(int64); ok {
				sink += x
			}
		}
		for _, v := range e.row {
			switch x := v.(type) {
			case string:
				if len(x) > 0 {
					sink += int64(x[0])
				}
			case int64:
				sink += x
			case schema.Decimal:
				sink += int64(x)
			}
		}
	}
	return sink
}

// groupByKey groups events, given in arrival order in one or more parts, by their key: one map
// entry and one string per key, and two slices for all the events (a counting sort by key,
// which keeps each key's arrival order).
func groupByKey(parts ...[]event) *keyGroups {
	g := &keyGroups{index: map[string]int{}}
	n := 0
	for _, events := range parts {
		n += len(events)
	}
	ids := make([]int32, 0, n)
	var kb []byte
	// A key of one BIGINT is looked up by its value; its encoding is made once per key.
	var byLong map[int64]int32
	for _, events := range parts {
		for i := range events {
			key := events[i].key
			if len(key) == 1 {
				if x, ok := key[0].(int64); ok {
					if byLong == nil {
						byLong = map[int64]int32{}
					}
					id, ok := byLong[x]
					if !ok {
						kb = appendValues(kb[:0], key)
						id = int32(g.add(string(kb)))
						byLong[x] = id
					}
					ids = append(ids, id)
					continue
				}
			}
			kb = appendValues(kb[:0], key)
			id, ok := g.index[string(kb)]
			if !ok {
				id = g.add(string(kb))
			}
			ids = append(ids, int32(id))
		}
	}
	g.nBatch = len(g.keys)
	g.start = make([]int, len(g.keys)+1)
	for _, id := range ids {
		g.start[id+1]++
	}
	for i := 1; i < len(g.start); i++ {
		g.start[i] += g.start[i-1]
	}
	next := append([]int(nil), g.start[:len(g.keys)]...)
	g.byKey = make([]*event, n)
	i := 0
	for _, events := range parts {
		for j := range events {
			id := ids[i]
			g.byKey[next[id]] = &events[j]
			next[id]++
			i++
		}
	}
	return g
}

// add adds the encoded key k, which the groups do not hold yet, and returns its position.
func (g *keyGroups) add(k string) int {
	id := len(g.keys)
	g.index[k] = id
	g.keys = append(g.keys, k)
	return id
}

// events returns the events of the i-th key, in arrival order (none for a key added to the
// index after grouping).
func (g *keyGroups) events(i int) []*event {
	if i >= g.nBatch {
		return nil
	}
	return g.byKey[g.start[i]:g.start[i+1]]
}

// rowSlab hands out rows of width values carved from shared backing arrays, so that building
// many rows costs a few allocations. A row stays valid (and keeps its backing array alive) as
// long as it is referenced.
type rowSlab struct {
	width int
	buf   []any
	vals  *valueSlab // where the values put in the rows are copied (applyHistory's toRow)
}

// slabRows is how many rows one backing array holds.
const slabRows = 4096

// row returns a new row of width nil values.
func (s *rowSlab) row() []any {
	if len(s.buf) < s.width {
		s.buf = make([]any, s.width*slabRows)
	}
	r := s.buf[:s.width:s.width]
	s.buf = s.buf[s.width:]
	return r
}

// maxSlabString is the longest string whose bytes a valueSlab copies.
const maxSlabString = 256

// valueSlab copies values into shared arrays in the order they come: numbers (and string headers)
// into a boxSlab, the bytes of strings up to 256 bytes into byte arrays. The rows of an SCD type
// 2 batch are made key by key from events that arrived in another order, their values all over
// the memory of the batch; re-boxed as the rows are made, while the values are in the cache, they
// lie in the order the data file writer reads them. Values of other types (bool, nested) are
// returned as they are.
type valueSlab struct {
	box   *boxSlab
	bytes []byte
}

func newValueSlab() *valueSlab { return &valueSlab{box: newBoxSlab(slabRows*4, slabRows)} }

// rebox returns v, equal and of the same type, with its value copied into the slab.
func (s *valueSlab) rebox(v any) any {
	switch x := v.(type) {
	case int64:
		return s.box.int64(x)
	case int32:
		return s.box.int32(x)
	case float64:
		return s.box.float64(x)
	case schema.Decimal:
		return s.box.decimal(x)
	case schema.Date:
		return s.box.date(x)
	case schema.Timestamp:
		return s.box.timestamp(x)
	case string:
		if len(x) == 0 || len(x) > maxSlabString {
			return s.box.string(x) // nothing to copy, or a long one: only its header
		}
		if cap(s.bytes)-len(s.bytes) < len(x) {
			s.bytes = make([]byte, 0, 64<<10)
		}
		n := len(s.bytes)
		s.bytes = append(s.bytes, x...)
		return s.box.string(unsafe.String(unsafe.SliceData(s.bytes[n:]), len(x)))
	}
	return v
}
