package flows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"path/filepath"
	"sync"

	"tributary/delta"
	"tributary/schema"
)

// stateKey is the commitInfo key under which an APPLY CHANGES commit names its CDC state manifest.
const stateKey = "tributaryCdcState"

// cdcEntry is what a batch reads of one key's CDC state (cdcState.entry).
type cdcEntry struct {
	seq     []any  // sequence values, in the order of `sequence_by`
	deleted bool   // a tombstone: the key's last event was a delete
	file    string // the data file holding the key's row, as recorded (cdcState.resolve follows renames)
	slot    int    // the key's slot in the cdcState
}

// A merge-on-read state (the target has delta.enableDeletionVectors, scd1dv.go) also knows, per
// live key, the row's physical position in its data file and the row itself (its image, the
// appendValues encoding of the target's columns), so that a batch marks the old row deleted in a
// deletion vector and writes the change data feed's preimage without reading the data file.

// cdcState is the CDC state of an SCD type 1 target: every key ever seen (live or tombstone),
// with its sequence and the data file holding its row. A key costs a few tens of bytes and holds
// no pointer, so that a state of millions of keys loads fast and gives the garbage collector
// nothing to scan: a key's encoding (appendValues) and its sequence's encoding sit side by side
// in one byte arena, a slot per key says where and holds the rest, data file paths are small
// integer ids, and an open-addressing hash table of slot numbers finds a key's slot.
type cdcState struct {
	stateLog
	keySch schema.Schema
	seqSch schema.Schema
	arena  []byte    // key and sequence encodings; a slot's bytes are replaced by appending
	slots  []cdcSlot // slots are marked gone, not removed, until compact renumbers them
	// table is the hash table: per bucket 0 (empty) or the key's hash with its low 32 bits
	// replaced by the slot index + 1; its length is a power of two.
	table    []uint64
	seed     maphash.Seed
	files    []string         // data file id -> path; id 0 is "no file"
	fileIDs  map[string]int32 // path -> data file id
	truncate []any            // the highest truncate sequence applied, or nil
	// partial says that only some keys were loaded (loadState): the state answers for them only.
	partial bool
	// mor says that the target is merge-on-read (mergeOnRead): a touched live key needs its row's
	// position and image.
	mor  bool
	want map[string]int // while a partial state loads: the keys to keep
	sink uint64         // the bucket loads recordChanges makes ahead, kept so that they are made
}

// cdcSlot is one key of a cdcState.
type cdcSlot struct {
	off       uint64 // the key's encoding is arena[off:off+keyLen], its sequence's right after, then its row image
	keyLen    uint32
	seqLen    uint32
	imgLen    uint32 // the row image's length; 0 when the state does not hold it
	pos1      uint64 // the row's physical position in its data file plus one; 0 when not known
	deletedAt int64  // commit time of the delete, ms since the epoch (tombstones)
	file      int32  // data file id, 0 for none
	deleted   bool   // a tombstone: the key's last event was a delete
	gone      bool   // dropped by tombstone GC: the key is not in the state
}

// newCDCState returns an empty state of folder dir, its last tombstone GC at lastGC (ms).
func newCDCState(dir string, keySch, seqSch schema.Schema, lastGC int64) *cdcState {
	return &cdcState{stateLog: stateLog{dir: dir, lastGC: lastGC}, keySch: keySch, seqSch: seqSch,
		seed: maphash.MakeSeed(), files: []string{""}, fileIDs: map[string]int32{"": 0}}
}

// keyBytes is the encoding of slot i's key.
func (s *cdcState) keyBytes(i int) []byte {
	sl := &s.slots[i]
	return s.arena[sl.off : sl.off+uint64(sl.keyLen)]
}

// seqBytes is the encoding of slot i's sequence.
func (s *cdcState) seqBytes(i int) []byte {
	sl := &s.slots[i]
	at := sl.off + uint64(sl.keyLen)
	return s.arena[at : at+uint64(sl.seqLen)]
}

// imgBytes is slot i's row image (empty when the state does not hold it).
func (s *cdcState) imgBytes(i int) []byte {
	sl := &s.slots[i]
	at := sl.off + uint64(sl.keyLen) + uint64(sl.seqLen)
	return s.arena[at : at+uint64(sl.imgLen)]
}

// setRow records where slot i's row lives: data file id file, physical position pos (-1 when not
// known) and the row image img (appendValues of the row; nil for none).
func (s *cdcState) setRow(i int, file int32, pos int64, img []byte) {
	sl := &s.slots[i]
	if len(img) > 0 && bytes.Equal(s.imgBytes(i), img) {
		// The same row in another place (a rebuild after OPTIMIZE): nothing to append.
	} else if sl.imgLen == 0 && sl.off+uint64(sl.keyLen)+uint64(sl.seqLen) == uint64(len(s.arena)) {
		s.arena = append(s.arena, img...) // the key and sequence were the last bytes appended
		sl.imgLen = uint32(len(img))
	} else if len(img) > 0 || sl.imgLen > 0 {
		off := uint64(len(s.arena))
		s.arena = append(append(append(s.arena, s.keyBytes(i)...), s.seqBytes(i)...), img...)
		sl.off, sl.imgLen = off, uint32(len(img))
	}
	sl.file, sl.pos1 = file, uint64(pos+1)
}

// find returns the slot of the key encoded as kb (gone or not), or -1.
func (s *cdcState) find(kb []byte) int {
	if len(s.table) == 0 {
		return -1
	}
	h := maphash.Bytes(s.seed, kb)
	i, _ := s.probe(kb, h)
	return i
}

// probe looks for the key encoded as kb, of hash h: it returns its slot, or -1 and the empty
// bucket where it would go.
func (s *cdcState) probe(kb []byte, h uint64) (slot int, bucket uint64) {
	mask := uint64(len(s.table) - 1)
	tag := h >> 32 << 32
	for b := h & mask; ; b = (b + 1) & mask {
		v := s.table[b]
		if v == 0 {
			return -1, b
		}
		if v&^0xffffffff == tag {
			if i := int(v&0xffffffff) - 1; bytes.Equal(s.keyBytes(i), kb) {
				return i, b
			}
		}
	}
}

// put sets the sequence of the key encoded as kb to the encoding seq, adding a slot for a key not
// in the table; it returns the slot. A gone slot comes back with only its key and sequence set.
// With fresh, the caller knows that the key is not in the table.
func (s *cdcState) put(kb, seq []byte, fresh bool) int {
	return s.putHashed(kb, maphash.Bytes(s.seed, kb), seq, fresh)
}

// putHashed is put for a key whose hash (maphash.Bytes with the state's seed) is h.
func (s *cdcState) putHashed(kb []byte, h uint64, seq []byte, fresh bool) int {
	if (len(s.slots)+1)*2 > len(s.table) {
		s.grow(len(s.slots) + 1)
	}
	i, b := -1, uint64(0)
	if fresh {
		mask := uint64(len(s.table) - 1)
		for b = h & mask; s.table[b] != 0; b = (b + 1) & mask {
		}
	} else {
		i, b = s.probe(kb, h)
	}
	if i >= 0 {
		sl := &s.slots[i]
		if sl.gone {
			*sl = cdcSlot{off: sl.off, keyLen: sl.keyLen, seqLen: sl.seqLen}
		}
		if !bytes.Equal(s.seqBytes(i), seq) {
			// A new sequence is a new row (or none): the caller records it with setRow.
			off := uint64(len(s.arena))
			s.arena = append(append(s.arena, kb...), seq...)
			sl.off, sl.seqLen, sl.imgLen, sl.pos1 = off, uint32(len(seq)), 0, 0
		}
		return i
	}
	off := uint64(len(s.arena))
	s.arena = append(append(s.arena, kb...), seq...)
	s.slots = append(s.slots, cdcSlot{off: off, keyLen: uint32(len(kb)), seqLen: uint32(len(seq))})
	i = len(s.slots) - 1
	s.table[b] = h>>32<<32 | uint64(i+1)
	return i
}

// grow makes the hash table large enough for n keys at a load of at most one half.
func (s *cdcState) grow(n int) {
	if n >= math.MaxUint32/2 {
		panic("flows: a CDC state of more than 2^31 keys")
	}
	size := 1024
	for size < 2*n {
		size *= 2
	}
	if size <= len(s.table) {
		return
	}
	s.table = make([]uint64, size)
	mask := uint64(size - 1)
	for i := range s.slots {
		h := maphash.Bytes(s.seed, s.keyBytes(i))
		b := h & mask
		for s.table[b] != 0 {
			b = (b + 1) & mask
		}
		s.table[b] = h>>32<<32 | uint64(i+1)
	}
}

// fileID returns the id of data file path, adding it if new.
func (s *cdcState) fileID(path string) int32 {
	if id, ok := s.fileIDs[path]; ok {
		return id
	}
	id := int32(len(s.files))
	s.files = append(s.files, path)
	s.fileIDs[path] = id
	return id
}

// entry returns the state of the key encoded as kb, or nil when the state does not hold it.
func (s *cdcState) entry(kb string) *cdcEntry {
	i := s.find([]byte(kb))
	if i < 0 || s.slots[i].gone {
		return nil
	}
	return s.entryAt(i)
}

// entryAt decodes slot i. The state only holds sequences it encoded itself, so a decoding error
// means the state is corrupt in memory: it panics.
func (s *cdcState) entryAt(i int) *cdcEntry {
	seq, err := decodeValues(s.seqBytes(i))
	if err != nil {
		panic(fmt.Sprintf("flows: CDC state slot %d: %v", i, err))
	}
	sl := &s.slots[i]
	return &cdcEntry{seq: seq, deleted: sl.deleted, file: s.files[sl.file], slot: i}
}

// stateCache keeps, per state folder, the state as of the last commit this process made, so that
// the next batch of a long-running process does not read the segments again. An entry is taken
// out while a batch uses it and put back only after that batch committed, so a failed batch
// never leaves a half-applied state behind.
var stateCache sync.Map // state dir -> *cdcState

// remember caches s as the state named by manifest id, after the commit that names it, and
// prunes the state folder (prune) to that manifest and the one s was loaded from.
func (s *cdcState) remember(id string, segments []segment, renames map[string]string) {
	prev, prevSegs := s.id, s.segments
	s.id, s.segments, s.renames = id, segments, renames
	s.prune(id, segments, prev, prevSegs)
	loadedStates.Store(s.dir, struct{}{})
	if !s.partial {
		stateCache.Store(s.dir, s)
	}
}

// gc drops tombstones older than gcMillis before nowMillis; gcMillis < 0 keeps them all.
func (s *cdcState) gc(nowMillis, gcMillis int64) {
	if gcMillis < 0 {
		return
	}
	for i := range s.slots {
		if sl := &s.slots[i]; sl.deleted && sl.deletedAt+gcMillis < nowMillis {
			sl.gone = true
		}
	}
}

// segmentSchema is the schema of a Parquet segment of an SCD type 1 state (the form written
// before the keyed form; still read): the key columns, __seq_<i>_<name>, __deleted,
// __deleted_at, __file.
func (s *cdcState) segmentSchema() schema.Schema {
	out := schema.Schema{}
	out.Fields = append(out.Fields, s.keySch.Fields...)
	for i, f := range s.seqSch.Fields {
		out.Fields = append(out.Fields, schema.Field{Name: fmt.Sprintf("__seq_%d_%s", i, f.Name), Type: f.Type, Nullable: true})
	}
	out.Fields = append(out.Fields,
		schema.Field{Name: "__deleted", Type: schema.Type{Kind: schema.Boolean}, Nullable: true},
		schema.Field{Name: "__deleted_at", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		schema.Field{Name: "__file", Type: schema.Type{Kind: schema.String}, Nullable: true},
	)
	return out
}

// sourceKey is the commitInfo key under which an APPLY CHANGES commit records the id
// (metaData.id) of the source table it read, so that a re-created source is noticed.
const sourceKey = "tributarySourceTableId"

// settingsKey is the commitInfo key under which an APPLY CHANGES commit records the settings its
// CDC state depends on (keys, sequence_by, stored_as_scd_type, ignore_null_updates), so that a
// change of them is refused instead of misreading the state (issue: guard rails).
const settingsKey = "tributaryApplyChanges"

// applySettings are the settings recorded under settingsKey.
type applySettings struct {
	Keys              []string `json:"keys"`
	SequenceBy        []string `json:"sequence_by"`
	StoredAsSCDType   int      `json:"stored_as_scd_type"`
	IgnoreNullUpdates bool     `json:"ignore_null_updates"`
	// TrackHistory lists the columns whose changes open an SCD type 2 version (nil for SCD type
	// 1): a new list would make the stored history disagree with the one the list gives.
	TrackHistory []string `json:"track_history,omitempty"`
}

// lastApply finds the newest commit of the target (at or before snap.Version) made by an APPLY
// CHANGES batch and returns the state manifest id, the source table id and the settings it
// names (zero values if none).
func lastApply(table *delta.Table, snap *delta.Snapshot) (stateID, sourceID string, settings *applySettings, err error) {
	for v := snap.Version; v >= 0; v-- {
		c, err := table.ReadCommit(v)
		if err != nil {
			return "", "", nil, err
		}
		if s, ok := c.Info.Extra[stateKey].(string); ok {
			src, _ := c.Info.Extra[sourceKey].(string)
			if raw, ok := c.Info.Extra[settingsKey]; ok {
				b, _ := json.Marshal(raw)
				settings = &applySettings{}
				if err := json.Unmarshal(b, settings); err != nil {
					return "", "", nil, fmt.Errorf("commit %d of %s: %s: %w", v, table.Dir, settingsKey, err)
				}
			}
			return s, src, settings, nil
		}
	}
	return "", "", nil, nil
}

// loadedStates holds the state folders whose state this process has loaded and committed
// (remember): a second batch of a long-running process loads the whole state and caches it.
var loadedStates sync.Map // state dir -> struct{}

// loadState reads the CDC state for the target snapshot: the manifest id (from lastApply), or an
// empty state when id is "". Tombstones older than gcMillis before nowMillis are dropped (table
// property pipelines.cdc.tombstoneGCThresholdInSeconds).
//
// With want (encoded keys, appendValues) the state may be loaded partially: only the keys of
// want, when the process has no cached state and has not loaded this state before (a `pipeline
// run` applies one batch). A partial state answers for the keys of want only, is not cached,
// and cannot write a full segment (needsFull says when the whole state is needed).
func loadState(dir string, table *delta.Table, snap *delta.Snapshot, id string, keySch, seqSch schema.Schema, nowMillis, gcMillis int64, want map[string]int) (*cdcState, error) {
	if v, ok := stateCache.LoadAndDelete(dir); ok && id != "" {
		if c := v.(*cdcState); c.id == id && c.keySch.Equal(keySch) && c.seqSch.Equal(seqSch) {
			if nowMillis-c.lastGC > 60_000 {
				c.gc(nowMillis, gcMillis)
				c.lastGC = nowMillis
			}
			return c, nil
		}
	}
	if _, seen := loadedStates.Load(dir); seen {
		want = nil
	}
	st := newCDCState(dir, keySch, seqSch, nowMillis)
	if id == "" {
		if snap.NumRecords() > 0 {
			return nil, fmt.Errorf("the table %s has rows but no APPLY CHANGES state; run `pipeline run SPEC --full-refresh %s`", table.Dir, filepath.Base(table.Dir))
		}
		return st, nil
	}
	m, err := st.readManifest(table, id)
	if err != nil {
		return nil, err
	}
	st.want, st.partial = want, want != nil
	var total int64
	for _, sg := range m.Segments {
		total += sg.Rows
	}
	if want != nil {
		total = min(total, int64(len(want)))
	}
	st.grow(int(min(total, math.MaxInt32)))
	// A partial load of a log at its most segments reads the delta segments (all but the base)
	// whole, so that the save merges them into one (mergeDeltas) instead of rewriting the whole
	// state: the work stays proportional to the changes since the last full compaction.
	st.mergeDeltas = want != nil && len(m.Segments) >= maxSegments
	for i, sg := range m.Segments {
		st.want = want
		if st.mergeDeltas && i > 0 {
			st.want = nil
		}
		if err := st.readSegment(sg); err != nil {
			return nil, fmt.Errorf("reading CDC state segment %s: %w", sg.Name, err)
		}
	}
	st.want = nil
	st.segments, st.renames, st.id = m.Segments, m.Renames, id
	if st.truncate, err = decodeSeq(m.Truncate, seqSch, id); err != nil {
		return nil, err
	}
	st.gc(nowMillis, gcMillis)
	return st, nil
}

// needsFull says whether a batch of nChanges changes to partial state s needs the whole state:
// to write it as one segment (shouldCompact), or because a touched key's data file is not live in
// snap (ensureFiles rebuilds the index from every key).
func (s *cdcState) needsFull(nChanges int, snap *delta.Snapshot, touched map[string]*keyChange) bool {
	if !s.partial {
		return false
	}
	if s.shouldCompact(int64(nChanges)) {
		return true
	}
	return s.stale(snap, touched)
}

// readSegment adds the keys of one segment to the state, replacing what older segments said of
// them.
func (s *cdcState) readSegment(sg segment) error {
	name := filepath.Join(s.dir, "segments", filepath.FromSlash(sg.Name))
	switch sg.Format {
	case segmentFormatBucketed:
		return s.readBucketed(name, bucketedReadAll)
	case segmentFormatKeyed:
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		return s.decodeSegment(b)
	case "":
		rows, err := delta.New(s.dir).ReadFile(filepath.ToSlash(filepath.Join("segments", sg.Name)), s.segmentSchema())
		if err != nil {
			return err
		}
		nk, ns := len(s.keySch.Fields), len(s.seqSch.Fields)
		var kb, sb []byte
		for _, r := range rows {
			kb = appendValues(kb[:0], r[:nk])
			if _, ok := s.want[string(kb)]; s.want != nil && !ok {
				continue
			}
			sb = appendValues(sb[:0], r[nk:nk+ns])
			i := s.put(kb, sb, false)
			sl := &s.slots[i]
			sl.deleted, _ = r[nk+ns].(bool)
			sl.deletedAt, _ = r[nk+ns+1].(int64)
			f, _ := r[nk+ns+2].(string)
			sl.file = s.fileID(f)
		}
		return nil
	}
	return fmt.Errorf("unknown segment format %q", sg.Format)
}

// compact drops the gone slots and the bytes no slot uses, and resolves every key's data file
// (the renames are dropped by the full save that calls it). Slots are renumbered.
func (s *cdcState) compact() {
	old := *s
	s.arena, s.slots, s.table = nil, nil, nil
	s.files, s.fileIDs = []string{""}, map[string]int32{"": 0}
	var n, size int
	for _, sl := range old.slots {
		if !sl.gone {
			n, size = n+1, size+int(sl.keyLen)+int(sl.seqLen)+int(sl.imgLen)
		}
	}
	s.arena = make([]byte, 0, size)
	s.slots = make([]cdcSlot, 0, n)
	s.grow(n)
	to := make([]int32, len(old.files)) // resolve each data file once
	for id, p := range old.files {
		to[id] = s.fileID(old.resolve(p))
	}
	for i, sl := range old.slots {
		if sl.gone {
			continue
		}
		j := s.put(old.keyBytes(i), old.seqBytes(i), true)
		if sl.imgLen > 0 { // the image right after the key and sequence put appended
			s.arena = append(s.arena, old.imgBytes(i)...)
			s.slots[j].imgLen = sl.imgLen
		}
		s.slots[j].deleted, s.slots[j].deletedAt, s.slots[j].file, s.slots[j].pos1 = sl.deleted, sl.deletedAt, to[sl.file], sl.pos1
		if to[sl.file] != 0 && old.files[sl.file] != old.resolve(old.files[sl.file]) {
			s.slots[j].pos1 = 0 // the file was rewritten: the row's position in the new one is not known
		}
	}
}

// needsCompact says whether a full save must compact the state first: to resolve renamed data
// files (the full save drops the renames), or because most of the arena is bytes no slot uses.
// Otherwise the save writes the live slots as they are, sparing a process that ends after the
// batch a copy of every key.
func (s *cdcState) needsCompact() bool {
	if len(s.renames) > 0 {
		return true
	}
	var live int
	for i := range s.slots {
		if sl := &s.slots[i]; !sl.gone {
			live += int(sl.keyLen) + int(sl.seqLen) + int(sl.imgLen)
		}
	}
	return 2*live < len(s.arena)
}

// save writes the keys of slots changed by a batch as a new segment (or, when the log has grown
// past its base, every key as one segment, files resolved and renames dropped; or, for a state
// loaded to merge its delta segments, the keys of those and of the batch as the one segment
// after the base) and a manifest; it returns the manifest id and the new log for remember.
func (s *cdcState) save(changed []int) (string, []segment, map[string]string, error) {
	full := s.shouldCompact(int64(len(changed)))
	if full && s.partial {
		return "", nil, nil, fmt.Errorf("the CDC state of %s was loaded in part but must be written whole", s.dir)
	}
	if full {
		changed = changed[:0]
		if s.needsCompact() {
			s.compact()
		}
		for i := range s.slots {
			if !s.slots[i].gone {
				changed = append(changed, i)
			}
		}
	} else if s.mergeDeltas {
		// Every key of the delta segments (and the batch's) goes into the one that replaces them.
		changed = changed[:0]
		for i := range s.slots {
			if !s.slots[i].gone {
				changed = append(changed, i)
			}
		}
	}
	return s.write(int64(len(changed)), full, encodeSeq(s.truncate, s.seqSch), func(dir string) (segment, error) {
		return s.writeSegment(dir, changed)
	})
}

// encodeSeq writes a sequence as JSON values in the jsonl form of spec.md §2 (nil for none).
func encodeSeq(seq []any, s schema.Schema) []json.RawMessage {
	var out []json.RawMessage
	for i, v := range seq {
		out = append(out, json.RawMessage(schema.AppendJSON(nil, s.Fields[i].Type, v)))
	}
	return out
}

// decodeSeq reads what encodeSeq wrote, typed by the sequence_by columns.
func decodeSeq(raw []json.RawMessage, s schema.Schema, id string) ([]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) != len(s.Fields) {
		return nil, fmt.Errorf("CDC state manifest %s: the truncate sequence has %d values for %d sequence_by columns", id, len(raw), len(s.Fields))
	}
	var out []any
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("CDC state manifest %s: %w", id, err)
		}
		tv, err := schema.FromJSON(s.Fields[i].Type, v)
		if err != nil {
			return nil, fmt.Errorf("CDC state manifest %s: truncate sequence: %w", id, err)
		}
		out = append(out, tv)
	}
	return out, nil
}
