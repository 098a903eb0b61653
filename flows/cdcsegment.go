package flows

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/google/uuid"
)

// segmentFormatKeyed is the segment format (segment.Format) of SCD type 1 states written by
// cdcState.writeSegment: a binary file that loads without decoding a value per key.
//
// Layout (integers are uvarints unless said otherwise):
//
//	magic        the bytes of keyedSegmentMagic
//	nfiles       then nfiles data file paths, each its length and bytes; a key's file id i > 0
//	             names the i-th path, 0 names no file
//	nkeys        then nkeys records:
//	  key        its length and the key's encoding (appendValues of the key columns)
//	  seq        its length and the sequence's encoding (appendValues of the sequence_by columns)
//	  deleted    one byte, 1 for a tombstone, else 0
//	  deletedAt  zigzag; ms since the epoch of the delete, 0 for a live key
//	  file       the file id
//	crc          CRC-32C (Castagnoli) of every byte before it, 4 bytes little-endian
//
// A segment holds each key at most once; of several segments of a manifest the later wins.
const segmentFormatKeyed = "keyed-1"

const keyedSegmentMagic = "tributary cdc state\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSegmentCorrupt is returned for a keyed segment whose bytes do not follow the layout or whose
// checksum does not match.
var errSegmentCorrupt = errors.New("the keyed CDC state segment is damaged (run a full refresh of the table to rebuild its state)")

// writeSegment writes the keys of slots as a new keyed segment file in dir and syncs it.
func (s *cdcState) writeSegment(dir string, slots []int) (segment, error) {
	name := uuid.NewString() + ".keyed"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return segment{}, err
	}
	crc := crc32.New(castagnoli)
	w := bufio.NewWriterSize(f, 1<<20)
	out := func(b []byte) {
		w.Write(b) // a write error stays in w and is returned by Flush
		crc.Write(b)
	}
	// The data files the keys name, numbered from 1 in the order first met.
	local := map[int32]uint64{0: 0}
	var paths []string
	for _, i := range slots {
		if id := s.slots[i].file; local[id] == 0 && id != 0 {
			paths = append(paths, s.files[id])
			local[id] = uint64(len(paths))
		}
	}
	buf := append([]byte(nil), keyedSegmentMagic...)
	buf = binary.AppendUvarint(buf, uint64(len(paths)))
	for _, p := range paths {
		buf = binary.AppendUvarint(buf, uint64(len(p)))
		buf = append(buf, p...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(slots)))
	out(buf)
	for _, i := range slots {
		sl := &s.slots[i]
		kb, sb := s.keyBytes(i), s.seqBytes(i)
		buf = binary.AppendUvarint(buf[:0], uint64(len(kb)))
		buf = append(buf, kb...)
		buf = binary.AppendUvarint(buf, uint64(len(sb)))
		buf = append(buf, sb...)
		del := byte(0)
		if sl.deleted {
			del = 1
		}
		buf = append(buf, del)
		buf = binary.AppendUvarint(buf, zigzag(sl.deletedAt))
		buf = binary.AppendUvarint(buf, local[sl.file])
		out(buf)
	}
	w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(f.Name())
		return segment{}, err
	}
	return segment{Name: name, Rows: int64(len(slots)), Format: segmentFormatKeyed}, nil
}

// syncDir makes the entries of folder dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// decodeSegment adds the keys of the keyed segment b to the state, replacing what it held of them.
func (s *cdcState) decodeSegment(b []byte) error {
	if len(b) < len(keyedSegmentMagic)+4 || string(b[:len(keyedSegmentMagic)]) != keyedSegmentMagic {
		return errSegmentCorrupt
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return errSegmentCorrupt
	}
	r := body[len(keyedSegmentMagic):]
	bad := false
	uv := func() uint64 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			bad, r = true, nil
			return 0
		}
		r = r[n:]
		return v
	}
	bytesOf := func() []byte {
		n := uv()
		if n > uint64(len(r)) {
			bad, r = true, nil
			return nil
		}
		out := r[:n]
		r = r[n:]
		return out
	}
	nfiles := uv()
	if nfiles > uint64(len(r)) {
		return errSegmentCorrupt
	}
	ids := make([]int32, 1, nfiles+1)
	for range nfiles {
		ids = append(ids, s.fileID(string(bytesOf())))
	}
	nkeys := uv()
	if bad || nkeys > uint64(len(r)) {
		return errSegmentCorrupt
	}
	if need := len(s.slots) + int(nkeys); need*2 > len(s.table) && s.want == nil {
		s.grow(need)
	}
	fresh := len(s.slots) == 0 // a segment holds each key once: into an empty state, no lookups
	if need := len(s.arena) + len(r); cap(s.arena) < need && s.want == nil {
		s.arena = append(make([]byte, 0, need), s.arena...) // the keys and sequences fit in r
	}
	for range nkeys {
		kb, sb := bytesOf(), bytesOf()
		if len(r) == 0 {
			return errSegmentCorrupt
		}
		del := r[0]
		r = r[1:]
		at, file := unzigzag(uv()), uv()
		if bad || del > 1 || file >= uint64(len(ids)) {
			return errSegmentCorrupt
		}
		if _, ok := s.want[string(kb)]; s.want != nil && !ok {
			continue
		}
		i := s.put(kb, sb, fresh)
		sl := &s.slots[i]
		sl.deleted, sl.deletedAt, sl.file = del == 1, at, ids[file]
	}
	if len(r) != 0 {
		return errSegmentCorrupt
	}
	return nil
}
