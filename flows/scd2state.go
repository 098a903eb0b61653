package flows

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"tributary/delta"
	"tributary/schema"
)

// histState is the CDC state of an SCD type 2 target: per key, every distinct event (one per
// sequence value) and the data file holding the key's versions. Keeping the events, not only the
// versions, is what lets a late event be placed where its sequence belongs, exactly as in-order
// arrival would have placed it (semantics.md "APPLY CHANGES").
type histState struct {
	stateLog
	keySch   schema.Schema
	seqSch   schema.Schema
	dataSch  schema.Schema
	keys     map[string]*histKey // by encoded key (appendValues)
	truncate []any               // the highest truncate sequence applied (SCD type 1), or nil
	dec      *histDecoder        // decodes the keys' events (eventsOf)
	// fresh says whether the batch folded its keys in columns (a first batch, histColumns):
	// they hold events not yet encoded (histKey.fresh), and the state is then not kept in
	// memory after the batch (remember), which would keep the batch's columns alive; the next
	// batch reads it back from its segments. (A state read from a history-columns segment
	// holds such keys too, in the segment's memory, and is kept as any other.)
	fresh bool
	// unindexed counts the keys of such a batch that keys does not hold: its save names them all
	// (changed, with their histKeys), and the state is not kept after it, so nothing looks them
	// up (100k keys: about 10 ms of CPU not spent indexing them).
	unindexed int
}

// histKey is one key of a histState. Its events stay encoded (blob) until a batch needs them
// (histState.eventsOf), so that the keys a batch does not touch cost no decoding on load and no
// encoding on save.
type histKey struct {
	events  []histEvent // in sequence order; valid once decoded (blob and fresh nil)
	blob    []byte      // the events as a keyed segment holds them (encodeHistEvents), or nil
	nEvents int         // len of the events, decoded or not
	// lastDelete says whether the last event is a delete.
	lastDelete bool
	file       string
	// deletedAt is when the key's last event became a delete (ms), for tombstone GC of SCD
	// type 1 targets kept as histories; 0 otherwise.
	deletedAt int64
	// fresh, for a key of a first batch folded in columns (histColumns.fold) or read from a
	// history-columns segment (decodeColumnsSegment), holds its events as positions [from, to)
	// of those columns, not yet encoded: a save writes them from there (as columns again, or
	// encoded as it writes them: 1M events, 40 MB that were held from the fold to the end of
	// the batch), and settle encodes them before any other use. events and blob are then nil.
	fresh    *histBatch
	from, to int32
}

// settle encodes the events of a fresh key (blob), so that it is as any other key.
func (hk *histKey) settle() {
	if hk.fresh != nil {
		hk.blob = hk.appendFresh(nil, &freshScratch{})
		hk.fresh = nil
	}
}

// freshScratch is the scratch space of appendFresh, reused from key to key.
type freshScratch struct {
	red []int32
}

// appendFresh appends the encoding of a fresh key's events to buf, as encodeHistEvents encodes
// them.
func (hk *histKey) appendFresh(buf []byte, sc *freshScratch) []byte {
	sc.red = hk.fresh.reduce(sc.red[:0], hk.from, hk.to, nil)
	return hk.fresh.appendHistory(buf, sc.red)
}

// setEvents replaces the key's events.
func (hk *histKey) setEvents(events []histEvent) {
	hk.events, hk.blob, hk.fresh, hk.nEvents = events, nil, nil, len(events)
	hk.lastDelete = len(events) > 0 && events[len(events)-1].delete
}

var histCache sync.Map // state dir -> *histState

// segmentSchema: key columns, __seq_<i>_<name>, __delete, the data columns as __v_<name>, __file.
// A segment holds every event of each key it names; a later segment replaces a key's events.
func (s *histState) segmentSchema() schema.Schema {
	out := schema.Schema{}
	out.Fields = append(out.Fields, s.keySch.Fields...)
	for i, f := range s.seqSch.Fields {
		out.Fields = append(out.Fields, schema.Field{Name: fmt.Sprintf("__seq_%d_%s", i, f.Name), Type: f.Type, Nullable: true})
	}
	out.Fields = append(out.Fields, schema.Field{Name: "__delete", Type: schema.Type{Kind: schema.Boolean}, Nullable: true})
	for _, f := range s.dataSch.Fields {
		out.Fields = append(out.Fields, schema.Field{Name: "__v_" + f.Name, Type: f.Type, Nullable: true})
	}
	out.Fields = append(out.Fields,
		schema.Field{Name: "__file", Type: schema.Type{Kind: schema.String}, Nullable: true},
		schema.Field{Name: "__deleted_at", Type: schema.Type{Kind: schema.Long}, Nullable: true})
	return out
}

// gc drops keys whose last event is a delete older than gcMillis (SCD type 1 tombstones).
func (s *histState) gc(nowMillis, gcMillis int64) {
	if gcMillis < 0 {
		return
	}
	for k, hk := range s.keys {
		if hk.nEvents > 0 && hk.lastDelete && hk.deletedAt > 0 && hk.deletedAt+gcMillis < nowMillis {
			delete(s.keys, k)
		}
	}
}

// loadHistState reads the state named by manifest id ("" for a new target). With gcMillis >= 0
// (SCD type 1 only), keys deleted longer than gcMillis ago are forgotten.
func loadHistState(dir string, table *delta.Table, snap *delta.Snapshot, id string, keySch, seqSch, dataSch schema.Schema, nowMillis, gcMillis int64) (*histState, error) {
	if v, ok := histCache.LoadAndDelete(dir); ok && id != "" {
		if c := v.(*histState); c.id == id && c.keySch.Equal(keySch) && c.seqSch.Equal(seqSch) && c.dataSch.Equal(dataSch) {
			if nowMillis-c.lastGC > 60_000 {
				c.gc(nowMillis, gcMillis)
				c.lastGC = nowMillis
			}
			return c, nil
		}
	}
	st := &histState{stateLog: stateLog{dir: dir, lastGC: nowMillis}, keySch: keySch, seqSch: seqSch, dataSch: dataSch, keys: map[string]*histKey{}}
	if id == "" {
		if snap.NumRecords() > 0 {
			return nil, fmt.Errorf("the table %s has rows but no APPLY CHANGES state; run a full refresh of %s", table.Dir, filepath.Base(table.Dir))
		}
		return st, nil
	}
	m, err := st.readManifest(table, id)
	if err != nil {
		return nil, err
	}
	for _, sg := range m.Segments {
		if err := st.readSegment(sg); err != nil {
			return nil, fmt.Errorf("reading CDC state segment %s: %w", sg.Name, err)
		}
	}
	st.segments, st.renames, st.id = m.Segments, m.Renames, id
	if st.truncate, err = decodeSeq(m.Truncate, seqSch, id); err != nil {
		return nil, err
	}
	st.gc(nowMillis, gcMillis)
	return st, nil
}

// readSegment adds the keys of one segment to the state, replacing every event older segments
// held of them.
func (s *histState) readSegment(sg segment) error {
	name := filepath.Join(s.dir, "segments", filepath.FromSlash(sg.Name))
	switch sg.Format {
	case segmentFormatHistory:
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		return s.decodeSegment(b)
	case segmentFormatHistoryColumns:
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		return s.decodeColumnsSegment(b)
	case "":
		rows, err := delta.New(s.dir).ReadFile(filepath.ToSlash(filepath.Join("segments", sg.Name)), s.segmentSchema())
		if err != nil {
			return err
		}
		nk, ns, nd := len(s.keySch.Fields), len(s.seqSch.Fields), len(s.dataSch.Fields)
		var kb []byte
		fresh := map[string]bool{}
		for _, r := range rows {
			kb = appendValues(kb[:0], r[:nk])
			k := string(kb)
			hk := s.keys[k]
			if !fresh[k] {
				fresh[k] = true
				hk = &histKey{}
				s.keys[k] = hk
			}
			e := histEvent{seq: r[nk : nk+ns : nk+ns]}
			e.delete, _ = r[nk+ns].(bool)
			if !e.delete {
				e.row = r[nk+ns+1 : nk+ns+1+nd : nk+ns+1+nd]
			}
			hk.file, _ = r[nk+ns+1+nd].(string)
			hk.deletedAt, _ = r[nk+ns+2+nd].(int64)
			hk.setEvents(append(hk.events, e))
		}
		return nil
	}
	return fmt.Errorf("unknown segment format %q", sg.Format)
}

// eventsOf returns the events of hk, decoding them on first use. The state only holds events it
// encoded itself or read from a checked segment, so a decoding error means the state is corrupt in
// memory: it panics.
func (s *histState) eventsOf(hk *histKey) []histEvent {
	hk.settle()
	if hk.blob != nil {
		if s.dec == nil {
			s.dec = newHistDecoder()
		}
		events, err := decodeHistEvents(hk.blob, len(s.dataSch.Fields), hk.nEvents, s.dec)
		if err != nil {
			panic(fmt.Sprintf("flows: CDC history state: %v", err))
		}
		hk.setEvents(events)
	}
	return hk.events
}

// encode encodes the events of hk for the next save and keeps only the encoding (eventsOf
// decodes them again when a batch needs them); it does nothing when the keyed form cannot hold
// the data columns (keyedData).
func (s *histState) encode(hk *histKey) {
	hk.settle()
	if hk.blob != nil || len(hk.events) == 0 || !keyedData(s.dataSch) {
		return
	}
	hk.blob = encodeHistEvents(make([]byte, 0, 40*len(hk.events)), hk.events)
	hk.events = nil
}

// encodeAppended is encode for a key whose stored events, encoded as blob (the key's blob before
// eventsOf decoded it; nil when it had none), are the first n of its events: only the events after
// them are encoded, after a copy of blob (which may be a view of a segment file's bytes and is
// never written to).
func (s *histState) encodeAppended(hk *histKey, blob []byte, n int) {
	if blob == nil || n == 0 || n > len(hk.events) || hk.blob != nil || !keyedData(s.dataSch) {
		s.encode(hk)
		return
	}
	buf := make([]byte, len(blob), len(blob)+40*(len(hk.events)-n))
	copy(buf, blob)
	hk.blob = encodeHistEvents(buf, hk.events[n:])
	hk.events = nil
}

// histTail is what folding a key's history further needs of its stored events, when a batch
// only adds events after them: the last event's sequence and, when the last version is open
// (the last event is an upsert), its start and row.
type histTail struct {
	lastSeq   []any
	open      bool
	openStart []any
	openRow   []any
}

// tailOf reads the tail of the key's encoded events (hk.blob, which must be set, or fresh: it is
// settled first) for an SCD type 2 fold without ignore_null_updates: it decodes only the events
// from the last one back to where the open version began (the upsert after a delete, or after an
// upsert whose tracked columns differ: within a version they are all the same), not the whole
// history. offs is scratch space, returned for reuse; ok is false when the blob does not hold n
// events.
func (s *histState) tailOf(hk *histKey, tracked []int, offs []int) (_ histTail, _ []int, ok bool) {
	hk.settle()
	offs, ok = histEventBounds(offs[:0], hk.blob)
	n := len(offs) - 1
	if !ok || n != hk.nEvents || n == 0 {
		return histTail{}, offs, false
	}
	if s.dec == nil {
		s.dec = newHistDecoder()
	}
	width := len(s.dataSch.Fields)
	at := func(j int) (histEvent, bool) {
		evs, err := decodeHistEvents(hk.blob[offs[j]:offs[j+1]], width, 1, s.dec)
		if err != nil || len(evs) != 1 {
			return histEvent{}, false
		}
		return evs[0], true
	}
	last, ok := at(n - 1)
	if !ok {
		return histTail{}, offs, false
	}
	t := histTail{lastSeq: last.seq}
	if last.delete {
		return t, offs, true
	}
	t.open, t.openStart, t.openRow = true, last.seq, last.row
	for j, later := n-2, last; j >= 0; j-- {
		e, ok := at(j)
		if !ok {
			return histTail{}, offs, false
		}
		if e.delete || !sameColumns(e.row, later.row, tracked) {
			break
		}
		t.openStart, later = e.seq, e
	}
	return t, offs, true
}

// save writes the keys changed by a batch (every event of each; changed holds their encoded
// keys) as a new segment, or, when the log has grown past its base, every key as one segment,
// and a manifest; it returns the manifest id and the new log for remember. The segment is in the
// keyed form (segmentFormatHistory) unless a data column is nested, which the keyed form does
// not hold: then it is a Parquet file of segmentSchema. hks, when not nil, holds the histKey of
// each changed key (changed[i]'s is hks[i]), so that none is looked up in s.keys again; it must
// when the state has unindexed keys.
func (s *histState) save(changed []string, hks []*histKey) (string, []segment, map[string]string, error) {
	keys := changed
	// Every key is a first batch's, and changed names them all.
	allFresh := s.fresh && len(changed) == len(s.keys)+s.unindexed
	if s.unindexed > 0 && !allFresh {
		for i, k := range changed { // not so, by save's callers: indexed, to be safe
			s.keys[k] = hks[i]
		}
		s.unindexed = 0
		allFresh = s.fresh && len(changed) == len(s.keys)
	}
	if hks == nil {
		hks = make([]*histKey, len(changed))
		for i, k := range changed {
			hks[i] = s.keys[k]
		}
	}
	var n int64
	for _, hk := range hks {
		n += int64(hk.nEvents)
	}
	full := s.shouldCompact(n)
	switch {
	case full && allFresh:
		// Every key is a first batch's, and changed names them all, in key order: written in
		// that order, their encodings read the gathered columns from start to end (in the
		// map's order, all over them).
		for _, hk := range hks {
			hk.file = s.resolve(hk.file)
		}
	case full:
		keys, hks = make([]string, 0, len(s.keys)), make([]*histKey, 0, len(s.keys))
		n = 0
		for k, hk := range s.keys {
			hk.file = s.resolve(hk.file)
			n += int64(hk.nEvents)
			keys, hks = append(keys, k), append(hks, hk)
		}
	}
	trunc := encodeSeq(s.truncate, s.seqSch)
	if keyedData(s.dataSch) {
		if full && allFresh && columnsSegmentFor(hks) {
			// A first batch's keys, each holding its events in the gathered columns: saved
			// as those columns (histcolsegment.go).
			return s.write(n, full, trunc, func(dir string) (segment, error) { return s.writeColumnsSegment(dir, hks) })
		}
		return s.write(n, full, trunc, func(dir string) (segment, error) { return s.writeSegment(dir, keys, hks, n) })
	}
	var rows [][]any
	for i, k := range keys {
		hk := hks[i]
		key, err := decodeValues([]byte(k))
		if err != nil {
			panic(fmt.Sprintf("flows: CDC history state key: %v", err))
		}
		var file any
		if hk.file != "" {
			file = hk.file
		}
		for _, e := range s.eventsOf(hk) {
			r := make([]any, 0, len(key)+len(e.seq)+3+len(s.dataSch.Fields))
			r = append(r, key...)
			r = append(r, e.seq...)
			r = append(r, e.delete)
			if e.delete {
				r = append(r, make([]any, len(s.dataSch.Fields))...)
			} else {
				r = append(r, e.row...)
			}
			r = append(r, file, hk.deletedAt)
			rows = append(rows, r)
		}
	}
	return s.write(int64(len(rows)), full, trunc, parquetSegment(s.segmentSchema(), rows))
}

// remember caches s as the state named by manifest id, after the commit that names it (unless
// it holds fresh keys: the next batch then reads it back), and prunes the state folder (prune)
// to that manifest and the one s was loaded from.
func (s *histState) remember(id string, segs []segment, renames map[string]string) {
	prev, prevSegs := s.id, s.segments
	s.id, s.segments, s.renames = id, segs, renames
	s.prune(id, segs, prev, prevSegs)
	if !s.fresh {
		histCache.Store(s.dir, s)
	}
}

// rebuildIndex sets the data file of every key from the rows of the snapshot's files, for when the
// table was rewritten by an operation that does not keep the state (OPTIMIZE); the next save
// writes the whole state.
func (s *histState) rebuildIndex(t *delta.Table, snap *delta.Snapshot, tgtSch schema.Schema, keyIdx []int) error {
	for _, hk := range s.keys {
		hk.file = ""
	}
	var kb []byte
	for _, f := range snap.Files {
		rows, _, err := t.ReadLiveFile(f, tgtSch) // without the rows a deletion vector deletes
		if err != nil {
			return err
		}
		for _, r := range rows {
			kb = appendPicked(kb[:0], r, keyIdx)
			if hk := s.keys[string(kb)]; hk != nil {
				hk.file = f.Path
			}
		}
	}
	s.renames, s.rebuilt = nil, true
	return nil
}
