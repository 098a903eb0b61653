package flows

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"tributary/schema"
)

// histColumns is the batch of an SCD type 2 target that has no history yet (its first batch, or
// the first after a full refresh), when the key is one BIGINT, the sequence one BIGINT and every
// target column a primitive (typedFoldFor's shape). readChangeBatch folds the batch into it as it
// is read, on the folding goroutine: each event's key and kind in columns of their own (which
// order sorts), and the rest in one record of stride words: its sequence, its NULL bits (bit c
// for data column c), then each stored data column (not the key's or the sequence's) unboxed: a
// fixed-width value as one int64 word, as typedFold keeps it, a string as three: its length,
// then its bytes (up to inlineString of them) or where in the arena they are (a chunk, high 32
// bits, and an offset in it). Records and columns are in chunks of a fixed size, so that nothing
// is copied to grow. The events' memory is then reused for the next group, and the batch takes
// about a tenth of the memory of its events. gather, which reads the events in key order and so
// at random, then meets one record an event (one or two cache lines, short strings included)
// rather than a column each.
//
// fold turns the columns into what keyWorker.run makes of a batch's new keys (every key is new):
// the same histories, versions, rows, ties and state, by the same rules (mergeHistoryInto,
// foldOnto, encodeHistEvents), computed from the events sorted by key, sequence and arrival
// (order, then gather) and gathered in that order (histBatch). The keys come out in key order
// rather than in order of first arrival, which only changes the order of the rows in the data
// files.
type histColumns struct {
	kinds  []schema.Kind // the target's data columns
	strAt  []int         // per data column: its index among the string columns, or -1
	keyCol int           // the data column that holds the key (its values are keys), or -1
	seqCol int           // the data column that holds the sequence, or -1
	// wordAt is, per data column, the index in a record of its first word, or -1 for the key's
	// and the sequence's.
	wordAt   []int
	stride   int           // words per record
	strCols  int           // string columns
	n        int           // events
	keys     chunks[int64] // per event, in arrival order
	dels     chunks[bool]  // per event, in arrival order: whether it is a delete
	recs     [][]int64     // per event, in arrival order, 1<<chunkBits records a chunk
	arena    [][]byte      // the strings longer than inlineString
	strBytes int           // the bytes of all the strings
	sink     atomic.Int64  // the loads gather makes ahead, kept so that they are made
}

// gatherGroup is how many events' records gather loads ahead of copying them.
const gatherGroup = 16

// The words at the start of a histColumns record.
const (
	histSeq   = iota // the sequence
	histNulls        // bit c set: data column c is NULL
	histHead         // the words before the first data column's
)

// chunkBits sets the size of a histColumns chunk: 1<<chunkBits values.
const chunkBits = 16

// chunks is a column of values in chunks of 1<<chunkBits, appended to at the end.
type chunks[T any] struct {
	cs [][]T
}

// add appends v as value n (the column's length before).
func (c *chunks[T]) add(n int, v T) {
	if n&(1<<chunkBits-1) == 0 {
		c.cs = append(c.cs, make([]T, 1<<chunkBits))
	}
	c.cs[n>>chunkBits][n&(1<<chunkBits-1)] = v
}

// at returns value i.
func (c *chunks[T]) at(i int32) T { return c.cs[i>>chunkBits][i&(1<<chunkBits-1)] }

// arenaChunk is the size of a chunk of a histColumns arena (a longer string gets one of its own).
const arenaChunk = 1 << 20

// histColumnsOff turns the columnar first batch off, so that tests can compare it with the
// general fold of the same input.
var histColumnsOff atomic.Bool

// histColumnFolds counts the batches folded in columns, for tests.
var histColumnFolds atomic.Int64

// histColumnsFor returns the columns of a batch of this shape, or nil when it is not of it (as
// typedFoldFor). keyCol and seqCol are the data columns of the key and the sequence (-1: none).
func histColumnsFor(keySch, seqSch, dataSch schema.Schema, keyCol, seqCol int) *histColumns {
	if histColumnsOff.Load() || typedFoldFor(keySch, seqSch, dataSch, keyCol, seqCol) == nil {
		return nil
	}
	c := &histColumns{keyCol: keyCol, seqCol: seqCol, stride: histHead}
	for col, f := range dataSch.Fields {
		c.kinds = append(c.kinds, f.Type.Kind)
		at := -1
		if f.Type.Kind == schema.String {
			at, c.strCols = c.strCols, c.strCols+1
		}
		c.strAt = append(c.strAt, at)
		switch {
		case !c.stored(col):
			c.wordAt = append(c.wordAt, -1)
		case at >= 0:
			c.wordAt = append(c.wordAt, c.stride)
			c.stride += 3
		default:
			c.wordAt = append(c.wordAt, c.stride)
			c.stride++
		}
	}
	return c
}

// narrow says whether the NULL bits of an event fit a byte (histBatch.nulls8): 8 data columns
// or fewer.
func (c *histColumns) narrow() bool { return len(c.kinds) <= 8 }

// stored says whether data column col has words of its own (not the key's or the sequence's).
func (c *histColumns) stored(col int) bool { return col != c.keyCol && col != c.seqCol }

// rec returns the record of event e.
func (c *histColumns) rec(e int32) []int64 {
	at := int(e&(1<<chunkBits-1)) * c.stride
	return c.recs[e>>chunkBits][at : at+c.stride : at+c.stride]
}

// inlineBytes returns the inlineString bytes of the two words at w.
func inlineBytes(w *int64) *[inlineString]byte {
	return (*[inlineString]byte)(unsafe.Pointer(w))
}

// addAll adds a group of events, which must come in arrival order: the i-th event added is
// arrival i. A NULL key or sequence is kept as 0 (the batch fails on it before it is applied).
func (c *histColumns) addAll(evs []event) {
	for i := range evs {
		ev := &evs[i]
		n := c.n
		if ev.arrival != n {
			panic(fmt.Sprintf("event of arrival %d added as the %d-th", ev.arrival, n))
		}
		k, _ := ev.key[0].(int64)
		s, _ := ev.seq[0].(int64)
		rec := c.next(k, s, ev.delete)
		var nulls uint64
		for col, kind := range c.kinds {
			w := c.wordAt[col]
			if w < 0 {
				continue
			}
			var v any
			if !ev.delete { // a delete keeps no values
				v = ev.row[col]
			}
			switch {
			case v == nil:
				nulls |= 1 << col
			case c.strAt[col] >= 0:
				c.putString(rec, w, v.(string))
			default:
				rec[w] = word(kind, v)
			}
		}
		rec[histNulls] = int64(nulls)
		c.n++
	}
}

// next appends the key and kind of the next event (arrival c.n) and returns its record, its
// sequence set; the caller sets the rest and counts the event (c.n++).
func (c *histColumns) next(k, s int64, del bool) []int64 {
	n := c.n
	c.keys.add(n, k)
	c.dels.add(n, del)
	if n&(1<<chunkBits-1) == 0 {
		c.recs = append(c.recs, make([]int64, (1<<chunkBits)*c.stride))
	}
	rec := c.rec(int32(n)) // zero: a chunk's records are written once
	rec[histSeq] = s
	return rec
}

// putString stores str in the string column whose words in rec start at w: its length, then its
// bytes inline or where the arena holds them.
func (c *histColumns) putString(rec []int64, w int, str string) {
	rec[w] = int64(len(str))
	c.strBytes += len(str)
	if len(str) <= inlineString {
		copy(inlineBytes(&rec[w+1])[:], str)
	} else {
		rec[w+1] = c.place(str)
	}
}

// place copies str into the arena and returns where it is (a chunk, high 32 bits, and an offset
// in it).
func (c *histColumns) place(str string) int64 {
	last := len(c.arena) - 1
	if last < 0 || cap(c.arena[last])-len(c.arena[last]) < len(str) {
		c.arena = append(c.arena, make([]byte, 0, max(arenaChunk, len(str))))
		last++
	}
	off := len(c.arena[last])
	c.arena[last] = append(c.arena[last], str...)
	return int64(last)<<32 | int64(off)
}

// finish ends the batch: the columns are read by fold, so the result is empty.
func (c *histColumns) finish() reduceResult { return reduceResult{} }

// release drops the columns (gathered by then), so that the collector can reuse their memory.
func (c *histColumns) release() {
	c.keys, c.dels, c.recs, c.arena = chunks[int64]{}, chunks[bool]{}, nil, nil
}

// len is the number of events.
func (c *histColumns) len() int { return c.n }

// histSorted is the keys and delete flags of the events in the order order sorted them to,
// read as it sorted them (from the radix sort's words, so that gather reads none of them at
// random), and room for their sequences, which gather reads with the rest of each event's
// record: where the keys span less than 2^32, the keys and the room are the sort's own two arrays
// (the collector, relaxed while a batch is applied, gives no memory back in time; see relaxGC).
// All nil: gather reads the keys and delete flags itself.
type histSorted struct {
	keys, seqs []int64
	dels       []bool
}

// order returns the positions of the events grouped by key, in key order, each key's events in
// order of arrival, and their keys and delete flags in that order: a radix sort by key (stable).
// gather then puts each key's events in order of sequence (sortRuns).
func (c *histColumns) order() (ord []int32, sorted histSorted) {
	n := c.len()
	if n == 0 {
		return nil, sorted
	}
	lo, hi := c.keys.at(0), c.keys.at(0)
	for _, ch := range c.keys.cs {
		for _, k := range ch {
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	// (The unused end of the last chunk holds zeros: a bound of 0 that no key reaches only
	// widens the span.)
	span := uint64(hi) - uint64(lo)
	ord = make([]int32, n)
	dels := make([]bool, n)
	var keys, seqs []int64
	if span < 1<<32 {
		// Key (less the lowest), delete flag (bit 31) and position packed in one word: half the
		// bytes to move, and the flag comes in key order. A position takes 31 bits: a batch
		// holds fewer than 2^31 events (chunks.at takes an int32). Each step is cut into
		// ranges of events, one per goroutine.
		a, b := make([]uint64, n), make([]uint64, n)
		workers := sortWorkers(n)
		eachPart(n, workers, func(_, from, to int) {
			for i := from; i < to; i++ {
				a[i] = (uint64(c.keys.at(int32(i)))-uint64(lo))<<32 | uint64(i)
				if c.dels.at(int32(i)) {
					a[i] |= 1 << 31
				}
			}
		})
		res, other := radixSort64(a, b, span, workers), b
		if &res[0] == &b[0] {
			other = a
		}
		keys, seqs = wordsOf(res), wordsOf(other)
		eachPart(n, workers, func(_, from, to int) {
			for j := from; j < to; j++ {
				e := res[j]
				ord[j], dels[j] = int32(uint32(e)&(1<<31-1)), e>>31&1 != 0
				keys[j] = int64(e>>32 + uint64(lo))
			}
		})
	} else {
		a, b := make([]keyAt, n), make([]keyAt, n)
		const bits = 11
		var counts [1 << bits]int32
		for i := range a {
			a[i] = keyAt{k: uint64(c.keys.at(int32(i))) - uint64(lo), at: int32(i)}
		}
		for shift := uint(0); shift < 64 && span>>shift != 0; shift += bits {
			clear(counts[:])
			for _, e := range a {
				counts[e.k>>shift&(1<<bits-1)]++
			}
			sum := int32(0)
			for d, m := range counts {
				counts[d], sum = sum, sum+m
			}
			for _, e := range a {
				d := e.k >> shift & (1<<bits - 1)
				b[counts[d]] = e
				counts[d]++
			}
			a, b = b, a
		}
		keys, seqs = make([]int64, n), make([]int64, n)
		for j, e := range a {
			ord[j], dels[j] = e.at, c.dels.at(e.at)
			keys[j] = int64(e.k + uint64(lo))
		}
	}
	return ord, histSorted{keys: keys, seqs: seqs, dels: dels}
}

// wordsOf returns the memory of a as int64 words.
func wordsOf(a []uint64) []int64 {
	return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(a))), len(a))
}

// part returns the events [from, to) of the sorted order.
func (s histSorted) part(from, to int) histSorted {
	if s.keys == nil {
		return s
	}
	return histSorted{keys: s.keys[from:to:to], seqs: s.seqs[from:to:to], dels: s.dels[from:to:to]}
}

// radixSort64 sorts a, keys in the high 32 bits, by key, stably (LSD radix sort, 11 bits a
// pass, as many passes as span's bits need; the low 32 bits, order's delete flag and position,
// are carried along); b is scratch of the same length. Each pass is cut into workers ranges of a
// (eachPart), each counted and then scattered by a goroutine of its own: a range's values of a
// digit go after those of the ranges before it, so the sort stays stable. It returns the sorted
// slice (a or b).
func radixSort64(a, b []uint64, span uint64, workers int) []uint64 {
	const bits = 11
	counts := make([][1 << bits]int, workers)
	for shift := uint(32); shift < 64 && span>>(shift-32) != 0; shift += bits {
		eachPart(len(a), workers, func(w, from, to int) {
			cs := &counts[w]
			clear(cs[:])
			for _, e := range a[from:to] {
				cs[e>>shift&(1<<bits-1)]++
			}
		})
		// Each range's start for each digit: the digits below it, then the ranges before.
		sum := 0
		for d := range 1 << bits {
			for w := range counts {
				counts[w][d], sum = sum, sum+counts[w][d]
			}
		}
		src, dst := a, b
		eachPart(len(a), workers, func(w, from, to int) {
			cs := &counts[w]
			for _, e := range src[from:to] {
				d := e >> shift & (1<<bits - 1)
				dst[cs[d]] = e
				cs[d]++
			}
		})
		a, b = b, a
	}
	return a
}

// sortWorkers is how many goroutines order sorts n events on: one per core, up to four, each
// with at least histMinEvents.
func sortWorkers(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), 4, n/histMinEvents))
}

// eachPart calls fn(w, from, to) for the workers ranges w that cut [0, n) evenly (range w
// starts at n*w/workers), each on a goroutine of its own (eachRange), and returns once all have;
// a panic of fn is raised again on the caller's goroutine, with where it was first raised.
func eachPart(n, workers int, fn func(w, from, to int)) {
	if workers == 1 {
		fn(0, 0, n)
		return
	}
	if panicked := eachRange(workers, "while sorting", func(w int) {
		fn(w, n*w/workers, n*(w+1)/workers)
	}); panicked != nil {
		panic(panicked)
	}
}

// keyAt is an event (its position) and its key, less the batch's lowest, as order sorts them.
type keyAt struct {
	k  uint64
	at int32
}

// histOrder is an event (its position in a histBatch) and its sequence, as sortRuns sorts a
// key's events.
type histOrder struct {
	seq int64
	at  int32
}

// histBatch is events of a histColumns gathered in an order (gather), each column in one array:
// a fold that reads the events in key order then reads each column from start to end, rather
// than all over the batch (a cache miss a value). Events are positions in it; arr holds their
// arrivals.
type histBatch struct {
	kinds  []schema.Kind
	strAt  []int
	keyCol int
	seqCol int
	keys   []int64
	seqs   []int64
	dels   []bool
	nulls  []uint64  // per event: bit c set when data column c is NULL (more than 8 data columns); nil when nulls8 holds them
	nulls8 []uint8   // nulls, of 8 data columns or fewer (else nil)
	words  [][]int64 // per data column (nil for the key's and the sequence's); a string's offset
	lens   [][]uint32
	arena  []byte
	arr    []int32
}

// gather returns the events at positions ord, in that order, reading each event's record once:
// with sorted's keys and delete flags (order's, of the same events: ord is then in key order,
// and each key's events are put in order of sequence and, at equal sequences, of arrival, ord
// included; see sortRuns), or, when it has none, those it reads itself (ord is left as it is).
func (c *histColumns) gather(ord []int32, sorted histSorted) *histBatch {
	n := len(ord)
	s := &histBatch{kinds: c.kinds, strAt: c.strAt, keyCol: c.keyCol, seqCol: c.seqCol,
		keys: sorted.keys, seqs: sorted.seqs, dels: sorted.dels,
		words: make([][]int64, len(c.kinds)), lens: make([][]uint32, c.strCols), arr: ord}
	byKey := s.keys != nil
	if !byKey {
		s.keys, s.seqs, s.dels = make([]int64, n), make([]int64, n), make([]bool, n)
		for j, at := range ord {
			s.keys[j], s.dels[j] = c.keys.at(at), c.dels.at(at)
		}
	}
	narrow := c.narrow()
	if narrow {
		s.nulls8 = make([]uint8, n)
	} else {
		s.nulls = make([]uint64, n)
	}
	type stored struct {
		w   int
		out []int64
		len []uint32 // a string column's
	}
	var cols []stored
	for col := range c.kinds {
		if w := c.wordAt[col]; w >= 0 {
			s.words[col] = make([]int64, n)
			st := stored{w: w, out: s.words[col]}
			if at := c.strAt[col]; at >= 0 {
				s.lens[at] = make([]uint32, n)
				st.len = s.lens[at]
			}
			cols = append(cols, st)
		}
	}
	if c.strBytes > 0 && c.n > 0 {
		// This range's share of the strings, and some (append grows it when short).
		s.arena = make([]byte, 0, int(int64(c.strBytes)*int64(n)/int64(c.n))*9/8+inlineString)
	}
	arena := s.arena
	var sink int64
	for j, e := range ord {
		if j&(gatherGroup-1) == 0 {
			// The next group's records loaded first, in a loop of nothing else, so that their
			// cache misses overlap rather than come one an event: a record's first and last
			// words, as it may span two cache lines.
			last := c.stride - 1
			for _, e := range ord[j:min(j+gatherGroup, n)] {
				ch, at := c.recs[e>>chunkBits], int(e&(1<<chunkBits-1))*c.stride
				sink += ch[at] + ch[at+last]
			}
		}
		rec := c.rec(e)
		s.seqs[j] = rec[histSeq]
		if narrow {
			s.nulls8[j] = uint8(rec[histNulls])
		} else {
			s.nulls[j] = uint64(rec[histNulls])
		}
		for _, st := range cols {
			if st.len == nil {
				st.out[j] = rec[st.w]
				continue
			}
			l := int(rec[st.w])
			st.len[j], st.out[j] = uint32(l), int64(len(arena))
			switch {
			case l > inlineString:
				ref := rec[st.w+1]
				arena = append(arena, c.arena[ref>>32][ref&(1<<32-1):][:l]...)
			case cap(arena)-len(arena) >= inlineString:
				// A fixed 16-byte copy, the bytes past l then cut off.
				at := len(arena)
				arena = arena[:at+inlineString]
				*(*[inlineString]byte)(arena[at:]) = *inlineBytes(&rec[st.w+1])
				arena = arena[:at+l]
			default:
				arena = append(arena, inlineBytes(&rec[st.w+1])[:l]...)
			}
		}
	}
	s.arena = arena
	c.sink.Add(sink)
	if byKey {
		s.sortRuns()
	}
	return s
}

// sortRuns puts each key's events (a run of equal keys) in order of sequence, stably (at equal
// sequences they stay in arrival order), moving every column and arr with them: few keys need
// it, as a change feed mostly arrives in sequence order.
func (s *histBatch) sortRuns() {
	n := len(s.keys)
	var pairs []histOrder
	var ints []int64
	for from := 0; from < n; {
		to := from + 1
		inOrder := true
		for to < n && s.keys[to] == s.keys[from] {
			inOrder = inOrder && s.seqs[to] >= s.seqs[to-1]
			to++
		}
		if !inOrder {
			pairs = pairs[:0]
			for j := from; j < to; j++ {
				pairs = append(pairs, histOrder{seq: s.seqs[j], at: int32(j)})
			}
			slices.SortStableFunc(pairs, func(x, y histOrder) int { return cmp.Compare(x.seq, y.seq) })
			permuteRun(s.arr, from, pairs)
			permuteRun(s.dels, from, pairs)
			if s.nulls8 != nil {
				permuteRun(s.nulls8, from, pairs)
			} else {
				permuteRun(s.nulls, from, pairs)
			}
			for col, w := range s.words {
				if w == nil {
					continue
				}
				ints = ints[:0]
				for _, p := range pairs {
					ints = append(ints, w[p.at])
				}
				copy(w[from:], ints)
				if at := s.strAt[col]; at >= 0 {
					permuteRun(s.lens[at], from, pairs)
				}
			}
			for j, p := range pairs {
				s.seqs[from+j] = p.seq
			}
		}
		from = to
	}
}

// permuteRun sets xs[from+j] to the value at pairs[j].at, for every j, as sortRuns orders a run.
func permuteRun[T any](xs []T, from int, pairs []histOrder) {
	var buf [32]T
	tmp := buf[:0]
	for _, p := range pairs {
		tmp = append(tmp, xs[p.at])
	}
	copy(xs[from:], tmp)
}

// str returns data column col of event e, a string column, as a window of the arena.
func (c *histBatch) str(col int, e int32) string {
	n := c.lens[c.strAt[col]][e]
	if n == 0 {
		return ""
	}
	return unsafe.String(&c.arena[c.words[col][e]], int(n))
}

// wordOf returns the word of data column col of event e (the key or sequence for their columns).
func (c *histBatch) wordOf(col int, e int32) int64 {
	switch col {
	case c.keyCol:
		return c.keys[e]
	case c.seqCol:
		return c.seqs[e]
	}
	return c.words[col][e]
}

// null says whether data column col of event e is NULL.
func (c *histBatch) null(col int, e int32) bool {
	if c.nulls8 != nil {
		return c.nulls8[e]>>col&1 != 0
	}
	return c.nulls[e]>>col&1 != 0
}

// sameColumn says whether data column col holds equal values (schema.Equal) in events a and b.
func (c *histBatch) sameColumn(col int, a, b int32) bool {
	na, nb := c.null(col, a), c.null(col, b)
	if na || nb {
		return na && nb
	}
	switch c.kinds[col] {
	case schema.String:
		return c.str(col, a) == c.str(col, b)
	case schema.Double:
		x, y := math.Float64frombits(uint64(c.wordOf(col, a))), math.Float64frombits(uint64(c.wordOf(col, b)))
		return schema.Compare(x, y) == 0
	}
	return c.wordOf(col, a) == c.wordOf(col, b)
}

// sameEvent is sameEvent (engine.go) for events a and b.
func (c *histBatch) sameEvent(a, b int32) bool {
	if c.dels[a] != c.dels[b] {
		return false
	}
	if c.dels[a] {
		return true
	}
	for col := range c.kinds {
		if !c.sameColumn(col, a, b) {
			return false
		}
	}
	return true
}

// appendRow appends the encoding of event e's data columns, as appendValues encodes them.
func (c *histBatch) appendRow(buf []byte, e int32) []byte {
	for col, kind := range c.kinds {
		switch {
		case c.null(col, e):
			buf = append(buf, tagNull)
		case kind == schema.String:
			s := c.str(col, e)
			buf = binary.AppendUvarint(append(buf, tagString), uint64(len(s)))
			buf = append(buf, s...)
		default:
			buf = appendWord(buf, kind, c.wordOf(col, e))
		}
	}
	return buf
}

// value returns data column col of event e, boxed in box (a string is a window of the arena).
func (c *histBatch) value(col int, e int32, box *boxSlab) any {
	switch {
	case c.null(col, e):
		return nil
	case c.kinds[col] == schema.String:
		return box.string(c.str(col, e))
	}
	return value(c.kinds[col], c.wordOf(col, e), box)
}

// appendWord appends the encoding appendValue gives the value of a fixed-width kind whose word
// is w.
func appendWord(buf []byte, kind schema.Kind, w int64) []byte {
	switch kind {
	case schema.Long:
		return appendLong(buf, w)
	case schema.Integer:
		return binary.AppendUvarint(append(buf, tagInt), zigzag(w))
	case schema.DecimalKind:
		return binary.AppendUvarint(append(buf, tagDecimal), zigzag(w))
	case schema.DateKind:
		return binary.AppendUvarint(append(buf, tagDate), zigzag(w))
	case schema.TimestampKind:
		return binary.AppendUvarint(append(buf, tagTimestamp), zigzag(w))
	case schema.Double:
		return binary.LittleEndian.AppendUint64(append(buf, tagDouble), uint64(w))
	case schema.Boolean:
		if w != 0 {
			return append(buf, tagTrue)
		}
		return append(buf, tagFalse)
	}
	panic(fmt.Sprintf("flows: no word encoding for %v", kind))
}

// events returns the batch as the events readChangeBatch would have made of it, in arrival order
// (for a batch whose target turns out to hold history after all: the general fold takes them).
func (c *histColumns) events() []event {
	ord := make([]int32, c.len())
	for i := range ord {
		ord[i] = int32(i)
	}
	b := c.gather(ord, histSorted{})
	out := make([]event, c.len())
	box := newBoxSlab(c.len()*2, c.len())
	for i := range out {
		e := int32(i)
		ev := event{key: []any{b.keys[i]}, seq: []any{b.seqs[i]}, delete: b.dels[i], arrival: i}
		ev.row = make([]any, len(b.kinds))
		if !ev.delete {
			for col := range b.kinds {
				ev.row[col] = b.value(col, e, box)
			}
		}
		out[i] = ev
	}
	return out
}

// freshPart is the versions of a range of keys fold folded (each key's changedKey names its
// own: vers[vFrom:vTo]), with the columns their data comes from (the range's, gathered in key
// order). Their rows are made only as the data files are written (keyColumns).
type freshPart struct {
	c    *histBatch
	vers []histVersion
}

// histVersion is one version of a key's history, as events of its histBatch: the event that
// opened it (its sequence is __START_AT), the event whose data columns it holds, and the event
// that closed it (its sequence is __END_AT; -1 while open).
type histVersion struct {
	open, row, close int32
}

// freshKeys is what fold makes of a range of keys: as keyWorker gives it for keys new to the
// state.
type freshKeys struct {
	kvs      []changedKey // rows from their freshPart
	keys     []newKey
	ties     tieCount
	ups      int64
	panicked any
}

// fold folds every key of the batch into its history, versions and rows, by mode (SCD type 2,
// without ignore_null_updates); nowMs is the time of a delete that ends a history
// (histKey.deletedAt). The keys are cut into ranges, one per goroutine (up to four): each range's
// events are gathered (histBatch), all at once, then the columns are released (c holds no events
// after fold) and each range is folded on its goroutine; the result holds the keys in key order.
// stop, when closed, ends the fold early (the result is then incomplete, and the batch commits
// nothing).
func (c *histColumns) fold(mode historyMode, nowMs int64, stop <-chan struct{}) freshKeys {
	histColumnFolds.Add(1)
	n := c.len()
	ord, sorted := c.order()
	// Ranges of about equal events, cut between keys.
	workers := 1
	if n >= 2*histMinEvents {
		workers = min(runtime.GOMAXPROCS(0), 4, n/histMinEvents)
	}
	var cuts []int
	from := 0
	for w := 1; w < workers; w++ {
		at := max(n*w/workers, from)
		for at < n && at > 0 && sorted.keys[at] == sorted.keys[at-1] {
			at++
		}
		cuts = append(cuts, from, at)
		from = at
	}
	cuts = append(cuts, from, n)
	parts := make([]freshKeys, len(cuts)/2)
	batches := make([]*histBatch, len(parts))
	if panicked := eachRange(len(parts), "while gathering events", func(p int) {
		batches[p] = c.gather(ord[cuts[2*p]:cuts[2*p+1]], sorted.part(cuts[2*p], cuts[2*p+1]))
	}); panicked != nil {
		return freshKeys{panicked: panicked}
	}
	c.release()
	if n >= histCollectEvents {
		// The columns as they were read are garbage now (order's arrays hold the gathered
		// keys, sequences and delete flags), and what lives (the gathered columns) holds no
		// pointers, so a collection is quick (a few ms): run it,
		// so that the histories, the versions and the writes reuse that memory instead of new
		// pages (1M events through a view: 430 MB peak before, 300 after).
		runtime.GC()
	}
	// Each range folds its keys into its own window of one array of the batch's keys, so that
	// joining the ranges copies nothing (1M events: 11 MB fewer new pages).
	wins := make([]int, len(parts)+1)
	for p, b := range batches {
		wins[p+1] = wins[p] + b.distinctKeys()
	}
	kvs, keys := make([]changedKey, wins[len(parts)]), make([]newKey, wins[len(parts)])
	panicked := eachRange(len(parts), "by a key worker", func(p int) {
		lo, hi := wins[p], wins[p+1]
		parts[p] = foldRange(batches[p], mode, nowMs, stop, kvs[lo:lo:hi], keys[lo:lo:hi])
	})
	out := freshKeys{kvs: kvs, keys: keys, panicked: panicked}
	whole := true
	for p, part := range parts {
		whole = whole && len(part.kvs) == wins[p+1]-wins[p] && len(part.keys) == wins[p+1]-wins[p]
		out.ties.merge(part.ties)
		out.ups += part.ups
	}
	if !whole { // stopped early: the ranges' keys so far
		out.kvs, out.keys = nil, nil
		for _, part := range parts {
			out.kvs = append(out.kvs, part.kvs...)
			out.keys = append(out.keys, part.keys...)
		}
	}
	return out
}

// distinctKeys is the number of keys of the gathered events (sorted by key).
func (c *histBatch) distinctKeys() int {
	nk := 0
	for j := range c.keys {
		if j == 0 || c.keys[j] != c.keys[j-1] {
			nk++
		}
	}
	return nk
}

// eachRange calls fn(p) for every p in [0, n), each on a goroutine of its own, and returns once
// all have: nil, or the text of the first panic (in p order) and where it was raised, by what
// the caller names ("by a key worker"), as freshKeys.panicked holds it.
func eachRange(n int, by string, fn func(p int)) any {
	panics := make([]any, n)
	var wg sync.WaitGroup
	for p := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panics[p] = fmt.Sprintf("%v\n\nraised %s at:\n%s", r, by, debug.Stack())
				}
			}()
			fn(p)
		}()
	}
	wg.Wait()
	for _, r := range panics {
		if r != nil {
			return r
		}
	}
	return nil
}

// histCollectEvents is the fewest events of a batch for which fold runs a garbage collection
// once the events are gathered.
const histCollectEvents = 1 << 18

// histMinEvents is the fewest events fold gives each goroutine.
const histMinEvents = 16384

// reduce appends to red the events of one key, positions [a, b) of c, less those that lose at
// their sequence, and returns it: one event per sequence (mergeHistoryInto), a delete beating an
// upsert and, between upserts, the later arrival winning. tie, when not nil, is called with each
// event and the one it meets at its sequence, when they differ (a tie, tieCount).
func (c *histBatch) reduce(red []int32, a, b int32, tie func(e, cur int32)) []int32 {
	arr := c.arr
	for e := a; e < b; e++ {
		if n := len(red); n > 0 && c.seqs[red[n-1]] == c.seqs[e] {
			cur := red[n-1]
			if tie != nil && !c.sameEvent(e, cur) {
				tie(e, cur)
			}
			if winsTie(c.dels[e], int(arr[e]), c.dels[cur], int(arr[cur])) {
				red[n-1] = e
			}
			continue
		}
		red = append(red, e)
	}
	return red
}

// appendHistory appends the encoding of the events red of c (reduce's), as encodeHistEvents
// encodes a key's history. Each length prefix is a byte set after what it measures is appended
// (a sequence's encoding is at most 11 bytes); a row of 128 bytes or more is moved up to make
// room for its longer prefix.
func (c *histBatch) appendHistory(buf []byte, red []int32) []byte {
	for _, e := range red {
		at := len(buf)
		buf = appendLong(append(buf, 0), c.seqs[e])
		buf[at] = byte(len(buf) - at - 1)
		if c.dels[e] {
			buf = append(buf, 1)
			continue
		}
		at = len(buf) + 1
		buf = c.appendRow(append(buf, 0, 0), e)
		n := len(buf) - at - 1
		if n < 1<<7 {
			buf[at] = byte(n)
			continue
		}
		var prefix [binary.MaxVarintLen64]byte
		p := binary.PutUvarint(prefix[:], uint64(n))
		buf = append(buf, prefix[1:p]...) // room for the prefix's other bytes
		copy(buf[at+p:], buf[at+1:at+1+n])
		copy(buf[at:], prefix[:p])
	}
	return buf
}

// foldRange folds the keys of ord, a run of whole keys in sorted order, appending them to kvs
// and keys (empty, with room for every key of c: distinctKeys).
func foldRange(c *histBatch, mode historyMode, nowMs int64, stop <-chan struct{}, kvs []changedKey, keys []newKey) freshKeys {
	arr := c.arr
	ord := arr
	out := freshKeys{kvs: kvs, keys: keys}
	part := &freshPart{c: c}
	var red []int32
	vers := make([]histVersion, 0, len(ord))
	nkeys := 0
	for a := 0; a < len(ord); {
		if nkeys%stopEvery == 0 && stop != nil {
			select {
			case <-stop:
				return out
			default:
			}
		}
		nkeys++
		key := c.keys[a]
		b := a + 1
		for b < len(ord) && c.keys[b] == key {
			b++
		}
		red = c.reduce(red[:0], int32(a), int32(b), func(e, cur int32) {
			out.ties.add(tie{key: []any{key}, seq: []any{c.seqs[e]}, arrival: int(arr[e]), other: int(arr[cur]), rule: inBatchRule(c.dels[e], c.dels[cur])})
		})
		from := a
		a = b
		// The versions (foldOnto): a new one when a tracked column changes or after a delete; a
		// change to untracked columns rewrites the open one; a delete closes it. The key's are
		// vers[v0:], after those of the keys before it.
		v0 := len(vers)
		open := -1
		for _, e := range red {
			if c.dels[e] {
				if open >= 0 {
					vers[open].close = e
					open = -1
				}
				continue
			}
			if open >= 0 {
				same := true
				for _, col := range mode.tracked {
					if !c.sameColumn(col, vers[open].row, e) {
						same = false
						break
					}
				}
				if same {
					vers[open].row = e
					continue
				}
				vers[open].close = e
			}
			vers = append(vers, histVersion{open: e, row: e, close: -1})
			open = len(vers) - 1
		}
		// The history for the state is encoded only as it is saved (histKey.fresh).
		last := red[len(red)-1]
		hk := &histKey{fresh: c, from: int32(from), to: int32(b), nEvents: len(red), lastDelete: c.dels[last]}
		if hk.lastDelete {
			hk.deletedAt = nowMs
		}
		out.keys = append(out.keys, newKey{k: string(appendLong(nil, key)), hk: hk})
		out.kvs = append(out.kvs, changedKey{hk: hk, src: part, vFrom: int32(v0), vTo: int32(len(vers)), hasRows: len(vers) > v0, diff: len(vers) > v0})
		out.ups += int64(len(vers) - v0)
	}
	part.vers = vers
	return out
}
