package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/uuid"

	"tributary/schema"
)

// DeletionVector is the DeletionVectorDescriptor of an add or remove action: the set of rows of
// a data file that are logically deleted (Delta PROTOCOL.md, "Deletion Vectors", "Deletion
// Vector Descriptor Schema"). StorageType is "u" (a file in the table folder named by a UUID,
// PathOrInlineDv = optional random prefix + the Z85-encoded UUID, 20 characters), "i" (inline:
// PathOrInlineDv is the Z85-encoded serialized bitmap) or "p" (PathOrInlineDv is the absolute
// path or file: URI of the DV file). Offset is the byte position of the DV in its file (absent
// for "i"); SizeInBytes the size of the serialized bitmap (magic number included, before Z85 for
// "i"); Cardinality the number of deleted rows.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
}

// Storage types of DeletionVector.StorageType (Delta PROTOCOL.md, "Deletion Vector Descriptor
// Schema").
const (
	// DVStorageUUID: a file in the table folder (or its random prefix folder) named by a UUID.
	DVStorageUUID = "u"
	// DVStorageInline: the serialized bitmap inline in the descriptor, Z85-encoded.
	DVStorageInline = "i"
	// DVStorageAbsolute: a file at an absolute path or file: URI.
	DVStorageAbsolute = "p"
)

// dvMagic is the magic number that starts every serialized deletion vector bitmap, little
// endian (Delta PROTOCOL.md, "Deletion Vector Format").
const dvMagic = 1681511377

// dvMagicNative starts the older "native" RoaringBitmapArray serialization, big endian: an int32
// count of 32-bit bitmaps, then per bitmap its int32 size and its serialization, the i-th
// bitmap holding the rows whose high 32 bits are i. The inline DV of Delta PROTOCOL.md's "JSON
// Example 3" is in this format; readers accept it, this package writes the portable one.
const dvMagicNative = 1681511376

// dvFileVersion is the first byte of a deletion vector file (Delta PROTOCOL.md, "Deletion
// Vector File Storage Format").
const dvFileVersion = 1

// dvUUIDLen is the length of the Z85 form of a UUID at the end of the pathOrInlineDv of
// storage type "u".
const dvUUIDLen = 20

// UniqueID returns the derived uniqueId of the DV (Delta PROTOCOL.md, "Derived Fields"):
// storageType + pathOrInlineDv, followed by "@" + offset when the offset is present. A nil dv has
// the empty id, the key of a file without deletion vector in log replay.
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + strconv.FormatInt(int64(*dv.Offset), 10)
	}
	return id
}

// dvCardinality is the number of rows dv deletes (0 for nil).
func dvCardinality(dv *DeletionVector) int64 {
	if dv == nil {
		return 0
	}
	return dv.Cardinality
}

// FilePath returns the name of the file that holds the DV of storage type "u" or "p", relative
// to the table folder for "u" (random prefix folder + "deletion_vector_<uuid>.bin",
// slash-separated) and as written for "p" (Delta PROTOCOL.md, "Derived Fields", absolutePath).
// Storage type "i" and an unreadable UUID are errors.
func (dv *DeletionVector) FilePath() (string, error) {
	switch dv.StorageType {
	case DVStorageAbsolute:
		return dv.PathOrInlineDv, nil
	case DVStorageUUID:
		p := dv.PathOrInlineDv
		if len(p) < dvUUIDLen {
			return "", fmt.Errorf("deletion vector pathOrInlineDv %q is shorter than the 20 characters of a Z85-encoded UUID", p)
		}
		prefix, enc := p[:len(p)-dvUUIDLen], p[len(p)-dvUUIDLen:]
		raw, err := Z85Decode(enc)
		if err != nil {
			return "", fmt.Errorf("deletion vector pathOrInlineDv %q: the UUID %q: %w", p, enc, err)
		}
		id, err := uuid.FromBytes(raw)
		if err != nil {
			return "", fmt.Errorf("deletion vector pathOrInlineDv %q: %w", p, err)
		}
		name := "deletion_vector_" + id.String() + ".bin"
		if prefix != "" {
			return prefix + "/" + name, nil
		}
		return name, nil
	}
	return "", fmt.Errorf("deletion vector of storage type %q has no file (storage types with a file: \"u\", \"p\")", dv.StorageType)
}

// ReadDeletionVector returns the row indexes that dv deletes: 0-based physical positions of
// rows in the data file, ascending; nil for a nil dv. It reads storage types "u" (the file in
// the table folder), "p" (an absolute path or file: URI) and "i" (inline). It checks the file's
// format version, the DV's size field against sizeInBytes, the CRC-32 checksum, the magic number
// and the cardinality (Delta PROTOCOL.md, "Deletion Vector Format", "Deletion Vector File
// Storage Format"); each mismatch is an error naming the DV file and offset.
func (t *Table) ReadDeletionVector(dv *DeletionVector) ([]uint64, error) {
	if dv == nil {
		return nil, nil
	}
	data, where, err := t.dvBytes(dv)
	if err != nil {
		return nil, err
	}
	rows, err := decodeDVBitmap(data)
	if err != nil {
		return nil, fmt.Errorf("delta: deletion vector %s: %w", where, err)
	}
	if int64(len(rows)) != dv.Cardinality {
		return nil, fmt.Errorf("delta: deletion vector %s holds %d rows but its descriptor says cardinality %d; the table log and the DV file disagree", where, len(rows), dv.Cardinality)
	}
	return rows, nil
}

// dvBytes returns the serialized bitmap of dv (magic number included) and a description of
// where it is stored, for errors.
func (t *Table) dvBytes(dv *DeletionVector) ([]byte, string, error) {
	if dv.SizeInBytes < 4 {
		return nil, "", fmt.Errorf("delta: deletion vector %s: sizeInBytes %d is smaller than the 4-byte magic number", dv.UniqueID(), dv.SizeInBytes)
	}
	if dv.StorageType == DVStorageInline {
		raw, err := Z85Decode(dv.PathOrInlineDv)
		if err != nil {
			return nil, "", fmt.Errorf("delta: inline deletion vector %q: %w", dv.PathOrInlineDv, err)
		}
		if len(raw) < int(dv.SizeInBytes) {
			return nil, "", fmt.Errorf("delta: inline deletion vector %q decodes to %d bytes, fewer than its sizeInBytes %d", dv.PathOrInlineDv, len(raw), dv.SizeInBytes)
		}
		return raw[:dv.SizeInBytes], "inline " + strconv.Quote(dv.PathOrInlineDv), nil
	}
	rel, err := dv.FilePath()
	if err != nil {
		return nil, "", fmt.Errorf("delta: %w", err)
	}
	name, err := localPath(t.Dir, rel)
	if err != nil {
		return nil, "", fmt.Errorf("delta: deletion vector file %s: %w", rel, err)
	}
	off := int64(1)
	if dv.Offset != nil {
		off = int64(*dv.Offset)
	}
	where := fmt.Sprintf("%s at offset %d", name, off)
	if off < 1 {
		return nil, "", fmt.Errorf("delta: deletion vector %s: the offset must be at least 1 (byte 0 is the file's format version)", where)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, "", fmt.Errorf("delta: deletion vector file of %s: %w", dv.UniqueID(), err)
	}
	defer f.Close()
	var version [1]byte
	if _, err := io.ReadFull(f, version[:]); err != nil {
		return nil, "", fmt.Errorf("delta: deletion vector file %s: reading the format version: %w", name, err)
	}
	if version[0] != dvFileVersion {
		return nil, "", fmt.Errorf("delta: deletion vector file %s has format version %d; this reader supports version %d", name, version[0], dvFileVersion)
	}
	if st, err := f.Stat(); err == nil && off+8+int64(dv.SizeInBytes) > st.Size() {
		return nil, "", fmt.Errorf("delta: deletion vector %s: the file has %d bytes, fewer than the descriptor's offset and sizeInBytes %d need", where, st.Size(), dv.SizeInBytes)
	}
	buf := make([]byte, 4+int(dv.SizeInBytes)+4)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, "", fmt.Errorf("delta: deletion vector %s: reading %d bytes: %w (the file is shorter than the descriptor's offset and sizeInBytes say)", where, len(buf), err)
	}
	if size := int32(binary.BigEndian.Uint32(buf)); size != dv.SizeInBytes {
		return nil, "", fmt.Errorf("delta: deletion vector %s: the file says the DV has %d bytes, the descriptor says sizeInBytes %d", where, size, dv.SizeInBytes)
	}
	data := buf[4 : 4+dv.SizeInBytes]
	want := binary.BigEndian.Uint32(buf[4+dv.SizeInBytes:])
	if got := crc32.ChecksumIEEE(data); got != want {
		return nil, "", fmt.Errorf("delta: deletion vector %s: CRC-32 checksum mismatch (stored %08x, computed %08x); the DV file is corrupt", where, want, got)
	}
	return data, where, nil
}

// encodeDVBitmap serializes ascending, distinct row indexes as the magic number followed by a
// 64-bit RoaringBitmapArray in the portable format: the number of 32-bit buckets (uint64), then
// for each bucket in ascending order its key (the high 32 bits, uint32) and a 32-bit
// RoaringBitmap of the low 32 bits, all little endian (Delta PROTOCOL.md, "Deletion Vector
// Format"). A row index of 2^63 or more is an error (keys must have a 0 most significant bit).
func encodeDVBitmap(rows []uint64) ([]byte, error) {
	var b bytes.Buffer
	var hdr [12]byte
	binary.LittleEndian.PutUint32(hdr[:4], dvMagic)
	var buckets []uint32
	var maps []*roaring.Bitmap
	for i, r := range rows {
		if r >= 1<<63 {
			return nil, fmt.Errorf("row index %d is 2^63 or more, beyond what a deletion vector can hold", r)
		}
		if i > 0 && r <= rows[i-1] {
			return nil, fmt.Errorf("row indexes are not ascending and distinct: %d follows %d", r, rows[i-1])
		}
		hi := uint32(r >> 32)
		if len(buckets) == 0 || buckets[len(buckets)-1] != hi {
			buckets = append(buckets, hi)
			maps = append(maps, roaring.New())
		}
		maps[len(maps)-1].Add(uint32(r))
	}
	binary.LittleEndian.PutUint64(hdr[4:], uint64(len(buckets)))
	b.Write(hdr[:])
	for i, bm := range maps {
		var key [4]byte
		binary.LittleEndian.PutUint32(key[:], buckets[i])
		b.Write(key[:])
		bm.RunOptimize()
		if _, err := bm.WriteTo(&b); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// decodeDVBitmap reads what encodeDVBitmap writes (as any Delta writer writes it) and returns
// the row indexes, ascending.
func decodeDVBitmap(data []byte) ([]uint64, error) {
	if len(data) < 12 {
		return nil, fmt.Errorf("%d bytes are too few for a serialized deletion vector (magic number and bucket count take 12)", len(data))
	}
	if binary.BigEndian.Uint32(data) == dvMagicNative {
		return decodeNativeDVBitmap(data[4:])
	}
	if m := binary.LittleEndian.Uint32(data); m != dvMagic {
		return nil, fmt.Errorf("magic number %d, expected %d (Delta PROTOCOL.md, Deletion Vector Format)", m, dvMagic)
	}
	n := binary.LittleEndian.Uint64(data[4:])
	r := bytes.NewReader(data[12:])
	var out []uint64
	prev := int64(-1)
	for i := uint64(0); i < n; i++ {
		var key [4]byte
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return nil, fmt.Errorf("bucket %d of %d: reading its key: %w", i+1, n, err)
		}
		hi := binary.LittleEndian.Uint32(key[:])
		if hi >= 1<<31 {
			return nil, fmt.Errorf("bucket %d has key %d, whose most significant bit is set", i+1, hi)
		}
		if int64(hi) <= prev {
			return nil, fmt.Errorf("bucket keys are not ascending: %d follows %d", hi, prev)
		}
		prev = int64(hi)
		bm := roaring.New()
		if _, err := bm.ReadFrom(r); err != nil {
			return nil, fmt.Errorf("bucket %d (key %d): %w", i+1, hi, err)
		}
		it := bm.Iterator()
		for it.HasNext() {
			out = append(out, uint64(hi)<<32|uint64(it.Next()))
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d bytes follow the last of %d buckets", r.Len(), n)
	}
	return out, nil
}

// decodeNativeDVBitmap reads the body of the native format (see dvMagicNative).
func decodeNativeDVBitmap(data []byte) ([]uint64, error) {
	if len(data) < 4 {
		return nil, errors.New("native deletion vector bitmap: no bitmap count")
	}
	n := binary.BigEndian.Uint32(data)
	data = data[4:]
	var out []uint64
	for i := uint32(0); i < n; i++ {
		if len(data) < 4 {
			return nil, fmt.Errorf("native deletion vector bitmap %d of %d: no size", i+1, n)
		}
		size := binary.BigEndian.Uint32(data)
		data = data[4:]
		if uint64(size) > uint64(len(data)) {
			return nil, fmt.Errorf("native deletion vector bitmap %d of %d: size %d, but %d bytes are left", i+1, n, size, len(data))
		}
		bm := roaring.New()
		if _, err := bm.FromBuffer(data[:size]); err != nil {
			return nil, fmt.Errorf("native deletion vector bitmap %d of %d: %w", i+1, n, err)
		}
		it := bm.Iterator()
		for it.HasNext() {
			out = append(out, uint64(i)<<32|uint64(it.Next()))
		}
		data = data[size:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("native deletion vector bitmap: %d bytes follow the last of %d bitmaps", len(data), n)
	}
	return out, nil
}

// WriteDeletionVectors writes one new deletion vector file holding one DV per set and returns
// their descriptors in the order of sets. Each set is row indexes of one data file, ascending,
// distinct, non-empty and below 2^63. The file is deletion_vector_<random UUID>.bin in the table
// folder (storage type "u", no prefix), in the format of Delta PROTOCOL.md "Deletion Vector File
// Storage Format": version byte 1, then per DV its size (int32, big endian), the serialized
// bitmap and its CRC-32 (big endian); offsets point at the size field. The file is written to a
// temporary name, synced and renamed, and the folder synced. Errors: an empty list or set, a set
// that is not ascending, a DV file larger than 2 GiB (offsets are int32), I/O errors.
func (t *Table) WriteDeletionVectors(sets [][]uint64) ([]*DeletionVector, error) {
	if len(sets) == 0 {
		return nil, errors.New("delta: WriteDeletionVectors: no deletion vector to write")
	}
	id := uuid.New()
	enc := Z85Encode(id[:])
	name := "deletion_vector_" + id.String() + ".bin"
	var file bytes.Buffer
	file.WriteByte(dvFileVersion)
	out := make([]*DeletionVector, len(sets))
	for i, set := range sets {
		if len(set) == 0 {
			return nil, fmt.Errorf("delta: WriteDeletionVectors: set %d is empty; a file without deleted rows takes no deletion vector", i)
		}
		data, err := encodeDVBitmap(set)
		if err != nil {
			return nil, fmt.Errorf("delta: WriteDeletionVectors: set %d: %w", i, err)
		}
		off := file.Len()
		if int64(off)+8+int64(len(data)) > 1<<31-1 {
			return nil, fmt.Errorf("delta: WriteDeletionVectors: the deletion vectors exceed the 2 GiB an int32 offset can address; write them in several calls")
		}
		var w [4]byte
		binary.BigEndian.PutUint32(w[:], uint32(len(data)))
		file.Write(w[:])
		file.Write(data)
		binary.BigEndian.PutUint32(w[:], crc32.ChecksumIEEE(data))
		file.Write(w[:])
		o := int32(off)
		out[i] = &DeletionVector{StorageType: DVStorageUUID, PathOrInlineDv: enc, Offset: &o, SizeInBytes: int32(len(data)), Cardinality: int64(len(set))}
	}
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("delta: WriteDeletionVectors: %w", err)
	}
	final := filepath.Join(t.Dir, name)
	tmp := filepath.Join(t.Dir, "."+name+".tmp")
	if err := writeFileSync(tmp, file.Bytes()); err != nil {
		return nil, fmt.Errorf("delta: write deletion vector file %s: %w", final, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("delta: write deletion vector file %s: %w", final, err)
	}
	if err := syncDir(t.Dir); err != nil {
		return nil, fmt.Errorf("delta: write deletion vector file %s: %w", final, err)
	}
	return out, nil
}

// ReadLiveFile reads the data file of a as t.ReadFile(a.Path, s) does and drops the rows that
// a.DeletionVector deletes (Delta PROTOCOL.md, "Reader Requirements for Deletion Vectors").
// pos[i] is the 0-based physical position of rows[i] in the file. A DV that names a row beyond
// the end of the file is an error naming both files.
func (t *Table) ReadLiveFile(a Add, s schema.Schema) (rows [][]any, pos []int64, err error) {
	all, err := t.ReadFile(a.Path, s)
	if err != nil {
		return nil, nil, err
	}
	return t.applyDV(a, all, true)
}

// applyDV drops from all, the rows of a's data file in physical order, the rows a's DV deletes,
// and returns the kept rows, with their positions when withPos is set.
func (t *Table) applyDV(a Add, all [][]any, withPos bool) ([][]any, []int64, error) {
	deleted, err := t.ReadDeletionVector(a.DeletionVector)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (data file %s)", err, a.Path)
	}
	rows, pos, rest := dropDeleted(all, deleted, 0, withPos)
	if len(rest) > 0 {
		return nil, nil, fmt.Errorf("delta: the deletion vector of %s deletes row %d, but the file has %d rows", a.Path, rest[len(rest)-1], len(all))
	}
	return rows, pos, nil
}

// dropDeleted drops from rows, the rows of a file from position at on, those at the positions
// deleted (ascending) names, and returns the kept rows (rows itself when none is dropped), their
// positions when withPos is set, and the deleted positions past the last of rows.
func dropDeleted(rows [][]any, deleted []uint64, at uint64, withPos bool) (live [][]any, pos []int64, rest []uint64) {
	end := at + uint64(len(rows))
	n := 0 // deleted positions within rows
	for n < len(deleted) && deleted[n] < end {
		n++
	}
	live = rows
	if n > 0 {
		live = make([][]any, 0, len(rows)-n)
	}
	if withPos {
		pos = make([]int64, 0, len(rows)-n)
	}
	d := 0
	for i, r := range rows {
		p := at + uint64(i)
		if d < n && deleted[d] == p {
			d++
			continue
		}
		if n > 0 {
			live = append(live, r)
		}
		if withPos {
			pos = append(pos, int64(p))
		}
	}
	return live, pos, deleted[n:]
}

// DVDifference returns the row indexes in newer that are not in older (both ascending): the rows
// a commit that replaces a file's DV older with newer deletes.
func DVDifference(older, newer []uint64) []uint64 {
	var out []uint64
	for _, r := range newer {
		if _, found := slices.BinarySearch(older, r); !found {
			out = append(out, r)
		}
	}
	return out
}

// z85Chars is the Z85 alphabet (ZeroMQ RFC 32/Z85), the base85 variant of deletion vector
// descriptors (Delta PROTOCOL.md, "Deletion Vector Descriptor Schema").
const z85Chars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Index = func() [256]int8 {
	var ix [256]int8
	for i := range ix {
		ix[i] = -1
	}
	for i := 0; i < len(z85Chars); i++ {
		ix[z85Chars[i]] = int8(i)
	}
	return ix
}()

// Z85Encode encodes data as Z85 (ZeroMQ RFC 32): every 4 bytes, read as a big-endian uint32,
// become 5 characters. Data whose length is not a multiple of 4 is padded with zero bytes, as
// Delta writers pad inline deletion vectors (the descriptor's sizeInBytes gives the real size).
func Z85Encode(data []byte) string {
	n := (len(data) + 3) / 4
	padded := make([]byte, n*4)
	copy(padded, data)
	out := make([]byte, n*5)
	for i := 0; i < n; i++ {
		v := binary.BigEndian.Uint32(padded[i*4:])
		for j := 4; j >= 0; j-- {
			out[i*5+j] = z85Chars[v%85]
			v /= 85
		}
	}
	return string(out)
}

// Z85Decode decodes Z85 text (ZeroMQ RFC 32). Its length must be a multiple of 5; a character
// outside the alphabet or a group above 2^32-1 is an error naming its position.
func Z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("Z85 text of %d characters; the length must be a multiple of 5", len(s))
	}
	out := make([]byte, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			c := z85Index[s[i+j]]
			if c < 0 {
				return nil, fmt.Errorf("Z85 text has %q at position %d, which is not a Z85 character", s[i+j], i+j)
			}
			v = v*85 + uint64(c)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("Z85 group at position %d decodes to %d, more than 32 bits", i, v)
		}
		binary.BigEndian.PutUint32(out[i/5*4:], uint32(v))
	}
	return out, nil
}
