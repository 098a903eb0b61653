package flows

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

func TestRowBytes(t *testing.T) {
	t.Parallel()
	// 24 (slice) + 4×16 (interfaces) + 8 (int64) + 16+3 ("abc") + 0 (NULL) + nested []any{"xy"}:
	// 24 + 16 + 16+2.
	row := []any{int64(1), "abc", nil, []any{"xy"}}
	if got, want := rowBytes(row), 24+4*16+8+16+3+24+16+16+2; got != want {
		t.Errorf("rowBytes = %d, want %d", got, want)
	}
}

// rowGroups returns the number of rows of each row group of the data file of a.
func rowGroups(t *testing.T, table *delta.Table, a delta.Add) []int64 {
	t.Helper()
	rel, err := url.PathUnescape(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(table.Dir, filepath.FromSlash(rel)))
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

// TestIngestChunks: a batch larger than one chunk is written chunk by chunk, as it is read, into
// one data file (far below the target size), a row group per chunk, committed in the batch's one
// commit, rows in input order. It is not parallel: it changes chunkBytes.
func TestIngestChunks(t *testing.T) {
	saved := chunkBytes
	chunkBytes = 200 // rows of 3 values take 24+3×16+3×8 = 96: three rows a chunk
	defer func() { chunkBytes = saved }()
	p, landing := newIngest(t, "permissive", "")
	var lines []string
	for i := range 7 {
		lines = append(lines, `{"id": `+string(rune('1'+i))+`, "amount": 1.5, "at": "2024-01-01T00:00:00Z"}`)
	}
	write(t, filepath.Join(landing, "a.json"), []byte(strings.Join(lines, "\n")))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumOutputRows != 7 {
		t.Errorf("%d rows, want 7", m.NumOutputRows)
	}
	table := delta.New(TableDir(p.Storage, "raw"))
	snap, err := table.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1 || len(snap.Files) != 1 {
		t.Fatalf("version %d with %d files, want version 1 (one commit after setup) with 1 file", snap.Version, len(snap.Files))
	}
	if g := rowGroups(t, table, snap.Files[0]); !slices.Equal(g, []int64{3, 3, 1}) {
		t.Errorf("row groups of %v rows, want [3 3 1]: one per chunk", g)
	}
	var want []string
	for i := range 7 {
		want = append(want, string(rune('1'+i))+` 1.50 "2024-01-01T00:00:00.000000Z"`)
	}
	if got := rawRows(t, p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// noisyName is the name of row i of the sized-file tests: 16 hex digits of a hash of i, which
// Snappy cannot shrink much, or NULL for every 11th row.
func noisyName(i int) any {
	if i%11 == 0 {
		return nil
	}
	h := uint64(i)*0x9E3779B97F4A7C15 ^ 0xD1B54A32D192ED03
	h ^= h >> 29
	return fmt.Sprintf("%016x", h)
}

// noisyLines returns n JSON lines {"id": i, "name": noisyName(i), "region": regions[i%len]}
// (no region when regions is empty), for ids from 0.
func noisyLines(n int, regions []string) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d`, i)
		if name := noisyName(i); name != nil {
			fmt.Fprintf(&b, `, "name": %q`, name)
		}
		if len(regions) > 0 {
			fmt.Fprintf(&b, `, "region": %q`, regions[i%len(regions)])
		}
		b.WriteString("}\n")
	}
	return []byte(b.String())
}

// checkSizedFile reads the data file of a (columns id BIGINT, name STRING) and checks its rows
// and statistics: its ids are want (in order), each row's name is noisyName(id); numRecords,
// min/max of id and name, and the NULL count of name are those of the rows read. It also checks
// that the file spans several chunks (several row groups), unless last.
func checkSizedFile(t *testing.T, table *delta.Table, a delta.Add, want []int64, last bool) {
	t.Helper()
	s, err := schema.ParseDDL("id BIGINT, name STRING")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := table.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows, want %d", a.Path, len(rows), len(want))
	}
	var nulls int64
	var minName, maxName string
	for i, r := range rows {
		if r[0] != want[i] || r[1] != noisyName(int(want[i])) {
			t.Fatalf("%s: row %d is %v, want [%d %v]", a.Path, i, r, want[i], noisyName(int(want[i])))
		}
		if r[1] == nil {
			nulls++
			continue
		}
		n := r[1].(string)
		if minName == "" || n < minName {
			minName = n
		}
		maxName = max(maxName, n)
	}
	st, err := delta.ParseStats(a.Stats, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumRecords != int64(len(rows)) || st.Min["id"] != want[0] || st.Max["id"] != want[len(want)-1] ||
		st.Min["name"] != minName || st.Max["name"] != maxName || st.NullCount["name"] != nulls {
		t.Errorf("%s: stats %s, want numRecords %d, id %d..%d, name %s..%s, %d NULL names", a.Path, a.Stats, len(rows), want[0], want[len(want)-1], minName, maxName, nulls)
	}
	if g := rowGroups(t, table, a); len(g) < 2 && !last {
		t.Errorf("%s: row groups of %v rows, want several (chunks of 2000 rows)", a.Path, g)
	}
}

// checkSizes checks the sizes of the files of one partition, in order, against a target size in
// bytes: each but the last at least the target and at most 1/8 above it (the writer aims 1/32
// above, from the bytes per row written so far), the last at most that; so n files hold between
// (n-1)·target and n·9/8·target bytes.
func checkSizes(t *testing.T, what string, files []delta.Add, target int64) {
	t.Helper()
	var total int64
	for i, a := range files {
		total += a.Size
		if (i < len(files)-1 && a.Size < target) || a.Size > target+target/8 {
			t.Errorf("%s: file %d of %d: %d bytes, want %d to %d", what, i, len(files), a.Size, target, target+target/8)
		}
	}
	lo, hi := (total+target*9/8-1)/(target*9/8), (total+target-1)/target
	if n := int64(len(files)); n < lo || n > hi {
		t.Errorf("%s: %d files for %d bytes, want %d to %d", what, n, total, lo, hi)
	}
}

// TestIngestSizedFiles: a batch of 120,000 rows read in 60 chunks of 2000 into a table whose
// table_properties set delta.targetFileSize to 1mb gives files of the target size, as many as
// the bytes imply (three for these 2.4 MiB, not one per chunk: 60), committed in one commit; every row comes
// back once, in order, and each file's statistics cover all its row groups. It is not parallel:
// it changes chunkRows.
func TestIngestSizedFiles(t *testing.T) {
	setChunking(t, 2000, jsonBlockSize)
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    table_properties:
      delta.targetFileSize: "1mb"
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING"
`)
	const n = 120_000
	write(t, filepath.Join(dir, "landing", "a.json"), noisyLines(n, nil))
	m, table, snap := ingestRaw(t, p)
	if m.NumOutputRows != n || snap.Version != 1 {
		t.Fatalf("%d rows at version %d, want %d rows in one commit (version 1)", m.NumOutputRows, snap.Version, n)
	}
	checkSizes(t, "raw", snap.Files, 1<<20)
	if len(snap.Files) < 2 || len(snap.Files) > 10 {
		t.Errorf("%d files, want a few (the rows take several MiB), not one per chunk (60)", len(snap.Files))
	}
	next, sum := int64(0), int64(0)
	for i, a := range snap.Files {
		st, err := delta.ParseStats(a.Stats, snap.Metadata.Schema)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int64, st.NumRecords)
		for k := range want {
			want[k] = next + int64(k)
		}
		checkSizedFile(t, table, a, want, i == len(snap.Files)-1)
		next += st.NumRecords
		sum += st.NumRecords
	}
	if sum != n {
		t.Errorf("numRecords add up to %d, want %d", sum, n)
	}
}

// TestIngestSizedFilesPartitioned: rows of three regions, interleaved line by line, read in
// chunks of 3000 into a table partitioned by region with a 256 KiB target: each region gets files
// of the target size in its own folder, its rows once each in input order. It is not parallel:
// it changes chunkRows.
func TestIngestSizedFilesPartitioned(t *testing.T) {
	setChunking(t, 3000, jsonBlockSize)
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    partition_by: [region]
    table_properties:
      delta.targetFileSize: "256kb"
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING, region STRING"
`)
	const n = 90_000
	regions := []string{"eu", "us", "ap"}
	write(t, filepath.Join(dir, "landing", "a.json"), noisyLines(n, regions))
	m, table, snap := ingestRaw(t, p)
	if m.NumOutputRows != n || snap.Version != 1 {
		t.Fatalf("%d rows at version %d, want %d rows in one commit (version 1)", m.NumOutputRows, snap.Version, n)
	}
	byRegion := map[string][]delta.Add{}
	for _, a := range snap.Files {
		r := a.PartitionValues["region"]
		byRegion[r] = append(byRegion[r], a)
		if rel, _ := url.PathUnescape(a.Path); !strings.HasPrefix(rel, "region="+r+"/") {
			t.Errorf("%s is not in the folder region=%s", rel, r)
		}
	}
	var sum int64
	for k, r := range regions {
		files := byRegion[r]
		checkSizes(t, r, files, 256<<10)
		if len(files) < 2 {
			t.Errorf("region %s: %d files, want several (its 30,000 rows take more than 256 KiB)", r, len(files))
		}
		next := int64(k) // the ids of region k: k, k+3, k+6, ...
		for i, a := range files {
			st, err := delta.ParseStats(a.Stats, snap.Metadata.Schema)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int64, st.NumRecords)
			for j := range want {
				want[j] = next + 3*int64(j)
			}
			checkSizedFile(t, table, a, want, i == len(files)-1)
			next += 3 * st.NumRecords
			sum += st.NumRecords
		}
		if next != n+int64(k) {
			t.Errorf("region %s: rows up to id %d, want up to %d", r, next-3, n-3+k)
		}
	}
	if sum != n || len(byRegion) != 3 {
		t.Errorf("%d rows in %d partitions, want %d in 3", sum, len(byRegion), n)
	}
}

// TestIngestDefaultTargetOneFile: 600,000 rows with the default chunk bounds (122,880 rows) and
// target size (128 MiB) are five chunks; they used to be a data file each and are now one file
// of five row groups (four of 122,880 rows and one of 108,480), whose statistics cover all of
// them.
// It is not parallel: its input is large.
func TestIngestDefaultTargetOneFile(t *testing.T) {
	p, landing := newIngest(t, "permissive", "")
	const n = 600_000
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"id": %d, "amount": %d.25, "at": "2024-01-01T00:00:00Z"}`+"\n", i, i%1000)
	}
	write(t, filepath.Join(landing, "a.json"), []byte(b.String()))
	m, table, snap := ingestRaw(t, p)
	if m.NumOutputRows != n || len(snap.Files) != 1 {
		t.Fatalf("%d rows in %d files, want %d in 1", m.NumOutputRows, len(snap.Files), n)
	}
	if g := rowGroups(t, table, snap.Files[0]); !slices.Equal(g, []int64{122_880, 122_880, 122_880, 122_880, 108_480}) {
		t.Errorf("row groups of %v rows, want [122880 122880 122880 122880 108480]", g)
	}
	st, err := delta.ParseStats(snap.Files[0].Stats, snap.Metadata.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumRecords != n || st.Min["id"] != int64(1) || st.Max["id"] != int64(n) ||
		st.Min["amount"] != schema.Decimal(25) || st.Max["amount"] != schema.Decimal(99925) {
		t.Errorf("stats %s, want %d records, id 1..%d, amount 0.25..999.25", snap.Files[0].Stats, n, n)
	}
}

// TestIngestQuarantineChunks: a batch of four chunks of two lines, with quarantined rows in two
// of them, writes one data file to the table (a row group per chunk with kept rows: 1, 2 and 1)
// and one to the quarantine table (a row group per chunk with quarantined rows: 1 and 2), each
// committed once. It is not parallel: it changes chunkRows.
func TestIngestQuarantineChunks(t *testing.T) {
	setChunking(t, 2, jsonBlockSize)
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, amount DECIMAL(10,2)"}
    expectations:
      - {name: has_id, expect: "id != nil", on_violation: quarantine}
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "amount": 1}
{"amount": 2}
{"id": 3, "amount": 3}
{"id": 4, "amount": 4}
{"amount": 5}
{"amount": 6}
{"id": 7, "amount": 7}
`))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumOutputRows != 4 || m.Quality.QuarantinedRecords != 3 {
		t.Fatalf("%d rows out, %d quarantined; want 4 and 3", m.NumOutputRows, m.Quality.QuarantinedRecords)
	}
	for _, c := range []struct {
		name   string
		groups []int64
		rows   string
	}{
		{"raw", []int64{1, 2, 1}, "1 1.00,3 3.00,4 4.00,7 7.00"},
		{"raw_quarantine", []int64{1, 2}, `null 2.00 "[\"has_id\"]",null 5.00 "[\"has_id\"]",null 6.00 "[\"has_id\"]"`},
	} {
		table := delta.New(TableDir(p.Storage, c.name))
		snap, err := table.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Version != 1 || len(snap.Files) != 1 {
			t.Errorf("%s: version %d with %d files, want one commit after setup (version 1) with 1 file", c.name, snap.Version, len(snap.Files))
			continue
		}
		if g := rowGroups(t, table, snap.Files[0]); !slices.Equal(g, c.groups) {
			t.Errorf("%s: row groups of %v rows, want %v", c.name, g, c.groups)
		}
		if got := strings.Join(namedRows(t, p.Storage, c.name), ","); got != c.rows {
			t.Errorf("%s: rows %s, want %s", c.name, got, c.rows)
		}
	}
}

// TestIngestErrorRemovesFiles: a batch that fails in its fourth chunk (a bad value, mode
// failfast), after three chunks were written to the table's open data file and quarantined rows
// to the quarantine table's, commits nothing and leaves no data file, finished or not, in
// either table. It is not parallel: it changes chunkRows.
func TestIngestErrorRemovesFiles(t *testing.T) {
	setChunking(t, 2, jsonBlockSize)
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, mode: failfast, schema: "id BIGINT"}
    expectations:
      - {name: positive, expect: "id > 0", on_violation: quarantine}
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte("{\"id\": 1}\n{\"id\": -2}\n{\"id\": 3}\n{\"id\": 4}\n{\"id\": -5}\n{\"id\": 6}\n{\"id\": \"x\"}\n"))
	_, _, err := ingest(t, p)
	if err == nil || !strings.Contains(err.Error(), "a.json:7: column id") {
		t.Fatalf("error %v, want one naming a.json:7, column id", err)
	}
	for _, name := range []string{"raw", "raw_quarantine"} {
		tdir := TableDir(p.Storage, name)
		var left []string
		filepath.WalkDir(tdir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(path, delta.LogDir) {
				left = append(left, path)
			}
			return nil
		})
		if len(left) != 0 {
			t.Errorf("%s: files left: %v", name, left)
		}
		snap, err := delta.New(tdir).Snapshot(-1)
		if err != nil || snap.Version != 0 {
			t.Errorf("%s: version %v (%v), want 0: nothing committed", name, snap.Version, err)
		}
	}
}

// ingestRaw runs one ingest batch of p's dataset raw and returns its metrics, the raw table and
// its snapshot after the batch.
func ingestRaw(t *testing.T, p *spec.Pipeline) (Metrics, *delta.Table, *delta.Snapshot) {
	t.Helper()
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	table := delta.New(TableDir(p.Storage, "raw"))
	snap, err := table.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	return m, table, snap
}

// TestIngestReusesBlockMemory: an ingest reuses the memory of the blocks it read once their rows
// are written (blockPool), so nothing it keeps across chunks may point into it. 20,000 lines
// read in blocks of 2 KiB and chunks of 777 rows (neither aligned with the other) into a table
// partitioned by region, a new region every 3,000 lines, with a drop expectation (every id ending
// in 3) and a quarantine expectation (every id ending in 7): every kept row comes back with its
// own values; each region's file has the bounds of its own names, which its first two rows set
// ("a-…" and "z-…", read long before the file is finished) and its own partition value; the
// quarantined rows come back in the quarantine table. It is not parallel: it changes chunkRows
// and jsonBlockSize.
func TestIngestReusesBlockMemory(t *testing.T) {
	setChunking(t, 777, 2048)
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    partition_by: [region]
    expectations:
      - {name: no_three, expect: "id % 10 != 3", on_violation: drop}
      - {name: no_seven, expect: "id % 10 != 7", on_violation: quarantine}
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING, region STRING, amount DECIMAL(10,2)"
`)
	const n = 20_000
	name := func(i int) string {
		switch i % 3000 {
		case 0:
			return fmt.Sprintf("a-%05d", i)
		case 1:
			return fmt.Sprintf("z-%05d", i)
		}
		return fmt.Sprintf("m-%05d-%x", i, i*7919%65536)
	}
	region := func(i int) string { return fmt.Sprintf("r%d", i/3000) }
	var text strings.Builder
	type bounds struct {
		min, max string
		rows     int64
	}
	want := map[string]*bounds{}
	var wantRows, wantQuarantined []string
	for i := range n {
		nm := name(i)
		if i%5 == 0 { // an escaped character: the parser builds the string instead of slicing the line
			fmt.Fprintf(&text, "{\"id\": %d, \"name\": \"%s\\u00e9\", \"region\": %q, \"amount\": %d.%02d}\n", i, nm, region(i), i, i%100)
			nm += "é"
		} else {
			fmt.Fprintf(&text, "{\"id\": %d, \"name\": %q, \"region\": %q, \"amount\": %d.%02d}\n", i, nm, region(i), i, i%100)
		}
		row := fmt.Sprintf("%d %q %q %d.%02d", i, nm, region(i), i, i%100)
		switch i % 10 {
		case 3:
			continue
		case 7:
			wantQuarantined = append(wantQuarantined, row)
			continue
		}
		wantRows = append(wantRows, row)
		b := want[region(i)]
		if b == nil {
			b = &bounds{min: nm, max: nm}
			want[region(i)] = b
		}
		b.min, b.max, b.rows = min(b.min, nm), max(b.max, nm), b.rows+1
	}
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(text.String()))
	_, _, snap := ingestRaw(t, p)
	sorted := func(rows []string) []string { slices.Sort(rows); return rows }
	if got := sorted(namedRows(t, p.Storage, "raw")); !slices.Equal(got, sorted(wantRows)) {
		t.Errorf("%d rows, want %d; first differences:\n%s", len(got), len(wantRows), firstDiffs(got, wantRows))
	}
	if got, wantQuarantined := sorted(namedRows(t, p.Storage, "raw_quarantine")), sorted(wantQuarantined); len(got) != len(wantQuarantined) {
		t.Errorf("%d quarantined rows, want %d", len(got), len(wantQuarantined))
	} else {
		for i, g := range got {
			if !strings.HasPrefix(g, wantQuarantined[i]) {
				t.Fatalf("quarantined row %d is %s, want %s and the failed expectation", i, g, wantQuarantined[i])
			}
		}
	}
	if len(snap.Files) != len(want) {
		t.Fatalf("%d files, want one per region (%d)", len(snap.Files), len(want))
	}
	for _, a := range snap.Files {
		r := a.PartitionValues["region"]
		b := want[r]
		if b == nil {
			t.Fatalf("file %s has partition value %q, not a region of the input", a.Path, r)
		}
		st, err := delta.ParseStats(a.Stats, snap.Metadata.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if st.NumRecords != b.rows || st.Min["name"] != b.min || st.Max["name"] != b.max {
			t.Errorf("region %s: %d rows, names from %v to %v; want %d rows, %q to %q", r, st.NumRecords, st.Min["name"], st.Max["name"], b.rows, b.min, b.max)
		}
	}
}

// setChunking sets chunkRows and jsonBlockSize for the test, and back when it ends. A test that
// calls it must not be parallel.
func setChunking(t *testing.T, rows, blockSize int) {
	savedRows, savedBlock := chunkRows, jsonBlockSize
	chunkRows, jsonBlockSize = rows, blockSize
	t.Cleanup(func() { chunkRows, jsonBlockSize = savedRows, savedBlock })
}

// firstDiffs lists up to five lines that are in one of got and want but not the other.
func firstDiffs(got, want []string) string {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var out []string
	for _, x := range got {
		if !w[x] && len(out) < 5 {
			out = append(out, "only got:  "+x)
		}
	}
	for _, x := range want {
		if !g[x] && len(out) < 10 {
			out = append(out, "only want: "+x)
		}
	}
	return strings.Join(out, "\n")
}
