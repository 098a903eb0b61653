package delta

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// createSizedTable creates a table whose delta.targetFileSize is target (a table property value
// such as "64kb"), in a new temporary folder.
func createSizedTable(t *testing.T, s schema.Schema, target string, partitionColumns ...string) *Table {
	t.Helper()
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s, PartitionColumns: partitionColumns, Configuration: map[string]string{ConfigTargetFileSize: target}})
	if _, err := tx.Commit("CREATE TABLE", map[string]any{"partitionBy": partitionColumns}); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// noisyRow is row i of the tests' tables: id i, a name of 16 hex digits of a hash of i (which
// Snappy cannot shrink much), NULL for every 11th row, and a score.
func noisyRow(i int) []any {
	h := uint64(i)*0x9E3779B97F4A7C15 ^ 0xD1B54A32D192ED03
	h ^= h >> 29
	var name any = fmt.Sprintf("%016x", h)
	if i%11 == 0 {
		name = nil
	}
	return []any{int64(i), name, float64(i%1000) / 8}
}

// rowGroupsOf returns the number of rows of each row group of a data file of tbl.
func rowGroupsOf(t *testing.T, tbl *Table, a Add) []int64 {
	t.Helper()
	rel, err := url.PathUnescape(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(tbl.Dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, rg := range pf.RowGroups() {
		out = append(out, rg.NumRows())
	}
	return out
}

// checkFileStats checks a file's statistics against the rows read back from it: numRecords,
// min and max of id and name, and the NULL count of name (columns of noisyRow, after the
// partition columns are taken out: id is column 0 and name column 1 of the file).
func checkFileStats(t *testing.T, s schema.Schema, a Add, rows [][]any) {
	t.Helper()
	st, err := ParseStats(a.Stats, s)
	if err != nil {
		t.Fatal(err)
	}
	var minID, maxID int64
	var minName, maxName string
	var nulls int64
	for i, r := range rows {
		id := r[0].(int64)
		if i == 0 || id < minID {
			minID = id
		}
		if i == 0 || id > maxID {
			maxID = id
		}
		if r[1] == nil {
			nulls++
			continue
		}
		n := r[1].(string)
		if minName == "" || n < minName {
			minName = n
		}
		if n > maxName {
			maxName = n
		}
	}
	if st.NumRecords != int64(len(rows)) || st.Min["id"] != minID || st.Max["id"] != maxID ||
		st.Min["name"] != minName || st.Max["name"] != maxName || st.NullCount["name"] != nulls {
		t.Errorf("%s: stats %s, want numRecords %d, id %d..%d, name %s..%s, %d NULL names", a.Path, a.Stats, len(rows), minID, maxID, minName, maxName, nulls)
	}
}

// TestDataWriterSizesFiles writes 20,000 rows in 40 calls of 500 to a table whose
// delta.targetFileSize is 64 KiB. Every file but the last is at least the target and at most
// 1/8 above it (the writer aims 1/32 above it from the bytes per row written so far), so the
// number of files is what the size of the data implies rather than one per call; the rows come
// back once each, in order; each file spans several calls, so several row groups, and its
// statistics (numRecords, min/max, nullCount) cover all of them.
func TestDataWriterSizesFiles(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING, score DOUBLE")
	tbl := createSizedTable(t, s, "64kb")
	meta := mustSnapshot(t, tbl, -1).Metadata
	const target = 64 << 10
	if got := meta.TargetFileSize(); got != target {
		t.Fatalf("target %d, want %d", got, target)
	}
	w, err := tbl.NewDataWriter(meta)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	for c := 0; c < 40; c++ {
		rows := make([][]any, 500)
		for i := range rows {
			rows[i] = noisyRow(c*500 + i)
		}
		want = append(want, rows...)
		if err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	var got [][]any
	var sum int64
	multi := 0
	for i, a := range adds {
		total += a.Size
		if i < len(adds)-1 && (a.Size < target || a.Size > target+target/8) {
			t.Errorf("file %d of %d: %d bytes, want %d to %d", i, len(adds), a.Size, target, target+target/8)
		}
		if i == len(adds)-1 && a.Size > target+target/8 {
			t.Errorf("last file: %d bytes, want at most %d", a.Size, target+target/8)
		}
		if len(a.PartitionValues) != 0 || !a.DataChange {
			t.Errorf("file %d: partition values %v, dataChange %v", i, a.PartitionValues, a.DataChange)
		}
		rows, err := tbl.ReadFile(a.Path, s)
		if err != nil {
			t.Fatal(err)
		}
		checkFileStats(t, s, a, rows)
		st, _ := ParseStats(a.Stats, s)
		sum += st.NumRecords
		got = append(got, rows...)
		if len(rowGroupsOf(t, tbl, a)) > 1 {
			multi++
		}
	}
	// (n-1) files of at least the target and none above 9/8 of it: n lies between these.
	lo, hi := int((total+target*9/8-1)/(target*9/8)), int((total+target-1)/target)
	if len(adds) < lo || len(adds) > hi || len(adds) >= 40 {
		t.Errorf("%d files for %d bytes, want %d to %d (not one per call: 40)", len(adds), total, lo, hi)
	}
	if sum != 20_000 {
		t.Errorf("numRecords add up to %d, want 20000", sum)
	}
	if multi < len(adds)-1 {
		t.Errorf("%d of %d files have several row groups, want all but perhaps the last", multi, len(adds))
	}
	assertRows(t, got, want)
	// The files, committed, are the table's rows.
	tx := tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.Add(adds...)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, rows, want)
}

// TestDataWriterPartitioned writes rows of three partitions interleaved across 20 calls of 1500
// rows (a fourth partition, and a NULL one, join after 15) to a table partitioned by region
// with a 64 KiB target: each partition gets its own files, every one but its last at least the target;
// each partition's rows come back once, in order, from its folder; the adds come in the order
// the files were opened.
func TestDataWriterPartitioned(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING, score DOUBLE, region STRING")
	fileSchema := mustDDL(t, "id BIGINT, name STRING, score DOUBLE")
	tbl := createSizedTable(t, s, "64kb", "region")
	const target = 64 << 10
	w, err := tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]any{} // by serialized region: the file columns
	regions := []any{"eu", "us", "ap"}
	n := 0
	for c := 0; c < 20; c++ {
		if c == 15 {
			regions = append(regions, "sa", nil)
		}
		var rows [][]any
		for i := 0; i < 1500; i++ {
			r := noisyRow(n)
			n++
			region := regions[(i+c)%len(regions)]
			rows = append(rows, append(r, region))
			key, _ := region.(string)
			want[key] = append(want[key], r)
		}
		if err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][][]any{}
	files := map[string][]Add{}
	for _, a := range adds {
		region := a.PartitionValues["region"]
		rel, _ := url.PathUnescape(a.Path)
		dir := "region=" + region
		if region == "" {
			dir = "region=" + HiveDefaultPartition
		}
		if filepath.ToSlash(filepath.Dir(rel)) != dir {
			t.Errorf("%s: in %s, want %s", rel, filepath.Dir(rel), dir)
		}
		rows, err := tbl.ReadFile(a.Path, fileSchema)
		if err != nil {
			t.Fatal(err)
		}
		checkFileStats(t, fileSchema, a, rows)
		got[region] = append(got[region], rows...)
		files[region] = append(files[region], a)
	}
	if len(files) != 5 {
		t.Errorf("files in %d partitions, want 5", len(files))
	}
	for region, rows := range want {
		assertRows(t, got[region], rows)
		fs := files[region]
		for i, a := range fs[:len(fs)-1] {
			if a.Size < target || a.Size > target+target/8 {
				t.Errorf("region %q, file %d of %d: %d bytes, want %d to %d", region, i, len(fs), a.Size, target, target+target/8)
			}
		}
		switch region {
		case "eu", "us", "ap": // 15×500 + 5×300 rows, about 300 KiB
			if len(fs) < 4 {
				t.Errorf("region %q: %d files, want at least 4 (its rows take several times the 64 KiB target)", region, len(fs))
			}
		default: // 5×300 rows, about 50 KiB: one file, below the target
			if len(fs) != 1 || fs[0].Size >= target {
				t.Errorf("region %q: %d files (the first of %d bytes), want one below the target", region, len(fs), fs[0].Size)
			}
		}
	}
	// Opening order: eu, us and ap first (the order of the first call), sa and NULL after them.
	first := map[string]int{}
	for i, a := range adds {
		if _, ok := first[a.PartitionValues["region"]]; !ok {
			first[a.PartitionValues["region"]] = i
		}
	}
	if !(first["eu"] == 0 && first["us"] == 1 && first["ap"] == 2 && first["sa"] > 2 && first[""] > first["sa"]) {
		t.Errorf("first file of each partition at %v, want eu 0, us 1, ap 2, then sa, then NULL", first)
	}
}

// TestDataWriterOpenFileBound: with at most two files open, rows of three partitions that take
// turns call after call finish the least recently written file before opening another; every
// row is still written once, to its partition.
func TestDataWriterOpenFileBound(t *testing.T) {
	saved := maxOpenFiles
	maxOpenFiles = 2
	defer func() { maxOpenFiles = saved }()
	s := mustDDL(t, "id BIGINT, name STRING, score DOUBLE, region STRING")
	fileSchema := mustDDL(t, "id BIGINT, name STRING, score DOUBLE")
	tbl := createTable(t, s, "region")
	w, err := tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]any{}
	for c := 0; c < 6; c++ { // eu, us, ap, eu, us, ap: each call needs a file the one before closed
		region := []string{"eu", "us", "ap"}[c%3]
		var rows [][]any
		for i := 0; i < 10; i++ {
			r := noisyRow(c*10 + i)
			rows = append(rows, append(r, region))
			want[region] = append(want[region], r)
		}
		if err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if len(w.open) > 2 {
			t.Fatalf("call %d: %d files open, want at most 2", c, len(w.open))
		}
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Calls 0 and 1 open eu and us; call 2 finishes eu (least recent) for ap, call 3 us for eu,
	// call 4 ap for us, call 5 eu for ap: six files of ten rows.
	var regions []string
	got := map[string][][]any{}
	for _, a := range adds {
		region := a.PartitionValues["region"]
		regions = append(regions, region)
		rows, err := tbl.ReadFile(a.Path, fileSchema)
		if err != nil {
			t.Fatal(err)
		}
		got[region] = append(got[region], rows...)
	}
	if strings.Join(regions, " ") != "eu us ap eu us ap" {
		t.Errorf("files of %v, want eu us ap eu us ap", regions)
	}
	for region, rows := range want {
		assertRows(t, got[region], rows)
	}
}

// TestDataWriterAbort: Abort removes the writer's finished and open files; a value that does not
// convert fails Write with the file and the row, Close returns that error and leaves nothing
// behind; a row of the wrong length names the row of the call.
func TestDataWriterAbort(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING, score DOUBLE")
	dataFiles := func(tbl *Table) []string {
		var out []string
		filepath.WalkDir(tbl.Dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(p, LogDir) {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	tbl := createSizedTable(t, s, "4kb")
	w, err := tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 5; c++ {
		var rows [][]any
		for i := 0; i < 100; i++ {
			rows = append(rows, noisyRow(c*100+i))
		}
		if err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.files) < 3 || len(w.open) != 1 {
		t.Fatalf("%d files, %d open; want several finished and one open", len(w.files), len(w.open))
	}
	if len(dataFiles(tbl)) != len(w.files) {
		t.Fatalf("%d files on disk, want %d", len(dataFiles(tbl)), len(w.files))
	}
	w.Abort()
	if left := dataFiles(tbl); len(left) != 0 {
		t.Errorf("after Abort: %v", left)
	}
	if _, err := w.Close(); err == nil {
		t.Error("Close after Abort: no error")
	}

	w, err = tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([][]any{noisyRow(0), noisyRow(1)}); err != nil {
		t.Fatal(err)
	}
	err = w.Write([][]any{noisyRow(2), {"three", "x", 1.0}})
	if err == nil || !strings.Contains(err.Error(), `row 3: column "id": a string is not a value of BIGINT`) {
		t.Errorf("bad value: %v", err)
	}
	if _, cerr := w.Close(); cerr != err {
		t.Errorf("Close after a failed Write: %v, want %v", cerr, err)
	}
	if left := dataFiles(tbl); len(left) != 0 {
		t.Errorf("after a failed Write and Close: %v", left)
	}

	w, err = tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([][]any{noisyRow(0), {int64(1)}}); err == nil || !strings.Contains(err.Error(), "row 1 has 1 values, the schema 3 columns") {
		t.Errorf("short row: %v", err)
	}
	w.Abort()
	if adds, err := (func() ([]Add, error) {
		w, _ := tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
		return w.Close()
	})(); err != nil || len(adds) != 0 {
		t.Errorf("a writer given no rows: %v, %v; want no files", adds, err)
	}
}

// TestWriteDataDefaultTarget: WriteData of 300,000 rows (about 7 MiB of data files, far below
// the default 128 MiB target) gives one file, in row groups of 131,072 rows; with a target of
// 1 MiB the same rows give files of at least 1 MiB each but the last.
func TestWriteDataDefaultTarget(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING, score DOUBLE")
	rows := make([][]any, 300_000)
	for i := range rows {
		rows[i] = noisyRow(i)
	}
	tbl := createTable(t, s)
	adds, err := tbl.WriteData(mustSnapshot(t, tbl, -1).Metadata, rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) != 1 {
		t.Fatalf("%d files, want 1", len(adds))
	}
	if g := rowGroupsOf(t, tbl, adds[0]); !slices.Equal(g, []int64{131_072, 131_072, 37_856}) {
		t.Errorf("row groups %v, want [131072 131072 37856] (row groups of 131,072 rows)", g)
	}
	small := createSizedTable(t, s, "1mb")
	adds, err = small.WriteData(mustSnapshot(t, small, -1).Metadata, rows)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, a := range adds {
		total += a.Size
		if i < len(adds)-1 && (a.Size < 1<<20 || a.Size > 1<<20+1<<17) {
			t.Errorf("file %d of %d: %d bytes, want 1 MiB to 1 MiB + 1/8", i, len(adds), a.Size)
		}
	}
	if lo := int((total + 1<<20 + 1<<17 - 1) / (1<<20 + 1<<17)); len(adds) < lo || len(adds) > int((total+1<<20-1)>>20) {
		t.Errorf("%d files for %d bytes", len(adds), total)
	}
	got, err := small.ReadFile(adds[0].Path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, rows[:len(got)])
}

// TestDataWriterWriteColumns writes the same 20,000 rows of every primitive type, in the same
// calls (of 4096, 1 and 999 rows, in turn), once as rows (Write) and once by column
// (WriteColumns, every other call's columns given in place) to tables whose
// delta.targetFileSize is 64 KiB: both make the same files (several), each byte for byte the
// other's, with the same size and statistics, the rows coming back in order. A partitioned table
// is refused by column before anything is written; a value out of range is an error naming the
// row of the file and the column, and the writer then takes nothing.
func TestDataWriterWriteColumns(t *testing.T) {
	t.Parallel()
	s, rows := columnRows(t, 20_000)
	byRows, byCols := createSizedTable(t, s, "64kb"), createSizedTable(t, s, "64kb")
	wr, err := byRows.NewDataWriter(mustSnapshot(t, byRows, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := byCols.NewDataWriter(mustSnapshot(t, byCols, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{4096, 1, 999} // the first larger than the target: its first piece is sized by the sample
	for at, c := 0, 0; at < len(rows); c++ {
		n := min(sizes[c%len(sizes)], len(rows)-at)
		if err := wr.Write(rows[at : at+n]); err != nil {
			t.Fatal(err)
		}
		// Every other call's columns given in place (a ColumnSlicer).
		var part ColumnPart = rowsPart{s: s, rows: rows[at : at+n]}
		if c%2 == 0 {
			part = newSlicedPart(s, rows[at:at+n])
		}
		if err := wc.WriteColumns(part); err != nil {
			t.Fatal(err)
		}
		at += n
	}
	want, err := wr.Close()
	if err != nil {
		t.Fatal(err)
	}
	got, err := wc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 3 {
		t.Fatalf("%d files by column, %d by rows; want the same, and several (64 KiB target)", len(got), len(want))
	}
	var back [][]any
	for i := range got {
		g, err := os.ReadFile(filepath.Join(byCols.Dir, got[i].Path))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(byRows.Dir, want[i].Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) || got[i].Size != want[i].Size || got[i].Stats != want[i].Stats {
			t.Errorf("file %d: %d bytes, stats %s; by rows %d bytes, stats %s (same bytes: %v)", i, got[i].Size, got[i].Stats, want[i].Size, want[i].Stats, bytes.Equal(g, w))
		}
		part, err := byCols.ReadFile(got[i].Path, s)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, part...)
	}
	assertRows(t, back, rows)

	// Partitioned: refused, nothing written.
	ps := mustDDL(t, "id BIGINT, region STRING")
	parted := createSizedTable(t, ps, "64kb", "region")
	wp, err := parted.NewDataWriter(mustSnapshot(t, parted, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := wp.WriteColumns(rowsPart{s: ps, rows: [][]any{{int64(1), "eu"}}}); err == nil || !strings.Contains(err.Error(), "without partition columns") {
		t.Fatalf("err = %v, want the partitioned table refused", err)
	}
	if _, err := wp.Close(); err == nil {
		t.Fatal("Close after a refused WriteColumns succeeded")
	}
	if files, _ := filepath.Glob(filepath.Join(parted.Dir, "*.parquet")); len(files) != 0 {
		t.Fatalf("files written: %v", files)
	}

	// An INT beyond 32 bits in row 3 of the second call: row 13 of the file, column "i".
	bad := createSizedTable(t, s, "64kb")
	wb, err := bad.NewDataWriter(mustSnapshot(t, bad, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.WriteColumns(rowsPart{s: s, rows: rows[:10]}); err != nil {
		t.Fatal(err)
	}
	wide := &widePart{rowsPart: rowsPart{s: s, rows: rows[10:20]}, row: 3, col: 1, word: 1 << 40}
	err = wb.WriteColumns(wide)
	if err == nil || !strings.Contains(err.Error(), `row 13: column "i": 1099511627776 does not fit INT`) {
		t.Fatalf("err = %v, want row 13 and column i named", err)
	}
	if err2 := wb.WriteColumns(rowsPart{s: s, rows: rows[20:30]}); err2 != err {
		t.Fatalf("a write after the error: %v, want the error again", err2)
	}
	wb.Abort()
	if files, _ := filepath.Glob(filepath.Join(bad.Dir, "*.parquet")); len(files) != 0 {
		t.Fatalf("files left after Abort: %v", files)
	}
}

// widePart is a rowsPart whose column col of row row has the word word (a value no row holds).
type widePart struct {
	rowsPart
	row, col int
	word     int64
}

func (p *widePart) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	p.rowsPart.Column(j, from, to, nulls, words, strs)
	if j == p.col && p.row >= from && p.row < to {
		nulls[p.row-from], words[p.row-from] = false, p.word
	}
}
