package flows

import (
	"math"
	"sync"
	"unsafe"

	"tributary/schema"
)

// typedFold is the fold of an SCD type 1 batch (see folder) when the key is one BIGINT, the
// sequence one BIGINT and every target column a primitive (not STRUCT, ARRAY or MAP): the common
// shape of a change feed. It decides exactly as folder does, but keeps each key's winner unboxed
// in one record of stride words in an open-addressing table keyed by the key: the key, the
// sequence, the arrival and kind (meta), the NULL bits, then each stored column's words: a
// fixed-width value as one int64 word (float64 bits, 0/1), a string as three: its length (low 32
// bits) and the bytes reserved for it in arena (high 32), then, when nothing is reserved, its
// bytes in the next two words (at most inlineString of them), else its offset in arena. A
// string is held inline until its column's record needs an arena slot (a longer string), and
// again once a compaction drops that slot (after a NULL or an empty string). Strings are
// copied, so that the events' strings may share memory that is reused once they are folded (a
// view's input blocks). A winner's string that fits the arena slot of the one it beats is
// written over it (a change feed's successive values of a column are mostly of one length); a
// longer one takes a new slot at the end of arena, which is compacted once abandoned slots
// outweigh the live ones. An event then touches one record (one cache miss, with a million
// keys) and, now and then, the end of arena, and allocates nothing; the records hold no
// pointers, so that the garbage collector has nothing to mark. order lists each key's record by
// position (the order of its first event); finish boxes each key's winner once, into the events
// of a reduceResult, as folder.finish returns them.
type typedFold struct {
	kinds []schema.Kind
	// wordAt is, for each column, the index in a record of its first word; aliasKey or aliasSeq
	// for the column that holds the key or the sequence, which the record holds already.
	wordAt  []int
	strAt   []int   // for each column, its index among the string columns, or -1
	stride  int     // words per record
	tab     []int64 // the records, a power of two of them; a record whose meta word is 0 is empty
	shift   uint    // 64 - log2(records)
	order   []int32 // per position: the record of the key
	arena   []byte
	live    int64 // the bytes of arena that winners' slots reserve
	n       int   // keys (positions) in use
	ties    int64
	tieList []tie
	sink    int64 // the loads addAll makes ahead of the fold, kept so that they are made
}

// The words at the start of a typedFold record.
const (
	recKey   = iota // the key
	recSeq          // the winner's sequence
	recMeta         // (arrival+1)<<1, | 1 for a delete; 0 for an empty record
	recNulls        // bit c set: column c is NULL
	recHead
)

// inlineString is the longest string a typedFold record holds in place of an arena offset.
const inlineString = 16

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
// the sequence (-1: none): their values are the record's key and sequence, not stored again.
func typedFoldFor(keySch, seqSch, dataSch schema.Schema, keyCol, seqCol int) *typedFold {
	if len(keySch.Fields) != 1 || keySch.Fields[0].Type.Kind != schema.Long ||
		len(seqSch.Fields) != 1 || seqSch.Fields[0].Type.Kind != schema.Long || len(dataSch.Fields) > maxTypedColumns {
		return nil
	}
	tf := &typedFold{}
	strCols := 0
	for _, f := range dataSch.Fields {
		switch f.Type.Kind {
		case schema.Long, schema.Integer, schema.Double, schema.Boolean, schema.DecimalKind, schema.DateKind, schema.TimestampKind:
			if f.Type.WideDecimal() {
				return nil // a Decimal128 is two words: the general fold keeps it
			}
			tf.strAt = append(tf.strAt, -1)
		case schema.String:
			tf.strAt = append(tf.strAt, strCols)
			strCols++
		default:
			return nil
		}
		tf.kinds = append(tf.kinds, f.Type.Kind)
	}
	tf.stride = recHead
	for c := range tf.kinds {
		switch {
		case c == keyCol:
			tf.wordAt = append(tf.wordAt, aliasKey)
		case c == seqCol:
			tf.wordAt = append(tf.wordAt, aliasSeq)
		default:
			tf.wordAt = append(tf.wordAt, tf.stride)
			if tf.strAt[c] >= 0 {
				tf.stride += 3
			} else {
				tf.stride++
			}
		}
	}
	tf.resize(1024)
	return tf
}

// resize makes room for size records (a power of two), moving those in use.
func (tf *typedFold) resize(size int) {
	bits := uint(0)
	for 1<<bits < size {
		bits++
	}
	old := tf.tab
	tf.tab, tf.shift = make([]int64, (1<<bits)*tf.stride), 64-bits
	// By position, a group at a time: the old records' loads first, so that their misses
	// overlap.
	const group = 16
	for start := 0; start < tf.n; start += group {
		end := min(start+group, tf.n)
		var sink int64
		for at := start; at < end; at++ {
			sink += old[int(tf.order[at])*tf.stride]
		}
		tf.sink += sink
		for at := start; at < end; at++ {
			from := int(tf.order[at]) * tf.stride
			to := tf.find(old[from+recKey])
			copy(tf.tab[to:to+tf.stride], old[from:from+tf.stride])
			tf.order[at] = int32(to / tf.stride)
		}
	}
}

// homeOf is the record find looks at first for key k, in a table of 2^(64-shift) records
// (Fibonacci hashing: the high bits of k times 2^64/φ).
func homeOf(k int64, shift uint) uint64 { return (uint64(k) * 0x9E3779B97F4A7C15) >> shift }

// find returns the index in tab of the record of key k, or of the empty record where it goes.
func (tf *typedFold) find(k int64) int {
	mask := uint64(len(tf.tab)/tf.stride - 1)
	for i := homeOf(k, tf.shift); ; i = (i + 1) & mask {
		r := int(i) * tf.stride
		if tf.tab[r+recMeta] == 0 || tf.tab[r+recKey] == k {
			return r
		}
	}
}

// meta is a record's meta word for an event of this arrival and kind.
func meta(arrival int, del bool) int64 {
	m := int64(arrival+1) << 1
	if del {
		m |= 1
	}
	return m
}

// arrivalOf and deleted read a meta word.
func arrivalOf(m int64) int { return int(m>>1) - 1 }
func deleted(m int64) bool  { return m&1 != 0 }

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

// str returns string column c (not NULL) of the record at r: a window of the record (inline)
// or of the arena.
func (tf *typedFold) str(r, c int) string {
	w := r + tf.wordAt[c]
	slot := tf.tab[w]
	n := int(uint32(slot))
	switch {
	case n == 0:
		return ""
	case slot>>32 == 0:
		return unsafe.String((*byte)(unsafe.Pointer(&tf.tab[w+1])), n)
	}
	return unsafe.String(&tf.arena[tf.tab[w+1]], n)
}

// get returns column c of the record at r, boxed in slab (nil: the ordinary way; nil for NULL).
// A string is a window of the record or of the arena.
func (tf *typedFold) get(r, c int, slab *boxSlab) any {
	switch wi := tf.wordAt[c]; {
	case wi == aliasKey:
		return slab.int64(tf.tab[r+recKey])
	case wi == aliasSeq:
		return slab.int64(tf.tab[r+recSeq])
	case tf.tab[r+recNulls]&(1<<c) != 0:
		return nil
	case tf.strAt[c] >= 0:
		return slab.string(tf.str(r, c))
	default:
		return value(tf.kinds[c], tf.tab[r+wi], slab)
	}
}

// sameRow says whether the record at r holds the values of row (schema.Equal each).
func (tf *typedFold) sameRow(r int, row []any) bool {
	for c := range tf.kinds {
		if !schema.Equal(tf.get(r, c, nil), row[c]) {
			return false
		}
	}
	return true
}

// setRow stores row in the record at r (a new key's: its column words all zero).
func (tf *typedFold) setRow(r int, row []any) {
	rec := tf.record(r)
	var nulls int64
	for c, v := range row {
		wi := tf.wordAt[c]
		switch {
		case wi < 0:
			// the key or the sequence: the record's own
		case v == nil:
			nulls |= tf.setNull(rec, c, wi)
		case tf.strAt[c] >= 0:
			tf.setString(rec, wi, v.(string))
		default:
			rec[wi] = word(tf.kinds[c], v)
		}
	}
	rec[recNulls] = nulls
}

// setBlockRow is setRow of row i of a block's columns, column c of the row being column
// src.data[c] of the block.
func (tf *typedFold) setBlockRow(r int, bc *blockColumns, i int, src *columnSource) {
	rec := tf.record(r)
	var nulls int64
	for c, wi := range tf.wordAt {
		j := src.data[c]
		switch {
		case wi < 0:
		case bc.nulls[j][i]:
			nulls |= tf.setNull(rec, c, wi)
		case tf.strAt[c] >= 0:
			tf.setString(rec, wi, bc.strs[j][i])
		default:
			rec[wi] = bc.words[j][i]
		}
	}
	rec[recNulls] = nulls
}

// record returns the record at r for a new row, compacting the arena first when abandoned slots
// outweigh the live ones.
func (tf *typedFold) record(r int) []int64 {
	if len(tf.arena) > 2*int(tf.live)+arenaSlack {
		tf.compact()
	}
	return tf.tab[r : r+tf.stride]
}

// setNull marks column c (first word wi) of rec NULL, keeping a string's arena slot for a string
// to come, and returns c's NULL bit.
func (tf *typedFold) setNull(rec []int64, c, wi int) int64 {
	if tf.strAt[c] >= 0 {
		rec[wi] &^= math.MaxUint32
	}
	return 1 << c
}

// setString stores str in the string column whose first word in rec is wi: inline when it fits
// and the column has no arena slot, else in the slot, which a longer string replaces.
func (tf *typedFold) setString(rec []int64, wi int, str string) {
	room := int(rec[wi] >> 32)
	switch {
	case room == 0 && len(str) <= inlineString:
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&rec[wi+1])), 2*8), str)
		rec[wi] = int64(len(str))
		return
	case len(str) > room:
		tf.live -= int64(room) // abandoned (none when inline)
		room = slotSize(len(str))
		rec[wi+1] = int64(tf.reserve(room))
		tf.live += int64(room)
	}
	copy(tf.arena[rec[wi+1]:], str)
	rec[wi] = int64(room)<<32 | int64(len(str))
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

// compact copies the winners' arena strings into a new arena, each into a slot of its size,
// leaving out the abandoned slots and the empty slots of NULLs.
func (tf *typedFold) compact() {
	// Room for the strings to come until the next compaction, so that growing does not move it.
	arena := make([]byte, 0, max(0, 2*tf.live+int64(arenaSlack))+4096)
	var live int64
	for _, slot := range tf.order {
		rec := tf.tab[int(slot)*tf.stride:][:tf.stride]
		for c, j := range tf.strAt {
			wi := tf.wordAt[c]
			if j < 0 || wi < 0 || rec[wi]>>32 == 0 {
				continue // not a string kept in the arena
			}
			n := int(uint32(rec[wi]))
			if n == 0 {
				// NULL or empty: the slot goes; an empty string is held inline
				rec[wi] = 0
				continue
			}
			off, room := rec[wi+1], slotSize(n)
			rec[wi], rec[wi+1] = int64(room)<<32|int64(n), int64(len(arena))
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
	foldEvent(tf, k, s, ev.arrival, ev.delete, rowValues(ev.row))
}

// foldValues is where foldEvent finds an event's target columns: a boxed row (rowValues) or a
// row of a block's columns (blockRowValues).
type foldValues interface {
	set(tf *typedFold, r int)       // stores them in the record at r (setRow)
	same(tf *typedFold, r int) bool // whether the record at r holds them (sameRow)
}

// rowValues is an event's row.
type rowValues []any

// set is setRow.
func (v rowValues) set(tf *typedFold, r int) { tf.setRow(r, v) }

// same is sameRow.
func (v rowValues) same(tf *typedFold, r int) bool { return tf.sameRow(r, v) }

// blockRowValues is row i of a block's columns, column c of the row being src.data[c].
type blockRowValues struct {
	c   *blockColumns
	i   int
	src *columnSource
}

// set is setBlockRow.
func (v blockRowValues) set(tf *typedFold, r int) { tf.setBlockRow(r, v.c, v.i, v.src) }

// same is sameRow of the row boxed (only ties, rare, compare rows).
func (v blockRowValues) same(tf *typedFold, r int) bool {
	row := make([]any, len(tf.kinds))
	for c, j := range v.src.data {
		switch {
		case v.c.nulls[j][v.i]:
		case v.c.strs[j] != nil:
			row[c] = v.c.strs[j][v.i]
		default:
			row[c] = value(tf.kinds[c], v.c.words[j][v.i], nil)
		}
	}
	return tf.sameRow(r, row)
}

// foldEvent folds the event of key k, sequence s, arrival and kind (del), whose target columns
// are vals, by add's rules.
func foldEvent[V foldValues](tf *typedFold, k, s int64, arrival int, del bool, vals V) {
	r := tf.find(k)
	rec := tf.tab[r : r+tf.stride]
	if rec[recMeta] == 0 {
		rec[recKey], rec[recSeq], rec[recMeta] = k, s, meta(arrival, del)
		vals.set(tf, r)
		tf.order = append(tf.order, int32(r/tf.stride))
		if tf.n++; 2*tf.n > len(tf.tab)/tf.stride {
			tf.resize(2 * len(tf.tab) / tf.stride)
		}
		return
	}
	if s < rec[recSeq] {
		return
	}
	if s == rec[recSeq] {
		was, arr := deleted(rec[recMeta]), arrivalOf(rec[recMeta])
		if was != del || (!del && !vals.same(tf, r)) {
			tf.ties++
			kv := []any{k, s}
			tf.tieList = append(tf.tieList, tie{key: kv[0:1:1], seq: kv[1:2:2], arrival: arrival, other: arr, rule: inBatchRule(del, was)})
		}
		if !winsTie(del, arrival, was, arr) {
			return
		}
	}
	rec[recSeq], rec[recMeta] = s, meta(arrival, del)
	vals.set(tf, r)
}

// addColumns folds the rows of bc in order as add folds events (columnFold): row i is the event
// of arrival first+i, a delete when dels[i]; a row with a NULL key or sequence is left out.
func (tf *typedFold) addColumns(bc *blockColumns, dels []bool, src *columnSource, first int) {
	keys, seqs := bc.words[src.key][:bc.n], bc.words[src.seq][:bc.n]
	keyNull, seqNull := bc.nulls[src.key][:bc.n], bc.nulls[src.seq][:bc.n]
	const group = 32
	for start := 0; start < bc.n; start += group {
		end := min(start+group, bc.n)
		// The first record each row of the group may touch, loaded ahead (as addAll).
		tab, shift, stride := tf.tab, tf.shift, tf.stride
		var sink int64
		for i := start; i < end; i++ {
			sink += tab[int(homeOf(keys[i], shift))*stride]
		}
		tf.sink += sink
		for i := start; i < end; i++ {
			if keyNull[i] || seqNull[i] {
				continue
			}
			foldEvent(tf, keys[i], seqs[i], first+i, dels != nil && dels[i], blockRowValues{bc, i, src})
		}
	}
}

// addAll folds evs, in order, as add does one at a time. With a million keys nearly every
// record an event touches misses the cache; addAll first loads the first record each event of a
// group may touch, each load independent of the others, so that the misses of a group overlap,
// and then folds the group with the lines in cache.
func (tf *typedFold) addAll(evs []event) {
	const group = 32
	for start := 0; start < len(evs); start += group {
		g := evs[start:min(start+group, len(evs))]
		tab, shift, stride := tf.tab, tf.shift, tf.stride
		var sink int64
		for i := range g {
			if k, ok := g[i].key[0].(int64); ok {
				sink += tab[int(homeOf(k, shift))*stride]
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
// winner an event with its key, sequence and row boxed once. Strings held inline are copied out,
// so that the table can go.
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
	// its own part of the positions: each part writes its events, rows and slabs in order; only
	// the record is a jump. Each part boxes into a boxSlab of its own (a few allocations, not
	// one a value), and copies the inline strings into memory of its own.
	inParts(n, func(lo, hi int) {
		slab := newBoxSlab(1<<16, 1<<14)
		var strs []byte
		for at := lo; at < hi; at++ {
			r := int(tf.order[at]) * tf.stride
			m := tf.tab[r+recMeta]
			kv[2*at], kv[2*at+1] = slab.int64(tf.tab[r+recKey]), slab.int64(tf.tab[r+recSeq])
			row := rows[at*w : (at+1)*w : (at+1)*w]
			for c := range row {
				if wi := tf.wordAt[c]; wi >= 0 && tf.strAt[c] >= 0 && tf.tab[r+recNulls]&(1<<c) == 0 && tf.tab[r+wi]>>32 == 0 {
					str := tf.str(r, c)
					if cap(strs)-len(strs) < len(str) {
						strs = make([]byte, 0, 1<<16)
					}
					strs = append(strs, str...)
					row[c] = slab.string(unsafe.String(unsafe.SliceData(strs[len(strs)-len(str):]), len(str)))
					continue
				}
				row[c] = tf.get(r, c, slab)
			}
			evs[at] = event{key: kv[2*at : 2*at+1 : 2*at+1], seq: kv[2*at+1 : 2*at+2 : 2*at+2], row: row, delete: deleted(m), arrival: arrivalOf(m)}
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
	tf.tab, tf.order, tf.arena = nil, nil, nil
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
