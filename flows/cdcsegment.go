package flows

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"tributary/internal/writeback"
)

// segmentFormatKeyed is the segment format (segment.Format) of SCD type 1 states written before
// segmentFormatBucketed (still read): a binary file that loads without decoding a value per key.
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

// errSegmentCorrupt is returned for a binary segment (the keyed forms, history-columns) whose
// bytes do not follow the layout or whose checksum does not match.
var errSegmentCorrupt = errors.New("the CDC state segment is damaged (run a full refresh of the table to rebuild its state)")

// segmentWriter writes a binary state segment (cdcsegment.go, histsegment.go): the magic, the
// data file paths the records number from 1, the record count, the records, and the CRC-32C
// (Castagnoli, 4 bytes little-endian) of every byte before it. The file is new
// ("<uuid><ext>" in dir, created exclusively) and synced with its folder by finish.
type segmentWriter struct {
	name string // the file's name in dir
	dir  string
	f    *os.File
	w    *bufio.Writer
	crc  hash.Hash32
	n    int // the bytes written so far
}

// createSegment creates the segment file, named a new uuid and ext (".keyed" for the keyed forms,
// ".columns" for history-columns), and writes its header: magic, then len(paths) and each path
// (length and bytes), then nrecords.
func createSegment(dir, magic, ext string, paths []string, nrecords int) (*segmentWriter, error) {
	name := uuid.NewString() + ext
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	// Its pages are written back as it grows (writeback), so that finish's fsync waits for the
	// last few megabytes only.
	sw := &segmentWriter{name: name, dir: dir, f: f, w: bufio.NewWriterSize(writeback.New(f), 1<<20), crc: crc32.New(castagnoli)}
	buf := append([]byte(nil), magic...)
	buf = binary.AppendUvarint(buf, uint64(len(paths)))
	for _, p := range paths {
		buf = binary.AppendUvarint(buf, uint64(len(p)))
		buf = append(buf, p...)
	}
	sw.write(binary.AppendUvarint(buf, uint64(nrecords)))
	return sw, nil
}

// write appends b to the segment; a write error stays in the buffered writer and is returned
// by finish.
func (sw *segmentWriter) write(b []byte) {
	sw.w.Write(b)
	sw.crc.Write(b)
	sw.n += len(b)
}

// finish appends the checksum, syncs and closes the file and syncs its folder; on error the
// file is removed.
func (sw *segmentWriter) finish() error {
	sw.w.Write(binary.LittleEndian.AppendUint32(nil, sw.crc.Sum32()))
	err := sw.w.Flush()
	if err == nil {
		err = sw.f.Sync()
	}
	if cerr := sw.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(sw.dir)
	}
	if err != nil {
		os.Remove(sw.f.Name())
	}
	return err
}

// segmentReader reads the body of a binary state segment (cdcsegment.go, histsegment.go): uvarints
// and length-prefixed byte strings, in order. A read past the end, or a malformed uvarint, sets
// bad and reads zero from then on.
type segmentReader struct {
	r   []byte
	bad bool
}

// openSegment checks that b starts with magic and ends with the CRC-32C (Castagnoli, 4 bytes
// little-endian) of every byte before it, reads the header createSegment wrote (the data file
// paths, which the records number from 1, and the record count), and returns a reader of the
// records; otherwise errSegmentCorrupt.
func openSegment(b []byte, magic string) (sr *segmentReader, paths []string, nrecords uint64, err error) {
	if len(b) < len(magic)+4 || string(b[:len(magic)]) != magic {
		return nil, nil, 0, errSegmentCorrupt
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, nil, 0, errSegmentCorrupt
	}
	sr = &segmentReader{r: body[len(magic):]}
	nfiles := sr.uvarint()
	if nfiles > sr.left() {
		return nil, nil, 0, errSegmentCorrupt
	}
	paths = make([]string, 0, nfiles)
	for range nfiles {
		paths = append(paths, string(sr.bytes()))
	}
	nrecords = sr.uvarint()
	if sr.bad || nrecords > sr.left() {
		return nil, nil, 0, errSegmentCorrupt
	}
	return sr, paths, nrecords, nil
}

// uvarint reads one uvarint.
func (sr *segmentReader) uvarint() uint64 {
	v, n := binary.Uvarint(sr.r)
	if n <= 0 {
		sr.bad, sr.r = true, nil
		return 0
	}
	sr.r = sr.r[n:]
	return v
}

// bytes reads a uvarint length and that many bytes, returned as a view of the segment whose
// capacity ends with it.
func (sr *segmentReader) bytes() []byte {
	n := sr.uvarint()
	if n > uint64(len(sr.r)) {
		sr.bad, sr.r = true, nil
		return nil
	}
	out := sr.r[:n:n]
	sr.r = sr.r[n:]
	return out
}

// byte reads one byte.
func (sr *segmentReader) byte() byte {
	if len(sr.r) == 0 {
		sr.bad = true
		return 0
	}
	c := sr.r[0]
	sr.r = sr.r[1:]
	return c
}

// left is the number of bytes not read yet.
func (sr *segmentReader) left() uint64 { return uint64(len(sr.r)) }

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
	sr, paths, nkeys, err := openSegment(b, keyedSegmentMagic)
	if err != nil {
		return err
	}
	uv, bytesOf := sr.uvarint, sr.bytes
	ids := make([]int32, 1, len(paths)+1)
	for _, p := range paths {
		ids = append(ids, s.fileID(p))
	}
	if need := len(s.slots) + int(nkeys); need*2 > len(s.table) && s.want == nil {
		s.grow(need)
	}
	fresh := len(s.slots) == 0 // a segment holds each key once: into an empty state, no lookups
	if need := len(s.arena) + int(sr.left()); cap(s.arena) < need && s.want == nil {
		s.arena = append(make([]byte, 0, need), s.arena...) // the keys and sequences fit in what is left
	}
	for range nkeys {
		kb, sb := bytesOf(), bytesOf()
		del := sr.byte()
		at, file := unzigzag(uv()), uv()
		if sr.bad || del > 1 || file >= uint64(len(ids)) {
			return errSegmentCorrupt
		}
		if _, ok := s.want[string(kb)]; s.want != nil && !ok {
			continue
		}
		i := s.put(kb, sb, fresh)
		sl := &s.slots[i]
		sl.deleted, sl.deletedAt, sl.file = del == 1, at, ids[file]
	}
	if sr.left() != 0 {
		return errSegmentCorrupt
	}
	return nil
}
