package flows

import (
	"cmp"

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
	kb    string // encoded key (appendValues)
	win   *event
	what  decision
	entry *cdcEntry // the state before the batch (nil for a key never seen)
}

// reduceResult is the batch reduced to one winning event per key.
type reduceResult struct {
	// index maps an encoded key (appendValues) to its position in order and winners; nil in the
	// result of a fold that stayed on the BIGINT path until keyIndex builds it (an SCD type 1
	// batch into an empty target never needs it).
	index   map[string]int
	order   []string // keys in order of first arrival, so output is deterministic
	winners []*event // the winner of each key of order
	ties    int64
	tieList []tie // each tie counted in ties, in arrival order
}

// reduce picks per key the event with the highest sequence. On equal sequences a delete beats
// an upsert and, between upserts, the later arrival wins (semantics.md, Decision on ties); each
// tie between events that differ is counted.
func reduce(events []event) reduceResult {
	f := newFolder(len(events))
	f.addAll(events)
	r := f.finish()
	r.keyIndex()
	return r
}

// keyIndex returns r.index, which it builds from r.order first when it is nil.
func (r *reduceResult) keyIndex() map[string]int {
	if r.index == nil {
		r.index = make(map[string]int, len(r.order))
		for i, k := range r.order {
			r.index[k] = i
		}
	}
	return r.index
}

// above returns r without the keys whose winner is at or below the sequence trunc, and without
// the ties at or below it: what reduce returns for the events above trunc (semantics.md,
// truncates), but for the order of keys, which stays that of r. A nil trunc returns r.
func (r reduceResult) above(trunc []any) reduceResult {
	if trunc == nil {
		return r
	}
	out := reduceResult{index: make(map[string]int, len(r.order))}
	for i, k := range r.order {
		if w := r.winners[i]; compareSeq(w.seq, trunc) > 0 {
			out.index[k] = len(out.order)
			out.order = append(out.order, k)
			out.winners = append(out.winners, w)
		}
	}
	for _, t := range r.tieList {
		if compareSeq(t.seq, trunc) > 0 {
			out.ties++
			out.tieList = append(out.tieList, t)
		}
	}
	return out
}

// folder is reduce one event at a time, in arrival order, holding only the winners: it copies
// what it keeps of an event, so that the caller may reuse the event's slices once add returns.
// A winner's sequence and row are overwritten in place when a later event beats it. finish
// returns the result.
//
// While every key is one BIGINT and every sequence one BIGINT (the common shape of a change
// feed) and every row has the same width, the winners are not events but positions: ints holds
// each key's position, sequence, arrival and kind in one entry, and vals each winner's key,
// sequence and row values, one after the other (in blocks of valsBlock winners). An event
// touches its key's entry and, when it wins, its winner's values, and nothing else: with a
// million keys, nearly every one of those accesses misses the cache, so fewer places is faster
// (and addAll overlaps the misses of many events). finish (or the first event of another shape,
// which moves the fold to res.index) turns the positions into events.
type folder struct {
	res  reduceResult
	kb   []byte
	slab []any   // the unused part of the current block of values
	evs  []event // the unused part of the current block of winners

	ints    *intTable // while not nil: each key's position, sequence, arrival and kind
	nInts   int       // winners of the BIGINT fold
	vals    [][]any   // each winner's key, sequence and row values, by position, in blocks (winnerVals)
	rowLen  int       // the width of the rows folded so far; -1 before the first
	touched int       // what intGroup's reads ahead found, kept so that they are not left out
}

// valsBlock is how many winners of the BIGINT fold a block of folder.vals holds: the values grow
// a block at a time, never copied to a larger array (which for a million keys would copy
// hundreds of megabytes of pointers, each copy scanned by the collector).
const valsBlock = 1 << 14

// winnerVals returns the values of the winner at position at: its key, its sequence and its
// row, 2+rowLen of them.
func (f *folder) winnerVals(at int) []any {
	w := 2 + f.rowLen
	o := at % valsBlock * w
	return f.vals[at/valsBlock][o : o+w : o+w]
}

// newWinner adds ev, the first event of its key k and sequence s, to the BIGINT fold.
func (f *folder) newWinner(ev *event, k, s int64) {
	at := f.nInts
	f.ints.insert(intEntry{key: k, seq: s, arrival: ev.arrival, pos: int32(at + 1), delete: ev.delete})
	f.nInts++
	if at%valsBlock == 0 {
		f.vals = append(f.vals, make([]any, valsBlock*(2+f.rowLen)))
	}
	vals := f.winnerVals(at)
	vals[0], vals[1] = ev.key[0], ev.seq[0]
	copy(vals[2:], ev.row)
}

// intTable is the BIGINT fold's table of winners: open addressing with linear probing at a load
// of at most one half, each entry holding what the fold compares of its winner, so that finding
// a key and comparing its sequence touch one place.
type intTable struct {
	entries []intEntry // a power of two of them
	n       int        // entries in use
	shift   uint       // 64 - log2(len(entries))
}

// intEntry is one winner of an intTable: pos is its position plus one (0 for an empty entry).
type intEntry struct {
	key, seq int64
	arrival  int
	pos      int32
	delete   bool
}

func newIntTable(hint int) *intTable {
	t := &intTable{}
	t.resize(max(1024, 2*hint))
	return t
}

// resize makes room for size entries (rounded up to a power of two), keeping those in use.
func (t *intTable) resize(size int) {
	bits := uint(10)
	for 1<<bits < size {
		bits++
	}
	old := t.entries
	t.entries, t.shift = make([]intEntry, 1<<bits), 64-bits
	for i := range old {
		if old[i].pos != 0 {
			*t.find(old[i].key) = old[i]
		}
	}
}

// insert puts e, a new key's entry, in the table, growing it past a load of one half.
func (t *intTable) insert(e intEntry) {
	*t.find(e.key) = e
	if t.n++; 2*t.n > len(t.entries) {
		t.resize(2 * len(t.entries))
	}
}

// find returns the entry of key k, or the empty entry where it goes.
func (t *intTable) find(k int64) *intEntry {
	mask := uint64(len(t.entries) - 1)
	for i := homeOf(k, t.shift); ; i = (i + 1) & mask {
		if e := &t.entries[i]; e.pos == 0 || e.key == k {
			return e
		}
	}
}

func newFolder(hint int) *folder {
	return &folder{ints: newIntTable(hint), rowLen: -1}
}

// clone copies v into the slab (nil stays nil).
func (f *folder) clone(v []any) []any {
	if v == nil {
		return nil
	}
	if len(f.slab) < len(v) {
		f.slab = make([]any, max(1<<14, len(v)))
	}
	out := f.slab[:len(v):len(v)]
	f.slab = f.slab[len(v):]
	copy(out, v)
	return out
}

// keep makes w hold what ev holds, in w's own slices.
func (f *folder) keep(w, ev *event) {
	if len(w.seq) == len(ev.seq) {
		copy(w.seq, ev.seq)
	} else {
		w.seq = f.clone(ev.seq)
	}
	if len(w.row) == len(ev.row) && (w.row == nil) == (ev.row == nil) {
		copy(w.row, ev.row)
	} else {
		w.row = f.clone(ev.row)
	}
	w.delete, w.arrival = ev.delete, ev.arrival
}

// winner returns a new winner holding what ev holds.
func (f *folder) winner(ev *event) *event {
	if len(f.evs) == 0 {
		f.evs = make([]event, 1<<10)
	}
	w := &f.evs[0]
	f.evs = f.evs[1:]
	*w = event{key: f.clone(ev.key)}
	f.keep(w, ev)
	return w
}

// beat folds ev into cur, the winner of its key so far; c is the comparison of their sequences.
func (f *folder) beat(cur, ev *event, c int) {
	switch {
	case c > 0:
		f.keep(cur, ev)
	case c == 0:
		if !sameEvent(ev, cur) {
			f.res.ties++
			f.res.tieList = append(f.res.tieList, tie{key: cur.key, seq: f.clone(cur.seq), arrival: ev.arrival, other: cur.arrival, rule: inBatchRule(ev.delete, cur.delete)})
		}
		if winsTie(ev.delete, ev.arrival, cur.delete, cur.arrival) {
			f.keep(cur, ev)
		}
	}
}

// add folds the next event into the winners.
func (f *folder) add(ev *event) {
	res := &f.res
	if f.ints != nil {
		if k, s, ok := oneInt64(ev.key, ev.seq); ok && ev.row != nil && (f.rowLen < 0 || len(ev.row) == f.rowLen) {
			f.addInt(ev, k, s)
			return
		}
		f.indexKeys(true)
	}
	f.kb = appendValues(f.kb[:0], ev.key)
	at, ok := res.index[string(f.kb)]
	if !ok {
		k := string(f.kb)
		res.index[k] = len(res.order)
		res.order = append(res.order, k)
		res.winners = append(res.winners, f.winner(ev))
		return
	}
	cur := res.winners[at]
	f.beat(cur, ev, compareSeq(ev.seq, cur.seq))
}

// foldGroup is how many events addAll looks up at once: enough that the cache misses of their
// lookups overlap, few enough that the entries they touch stay in the cache until folded.
const foldGroup = 128

// addAll folds evs, in order, into the winners, as add does one at a time. On the BIGINT path it
// takes them foldGroup at a time in three passes: the first reads each event's home entry of
// the table, the second folds the events into their entries (now in the cache) and lists each
// winner that an event replaces, the third reads those winners' values and copies the events'
// values over them. Each event's two accesses to memory then wait together with the group's
// others instead of one after the other, which is most of the time of a fold of a million keys
// (BenchmarkFoldBulk). The caller may reuse the events' slices once addAll returns.
func (f *folder) addAll(evs []event) {
	for len(evs) > 0 {
		g := evs[:min(len(evs), foldGroup)]
		evs = evs[len(g):]
		if !f.intGroup(g) {
			for i := range g {
				f.add(&g[i])
			}
		}
	}
}

// intGroup folds g, at most foldGroup events, by addAll's three passes, when the fold is on the
// BIGINT path and every event of g is of its shape; otherwise it does nothing and returns false.
func (f *folder) intGroup(g []event) bool {
	if f.ints == nil {
		return false
	}
	var keys, seqs [foldGroup]int64
	rowLen := f.rowLen
	for i := range g {
		ev := &g[i]
		k, s, ok := oneInt64(ev.key, ev.seq)
		if !ok || ev.row == nil || (rowLen >= 0 && len(ev.row) != rowLen) {
			return false
		}
		rowLen = len(ev.row)
		keys[i], seqs[i] = k, s
	}
	t := f.ints
	// Pass 1: read each home entry, so that the misses overlap; touched keeps the reads.
	touched := 0
	for i := range g {
		if t.entries[homeOf(keys[i], t.shift)].pos != 0 {
			touched++
		}
	}
	// Pass 2: fold each event into its entry. A winner that is replaced has its values copied in
	// pass 3 (copies lists them); a tie compares with the values, so it first does the copies so
	// far (flush).
	var copies [foldGroup]struct{ at, ev int32 }
	n := 0
	flush := func() {
		for _, c := range copies[:n] {
			ev, vals := &g[c.ev], f.winnerVals(int(c.at))
			vals[1] = ev.seq[0]
			copy(vals[2:], ev.row)
		}
		n = 0
	}
	for i := range g {
		if at := f.foldEntry(&g[i], keys[i], seqs[i], flush); at >= 0 {
			copies[n] = struct{ at, ev int32 }{int32(at), int32(i)}
			n++
		}
	}
	// Pass 3: read the first and last value of each winner to be replaced (for a row of up to
	// four columns, every cache line of what is copied), so that the misses overlap; then copy.
	for _, c := range copies[:n] {
		if vals := f.winnerVals(int(c.at)); vals[1] != nil && vals[len(vals)-1] != nil {
			touched++
		}
	}
	flush()
	f.touched += touched
	return true
}

// inBatchRule is the rule that decides a tie between two events of a batch that differ, one a
// delete or not (delete), the other (curDelete).
func inBatchRule(delete, curDelete bool) tieRule {
	if delete != curDelete {
		return deleteBeatUpsert
	}
	return laterArrivalWon
}

// winsTie reports whether an event (a delete or not, its arrival) beats the winner of its key so
// far (curDelete, curArrival) at an equal sequence: a delete beats an upsert, and between upserts
// the later arrival wins (semantics.md "Decision" on ties).
func winsTie(delete bool, arrival int, curDelete bool, curArrival int) bool {
	return (delete && !curDelete) || (!delete && !curDelete && arrival > curArrival)
}

// addInt folds an event whose key k and sequence s are BIGINTs, by the rules of beat.
func (f *folder) addInt(ev *event, k, s int64) {
	if at := f.foldEntry(ev, k, s, nil); at >= 0 {
		vals := f.winnerVals(at)
		vals[1] = ev.seq[0]
		copy(vals[2:], ev.row)
	}
}

// foldEntry folds ev, of BIGINT key k and sequence s, into its key's entry by the rules of beat
// (a new key gets its entry and values at once), all but the copy of a beaten winner's values:
// it returns the position of the winner whose sequence and row ev replaces, or -1. beforeTie,
// when not nil, runs before an equal sequence compares ev with the winner's values (intGroup
// copies the values it has yet to copy).
func (f *folder) foldEntry(ev *event, k, s int64, beforeTie func()) int {
	f.rowLen = len(ev.row)
	e := f.ints.find(k)
	if e.pos == 0 {
		f.newWinner(ev, k, s)
		return -1
	}
	if s < e.seq {
		return -1
	}
	at := int(e.pos - 1)
	if s == e.seq {
		if beforeTie != nil {
			beforeTie()
		}
		vals := f.winnerVals(at)
		if e.delete != ev.delete || (!ev.delete && !sameValues(vals[2:], ev.row)) {
			f.res.ties++
			f.res.tieList = append(f.res.tieList, tie{key: vals[0:1:1], seq: f.clone(vals[1:2]), arrival: ev.arrival, other: e.arrival, rule: inBatchRule(ev.delete, e.delete)})
		}
		if !winsTie(ev.delete, ev.arrival, e.delete, e.arrival) {
			return -1
		}
	}
	e.seq, e.arrival, e.delete = s, ev.arrival, ev.delete
	return at
}

// sameValues says whether a and b hold equal values (schema.Equal), position by position.
func sameValues(a, b []any) bool {
	for i := range a {
		if !schema.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// oneInt64 returns the key and the sequence when each is one BIGINT.
func oneInt64(key, seq []any) (k, s int64, ok bool) {
	if len(key) != 1 || len(seq) != 1 {
		return 0, 0, false
	}
	if k, ok = key[0].(int64); ok {
		s, ok = seq[0].(int64)
	}
	return k, s, ok
}

// indexKeys turns the winners of the BIGINT fold into events, in res.winners, and their keys
// into res.order, in the order they came, as the general fold keeps them; res.index only when
// withIndex (the general fold goes on from there). The encoded keys are windows of one string.
func (f *folder) indexKeys(withIndex bool) {
	n := f.nInts
	f.res.order = make([]string, n)
	f.res.winners = make([]*event, n)
	evs := make([]event, n)
	for i := range f.ints.entries {
		e := &f.ints.entries[i]
		if e.pos == 0 {
			continue
		}
		at := int(e.pos - 1)
		vals := f.winnerVals(at)
		evs[at] = event{key: vals[0:1:1], seq: vals[1:2:2], row: vals[2:], delete: e.delete, arrival: e.arrival}
	}
	var all []byte
	ends := make([]int, n)
	for at := range evs {
		f.res.winners[at] = &evs[at]
		all = appendValues(all, evs[at].key)
		ends[at] = len(all)
	}
	keys, start := string(all), 0
	for at, end := range ends {
		f.res.order[at], start = keys[start:end], end
	}
	if withIndex {
		f.res.keyIndex()
	}
	f.ints, f.nInts, f.vals = nil, 0, nil
}

// finish returns the winners folded so far; the result of a fold that stayed on the BIGINT path
// has no index yet (reduceResult.keyIndex).
func (f *folder) finish() reduceResult {
	if f.ints != nil {
		f.indexKeys(false)
	}
	return f.res
}

// compareSeq is schema.CompareTuple, with a fast path for the common sequence of one BIGINT.
func compareSeq(a, b []any) int {
	if len(a) == 1 && len(b) == 1 {
		if x, ok := a[0].(int64); ok {
			if y, ok := b[0].(int64); ok {
				return cmp.Compare(x, y)
			}
		}
	}
	return schema.CompareTuple(a, b)
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

// decide compares each winner with the stored state (semantics.md, APPLY CHANGES), which state
// returns for an encoded key (nil for a key it does not hold): an event at or below the stored
// sequence of a live row or tombstone changes nothing, except that a delete at the live row's own
// sequence wins the tie. It returns the changes in first-arrival order, the ties with stored
// rows (a delete at a live row's sequence, an upsert at a tombstone's), and the upserts at a live
// row's own sequence: each is a tie only when its row differs from the stored one, which the
// state does not hold (sameSeqTies reads it).
func decide(red reduceResult, state func(kb string) *cdcEntry) (_ []keyChange, ties tieCount, same []keyChange) {
	out := make([]keyChange, 0, len(red.order))
	for i, k := range red.order {
		w := red.winners[i]
		e := state(k)
		ch := keyChange{kb: k, win: w, entry: e}
		switch {
		case e == nil:
			if w.delete {
				ch.what = tombstoneOnly
			} else {
				ch.what = insertRow
			}
		case e.deleted:
			switch c := compareSeq(w.seq, e.seq); {
			case c > 0 && w.delete:
				ch.what = tombstoneOnly
			case c > 0:
				ch.what = insertRow
			case c == 0 && !w.delete:
				// the stored delete beats the upsert, across batches too
				ties.add(tie{key: w.key, seq: w.seq, arrival: w.arrival, other: -1, rule: deleteBeatUpsert})
			}
		default:
			c := compareSeq(w.seq, e.seq)
			switch {
			case c > 0 && w.delete:
				ch.what = deleteRow
			case c > 0:
				ch.what = updateRow
			case c == 0 && w.delete:
				ch.what = deleteRow
				ties.add(tie{key: w.key, seq: w.seq, arrival: w.arrival, other: -1, rule: deleteBeatUpsert})
			case c == 0:
				same = append(same, ch)
			}
		}
		if ch.what != noop {
			out = append(out, ch)
		}
	}
	return out, ties, same
}
