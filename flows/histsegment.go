package flows

import (
	"encoding/binary"
	"errors"

	"tributary/schema"
)

// segmentFormatHistory is the segment format (segment.Format) of the states kept as per-key
// histories (SCD type 2, SCD type 1 with ignore_null_updates) written by histState.writeSegment:
// a binary file whose keys load without decoding their events.
//
// Layout (integers are uvarints unless said otherwise):
//
//	magic        the bytes of historySegmentMagic
//	nfiles       then nfiles data file paths, each its length and bytes; a key's file id i > 0
//	             names the i-th path, 0 names no file
//	nkeys        then nkeys records:
//	  key        its length and the key's encoding (appendValues of the key columns)
//	  lastDelete one byte, 1 when the key's last event is a delete, else 0
//	  deletedAt  zigzag; ms since the epoch (histKey.deletedAt)
//	  file       the file id
//	  nevents    the number of events
//	  events     their length in bytes and the events (encodeHistEvents)
//	crc          CRC-32C (Castagnoli) of every byte before it, 4 bytes little-endian
//
// A segment holds every event of each key it names; of several segments of a manifest the later
// replaces a key's events.
const segmentFormatHistory = "keyed-history-1"

const historySegmentMagic = "tributary cdc history\n"

// keyedData says whether the keyed history form can hold rows of s: every column is of a
// primitive kind (appendValues holds no MAP, and does not tell an ARRAY from a STRUCT).
func keyedData(s schema.Schema) bool {
	for _, f := range s.Fields {
		if f.Type.Nested() {
			return false
		}
	}
	return true
}

// encodeHistEvents appends the encoding of events to buf: per event its sequence's length and
// encoding (appendValues), a byte 1 for a delete or 0 for an upsert, and for an upsert the length
// and encoding of its row.
func encodeHistEvents(buf []byte, events []histEvent) []byte {
	var tmp []byte
	for _, e := range events {
		tmp = appendValues(tmp[:0], e.seq)
		buf = binary.AppendUvarint(buf, uint64(len(tmp)))
		buf = append(buf, tmp...)
		if e.delete {
			buf = append(buf, 1)
			continue
		}
		tmp = appendValues(tmp[:0], e.row)
		buf = binary.AppendUvarint(append(buf, 0), uint64(len(tmp)))
		buf = append(buf, tmp...)
	}
	return buf
}

// errHistEvents is returned by decodeHistEvents for bytes that encodeHistEvents did not write.
var errHistEvents = errors.New("malformed history events")

// decodeHistEvents reads what encodeHistEvents wrote; each upsert's row must have width values.
// n is the number of events expected (a capacity hint); dec, when not nil, holds the values
// (see histDecoder).
func decodeHistEvents(b []byte, width, n int, dec *histDecoder) ([]histEvent, error) {
	out := make([]histEvent, 0, n)
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, true
	}
	for len(b) > 0 {
		sb, ok := next()
		if !ok || len(b) == 0 {
			return nil, errHistEvents
		}
		seq, err := dec.values(sb)
		if err != nil {
			return nil, err
		}
		e := histEvent{seq: seq, delete: b[0] == 1}
		b = b[1:]
		if !e.delete {
			rb, ok := next()
			if !ok {
				return nil, errHistEvents
			}
			if e.row, err = dec.values(rb); err != nil {
				return nil, err
			}
			if len(e.row) != width {
				return nil, errHistEvents
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// histDecoder decodes the values of history events into shared arrays: the values of many
// events are windows of one array of interfaces, and the scalar ones are boxed in a boxSlab,
// instead of a few allocations per event. An array lives as long as any of its values.
type histDecoder struct {
	vals []any
	box  *boxSlab
}

// decodeChunk is how many values one array of a histDecoder holds.
const decodeChunk = 4096

func newHistDecoder() *histDecoder {
	return &histDecoder{box: newBoxSlab(decodeChunk, decodeChunk/4)}
}

// values reads the values appendValues wrote into b, as decodeValues does; a nil decoder is
// decodeValues.
func (d *histDecoder) values(b []byte) ([]any, error) {
	if d == nil {
		return decodeValues(b)
	}
	start := len(d.vals)
	for len(b) > 0 {
		v, n, err := d.value(b)
		if err != nil {
			return nil, err
		}
		if len(d.vals) == cap(d.vals) {
			// A new array, never one grown in place: the windows handed out stay where they
			// are. The values of this call so far move along.
			fresh := make([]any, 0, max(decodeChunk, 2*(len(d.vals)-start)))
			d.vals, start = append(fresh, d.vals[start:]...), 0
		}
		d.vals = append(d.vals, v)
		b = b[n:]
	}
	return d.vals[start:len(d.vals):len(d.vals)], nil
}

// value is decodeValue with the scalar values boxed in the decoder's slab.
func (d *histDecoder) value(b []byte) (any, int, error) {
	if len(b) < 2 {
		return decodeValue(b)
	}
	switch b[0] {
	case tagLong, tagInt, tagDecimal, tagDate, tagTimestamp, tagString:
	default:
		return decodeValue(b)
	}
	u, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return nil, 0, errStateValue
	}
	switch b[0] {
	case tagLong:
		return d.box.int64(unzigzag(u)), 1 + n, nil
	case tagInt:
		return d.box.int32(int32(unzigzag(u))), 1 + n, nil
	case tagDecimal:
		return d.box.decimal(schema.Decimal(unzigzag(u))), 1 + n, nil
	case tagDate:
		return d.box.date(schema.Date(unzigzag(u))), 1 + n, nil
	case tagTimestamp:
		return d.box.timestamp(schema.Timestamp(unzigzag(u))), 1 + n, nil
	}
	// tagString
	if u > uint64(len(b)-1-n) {
		return nil, 0, errStateValue
	}
	return d.box.string(string(b[1+n : 1+n+int(u)])), 1 + n + int(u), nil
}

// fileIDs numbers the data files of the keys hks from 1, in order of first appearance: a key's
// file id (local, 0 for none) and the paths (the i-th named by id i), as a segment writes them.
func fileIDs(hks []*histKey) (local map[string]uint64, paths []string) {
	local = map[string]uint64{"": 0}
	for _, hk := range hks {
		if p := hk.file; p != "" {
			if _, ok := local[p]; !ok {
				paths = append(paths, p)
				local[p] = uint64(len(paths))
			}
		}
	}
	return local, paths
}

// writeSegment writes the given keys (with nEvents events in all; keys[i]'s histKey is hks[i])
// as a new keyed history segment file in dir and syncs it.
func (s *histState) writeSegment(dir string, keys []string, hks []*histKey, nEvents int64) (segment, error) {
	local, paths := fileIDs(hks)
	sw, err := createSegment(dir, historySegmentMagic, ".keyed", paths, len(keys))
	if err != nil {
		return segment{}, err
	}
	var buf, blob, enc []byte // enc: the encoding of a key that has none of its own
	var sc freshScratch
	for i, k := range keys {
		hk := hks[i]
		buf = binary.AppendUvarint(buf[:0], uint64(len(k)))
		buf = append(buf, k...)
		last := byte(0)
		if hk.lastDelete {
			last = 1
		}
		buf = append(buf, last)
		buf = binary.AppendUvarint(buf, zigzag(hk.deletedAt))
		buf = binary.AppendUvarint(buf, local[hk.file])
		buf = binary.AppendUvarint(buf, uint64(hk.nEvents))
		switch {
		case hk.fresh != nil:
			enc = hk.appendFresh(enc[:0], &sc)
			blob = enc
		case hk.blob != nil:
			blob = hk.blob
		default:
			// Into enc, never blob[:0]: that would be the key before's own encoding.
			enc = encodeHistEvents(enc[:0], hk.events)
			blob = enc
		}
		buf = binary.AppendUvarint(buf, uint64(len(blob)))
		sw.write(buf)
		sw.write(blob)
	}
	if err := sw.finish(); err != nil {
		return segment{}, err
	}
	return segment{Name: sw.name, Rows: nEvents, Format: segmentFormatHistory}, nil
}

// decodeSegment adds the keys of the keyed history segment b to the state, replacing their events;
// the events stay encoded (histKey.blob, a view of b) until a batch needs them.
func (s *histState) decodeSegment(b []byte) error {
	sr, files, nkeys, err := openSegment(b, historySegmentMagic)
	if err != nil {
		return err
	}
	uv, bytesOf := sr.uvarint, sr.bytes
	paths := append([]string{""}, files...)
	for range nkeys {
		k := bytesOf()
		last := sr.byte()
		at, file, n := unzigzag(uv()), uv(), uv()
		blob := bytesOf()
		if sr.bad || last > 1 || file >= uint64(len(paths)) || n > uint64(len(blob)) {
			return errSegmentCorrupt
		}
		hk := &histKey{blob: blob, nEvents: int(n), lastDelete: last == 1, file: paths[file], deletedAt: at}
		if n == 0 {
			hk.blob = nil
		}
		s.keys[string(k)] = hk
	}
	if sr.left() != 0 {
		return errSegmentCorrupt
	}
	return nil
}

// histEventBounds appends to offs the offset in b of each event encodeHistEvents wrote and the
// end of the last one, reading only the lengths, not the values; ok is false for bytes it did
// not write.
func histEventBounds(offs []int, b []byte) (_ []int, ok bool) {
	at := 0
	skip := func() bool {
		n, k := binary.Uvarint(b[at:])
		if k <= 0 || n > uint64(len(b)-at-k) {
			return false
		}
		at += k + int(n)
		return true
	}
	for at < len(b) {
		offs = append(offs, at)
		if !skip() || at >= len(b) {
			return offs, false
		}
		del := b[at]
		at++
		if del > 1 || (del == 0 && !skip()) {
			return offs, false
		}
	}
	return append(offs, at), true
}
