package delta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/schema"
)

// The examples of Delta PROTOCOL.md, "Deletion Vector Descriptor Schema".
const (
	// JSON Example 3: the row indexes encoded are 3, 4, 7, 11, 18, 29.
	protoInlineDV = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
	// JSON Example 1: random prefix "ab", then the UUID d2c639aa-8816-431a-aaf6-d3fe2512ff61.
	protoUUIDDV = "ab^-aqEH.-t@S}K{vb[*k^"
)

// TestZ85 checks the codec against the example of ZeroMQ RFC 32 (the 8 bytes 86 4F D2 6F B5 59
// F7 5B are "HelloWorld") and the UUID of Delta PROTOCOL.md's JSON Example 1, and that bad text
// is refused.
func TestZ85(t *testing.T) {
	t.Parallel()
	hello := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	if got := Z85Encode(hello); got != "HelloWorld" {
		t.Errorf("Z85Encode = %q, want HelloWorld", got)
	}
	dec, err := Z85Decode("HelloWorld")
	if err != nil || !slices.Equal(dec, hello) {
		t.Errorf("Z85Decode(HelloWorld) = % x, %v", dec, err)
	}
	uuidBytes := []byte{0xd2, 0xc6, 0x39, 0xaa, 0x88, 0x16, 0x43, 0x1a, 0xaa, 0xf6, 0xd3, 0xfe, 0x25, 0x12, 0xff, 0x61}
	if got := Z85Encode(uuidBytes); got != protoUUIDDV[2:] {
		t.Errorf("Z85Encode(uuid) = %q, want %q", got, protoUUIDDV[2:])
	}
	for _, bad := range []string{"Hell", "Hello Worl", "%%%%%"} {
		if _, err := Z85Decode(bad); err == nil {
			t.Errorf("Z85Decode(%q): no error", bad)
		}
	}
}

// TestDVDescriptorExamples reads the three JSON examples of Delta PROTOCOL.md: the inline DV
// decodes to rows 3, 4, 7, 11, 18, 29; the relative path DV names
// ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin; the unique ids follow "Derived
// Fields".
func TestDVDescriptorExamples(t *testing.T) {
	t.Parallel()
	var inline DeletionVector
	if err := json.Unmarshal([]byte(`{"storageType":"i","pathOrInlineDv":"`+protoInlineDV+`","sizeInBytes":40,"cardinality":6}`), &inline); err != nil {
		t.Fatal(err)
	}
	rows, err := New(t.TempDir()).ReadDeletionVector(&inline)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{3, 4, 7, 11, 18, 29}; !slices.Equal(rows, want) {
		t.Errorf("inline DV rows %v, want %v", rows, want)
	}
	if id := inline.UniqueID(); id != "i"+protoInlineDV {
		t.Errorf("inline UniqueID %q", id)
	}
	// The bytes of the example, encoded again, give the example text back.
	raw, _ := Z85Decode(protoInlineDV)
	if got := Z85Encode(raw); got != protoInlineDV {
		t.Errorf("Z85 round trip %q", got)
	}
	// The example is in the native format (magic 1681511376 big endian, one bitmap of 28
	// bytes); the portable format this package writes differs in the first 12 bytes only: the
	// magic 1681511377 little endian and a uint64 bucket count 1 with key 0.
	if want := []byte{0x64, 0x39, 0xd3, 0xd0, 0, 0, 0, 1, 0, 0, 0, 0x1c}; !slices.Equal(raw[:12], want) {
		t.Errorf("example header % x", raw[:12])
	}
	enc, err := encodeDVBitmap([]uint64{3, 4, 7, 11, 18, 29})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0xd1, 0xd3, 0x39, 0x64, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, raw[12:]...)
	if !slices.Equal(enc, want) {
		t.Errorf("portable encoding\n% x\nwant\n% x", enc, want)
	}

	var rel DeletionVector
	if err := json.Unmarshal([]byte(`{"storageType":"u","pathOrInlineDv":"`+protoUUIDDV+`","offset":4,"sizeInBytes":40,"cardinality":6}`), &rel); err != nil {
		t.Fatal(err)
	}
	p, err := rel.FilePath()
	if err != nil || p != "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin" {
		t.Errorf("FilePath = %q, %v", p, err)
	}
	if id := rel.UniqueID(); id != "u"+protoUUIDDV+"@4" {
		t.Errorf("UniqueID %q", id)
	}
	b, _ := json.Marshal(&rel)
	if string(b) != `{"storageType":"u","pathOrInlineDv":"`+protoUUIDDV+`","offset":4,"sizeInBytes":40,"cardinality":6}` {
		t.Errorf("JSON %s", b)
	}
	var nilDV *DeletionVector
	if nilDV.UniqueID() != "" {
		t.Error("nil DV has a unique id")
	}
}

// TestDATDeletionVector reads the DV of the DAT case deletion_vectors (Spark 3.5 / Delta 3.1:
// DELETE WHERE letter = 'a' on a 5-row file): the file deletion_vector_8aebe228-....bin holds
// at offset 1 a 40-byte DV whose bitmap (one bucket, one array container) lists rows 0, 2, 3, 4;
// those are the rows with letter "a" in the data file.
func TestDATDeletionVector(t *testing.T) {
	t.Parallel()
	tbl := New(filepath.Join(datCases(t), "deletion_vectors", "delta"))
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 1 || snap.Files[0].DeletionVector == nil {
		t.Fatalf("files %+v, want one with a DV", snap.Files)
	}
	a := snap.Files[0]
	dv := a.DeletionVector
	if id := dv.UniqueID(); id != "uITfmIXOK!>U^L:if1E+a@1" {
		t.Errorf("UniqueID %q", id)
	}
	if p, _ := dv.FilePath(); p != "deletion_vector_8aebe228-b96c-4831-b0b6-22882eb9a3d3.bin" {
		t.Errorf("FilePath %q", p)
	}
	rows, err := tbl.ReadDeletionVector(dv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows, []uint64{0, 2, 3, 4}) {
		t.Errorf("deleted rows %v, want [0 2 3 4]", rows)
	}
	// A DV file this package writes for the same rows is byte for byte the one Delta wrote.
	sparkFile, err := os.ReadFile(filepath.Join(tbl.Dir, "deletion_vector_8aebe228-b96c-4831-b0b6-22882eb9a3d3.bin"))
	if err != nil {
		t.Fatal(err)
	}
	mine := New(t.TempDir())
	dvs, err := mine.WriteDeletionVectors([][]uint64{{0, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := dvs[0].FilePath()
	myFile, _ := os.ReadFile(filepath.Join(mine.Dir, name))
	if !slices.Equal(myFile, sparkFile) {
		t.Errorf("DV file\n% x\nDelta's\n% x", myFile, sparkFile)
	}
	if *dvs[0].Offset != *dv.Offset || dvs[0].SizeInBytes != dv.SizeInBytes || dvs[0].Cardinality != dv.Cardinality {
		t.Errorf("descriptor %+v, Delta's %+v", dvs[0], dv)
	}
	all, err := tbl.ReadFile(a.Path, snap.Metadata.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if all[r][0] != "a" {
			t.Errorf("deleted row %d has letter %v, want a", r, all[r][0])
		}
	}
	live, pos, err := tbl.ReadLiveFile(a, snap.Metadata.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0][0] != "b" || !slices.Equal(pos, []int64{1}) {
		t.Errorf("live rows %v at %v, want the one b row at position 1", live, pos)
	}
	if n := snap.NumRecords(); n != 1 {
		t.Errorf("NumRecords %d, want 5 - 4 = 1", n)
	}
}

// TestDVFileRoundTrip writes several DVs into one file, one with row indexes in three 32-bit
// buckets (beyond 2^32), one with 100000 rows (bitmap and run containers), one of a single row,
// and reads each back; the file has the layout of Delta PROTOCOL.md "Deletion Vector File
// Storage Format" (version byte, then size, data, CRC per DV, offsets at the size fields). A
// flipped byte, a wrong size or a wrong cardinality is an error naming the file.
func TestDVFileRoundTrip(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	var big []uint64
	for i := uint64(0); i < 100000; i++ {
		if i%3 != 0 || i < 70000 {
			big = append(big, i*2)
		}
	}
	sets := [][]uint64{
		{0, 5, 1<<32 - 1, 1 << 32, 1<<32 + 7, 5 << 40, 1<<63 - 1},
		big,
		{42},
	}
	dvs, err := tbl.WriteDeletionVectors(sets)
	if err != nil {
		t.Fatal(err)
	}
	if len(dvs) != 3 {
		t.Fatalf("%d descriptors", len(dvs))
	}
	name, err := dvs[0].FilePath()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "deletion_vector_") || !strings.HasSuffix(name, ".bin") || len(dvs[0].PathOrInlineDv) != 20 {
		t.Errorf("DV file %q, pathOrInlineDv %q", name, dvs[0].PathOrInlineDv)
	}
	file, err := os.ReadFile(filepath.Join(tbl.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if file[0] != 1 {
		t.Errorf("format version %d, want 1", file[0])
	}
	next := int32(1)
	for i, dv := range dvs {
		if dv.StorageType != "u" || dv.Offset == nil || *dv.Offset != next || dv.Cardinality != int64(len(sets[i])) {
			t.Errorf("descriptor %d: %+v (offset want %d)", i, dv, next)
		}
		if dv.PathOrInlineDv != dvs[0].PathOrInlineDv {
			t.Errorf("descriptor %d is in another file", i)
		}
		next += 4 + dv.SizeInBytes + 4
		got, err := tbl.ReadDeletionVector(dv)
		if err != nil {
			t.Fatalf("read DV %d: %v", i, err)
		}
		if !slices.Equal(got, sets[i]) {
			t.Errorf("DV %d: %d rows back, want %d", i, len(got), len(sets[i]))
		}
	}
	if int(next) != len(file) {
		t.Errorf("file of %d bytes, the DVs end at %d", len(file), next)
	}
	// Four buckets in the first DV: the high words 0, 1, 5<<8 and 2^31-1.
	off := *dvs[0].Offset + 4
	if n := int(file[off+4]); n != 4 {
		t.Errorf("first DV has %d buckets, want 4 (high words 0, 1, 1280, 2^31-1)", n)
	}

	// A flipped byte inside the second DV's data fails its checksum.
	bad := slices.Clone(file)
	bad[*dvs[1].Offset+4+20] ^= 0xFF
	if err := os.WriteFile(filepath.Join(tbl.Dir, name), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.ReadDeletionVector(dvs[1]); err == nil || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), name) {
		t.Errorf("corrupt DV: %v, want a checksum error naming %s", err, name)
	}
	if _, err := tbl.ReadDeletionVector(dvs[0]); err != nil {
		t.Errorf("the intact DV beside it: %v", err)
	}
	// Storage type "p": the same DV file at an absolute path, plain or as a file: URI.
	elsewhere := filepath.Join(t.TempDir(), "moved.bin")
	if err := os.WriteFile(elsewhere, file, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{elsewhere, "file://" + filepath.ToSlash(elsewhere)} {
		abs := *dvs[2]
		abs.StorageType, abs.PathOrInlineDv = "p", p
		if got, err := tbl.ReadDeletionVector(&abs); err != nil || !slices.Equal(got, []uint64{42}) {
			t.Errorf("storage type p at %s: %v, %v", p, got, err)
		}
	}
	wrongSize := *dvs[2]
	wrongSize.SizeInBytes++
	if _, err := tbl.ReadDeletionVector(&wrongSize); err == nil || !strings.Contains(err.Error(), "sizeInBytes") {
		t.Errorf("wrong size: %v", err)
	}
	wrongCard := *dvs[2]
	wrongCard.Cardinality = 2
	if _, err := tbl.ReadDeletionVector(&wrongCard); err == nil || !strings.Contains(err.Error(), "cardinality") {
		t.Errorf("wrong cardinality: %v", err)
	}
	for _, bad := range [][][]uint64{nil, {{}}, {{3, 2}}, {{1, 1}}, {{1 << 63}}} {
		if _, err := tbl.WriteDeletionVectors(bad); err == nil {
			t.Errorf("WriteDeletionVectors(%v): no error", bad)
		}
	}
	if got, _ := tbl.ReadDeletionVector(nil); got != nil {
		t.Errorf("nil DV: %v", got)
	}
}

// createDVTable creates a table with delta.enableDeletionVectors = "true".
func createDVTable(t testing.TB, s schema.Schema) *Table {
	t.Helper()
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigEnableDeletionVectors: "true"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// deleteRows commits, for the live file a, a new DV holding its old deleted rows and rows:
// remove{a} + add{a with the new DV}, as Delta's DELETE with deletion vectors does.
func deleteRows(t testing.TB, tbl *Table, a Add, rows ...uint64) Add {
	t.Helper()
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	old, err := tbl.ReadDeletionVector(a.DeletionVector)
	if err != nil {
		t.Fatal(err)
	}
	set := append(slices.Clone(old), rows...)
	slices.Sort(set)
	dvs, err := tbl.WriteDeletionVectors([][]uint64{slices.Compact(set)})
	if err != nil {
		t.Fatal(err)
	}
	na := a
	na.DeletionVector = dvs[0]
	tx := tbl.Begin(snap)
	tx.Remove(tbl.RemoveFor(a, 0))
	tx.Add(na)
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	snap, err = tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files {
		if f.Path == a.Path {
			return f
		}
	}
	t.Fatalf("%s is not live after the delete", a.Path)
	return Add{}
}

// TestDVProtocol checks the protocol of Delta PROTOCOL.md "Deletion Vectors" and "Table
// Features": a table created with delta.enableDeletionVectors = "true" gets reader version 3,
// writer version 7, readerFeatures [deletionVectors] and the writer features that writer version
// 4 implies plus deletionVectors; a table without the property keeps (1, 4) with no feature
// lists; setting the property later upgrades the protocol in the same commit.
func TestDVProtocol(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	wantW := []string{"appendOnly", "changeDataFeed", "checkConstraints", "deletionVectors", "generatedColumns", "invariants"}
	check := func(tbl *Table, version int64) {
		t.Helper()
		c, err := tbl.ReadCommit(version)
		if err != nil {
			t.Fatal(err)
		}
		if c.Protocol == nil || *c.Protocol != (Protocol{3, 7}) || !slices.Equal(c.readerFeatures, []string{"deletionVectors"}) || !slices.Equal(c.writerFeatures, wantW) {
			t.Errorf("version %d protocol %+v %v %v", version, c.Protocol, c.readerFeatures, c.writerFeatures)
		}
		b, _ := os.ReadFile(tbl.commitPath(version))
		want := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["appendOnly","changeDataFeed","checkConstraints","deletionVectors","generatedColumns","invariants"]}}`
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("version %d commit lacks %s:\n%s", version, want, b)
		}
	}
	dv := createDVTable(t, s)
	check(dv, 0)
	appendRows(t, dv, [][]any{{int64(1)}})
	if c, _ := dv.ReadCommit(1); c.Protocol != nil {
		t.Errorf("a plain append writes a protocol: %+v", c.Protocol)
	}

	plain := createTable(t, s)
	b, _ := os.ReadFile(plain.commitPath(0))
	if !strings.Contains(string(b), `{"protocol":{"minReaderVersion":1,"minWriterVersion":4}}`+"\n") {
		t.Errorf("a table without the property:\n%s", b)
	}
	snap, _ := plain.Snapshot(-1)
	m := snap.Metadata
	m.Configuration = map[string]string{ConfigEnableChangeDataFeed: "true", ConfigEnableDeletionVectors: "true"}
	tx := plain.Begin(snap)
	tx.SetMetadata(m)
	if _, err := tx.Commit("SET TBLPROPERTIES", nil); err != nil {
		t.Fatal(err)
	}
	check(plain, 1)
	snap, _ = plain.Snapshot(-1)
	if !slices.Equal(snap.ReaderFeatures, []string{"deletionVectors"}) || !slices.Equal(snap.WriterFeatures, wantW) {
		t.Errorf("snapshot features %v %v", snap.ReaderFeatures, snap.WriterFeatures)
	}
	// Already upgraded: a later metadata change writes no protocol.
	m = snap.Metadata
	m.Description = "x"
	tx = plain.Begin(snap)
	tx.SetMetadata(m)
	if v, err := tx.Commit("SET TBLPROPERTIES", nil); err != nil {
		t.Fatal(err)
	} else if c, _ := plain.ReadCommit(v); c.Protocol != nil {
		t.Errorf("version %d writes protocol %+v again", v, c.Protocol)
	}

	// A DV on a table without the feature is refused.
	_, a := appendRows(t, createTable(t, s), [][]any{{int64(1)}})
	p := New(t.TempDir())
	tx = p.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s})
	a.DeletionVector = &DeletionVector{StorageType: "i", PathOrInlineDv: protoInlineDV, SizeInBytes: 40, Cardinality: 6}
	tx.Add(a)
	if _, err := tx.Commit("WRITE", nil); err == nil || !strings.Contains(err.Error(), ConfigEnableDeletionVectors) {
		t.Errorf("DV without the feature: %v", err)
	}
}

// TestDVReplay deletes rows of a file twice (remove + add with the new DV, as Delta DELETE
// does), then reads the table from the JSON log and from a checkpoint: the snapshot holds the
// file once, with the latest DV; the tombstones keep the older logical files; NumRecords and
// Rows leave the deleted rows out; the add's stats carry tightBounds false and the physical
// numRecords.
func TestDVReplay(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING")
	tbl := createDVTable(t, s)
	var rows [][]any
	for i := range 10 {
		rows = append(rows, []any{int64(i), string(rune('a' + i))})
	}
	_, a := appendRows(t, tbl, rows)
	_, b := appendRows(t, tbl, [][]any{{int64(100), "z"}})
	a1 := deleteRows(t, tbl, a, 2, 7)
	a2 := deleteRows(t, tbl, a1, 0)
	var st struct {
		NumRecords  int64 `json:"numRecords"`
		TightBounds *bool `json:"tightBounds"`
	}
	if err := json.Unmarshal([]byte(a2.Stats), &st); err != nil || st.NumRecords != 10 || st.TightBounds == nil || *st.TightBounds {
		t.Errorf("stats %s", a2.Stats)
	}
	check := func(snap *Snapshot, how string) {
		t.Helper()
		var dvs []string
		for _, f := range snap.Files {
			dvs = append(dvs, f.Path+"|"+f.DeletionVector.UniqueID())
		}
		want := []string{a.Path + "|" + a2.DeletionVector.UniqueID(), b.Path + "|"}
		if !slices.Equal(dvs, want) {
			t.Errorf("%s: files %v, want %v", how, dvs, want)
		}
		if n := snap.NumRecords(); n != 11-3 {
			t.Errorf("%s: NumRecords %d, want 8", how, n)
		}
		var tomb []string
		for _, r := range snap.Tombstones {
			tomb = append(tomb, r.Path+"|"+r.DeletionVector.UniqueID())
		}
		if !slices.Contains(tomb, a.Path+"|") || !slices.Contains(tomb, a.Path+"|"+a1.DeletionVector.UniqueID()) || len(tomb) != 2 {
			t.Errorf("%s: tombstones %v", how, tomb)
		}
		got, err := tbl.Rows(snap)
		if err != nil {
			t.Fatal(err)
		}
		want2 := [][]any{{int64(1), "b"}, {int64(3), "d"}, {int64(4), "e"}, {int64(5), "f"}, {int64(6), "g"}, {int64(8), "i"}, {int64(9), "j"}, {int64(100), "z"}}
		assertRows(t, got, want2)
	}
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	check(snap, "JSON log")
	// A reader that keys files by path alone and applies each commit's actions in order (as
	// some do) finds the same files: a commit's removes come before its adds.
	live := map[string]string{}
	for v := int64(0); v <= snap.Version; v++ {
		data, err := os.ReadFile(tbl.commitPath(v))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var a struct {
				Add *struct {
					Path           string
					DeletionVector *DeletionVector
				} `json:"add"`
				Remove *struct{ Path string } `json:"remove"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			switch {
			case a.Add != nil:
				live[a.Add.Path] = a.Add.DeletionVector.UniqueID()
			case a.Remove != nil:
				delete(live, a.Remove.Path)
			}
		}
	}
	if want := map[string]string{a.Path: a2.DeletionVector.UniqueID(), b.Path: ""}; !reflect.DeepEqual(live, want) {
		t.Errorf("replayed by path, in order: files %v, want %v", live, want)
	}
	if err := tbl.WriteCheckpoint(snap); err != nil {
		t.Fatal(err)
	}
	fresh := New(tbl.Dir)
	for v := int64(0); v < snap.Version; v++ {
		if err := os.Remove(fresh.commitPath(v)); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := fresh.Snapshot(snap.Version)
	if err != nil {
		t.Fatal(err)
	}
	check(cs, "checkpoint")
	if !slices.Equal(cs.ReaderFeatures, []string{"deletionVectors"}) || cs.Protocol != (Protocol{3, 7}) {
		t.Errorf("checkpoint protocol %+v %v", cs.Protocol, cs.ReaderFeatures)
	}
	// Across the checkpoint: the checkpoint holds (a, DV 2); a JSON commit after it replaces DV 2
	// by DV 3 (row 9 deleted too). A reader starting from the checkpoint sees only DV 3.
	var a2cp Add
	for _, f := range cs.Files {
		if f.Path == a.Path {
			a2cp = f
		}
	}
	if a2cp.DeletionVector.UniqueID() != a2.DeletionVector.UniqueID() {
		t.Fatalf("the checkpoint's DV of %s is %q, want %q", a.Path, a2cp.DeletionVector.UniqueID(), a2.DeletionVector.UniqueID())
	}
	a3 := deleteRows(t, fresh, a2cp, 9)
	after, err := New(tbl.Dir).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Files) != 2 || after.Files[0].DeletionVector.UniqueID() != a3.DeletionVector.UniqueID() || after.NumRecords() != 7 {
		t.Errorf("after the checkpoint: files %v, NumRecords %d", after.Files, after.NumRecords())
	}
	got, err := New(tbl.Dir).Rows(after)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{{int64(1), "b"}, {int64(3), "d"}, {int64(4), "e"}, {int64(5), "f"}, {int64(6), "g"}, {int64(8), "i"}, {int64(100), "z"}})
	if del, _ := New(tbl.Dir).ReadDeletionVector(a3.DeletionVector); !slices.Equal(del, []uint64{0, 2, 7, 9}) {
		t.Errorf("DV 3 deletes %v, want [0 2 7 9]", del)
	}
}

// TestDVChangeDataFeed reads the change data feed of commits that replace a file's deletion
// vector without cdc files. The DAT case deletion_vectors (Spark: DELETE WHERE letter = 'a' as
// remove + add with a DV; its change data feed turned on for the test) gives at version 2 exactly the rows of version 1 that the latest
// version lacks, as deletes. On a table of this package, two DELETEs by DV give the rows each
// one deleted, and a commit that takes rows out of the DV gives them back as inserts.
func TestDVChangeDataFeed(t *testing.T) {
	t.Parallel()
	root := filepath.Join(datCases(t), "deletion_vectors")
	tbl := New(filepath.Join(root, "delta"))
	// The case's table has no change data feed: its changes were not recorded, and Changes
	// refuses them as Delta's readers do. Set at the table's creation, the property makes its
	// version 2 read as a commit without cdc files.
	if _, _, err := tbl.Changes(2, 2); !errors.Is(err, ErrNoChangeDataFeed) || !strings.Contains(err.Error(), "at version 2") {
		t.Errorf("changes of a table without a change data feed: %v, want ErrNoChangeDataFeed at version 2", err)
	}
	first := filepath.Join(tbl.Dir, LogDir, fmt.Sprintf("%020d.json", 0))
	b, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"configuration":{`), []byte(`"configuration":{"delta.enableChangeDataFeed":"true",`), 1)
	if err := os.WriteFile(first, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tbl = New(tbl.Dir) // without the state it cached
	cs, rows, err := tbl.Changes(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	snap := mustSnapshot(t, tbl, 1)
	before, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	expFiles, _ := filepath.Glob(filepath.Join(root, "expected", "latest", "table_content", "*.parquet"))
	var after [][]any
	for _, f := range expFiles {
		abs, _ := filepath.Abs(f)
		r, err := tbl.ReadFile(abs, snap.Metadata.Schema)
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, r...)
	}
	s := snap.Metadata.Schema
	var gone []string
	kept := canonical(s, after)
	for _, r := range canonical(s, before) {
		if i := slices.Index(kept, r); i >= 0 {
			kept = slices.Delete(kept, i, i+1)
			continue
		}
		gone = append(gone, r)
	}
	if len(gone) != 4 {
		t.Fatalf("the DAT expectations differ by %d rows, want the 4 DELETE removed", len(gone))
	}
	ct := cs.Index(ChangeTypeColumn)
	var got [][]any
	for _, r := range rows {
		if r[ct] != ChangeDelete || r[ct+1] != int64(2) {
			t.Errorf("change row %v, want a delete of version 2", r)
		}
		got = append(got, r[:len(s.Fields)])
	}
	if g := canonical(s, got); !slices.Equal(g, gone) {
		t.Errorf("deletes\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(gone, "\n"))
	}

	// A table of this package (change data feed on, DV commits without cdc files).
	own := createDVTable(t, mustDDL(t, "id BIGINT"))
	var data [][]any
	for i := range 6 {
		data = append(data, []any{int64(10 + i)})
	}
	_, a := appendRows(t, own, data)  // version 1
	a1 := deleteRows(t, own, a, 1, 4) // version 2
	a2 := deleteRows(t, own, a1, 0)   // version 3
	// Version 4: rows 1 and 4 come back (the DV keeps only row 0).
	dvs, err := own.WriteDeletionVectors([][]uint64{{0}})
	if err != nil {
		t.Fatal(err)
	}
	a3 := a2
	a3.DeletionVector = dvs[0]
	tx := own.Begin(mustSnapshot(t, own, -1))
	tx.Remove(own.RemoveFor(a2, 0))
	tx.Add(a3)
	if _, err := tx.Commit("RESTORE", nil); err != nil {
		t.Fatal(err)
	}
	_, rows, err = own.Changes(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, r := range rows {
		text = append(text, strings.Join([]string{strconvI(r[0]), r[1].(string), strconvI(r[2])}, " "))
	}
	want := []string{
		"10 insert 1", "11 insert 1", "12 insert 1", "13 insert 1", "14 insert 1", "15 insert 1",
		"11 delete 2", "14 delete 2",
		"10 delete 3",
		"11 insert 4", "14 insert 4",
	}
	if !slices.Equal(text, want) {
		t.Errorf("changes\n%s\nwant\n%s", strings.Join(text, "\n"), strings.Join(want, "\n"))
	}
}

func strconvI(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDVOptimize compacts a table whose files have deletion vectors: the rewritten file holds
// only the live rows and has no DV, the commit removes the logical files (with their DVs) with
// dataChange false, the rows are the same before and after, a lone file with a DV is rewritten
// too, and a file whose rows are all deleted is removed without a new file.
func TestDVOptimize(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createDVTable(t, s)
	var data [][]any
	for i := range 10 {
		data = append(data, []any{int64(i)})
	}
	_, a := appendRows(t, tbl, data)
	_, b := appendRows(t, tbl, [][]any{{int64(100)}, {int64(101)}})
	deleteRows(t, tbl, a, 2, 7)
	deleteRows(t, tbl, b, 0, 1) // all of b
	before, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Optimize(OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 2 || res.FilesAdded != 1 || res.Rows != 8 {
		t.Errorf("result %+v, want 2 removed, 1 added, 8 rows", res)
	}
	snap := mustSnapshot(t, tbl, -1)
	if len(snap.Files) != 1 || snap.Files[0].DeletionVector != nil {
		t.Fatalf("files after OPTIMIZE %+v", snap.Files)
	}
	if n, _ := snap.Files[0].NumRecords(); n != 8 || snap.NumRecords() != 8 {
		t.Errorf("numRecords %d, NumRecords %d, want 8", n, snap.NumRecords())
	}
	after, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, after, before)
	c, _ := tbl.ReadCommit(res.Version)
	for _, r := range c.Removes {
		if r.DataChange || r.DeletionVector == nil {
			t.Errorf("remove %s: dataChange %v, DV %v; want false and the file's DV", r.Path, r.DataChange, r.DeletionVector)
		}
	}
	if c.Adds[0].DataChange {
		t.Error("the compacted file has dataChange true")
	}

	// A lone file with a DV is rewritten.
	lone := createDVTable(t, s)
	_, la := appendRows(t, lone, data[:3])
	deleteRows(t, lone, la, 1)
	res, err = lone.Optimize(OptimizeOptions{})
	if err != nil || res.FilesRemoved != 1 || res.FilesAdded != 1 || res.Rows != 2 {
		t.Fatalf("lone file: %+v, %v", res, err)
	}
	rows, _ := lone.Rows(mustSnapshot(t, lone, -1))
	assertRows(t, rows, [][]any{{int64(0)}, {int64(2)}})
	if res, _ := lone.Optimize(OptimizeOptions{}); res.Version != -1 {
		t.Errorf("a second OPTIMIZE committed version %d", res.Version)
	}
}

// TestDVVacuum checks that VACUUM keeps the DV files of live files and of removes within the
// retention window (including a DV file in a random prefix folder), and deletes, once older than
// the window, the DV files only expired removes reference and DV files never committed; a dry
// run lists them.
func TestDVVacuum(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createDVTable(t, s)
	var data [][]any
	for i := range 10 {
		data = append(data, []any{int64(i)})
	}
	_, a := appendRows(t, tbl, data)
	a1 := deleteRows(t, tbl, a, 3)
	// The second DV goes into the folder of the random prefix "q7".
	dvs, err := tbl.WriteDeletionVectors([][]uint64{{3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	flat, _ := dvs[0].FilePath()
	if err := os.MkdirAll(filepath.Join(tbl.Dir, "q7"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tbl.Dir, flat), filepath.Join(tbl.Dir, "q7", flat)); err != nil {
		t.Fatal(err)
	}
	pdv := *dvs[0]
	pdv.PathOrInlineDv = "q7" + pdv.PathOrInlineDv
	a2 := a1
	a2.DeletionVector = &pdv
	tx := tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.Remove(tbl.RemoveFor(a1, 0))
	tx.Add(a2)
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	if rows, err := tbl.Rows(mustSnapshot(t, tbl, -1)); err != nil || len(rows) != 8 {
		t.Fatalf("rows with the prefixed DV: %d, %v", len(rows), err)
	}
	orphan, err := tbl.WriteDeletionVectors([][]uint64{{1}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := a1.DeletionVector.FilePath()
	orphanName, _ := orphan[0].FilePath()
	live := "q7/" + flat

	// Within the window nothing goes.
	res, err := tbl.Vacuum(VacuumOptions{Retain: -1, DryRun: true, KeepFromVersion: -1})
	if err != nil || len(res.Files) != 0 {
		t.Fatalf("vacuum now: %v, %v", res.Files, err)
	}
	// Eight days on: the first DV (only an expired remove names it) and the orphan go.
	later := time.Now().Add(8 * 24 * time.Hour)
	want := []string{first, orphanName}
	slices.Sort(want)
	res, err = tbl.Vacuum(VacuumOptions{Retain: -1, DryRun: true, Now: later, KeepFromVersion: -1})
	if err != nil || !slices.Equal(res.Files, want) {
		t.Fatalf("dry run: %v, %v; want %v", res.Files, err, want)
	}
	if _, err := os.Stat(filepath.Join(tbl.Dir, first)); err != nil {
		t.Errorf("the dry run deleted %s", first)
	}
	res, err = tbl.Vacuum(VacuumOptions{Retain: -1, Now: later, KeepFromVersion: -1})
	if err != nil || !slices.Equal(res.Files, want) {
		t.Fatalf("vacuum: %v, %v; want %v", res.Files, err, want)
	}
	for _, gone := range want {
		if _, err := os.Stat(filepath.Join(tbl.Dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", gone, err)
		}
	}
	for _, kept := range []string{live, a.Path} {
		if _, err := os.Stat(filepath.Join(tbl.Dir, kept)); err != nil {
			t.Errorf("%s was deleted: %v", kept, err)
		}
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil || len(rows) != 8 {
		t.Errorf("rows after vacuum: %d, %v", len(rows), err)
	}
}

// TestDeletionVectorProtocol upgrades legacy protocols by the features Delta PROTOCOL.md's
// "Writer Version Requirements" and "Reader Version Requirements" tables give each version
// (writer 2: appendOnly, invariants; 3: checkConstraints; 4: changeDataFeed, generatedColumns;
// 5: columnMapping; reader 2: columnMapping), and keeps the lists of a table-features protocol.
func TestDeletionVectorProtocol(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cur    Protocol
		rf, wf []string
		wantR  []string
		wantW  []string
	}{
		{Protocol{1, 1}, nil, nil, []string{"deletionVectors"}, []string{"deletionVectors"}},
		{Protocol{1, 2}, nil, nil, []string{"deletionVectors"}, []string{"appendOnly", "deletionVectors", "invariants"}},
		{Protocol{2, 5}, nil, nil, []string{"columnMapping", "deletionVectors"},
			[]string{"appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "deletionVectors", "generatedColumns", "invariants"}},
		{Protocol{3, 7}, []string{"timestampNtz"}, []string{"timestampNtz", "appendOnly"},
			[]string{"deletionVectors", "timestampNtz"}, []string{"appendOnly", "deletionVectors", "timestampNtz"}},
		{Protocol{1, 7}, nil, []string{"changeDataFeed"}, []string{"deletionVectors"}, []string{"changeDataFeed", "deletionVectors"}},
	}
	for _, c := range cases {
		p, rf, wf := DeletionVectorProtocol(c.cur, c.rf, c.wf)
		if p != (Protocol{3, 7}) || !slices.Equal(rf, c.wantR) || !slices.Equal(wf, c.wantW) {
			t.Errorf("from %+v %v %v: %+v %v %v, want %v %v", c.cur, c.rf, c.wf, p, rf, wf, c.wantR, c.wantW)
		}
	}
}

// TestDVOptimizePurgeRatio: a file that is not small is rewritten by OPTIMIZE only once its
// deletion vector deletes more than MaxDeletedRowsRatio (5%) of its rows; automatic compaction
// does so too, with no small file around.
func TestDVOptimizePurgeRatio(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	// A target size of one byte: every file counts as large.
	tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigEnableDeletionVectors: "true", ConfigTargetFileSize: "1"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := range 100 {
		data = append(data, []any{int64(i)})
	}
	_, a := appendRows(t, tbl, data)
	a = deleteRows(t, tbl, a, 1, 2, 3, 4, 5) // 5%: not more than the ratio
	large := OptimizeOptions{}
	if res, err := tbl.Optimize(large); err != nil || res.Version != -1 {
		t.Fatalf("5%% deleted: OPTIMIZE %+v, %v; want nothing done", res, err)
	}
	if res, err := tbl.AutoOptimize(); err != nil || res.Version != -1 {
		t.Fatalf("5%% deleted: automatic OPTIMIZE %+v, %v; want nothing done", res, err)
	}
	a = deleteRows(t, tbl, a, 6) // 6%
	if res, err := tbl.AutoOptimize(); err != nil || res.FilesRemoved != 1 || res.Rows != 94 {
		t.Fatalf("6%% deleted: automatic OPTIMIZE %+v, %v; want the file rewritten with its 94 live rows", res, err)
	}
	// The same by an explicit OPTIMIZE, on a table where automatic compaction is off.
	tx = tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigEnableDeletionVectors: "true", ConfigTargetFileSize: "1", ConfigAutoOptimize: "false"}})
	if _, err := tx.Commit("SET TBLPROPERTIES", nil); err != nil {
		t.Fatal(err)
	}
	_, b := appendRows(t, tbl, data)
	deleteRows(t, tbl, b, 10, 11, 12, 13, 14, 15)
	if res, err := tbl.AutoOptimize(); err != nil || res.Version != -1 {
		t.Fatalf("automatic compaction off: %+v, %v", res, err)
	}
	res, err := tbl.Optimize(large)
	if err != nil || res.FilesRemoved != 1 || res.FilesAdded != 1 || res.Rows != 94 {
		t.Fatalf("6%% deleted: OPTIMIZE %+v, %v; want the second file rewritten with its 94 live rows", res, err)
	}
	snap := mustSnapshot(t, tbl, -1)
	if len(snap.Files) != 2 || snap.Files[0].DeletionVector != nil || snap.Files[1].DeletionVector != nil || snap.NumRecords() != 188 {
		t.Fatalf("files after the purges %+v", snap.Files)
	}
}

// TestFileRowGroups: a partitioned file of three row groups with a deletion vector spanning them
// reads, group by group, as the rows FileRows gives: partition values from the log, deleted rows
// left out at their file positions.
func TestFileRowGroups(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, region STRING")
	tbl := New(t.TempDir())
	m := Metadata{Schema: s, PartitionColumns: []string{"region"}, Configuration: map[string]string{ConfigEnableDeletionVectors: "true"}}
	tx := tbl.Begin(nil)
	tx.SetMetadata(m)
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	dw, err := tbl.NewDataWriter(m)
	if err != nil {
		t.Fatal(err)
	}
	for g := range 3 { // three calls: three row groups of one file
		var rows [][]any
		for i := range 10 {
			rows = append(rows, []any{int64(10*g + i), "eu"})
		}
		if err := dw.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	adds, err := dw.Close()
	if err != nil || len(adds) != 1 {
		t.Fatalf("adds %v, %v", adds, err)
	}
	tx = tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.Add(adds[0])
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	a := deleteRows(t, tbl, adds[0], 0, 9, 10, 25, 29) // first and last rows of groups
	want, err := tbl.FileRows(m, a)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	groups := 0
	if err := tbl.FileRowGroups(m, a, func(rows [][]any) error {
		groups++
		got = append(got, rows...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if groups != 3 || len(got) != 25 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d groups, %d rows %v; want 3 groups and FileRows' 25 rows %v", groups, len(got), got, want)
	}
	for _, r := range got {
		if id := r[0].(int64); id == 0 || id == 9 || id == 10 || id == 25 || id == 29 || r[1] != "eu" {
			t.Fatalf("row %v: deleted, or its partition value is not the log's", r)
		}
	}
}

// TestFileRowGroupsReused: read with FileRowGroupsReused, the groups of a file come in two
// backing arrays taking turns (the next group is decoded while one is read), each group's rows
// equal to FileRows' rows, the NULLs of a column the file lacks (added to the table after it was
// written) included, and the values stay valid after the next group is read.
func TestFileRowGroupsReused(t *testing.T) {
	t.Parallel()
	var groups [][][]any
	for g, n := range []int{10, 10, 7} { // three row groups of one file, the last smaller
		var rows [][]any
		for i := range n {
			var name any = fmt.Sprintf("n%d", 10*g+i)
			if (10*g+i)%3 == 0 { // NULLs at other positions in each group
				name = nil
			}
			rows = append(rows, []any{int64(10*g + i), name})
		}
		groups = append(groups, rows)
	}
	tbl, add := groupedFile(t, mustDDL(t, "id BIGINT, name STRING"), groups)
	adds := []Add{add}
	m := Metadata{Schema: mustDDL(t, "id BIGINT, name STRING, extra STRING")}
	want, err := tbl.FileRows(m, adds[0])
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	var firsts []*any
	if err := tbl.FileRowGroupsReused(m, adds[0], func(rows [][]any) error {
		firsts = append(firsts, &rows[0][0])
		for _, r := range rows {
			got = append(got, append([]any(nil), r...)) // the values, not the reused slices
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(firsts) != 3 || firsts[1] == firsts[0] || firsts[2] != firsts[0] {
		t.Errorf("the groups' rows do not take turns in two backing arrays: %v", firsts)
	}
	if !reflect.DeepEqual(got, want) || len(got) != 27 || got[26][2] != nil {
		t.Fatalf("reused groups gave %v, FileRows %v", got, want)
	}
}

// TestFileRowGroupsStop: an error of fn on the first of three row groups (the second being
// decoded meanwhile) ends the read with that error, as it is, and fn is not called again.
func TestFileRowGroupsStop(t *testing.T) {
	t.Parallel()
	m := Metadata{Schema: mustDDL(t, "id BIGINT")}
	tbl, add := groupedFile(t, m.Schema, [][][]any{{{int64(0)}, {int64(10)}}, {{int64(1)}, {int64(11)}}, {{int64(2)}, {int64(12)}}})
	adds := []Add{add}
	stop := errors.New("stop")
	for _, reuse := range []bool{false, true} {
		calls := 0
		fn := func(rows [][]any) error {
			calls++
			return stop
		}
		read := tbl.FileRowGroups
		if reuse {
			read = tbl.FileRowGroupsReused
		}
		if err := read(m, adds[0], fn); err != stop || calls != 1 {
			t.Fatalf("reuse %v: err %v after %d calls, want the error of fn after 1", reuse, err, calls)
		}
	}
}

// groupedFile creates a table of schema s and writes one data file of it, each of groups a row
// group of the file; it returns the table and the file's add action (not committed).
func groupedFile(t *testing.T, s schema.Schema, groups [][][]any) (*Table, Add) {
	t.Helper()
	tbl := createTable(t, s)
	dw, err := tbl.NewDataWriter(Metadata{Schema: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range groups {
		if err := dw.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	adds, err := dw.Close()
	if err != nil || len(adds) != 1 {
		t.Fatalf("adds %v, %v", adds, err)
	}
	return tbl, adds[0]
}
