package flows

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/google/uuid"
)

// segmentFormatBucketed is the segment format (segment.Format) of SCD type 1 states written by
// cdcState.writeSegment: a binary file whose records are grouped in buckets by a hash of the key,
// so that a batch reads the buckets of its own keys only (loadState with want), and whose records
// can carry a row's position and image (merge-on-read targets, scd1dv.go).
//
// Layout (integers are uvarints unless said otherwise):
//
//	header
//	  magic      the bytes of bucketedSegmentMagic
//	  nfiles     then nfiles data file paths, each its length and bytes; a key's file id i > 0
//	             names the i-th path, 0 names no file
//	  nkeys      the number of records
//	  bits       the buckets are 2^bits; a key's bucket is the top bits of stateKeyHash(key)
//	records, bucket by bucket, each:
//	  key        its length and the key's encoding (appendValues of the key columns)
//	  seq        its length and the sequence's encoding (appendValues of the sequence_by columns)
//	  deleted    one byte, 1 for a tombstone, else 0
//	  deletedAt  zigzag; ms since the epoch of the delete, 0 for a live key
//	  file       the file id
//	  pos        the row's physical position in the file plus one; 0 when not recorded
//	  image      its length and the row's encoding (appendValues of the target's columns); empty
//	             when not recorded
//	directory    per bucket: the file offset of its first record (8 bytes little-endian) and the
//	             CRC-32C of its records (4 bytes little-endian); then the offset where the records
//	             end (8 bytes)
//	footer       the header's length (8 bytes little-endian), the directory's offset (8 bytes),
//	             the CRC-32C of the header (4 bytes) and of the directory (4 bytes)
//
// CRC-32C is Castagnoli's. A segment holds each key at most once; of several segments of a
// manifest the later wins.
const segmentFormatBucketed = "keyed-2"

const bucketedSegmentMagic = "tributary cdc state 2\n"

// bucketFooterLen is the length of a bucketed segment's footer.
const bucketFooterLen = 24

// recordsPerBucket is the mean number of records per bucket a segment is written with: a batch
// reads a bucket per key it changes, and every load reads the directory (12 bytes per bucket).
const recordsPerBucket = 32

// bucketedReadAll: a segment smaller than this is read whole even for a few keys.
const bucketedReadAll = 1 << 20

// stateKeyHash is the hash of an encoded key that places it in a bucket: 64-bit FNV-1a, then the
// splitmix64 finalizer so that the top bits mix every byte. It is part of the segment format.
func stateKeyHash(kb []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range kb {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// bucketBits is the number of bucket bits for n records.
func bucketBits(n int) uint {
	bits := uint(0)
	for n>>bits > recordsPerBucket {
		bits++
	}
	return bits
}

// bucketOf is the bucket of a key of hash h among 2^bits buckets.
func bucketOf(h uint64, bits uint) uint64 {
	if bits == 0 {
		return 0
	}
	return h >> (64 - bits)
}

// writeSegment writes the keys of slots as a new bucketed segment file in dir and syncs it.
func (s *cdcState) writeSegment(dir string, slots []int) (seg segment, err error) {
	// The data files the keys name, numbered from 1 in the order first met.
	local := make([]uint64, len(s.files)) // data file id -> the segment's (0: none)
	var paths []string
	for _, i := range slots {
		if id := s.slots[i].file; local[id] == 0 && id != 0 {
			paths = append(paths, s.files[id])
			local[id] = uint64(len(paths))
		}
	}
	// The records in bucket order (a counting sort).
	bits := bucketBits(len(slots))
	nb := 1 << bits
	start := make([]int, nb+1)
	bk := make([]uint32, len(slots))
	for j, i := range slots {
		b := bucketOf(stateKeyHash(s.keyBytes(i)), bits)
		bk[j] = uint32(b)
		start[b+1]++
	}
	for b := 0; b < nb; b++ {
		start[b+1] += start[b]
	}
	order := make([]int, len(slots))
	next := slices.Clone(start[:nb])
	for j, i := range slots {
		order[next[bk[j]]] = i
		next[bk[j]]++
	}

	name := uuid.NewString() + ".keyed"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return segment{}, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	hdr := append([]byte(nil), bucketedSegmentMagic...)
	hdr = binary.AppendUvarint(hdr, uint64(len(paths)))
	for _, p := range paths {
		hdr = binary.AppendUvarint(hdr, uint64(len(p)))
		hdr = append(hdr, p...)
	}
	hdr = binary.AppendUvarint(hdr, uint64(len(slots)))
	hdr = binary.AppendUvarint(hdr, uint64(bits))
	w.Write(hdr)
	off := uint64(len(hdr))
	directory := make([]byte, 0, nb*12+8)
	// A large segment's second half of the buckets is encoded on another goroutine, into
	// memory, while the first half is encoded and written: the records' bytes are gathered from
	// the whole state, in hash order, and that is most of the time a save takes.
	split := nb
	var second encodedBuckets
	var wg sync.WaitGroup
	if nb >= 2 && len(slots) >= 1<<16 {
		split = nb / 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			second = s.encodeBuckets(order, start, split, nb, local)
		}()
	}
	var buf []byte
	for b := 0; b < split; b++ {
		first, crc := off, uint32(0)
		for _, i := range order[start[b]:start[b+1]] {
			buf = s.appendRecord(buf[:0], i, local)
			w.Write(buf)
			crc = crc32.Update(crc, castagnoli, buf)
			off += uint64(len(buf))
		}
		directory = binary.LittleEndian.AppendUint64(directory, first)
		directory = binary.LittleEndian.AppendUint32(directory, crc)
	}
	wg.Wait()
	for j := range nb - split {
		directory = binary.LittleEndian.AppendUint64(directory, off+second.firsts[j])
		directory = binary.LittleEndian.AppendUint32(directory, second.crcs[j])
	}
	w.Write(second.records)
	off += uint64(len(second.records))
	directory = binary.LittleEndian.AppendUint64(directory, off)
	w.Write(directory)
	footer := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	footer = binary.LittleEndian.AppendUint64(footer, off)
	footer = binary.LittleEndian.AppendUint32(footer, crc32.Checksum(hdr, castagnoli))
	footer = binary.LittleEndian.AppendUint32(footer, crc32.Checksum(directory, castagnoli))
	w.Write(footer)
	if err = w.Flush(); err != nil {
		return segment{}, err
	}
	if err = f.Sync(); err != nil {
		return segment{}, err
	}
	if err = f.Close(); err != nil {
		return segment{}, err
	}
	if err = syncDir(dir); err != nil {
		return segment{}, err
	}
	return segment{Name: name, Rows: int64(len(slots)), Format: segmentFormatBucketed}, nil
}

// encodedBuckets is the records of buckets [b0, b1) of a segment, encoded in memory: records,
// and for each bucket the offset of its first record in records and the CRC-32C of its records.
type encodedBuckets struct {
	records []byte
	firsts  []uint64
	crcs    []uint32
}

// encodeBuckets encodes the records of buckets [b0, b1), which are order[start[b]:start[b+1]]
// for bucket b, as writeSegment writes them.
func (s *cdcState) encodeBuckets(order, start []int, b0, b1 int, local []uint64) encodedBuckets {
	e := encodedBuckets{firsts: make([]uint64, 0, b1-b0), crcs: make([]uint32, 0, b1-b0)}
	for b := b0; b < b1; b++ {
		first := len(e.records)
		for _, i := range order[start[b]:start[b+1]] {
			e.records = s.appendRecord(e.records, i, local)
		}
		e.firsts = append(e.firsts, uint64(first))
		e.crcs = append(e.crcs, crc32.Update(0, castagnoli, e.records[first:]))
	}
	return e
}

// appendRecord appends slot i's record (the layout of segmentFormatBucketed) to buf; local maps
// the state's data file ids to the segment's.
func (s *cdcState) appendRecord(buf []byte, i int, local []uint64) []byte {
	sl := &s.slots[i]
	kb, sb, img := s.keyBytes(i), s.seqBytes(i), s.imgBytes(i)
	buf = binary.AppendUvarint(buf, uint64(len(kb)))
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
	buf = binary.AppendUvarint(buf, sl.pos1)
	buf = binary.AppendUvarint(buf, uint64(len(img)))
	return append(buf, img...)
}

// bucketedSegment is the header and directory of a bucketed segment, read and checked.
type bucketedSegment struct {
	paths    []string
	nrecords uint64
	bits     uint
	dir      []byte // the directory: per bucket offset (8) and CRC (4), then the records' end (8)
}

// openBucketed reads and checks the footer, header and directory of the bucketed segment r of
// size bytes; errSegmentCorrupt when they do not follow the layout or their checksums differ.
func openBucketed(r io.ReaderAt, size int64) (*bucketedSegment, error) {
	if size < int64(len(bucketedSegmentMagic))+bucketFooterLen {
		return nil, errSegmentCorrupt
	}
	foot := make([]byte, bucketFooterLen)
	if _, err := r.ReadAt(foot, size-bucketFooterLen); err != nil {
		return nil, err
	}
	hdrLen, dirOff := binary.LittleEndian.Uint64(foot), binary.LittleEndian.Uint64(foot[8:])
	end := uint64(size - bucketFooterLen)
	if hdrLen < uint64(len(bucketedSegmentMagic)) || hdrLen > dirOff || dirOff > end {
		return nil, errSegmentCorrupt
	}
	hdr := make([]byte, hdrLen)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return nil, err
	}
	if crc32.Checksum(hdr, castagnoli) != binary.LittleEndian.Uint32(foot[16:]) || !bytes.HasPrefix(hdr, []byte(bucketedSegmentMagic)) {
		return nil, errSegmentCorrupt
	}
	sr := &segmentReader{r: hdr[len(bucketedSegmentMagic):]}
	g := &bucketedSegment{}
	nfiles := sr.uvarint()
	if nfiles > sr.left() {
		return nil, errSegmentCorrupt
	}
	for range nfiles {
		g.paths = append(g.paths, string(sr.bytes()))
	}
	g.nrecords = sr.uvarint()
	bits := sr.uvarint()
	if sr.bad || sr.left() != 0 || bits > 40 || (uint64(1)<<bits)*12+8 != end-dirOff {
		return nil, errSegmentCorrupt
	}
	g.bits = uint(bits)
	g.dir = make([]byte, end-dirOff)
	if _, err := r.ReadAt(g.dir, int64(dirOff)); err != nil {
		return nil, err
	}
	if crc32.Checksum(g.dir, castagnoli) != binary.LittleEndian.Uint32(foot[20:]) {
		return nil, errSegmentCorrupt
	}
	return g, nil
}

// bucket returns where bucket b's records are (start and end file offsets) and their CRC-32C.
func (g *bucketedSegment) bucket(b uint64) (start, end uint64, crc uint32) {
	e := g.dir[b*12:]
	start, crc = binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:])
	end = binary.LittleEndian.Uint64(e[12:])
	return start, end, crc
}

// readBucketed adds the keys of the bucketed segment file name to the state (only those of
// s.want when set): all of it read at once, or, for a file of at least readAllBelow bytes and a
// few keys, only the buckets of those keys (whose checksums are the ones checked).
func (s *cdcState) readBucketed(name string, readAllBelow int64) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	whole := s.want == nil || size < readAllBelow
	var data []byte
	var r io.ReaderAt = f
	if whole {
		data = make([]byte, size)
		if _, err := io.ReadFull(f, data); err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	g, err := openBucketed(r, size)
	if err != nil {
		return err
	}
	ids := make([]int32, 1, len(g.paths)+1)
	for _, p := range g.paths {
		ids = append(ids, s.fileID(p))
	}
	nb := uint64(1) << g.bits
	if _, end, _ := g.bucket(nb - 1); end > uint64(size) {
		return errSegmentCorrupt
	}
	if !whole {
		buckets := make([]uint64, 0, len(s.want))
		for kb := range s.want {
			buckets = append(buckets, bucketOf(stateKeyHash([]byte(kb)), g.bits))
		}
		slices.Sort(buckets) // in file order
		buckets = slices.Compact(buckets)
		fetched, err := fetchBuckets(f, g, buckets, size)
		if err != nil {
			return err
		}
		for _, recs := range fetched {
			if err := s.decodeRecords(recs, ids, false); err != nil {
				return err
			}
		}
		return nil
	}
	if need := len(s.slots) + int(g.nrecords); need*2 > len(s.table) && s.want == nil {
		s.grow(need)
	}
	if need := len(s.arena) + int(size); cap(s.arena) < need && s.want == nil {
		s.arena = append(make([]byte, 0, need), s.arena...)
	}
	fresh := len(s.slots) == 0 && s.want == nil // a segment holds each key once: no lookups
	for b := range nb {
		start, end, crc := g.bucket(b)
		if start > end || end > uint64(size) || crc32.Checksum(data[start:end], castagnoli) != crc {
			return errSegmentCorrupt
		}
		if err := s.decodeRecords(data[start:end], ids, fresh); err != nil {
			return err
		}
	}
	return nil
}

// fetchBuckets reads the records of buckets (ascending, distinct) of segment g (size bytes, in
// f) and checks each bucket's CRC-32C; it returns each bucket's records, in order. The positioned
// reads, one a bucket, are shared among GOMAXPROCS goroutines: for a batch of many keys in a
// large segment they are most of the load's time.
func fetchBuckets(f *os.File, g *bucketedSegment, buckets []uint64, size int64) ([][]byte, error) {
	out := make([][]byte, len(buckets))
	var total uint64
	for _, b := range buckets {
		start, end, _ := g.bucket(b)
		if start > end || end > uint64(size) {
			return nil, errSegmentCorrupt
		}
		total += end - start
	}
	buf := make([]byte, total)
	for i, b := range buckets {
		start, end, _ := g.bucket(b)
		out[i], buf = buf[:end-start:end-start], buf[end-start:]
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, len(buckets)/64))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(buckets); i += workers {
				start, _, crc := g.bucket(buckets[i])
				if _, err := f.ReadAt(out[i], int64(start)); err != nil {
					errs[w] = err
					return
				}
				if crc32.Checksum(out[i], castagnoli) != crc {
					errs[w] = errSegmentCorrupt
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeRecords adds the records of one bucket (ids maps the segment's file ids to the state's)
// to the state, keeping only the keys of s.want when set.
func (s *cdcState) decodeRecords(recs []byte, ids []int32, fresh bool) error {
	sr := &segmentReader{r: recs}
	for sr.left() > 0 {
		kb, sb := sr.bytes(), sr.bytes()
		del := sr.byte()
		at, file, pos1 := unzigzag(sr.uvarint()), sr.uvarint(), sr.uvarint()
		img := sr.bytes()
		if sr.bad || del > 1 || file >= uint64(len(ids)) {
			return errSegmentCorrupt
		}
		if _, ok := s.want[string(kb)]; s.want != nil && !ok {
			continue
		}
		i := s.put(kb, sb, fresh)
		sl := &s.slots[i]
		sl.deleted, sl.deletedAt = del == 1, at
		s.setRow(i, ids[file], int64(pos1)-1, img)
	}
	return nil
}
