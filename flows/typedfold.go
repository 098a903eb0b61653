package flows

import (
	"math"
	"slices"
	"sync"
	"unsafe"

	"tributary/schema"
)

// typedFold is the fold of an SCD type 1 batch (see folder) when the key is one BIGINT, the
// sequence one BIGINT and every target column a primitive (not STRUCT, ARRAY or MAP): the common
// shape of a change feed. It decides exactly as folder does, but keeps the winners' values
// unboxed, a winner's together in one record of stride words: a fixed-width value as an int64
// word (float64 bits, 0/1), a string as its offset in arena (the word) and its slot (a word
// after the columns' words: the length in the low 32 bits, the bytes reserved in the high 32),
// then a word of NULL bits. Strings are copied into arena, so that the events' strings may share
// memory that is reused once they are folded (a view's input blocks). A winner's string that
// fits the slot of the one it beats is written over it (a change feed's successive values of a
// column are mostly of one length); a longer one takes a new slot at the end of arena, which is
// compacted once abandoned slots outweigh the live ones. A
// winner's key, sequence, arrival and kind stay in its intTable entry. An event then touches its
// entry and, when it wins, one record and the end of arena, and allocates nothing; the winners
// hold no pointers, so that the garbage collector has nothing to mark. finish boxes each key's
// winner once, into the events of a reduceResult, as folder.finish returns them (their strings
// windows of the final arena, which is never written again).
type typedFold struct {
	ints  *intTable // each key's position (plus one), sequence, arrival and kind
	kinds []schema.Kind
	// wordAt is, for each column, the index of its word in a record; aliasKey or aliasSeq for
	// the column that holds the key or the sequence, which the winner's entry holds already.
	wordAt  []int
	strAt   []int // for each column, its index among the string columns, or -1
	stride  int   // words per winner: one per stored column, one per string column, the NULL bits
	stored  int   // columns with a word of their own
	strCols int
	words   []int64
	arena   []byte
	live    int64 // the bytes of arena that winners' slots reserve
	n       int   // positions in use
	ties    int64
	tieList []tie
	sink    int64 // the loads addAll makes ahead of the fold, kept so that they are made
}

// arenaSlack is how many bytes of beaten winners' strings a typedFold's arena may hold beyond
// as many as the live ones before it is compacted (a variable for tests).
var arenaSlack = 1 << 20

// maxTypedColumns is the most columns a typedFold takes: its NULL bits are one word.
const maxTypedColumns = 64

// The wordAt of the columns a record does not store.
const (
	aliasKey = -1
	aliasSeq = -2
)

// typedFoldFor returns a typedFold for a batch with these key, sequence and target schemas, or nil
// when they are not of its shape. keyCol and seqCol are the target columns that hold the key and
// the sequence (-1: none): their values are the entry's, not stored again.
func typedFoldFor(keySch, seqSch, dataSch schema.Schema, keyCol, seqCol int) *typedFold {
	if len(keySch.Fields) != 1 || keySch.Fields[0].Type.Kind != schema.Long ||
		len(seqSch.Fields) != 1 || seqSch.Fields[0].Type.Kind != schema.Long || len(dataSch.Fields) > maxTypedColumns {
		return nil
	}
	tf := &typedFold{ints: newIntTable(0)}
	for _, f := range dataSch.Fields {
		switch f.Type.Kind {
		case schema.Long, schema.Integer, schema.Double, schema.Boolean, schema.DecimalKind, schema.DateKind, schema.TimestampKind:
			if f.Type.WideDecimal() {
				return nil // a Decimal128 is two words: the general fold keeps it
			}
			tf.strAt = append(tf.strAt, -1)
		case schema.String:
			tf.strAt = append(tf.strAt, tf.strCols)
			tf.strCols++
		default:
			return nil
		}
		tf.kinds = append(tf.kinds, f.Type.Kind)
	}
	for c := range tf.kinds {
		switch c {
		case keyCol:
			tf.wordAt = append(tf.wordAt, aliasKey)
		case seqCol:
			tf.wordAt = append(tf.wordAt, aliasSeq)
		default:
			tf.wordAt = append(tf.wordAt, tf.stored)
			tf.stored++
		}
	}
	tf.stride = tf.stored + tf.strCols + 1
	return tf
}

// word returns the int64 word a fixed-width value of kind is kept as.
func word(kind schema.Kind, v any) int64 {
	switch kind {
	case schema.Long:
		return v.(int64)
	case schema.Integer:
		return int64(v.(int32))
	case schema.DecimalKind:
		return int64(v.(schema.Decimal))
	case schema.DateKind:
		return int64(v.(schema.Date))
	case schema.TimestampKind:
		return int64(v.(schema.Timestamp))
	case schema.Double:
		return int64(math.Float64bits(v.(float64)))
	case schema.Boolean:
		if v.(bool) {
			return 1
		}
	}
	return 0
}

// value boxes word w of a fixed-width kind, in slab (nil: the ordinary way).
func value(kind schema.Kind, w int64, slab *boxSlab) any {
	switch kind {
	case schema.Long:
		return slab.int64(w)
	case schema.Integer:
		return slab.int32(int32(w))
	case schema.DecimalKind:
		return slab.decimal(schema.Decimal(w))
	case schema.DateKind:
		return slab.date(schema.Date(w))
	case schema.TimestampKind:
		return slab.timestamp(schema.Timestamp(w))
	case schema.Double:
		return slab.float64(math.Float64frombits(uint64(w)))
	case schema.Boolean:
		return w != 0
	}
	return nil
}

// get returns column c of the winner at position at, whose entry is e, boxed in slab (nil: the
// ordinary way; nil for NULL). A string is a window of the arena.
func (tf *typedFold) get(at, c int, e *intEntry, slab *boxSlab) any {
	switch tf.wordAt[c] {
	case aliasKey:
		return slab.int64(e.key)
	case aliasSeq:
		return slab.int64(e.seq)
	}
	rec := tf.words[at*tf.stride : (at+1)*tf.stride]
	if rec[len(rec)-1]&(1<<c) != 0 {
		return nil
	}
	w := rec[tf.wordAt[c]]
	if j := tf.strAt[c]; j >= 0 {
		n := int(uint32(rec[tf.stored+j]))
		if n == 0 {
			return ""
		}
		return slab.string(unsafe.String(&tf.arena[w], n))
	}
	return value(tf.kinds[c], w, slab)
}

// sameRow says whether the winner at position at holds the values of row (schema.Equal each).
func (tf *typedFold) sameRow(at int, e *intEntry, row []any) bool {
	for c := range tf.kinds {
		if !schema.Equal(tf.get(at, c, e, nil), row[c]) {
			return false
		}
	}
	return true
}

// setRow stores row as the winner at position at (at == tf.n: a new position).
func (tf *typedFold) setRow(at int, row []any) {
	if at == tf.n {
		tf.words = slices.Grow(tf.words, tf.stride)[:len(tf.words)+tf.stride]
	} else if len(tf.arena) > 2*int(tf.live)+arenaSlack {
		tf.compact()
	}
	rec := tf.words[at*tf.stride : (at+1)*tf.stride]
	slots := rec[tf.stored : tf.stored+tf.strCols] // all zero for a new position
	var nulls int64
	for c, v := range row {
		j, wi := tf.strAt[c], tf.wordAt[c]
		switch {
		case wi < 0:
			// the key or the sequence: the entry's
		case v == nil:
			nulls |= 1 << c
			if j >= 0 {
				slots[j] &^= math.MaxUint32 // the slot is kept for a string to come
			}
		case j >= 0:
			str := v.(string)
			room := int(slots[j] >> 32)
			if len(str) > room {
				tf.live -= int64(room) // abandoned
				room = slotSize(len(str))
				rec[wi] = int64(tf.reserve(room))
				tf.live += int64(room)
			}
			if len(str) > 0 { // an empty string's offset may be stale: it reserves nothing
				copy(tf.arena[rec[wi]:], str)
			}
			slots[j] = int64(room)<<32 | int64(len(str))
		default:
			rec[wi] = word(tf.kinds[c], v)
		}
	}
	rec[len(rec)-1] = nulls
}

// slotSize is the bytes reserved in an arena for a string of n bytes: n rounded up to a multiple
// of 8, so that a longer value by a few bytes still fits.
func slotSize(n int) int { return (n + 7) &^ 7 }

// reserve appends n bytes to the arena and returns their offset. The arena at least doubles
// when it grows, so that the bytes copied by growing stay under its final size.
func (tf *typedFold) reserve(n int) int {
	off := len(tf.arena)
	if off+n > cap(tf.arena) {
		grown := make([]byte, off, max(2*cap(tf.arena), off+n, 4096))
		copy(grown, tf.arena)
		tf.arena = grown
	}
	tf.arena = tf.arena[:off+n]
	return off
}

// compact copies the winners' strings into a new arena, each into a slot of its size, leaving
// out the abandoned slots and the empty slots of NULLs.
func (tf *typedFold) compact() {
	// Room for the strings to come until the next compaction, so that growing does not move it.
	arena := make([]byte, 0, max(0, 2*tf.live+int64(arenaSlack))+4096)
	var live int64
	nk := tf.stored
	for at := range tf.n {
		rec := tf.words[at*tf.stride : (at+1)*tf.stride]
		for c, j := range tf.strAt {
			if j < 0 {
				continue
			}
			n := int(uint32(rec[nk+j]))
			if n == 0 {
				rec[nk+j] = 0
				continue
			}
			off, room := rec[tf.wordAt[c]], slotSize(n)
			rec[tf.wordAt[c]], rec[nk+j] = int64(len(arena)), int64(room)<<32|int64(n)
			arena = append(arena, tf.arena[off:off+int64(n)]...)
			arena = append(arena, make([]byte, room-n)...)
			live += int64(room)
		}
	}
	tf.arena, tf.live = arena, live
}

// add folds the next event, by the rules of folder.beat: the higher sequence wins; on equal
// sequences a delete beats an upsert and, between upserts, the later arrival wins, and a tie
// between events that differ is counted. The event's slices may be reused once add returns. An
// event with a NULL key or sequence is left out: the batch fails (readChangeBatch).
func (tf *typedFold) add(ev *event) {
	k, ok1 := ev.key[0].(int64)
	s, ok2 := ev.seq[0].(int64)
	if !ok1 || !ok2 {
		return
	}
	e := tf.ints.find(k)
	if e.pos == 0 {
		tf.ints.insert(intEntry{key: k, seq: s, arrival: ev.arrival, pos: int32(tf.n + 1), delete: ev.delete})
		tf.setRow(tf.n, ev.row)
		tf.n++
		return
	}
	if s < e.seq {
		return
	}
	at := int(e.pos - 1)
	if s == e.seq {
		if e.delete != ev.delete || (!ev.delete && !tf.sameRow(at, e, ev.row)) {
			tf.ties++
			kv := []any{k, s}
			tf.tieList = append(tf.tieList, tie{key: kv[0:1:1], seq: kv[1:2:2], arrival: ev.arrival, other: e.arrival, rule: inBatchRule(ev.delete, e.delete)})
		}
		if !winsTie(ev.delete, ev.arrival, e.delete, e.arrival) {
			return
		}
	}
	e.seq, e.arrival, e.delete = s, ev.arrival, ev.delete
	tf.setRow(at, ev.row)
}

// addAll folds evs, in order, as add does one at a time. With a million keys nearly every entry
// and winner an event touches misses the cache; addAll first looks up the entries of a group of
// events, then their winners' records, each a load independent of the others, so that the misses
// of a group overlap, and then folds the group with the lines in cache.
func (tf *typedFold) addAll(evs []event) {
	const group = 32
	for start := 0; start < len(evs); start += group {
		g := evs[start:min(start+group, len(evs))]
		entries, shift := tf.ints.entries, tf.ints.shift
		var sink int64
		for i := range g {
			if k, ok := g[i].key[0].(int64); ok {
				sink += entries[(uint64(k)*0x9E3779B97F4A7C15)>>shift].key
			}
		}
		for i := range g {
			if k, ok := g[i].key[0].(int64); ok {
				if e := tf.ints.find(k); e.pos != 0 {
					sink += tf.words[int(e.pos-1)*tf.stride]
				}
			}
		}
		tf.sink += sink
		for i := range g {
			tf.add(&g[i])
		}
	}
}

// finish returns the winners as folder.finish does: keys in order of first arrival (their
// encodings windows of one string, and no index until reduceResult.keyIndex builds one), each
// winner an event with its key, sequence and row boxed once.
func (tf *typedFold) finish() reduceResult {
	if len(tf.arena) > int(tf.live)+int(tf.live)/4 {
		tf.compact()
	}
	n := tf.n
	res := reduceResult{order: make([]string, n), winners: make([]*event, n), ties: tf.ties, tieList: tf.tieList}
	evs := make([]event, n)
	w := len(tf.kinds)
	kv := make([]any, 2*n)
	rows := make([]any, n*w)
	// The winners are boxed, and their keys encoded, on rewriteWorkers() goroutines, each over
	// its own part of the positions (a winner's slots are its own). Going by position, not by
	// table entry, each part writes its events, rows and slabs in order and reads the records
	// and the arena in order: only the entry is a jump (entryOf maps a position to it).
	// Each part boxes into a boxSlab of its own: a few allocations, not one a value.
	entryOf := make([]int32, n)
	for i := range tf.ints.entries {
		if p := tf.ints.entries[i].pos; p != 0 {
			entryOf[p-1] = int32(i)
		}
	}
	inParts(n, func(lo, hi int) {
		slab := newBoxSlab(1<<16, 1<<14)
		for at := lo; at < hi; at++ {
			e := &tf.ints.entries[entryOf[at]]
			kv[2*at], kv[2*at+1] = slab.int64(e.key), slab.int64(e.seq)
			row := rows[at*w : (at+1)*w : (at+1)*w]
			for c := range row {
				row[c] = tf.get(at, c, e, slab)
			}
			evs[at] = event{key: kv[2*at : 2*at+1 : 2*at+1], seq: kv[2*at+1 : 2*at+2 : 2*at+2], row: row, delete: e.delete, arrival: e.arrival}
		}
	})
	inParts(n, func(lo, hi int) {
		var all []byte
		ends := make([]int, hi-lo)
		for at := lo; at < hi; at++ {
			res.winners[at] = &evs[at]
			all = appendValues(all, evs[at].key)
			ends[at-lo] = len(all)
		}
		keys, start := string(all), 0
		for i, end := range ends {
			res.order[lo+i], start = keys[start:end], end
		}
	})
	tf.ints, tf.words, tf.arena = nil, nil, nil
	return res
}

// inParts calls fn on rewriteWorkers() consecutive parts [lo, hi) of [0, n) at the same time and
// returns once every call has.
func inParts(n int, fn func(lo, hi int)) {
	parts := max(1, min(rewriteWorkers(), n/4096))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p*n/parts, (p+1)*n/parts)
		}()
	}
	wg.Wait()
}
