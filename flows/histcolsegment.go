package flows

import (
	"encoding/binary"
	"unsafe"

	"tributary/schema"
)

// segmentFormatHistoryColumns is the segment format (segment.Format) of the state an SCD type 2
// target's first batch folded in columns (histColumns) saves: its keys' events as the columns
// the fold gathered them into (histBatch), written as they are in memory rather than encoded
// event by event, and read back into a histBatch whose keys are fresh (histKey.fresh): each
// key's events are encoded as encodeHistEvents encodes them only once a batch needs them. On the
// bench's scd2 (1M events, 100k keys) it saves the 60 ms of CPU that encoding every event took,
// for 45 MB written instead of 36.
//
// Layout (integers are uvarints unless said otherwise; arrays are little-endian):
//
//	magic        the bytes of historyColumnsMagic
//	nfiles       then nfiles data file paths, each its length and bytes; a key's file id i > 0
//	             names the i-th path, 0 names no file
//	nkeys        the number of keys
//	ncols        the number of data columns, then each one's kind (schema.Kind)
//	keyCol       the data column of the key, plus 1 (0: none)
//	seqCol       the data column of the sequence, plus 1 (0: none)
//	nevents      the number of events
//	arena        the length of the string arena
//	nkeys key records, in the order of their events:
//	  key        zigzag; the key (one BIGINT)
//	  lastDelete one byte, 1 when the key's last event is a delete, else 0
//	  deletedAt  zigzag; ms since the epoch (histKey.deletedAt)
//	  file       the file id
//	  nevents    the number of the key's events (at least 1), which follow the previous key's
//	padding      zero bytes up to a multiple of 8 from the start of the file
//	seqs         nevents int64: each event's sequence, strictly increasing within a key
//	nulls        with more than 8 data columns, nevents uint64: bit c set when column c is NULL
//	words        per data column but the key's and the sequence's, nevents int64: a fixed-width
//	             value's word (typedFold's), a string's offset in the arena
//	lens         per STRING data column but the key's and the sequence's, nevents uint32: the
//	             string's length
//	nulls8       with 8 data columns or fewer, nevents bytes: the NULL bits
//	dels         nevents bytes, 1 for a delete, else 0
//	arena        the strings' bytes
//	crc          CRC-32C (Castagnoli) of every byte before it, 4 bytes little-endian
//
// A segment holds every event of each key it names, one event per sequence (histBatch.reduce's).
const segmentFormatHistoryColumns = "history-columns-1"

// historyColumnsMagic starts a history-columns segment (segmentFormatHistoryColumns).
const historyColumnsMagic = "tributary cdc history columns\n"

// columnsSegmentFor says whether the keys hks (changed by a first batch, every one of them, in
// key order) are saved as a history-columns segment: each holds its events in a histBatch still.
func columnsSegmentFor(hks []*histKey) bool {
	for _, hk := range hks {
		if hk.fresh == nil {
			return false
		}
	}
	return len(hks) > 0
}

// histRun is events [lo, hi) of a histBatch, the unit writeColumnsSegment copies.
type histRun struct {
	b      *histBatch
	lo, hi int32
}

// writeColumnsSegment writes the keys hks (in key order, each holding its events in a histBatch:
// columnsSegmentFor) as a new history-columns segment file in dir and syncs it.
func (s *histState) writeColumnsSegment(dir string, hks []*histKey) (segment, error) {
	local, paths := fileIDs(hks)
	// Each key's events less those that lose at their sequence, as runs of the batches' events
	// (a key without a tie is one run, and follows the key before in its batch).
	var runs []histRun
	var red []int32
	var recs []byte
	n := 0
	first := hks[0].fresh
	for _, hk := range hks {
		b := hk.fresh
		red = b.reduce(red[:0], hk.from, hk.to, nil)
		for _, e := range red {
			if k := len(runs) - 1; k >= 0 && runs[k].b == b && runs[k].hi == e {
				runs[k].hi++
			} else {
				runs = append(runs, histRun{b, e, e + 1})
			}
		}
		n += len(red)
		last := byte(0)
		if hk.lastDelete {
			last = 1
		}
		recs = binary.AppendUvarint(recs, zigzag(b.keys[hk.from]))
		recs = append(recs, last)
		recs = binary.AppendUvarint(recs, zigzag(hk.deletedAt))
		recs = binary.AppendUvarint(recs, local[hk.file])
		recs = binary.AppendUvarint(recs, uint64(len(red)))
	}
	// The batches' arenas, one after another: a string's offset moves by its batch's base.
	base := map[*histBatch]int64{}
	var arenas [][]byte
	var arenaLen int64
	for _, r := range runs {
		if _, ok := base[r.b]; !ok {
			base[r.b] = arenaLen
			arenas = append(arenas, r.b.arena)
			arenaLen += int64(len(r.b.arena))
		}
	}
	sw, err := createSegment(dir, historyColumnsMagic, ".columns", paths, len(hks))
	if err != nil {
		return segment{}, err
	}
	head := binary.AppendUvarint(nil, uint64(len(first.kinds)))
	for _, k := range first.kinds {
		head = binary.AppendUvarint(head, uint64(k))
	}
	head = binary.AppendUvarint(head, uint64(first.keyCol+1))
	head = binary.AppendUvarint(head, uint64(first.seqCol+1))
	head = binary.AppendUvarint(head, uint64(n))
	head = binary.AppendUvarint(head, uint64(arenaLen))
	sw.write(head)
	sw.write(recs)
	sw.write(make([]byte, (8-sw.n%8)%8))
	int64s := func(col func(b *histBatch) []int64) {
		for _, r := range runs {
			sw.writeInt64s(col(r.b)[r.lo:r.hi])
		}
	}
	int64s(func(b *histBatch) []int64 { return b.seqs })
	if first.nulls != nil {
		for _, r := range runs {
			sw.writeUint64s(r.b.nulls[r.lo:r.hi])
		}
	}
	moved := make([]int64, 0, 8192) // a string offset moved by its batch's base, a chunk at a time
	for col := range first.kinds {
		if !first.storedCol(col) {
			continue
		}
		if first.strAt[col] < 0 {
			int64s(func(b *histBatch) []int64 { return b.words[col] })
			continue
		}
		for _, r := range runs {
			offs, by := r.b.words[col][r.lo:r.hi], base[r.b]
			if by == 0 {
				sw.writeInt64s(offs)
				continue
			}
			for len(offs) > 0 {
				moved = moved[:0]
				for _, w := range offs[:min(len(offs), cap(moved))] {
					moved = append(moved, w+by)
				}
				sw.writeInt64s(moved)
				offs = offs[len(moved):]
			}
		}
	}
	for col := range first.kinds {
		if first.storedCol(col) && first.strAt[col] >= 0 {
			for _, r := range runs {
				sw.writeUint32s(r.b.lens[first.strAt[col]][r.lo:r.hi])
			}
		}
	}
	if first.nulls8 != nil {
		for _, r := range runs {
			sw.write(r.b.nulls8[r.lo:r.hi])
		}
	}
	for _, r := range runs {
		sw.write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r.b.dels[r.lo:r.hi]))), r.hi-r.lo))
	}
	for _, a := range arenas {
		sw.write(a)
	}
	if err := sw.finish(); err != nil {
		return segment{}, err
	}
	return segment{Name: sw.name, Rows: int64(n), Format: segmentFormatHistoryColumns}, nil
}

// storedCol says whether data column col has words of its own (not the key's or the sequence's).
func (c *histBatch) storedCol(col int) bool { return col != c.keyCol && col != c.seqCol }

// littleEndian says whether the machine stores integers least significant byte first, as the
// history-columns segment does: its arrays are then written and read as they are in memory.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// writeInt64s appends xs, little-endian.
func (sw *segmentWriter) writeInt64s(xs []int64) {
	if littleEndian {
		sw.write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs))), 8*len(xs)))
		return
	}
	buf := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(x))
	}
	sw.write(buf)
}

// writeUint64s appends xs, little-endian.
func (sw *segmentWriter) writeUint64s(xs []uint64) {
	sw.writeInt64s(unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(xs))), len(xs)))
}

// writeUint32s appends xs, little-endian.
func (sw *segmentWriter) writeUint32s(xs []uint32) {
	if littleEndian {
		sw.write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs))), 4*len(xs)))
		return
	}
	buf := make([]byte, 0, 4*len(xs))
	for _, x := range xs {
		buf = binary.LittleEndian.AppendUint32(buf, x)
	}
	sw.write(buf)
}

// int64sAt returns the n little-endian int64 at b[at:] (at a multiple of 8 from b's start, which
// is 8-aligned): a view of b on a little-endian machine, else a copy.
func int64sAt(b []byte, at, n int) []int64 {
	return leSliceAt(b, at, n, func(p []byte) int64 { return int64(binary.LittleEndian.Uint64(p)) })
}

// uint32sAt is int64sAt for uint32 (at a multiple of 4).
func uint32sAt(b []byte, at, n int) []uint32 { return leSliceAt(b, at, n, binary.LittleEndian.Uint32) }

// leSliceAt returns the n little-endian integers of type T at b[at:] (aligned for T): a view of b
// on a little-endian machine, else a copy, each read by get from its bytes.
func leSliceAt[T int64 | uint32](b []byte, at, n int, get func([]byte) T) []T {
	size := int(unsafe.Sizeof(T(0)))
	raw := b[at : at+size*n]
	if littleEndian {
		if n == 0 {
			return []T{}
		}
		return unsafe.Slice((*T)(unsafe.Pointer(&raw[0])), n)
	}
	out := make([]T, n)
	for i := range out {
		out[i] = get(raw[size*i:])
	}
	return out
}

// decodeColumnsSegment adds the keys of the history-columns segment b (read whole into memory
// of its own; copied first unless 8-aligned) to the state, replacing their events: each key's
// events stay in the segment's columns (histKey.fresh, a histBatch over b) until a batch needs
// them. The columns' shape (the state's), every length, offset and flag, the order of the keys
// and of each key's sequences, and the padding are checked, so that nothing read from the
// columns later can fail: a segment that does not hold is errSegmentCorrupt.
func (s *histState) decodeColumnsSegment(b []byte) error {
	if len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		// The arrays are read in place (int64sAt): memory of 8-byte words (os.ReadFile's is).
		words := make([]uint64, (len(b)+7)/8)
		aligned := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(b))
		copy(aligned, b)
		b = aligned
	}
	sr, files, nkeys, err := openSegment(b, historyColumnsMagic)
	if err != nil {
		return err
	}
	uv := sr.uvarint
	ncols := uv()
	if ncols != uint64(len(s.dataSch.Fields)) {
		return errSegmentCorrupt
	}
	hb := &histBatch{keyCol: -1, seqCol: -1}
	strCols := 0
	for _, f := range s.dataSch.Fields {
		k := schema.Kind(uv())
		if k != f.Type.Kind {
			return errSegmentCorrupt
		}
		at := -1
		if k == schema.String {
			at, strCols = strCols, strCols+1
		}
		hb.kinds, hb.strAt = append(hb.kinds, k), append(hb.strAt, at)
	}
	// The key's and the sequence's data columns are the state's, and the data columns of the
	// shape histColumns takes (typedFoldFor's): every value a word or a string.
	kc, sc := uv(), uv()
	n, arenaLen := uv(), uv()
	if sr.bad || len(s.keySch.Fields) != 1 || len(s.seqSch.Fields) != 1 || n > uint64(len(b)) || arenaLen > uint64(len(b)) {
		return errSegmentCorrupt
	}
	hb.keyCol, hb.seqCol = s.dataSch.Index(s.keySch.Fields[0].Name), s.dataSch.Index(s.seqSch.Fields[0].Name)
	if kc != uint64(hb.keyCol+1) || sc != uint64(hb.seqCol+1) || typedFoldFor(s.keySch, s.seqSch, s.dataSch, hb.keyCol, hb.seqCol) == nil {
		return errSegmentCorrupt
	}
	paths := append([]string{""}, files...)
	type keyRec struct {
		key, deletedAt int64
		last           bool
		file           string
		n              int
	}
	recs := make([]keyRec, 0, min(nkeys, n))
	total := uint64(0)
	for i := range nkeys {
		r := keyRec{key: unzigzag(uv())}
		last := sr.byte()
		r.deletedAt = unzigzag(uv())
		file, cnt := uv(), uv()
		// The keys in their order, each once.
		if sr.bad || last > 1 || file >= uint64(len(paths)) || cnt == 0 || cnt > n-total || (i > 0 && r.key <= recs[i-1].key) {
			return errSegmentCorrupt
		}
		r.last, r.file, r.n = last == 1, paths[file], int(cnt)
		total += cnt
		recs = append(recs, r)
	}
	if total != n {
		return errSegmentCorrupt
	}
	// The arrays, from the first multiple of 8 after the records.
	body := b[:len(b)-4]
	at := len(body) - int(sr.left())
	for pad := at + (8-at%8)%8; at < pad; at++ {
		if at >= len(body) || body[at] != 0 {
			return errSegmentCorrupt
		}
	}
	ne := int(n)
	stored, nstr := 0, 0
	for col := range hb.kinds {
		if hb.storedCol(col) {
			stored++
			if hb.strAt[col] >= 0 {
				nstr++
			}
		}
	}
	need := 8*ne + 8*stored*ne + 4*nstr*ne + ne + int(arenaLen)
	if len(hb.kinds) > 8 {
		need += 8 * ne
	} else {
		need += ne
	}
	if at > len(body) || len(body)-at != need {
		return errSegmentCorrupt
	}
	hb.seqs = int64sAt(body, at, ne)
	at += 8 * ne
	if len(hb.kinds) > 8 {
		hb.nulls = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(int64sAt(body, at, ne)))), ne)
		at += 8 * ne
	}
	hb.words = make([][]int64, len(hb.kinds))
	for col := range hb.kinds {
		if hb.storedCol(col) {
			hb.words[col] = int64sAt(body, at, ne)
			at += 8 * ne
		}
	}
	hb.lens = make([][]uint32, strCols)
	for col := range hb.kinds {
		if hb.storedCol(col) && hb.strAt[col] >= 0 {
			hb.lens[hb.strAt[col]] = uint32sAt(body, at, ne)
			at += 4 * ne
		}
	}
	if len(hb.kinds) <= 8 {
		hb.nulls8 = body[at : at+ne : at+ne]
		at += ne
	}
	dels := body[at : at+ne : at+ne]
	for _, d := range dels {
		if d > 1 {
			return errSegmentCorrupt
		}
	}
	hb.dels = unsafe.Slice((*bool)(unsafe.Pointer(unsafe.SliceData(dels))), ne)
	at += ne
	hb.arena = body[at : at+int(arenaLen) : at+int(arenaLen)]
	// Every string is within the arena.
	for col := range hb.kinds {
		if !hb.storedCol(col) || hb.strAt[col] < 0 {
			continue
		}
		offs, lens := hb.words[col], hb.lens[hb.strAt[col]]
		for e := range ne {
			if hb.null(col, int32(e)) || lens[e] == 0 {
				continue
			}
			if offs[e] < 0 || uint64(offs[e])+uint64(lens[e]) > arenaLen {
				return errSegmentCorrupt
			}
		}
	}
	// The keys of the events, and each key's sequences strictly increasing: one event per
	// sequence, so that reduce meets no tie (histBatch.arr is not kept).
	hb.keys = make([]int64, ne)
	from := 0
	for _, r := range recs {
		to := from + r.n
		for e := from; e < to; e++ {
			hb.keys[e] = r.key
			if e > from && hb.seqs[e] <= hb.seqs[e-1] {
				return errSegmentCorrupt
			}
		}
		if hb.dels[to-1] != r.last {
			return errSegmentCorrupt
		}
		s.keys[string(appendLong(nil, r.key))] = &histKey{fresh: hb, from: int32(from), to: int32(to), nEvents: r.n,
			lastDelete: r.last, file: r.file, deletedAt: r.deletedAt}
		from = to
	}
	return nil
}
