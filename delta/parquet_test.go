package delta

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

func TestWriteReadRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ddl  string
		vals []any
	}{
		{"bigint", "v BIGINT", []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), nil, int64(300)}},
		{"int", "v INT", []any{int32(0), int32(math.MinInt32), int32(math.MaxInt32), nil, int32(-7)}},
		{"string", "v STRING", []any{"", "a", "héllo wörld ✓", nil, strings.Repeat("x", 1000), "emoji 😀"}},
		{"double", "v DOUBLE", []any{0.0, math.Copysign(0, -1), 1.5, -2.25e300, math.Inf(1), math.Inf(-1), math.NaN(), nil, math.SmallestNonzeroFloat64}},
		{"boolean", "v BOOLEAN", []any{true, false, nil, true}},
		{"decimal int32", "v DECIMAL(5,3)", []any{schema.Decimal(0), schema.Decimal(-1), schema.Decimal(99999), schema.Decimal(-99999), nil}},
		{"decimal int64", "v DECIMAL(10,2)", []any{schema.Decimal(-1250), schema.Decimal(-1), schema.Decimal(9999999999), nil, schema.Decimal(12)}},
		{"decimal 18", "v DECIMAL(18,4)", []any{schema.Decimal(999999999999999999), schema.Decimal(-999999999999999999), nil}},
		{"decimal scale 0", "v DECIMAL(3,0)", []any{schema.Decimal(-999), schema.Decimal(5), nil}},
		{"date", "v DATE", []any{date("2024-01-31"), date("1969-12-31"), date("1900-01-01"), date("9999-12-31"), nil}},
		{"timestamp", "v TIMESTAMP", []any{ts("2024-01-31T10:00:00.123456Z"), schema.Timestamp(-1), ts("1900-01-01T00:00:00Z"), schema.Timestamp(0), nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustDDL(t, tc.ddl+", k BIGINT")
			tbl := New(t.TempDir())
			var rows [][]any
			for i, v := range tc.vals {
				rows = append(rows, []any{v, int64(i)})
			}
			a, err := tbl.WriteFile(s, rows)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tbl.ReadFile(a.Path, s)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, rows)
		})
	}
}

func TestWriteFileAction(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	s := mustDDL(t, "id BIGINT, name STRING")
	a, err := tbl.WriteFile(s, [][]any{{int64(1), "a"}, {int64(2), nil}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Path, "part-00000-") || !strings.HasSuffix(a.Path, ".c000.snappy.parquet") {
		t.Errorf("path %q, want part-00000-<uuid>.c000.snappy.parquet", a.Path)
	}
	st, err := os.Stat(filepath.Join(tbl.Dir, a.Path))
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != st.Size() || !a.DataChange || a.ModificationTime <= 0 || a.PartitionValues == nil {
		t.Errorf("add %+v does not describe the file (size %d)", a, st.Size())
	}
	if n, ok := a.NumRecords(); !ok || n != 2 {
		t.Errorf("NumRecords() = %d, %v; want 2, true", n, ok)
	}
	entries, _ := os.ReadDir(tbl.Dir)
	if len(entries) != 1 {
		t.Errorf("the table folder holds %d entries, want only the data file (no temp file)", len(entries))
	}
}

// TestWriteFileParquetSchema checks the Parquet types against Delta PROTOCOL.md, "Delta Data Type
// to Parquet Type Mappings", and the column order.
func TestWriteFileParquetSchema(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	s := mustDDL(t, "z BIGINT, i INT, s STRING, d DOUBLE, b BOOLEAN, d9 DECIMAL(9,2), d10 DECIMAL(10,2), dt DATE, ts TIMESTAMP")
	a, err := tbl.WriteFile(s, [][]any{make([]any, 9)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(tbl.Dir, a.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		kind parquet.Kind
		lt   string
	}{
		{"z", parquet.Int64, ""}, {"i", parquet.Int32, ""}, {"s", parquet.ByteArray, "STRING"},
		{"d", parquet.Double, ""}, {"b", parquet.Boolean, ""},
		{"d9", parquet.Int32, "DECIMAL(9,2)"}, {"d10", parquet.Int64, "DECIMAL(10,2)"},
		{"dt", parquet.Int32, "DATE"}, {"ts", parquet.Int64, "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)"},
	}
	cols := pf.Root().Columns()
	if len(cols) != len(want) {
		t.Fatalf("%d columns, want %d", len(cols), len(want))
	}
	for i, w := range want {
		c := cols[i]
		if c.Name() != w.name || c.Type().Kind() != w.kind || !c.Optional() {
			t.Errorf("column %d: %s %s optional=%v, want %s %s optional", i, c.Name(), c.Type().Kind(), c.Optional(), w.name, w.kind)
		}
		if w.lt != "" {
			lt := c.Type().LogicalType()
			if lt == nil || lt.String() != w.lt {
				t.Errorf("column %s: logical type %v, want %s", w.name, lt, w.lt)
			}
		}
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData.Codec != format.Snappy {
				t.Errorf("column %v: codec %v, want SNAPPY", cc.MetaData.PathInSchema, cc.MetaData.Codec)
			}
		}
	}
}

func TestWriteFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ddl  string
		rows [][]any
		want string
	}{
		{"wrong go type", "a BIGINT", [][]any{{int64(1)}, {int32(2)}}, `row 1: column "a": a int32 is not a value of BIGINT`},
		{"int for date", "a DATE", [][]any{{int32(2)}}, `row 0: column "a": a int32 is not a value of DATE`},
		{"row length", "a BIGINT, b STRING", [][]any{{int64(1)}}, "row 0 has 1 values, the schema 2 columns"},
		{"decimal overflow", "a DECIMAL(4,2)", [][]any{{schema.Decimal(10000)}}, "100.00 does not fit DECIMAL(4,2)"},
		// Of several bad values, the first in column order, though a later batch holds it.
		{"first in column order", "a BIGINT, b BIGINT", badAt(3*writeBatch, map[[2]int]any{{10, 1}: int32(1), {2*writeBatch + 5, 0}: "x"}),
			fmt.Sprintf(`row %d: column "a": a string is not a value of BIGINT`, 2*writeBatch+5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tbl := New(t.TempDir())
			_, err := tbl.WriteFile(mustDDL(t, tc.ddl), tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "delta: ") {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			entries, _ := os.ReadDir(tbl.Dir)
			if len(entries) != 0 {
				t.Errorf("a failed write left %d files behind", len(entries))
			}
		})
	}
}

// badAt returns n rows of two BIGINT values, with the values at bad's (row, column) replaced.
func badAt(n int, bad map[[2]int]any) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), int64(-i)}
	}
	for at, v := range bad {
		rows[at[0]][at[1]] = v
	}
	return rows
}

func TestReadFileColumns(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(mustDDL(t, "a BIGINT, b STRING"), [][]any{{int64(1), "x"}, {nil, "y"}})
	if err != nil {
		t.Fatal(err)
	}
	// By name, in the order of the schema asked for; a missing column reads NULL.
	got, err := tbl.ReadFile(a.Path, mustDDL(t, "b STRING, missing DATE, a BIGINT"))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{{"x", nil, int64(1)}, {"y", nil, nil}})

	_, err = tbl.ReadFile(a.Path, mustDDL(t, "b BIGINT"))
	if err == nil || !strings.Contains(err.Error(), `column "b"`) || !strings.Contains(err.Error(), "cannot be read as BIGINT") {
		t.Errorf("reading a string as BIGINT: error %v", err)
	}
	_, err = tbl.ReadFile("no-such-file.parquet", mustDDL(t, "b STRING"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v, want one wrapping fs.ErrNotExist", err)
	}
}

func TestReadFileURLEncodedPath(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(mustDDL(t, "a BIGINT"), [][]any{{int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tbl.Dir, "p=a b%")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tbl.Dir, a.Path), filepath.Join(dir, "f 1.parquet")); err != nil {
		t.Fatal(err)
	}
	enc := EscapePath("p=a b%/f 1.parquet")
	if enc != "p=a%20b%25/f%201.parquet" {
		t.Errorf("EscapePath = %q", enc)
	}
	got, err := tbl.ReadFile(enc, mustDDL(t, "a BIGINT"))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{{int64(1)}})
}

// TestReadFileDuckDB reads a file written by DuckDB (testdata/duckdb_types.parquet): DECIMAL as
// FIXED_LEN_BYTE_ARRAY, timestamps in MILLIS and NANOS, INT32/INT64 with INT logical types.
func TestReadFileDuckDB(t *testing.T) {
	t.Parallel()
	tbl := New("testdata")
	s := mustDDL(t, "s STRING, d20 DECIMAL(18,2), d4 DECIMAL(6,2), ts_ms TIMESTAMP, ts_ns TIMESTAMP, tstz TIMESTAMP, dt DATE, i INT, b BIGINT, missing STRING")
	got, err := tbl.ReadFile("duckdb_types.parquet", s)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{
		{"apple", schema.Decimal(1234567), schema.Decimal(-150), ts("2024-01-31T10:00:00.123Z"), ts("2024-01-31T10:00:00.123456Z"), ts("2024-01-31T10:00:00.654321Z"), date("2024-01-31"), int32(7), int64(9000000000), nil},
		{"apple", schema.Decimal(-1), schema.Decimal(99990), schema.Timestamp(-1000), schema.Timestamp(-1), schema.Timestamp(0), schema.Date(-1), int32(-7), int64(-1), nil},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{"banana", schema.Decimal(0), schema.Decimal(0), ts("2000-02-29T00:00:00Z"), ts("2000-02-29T00:00:00Z"), ts("2000-02-29T12:00:00Z"), date("2000-02-29"), int32(0), int64(0), nil},
	})
	// A scale that cannot hold the file's digits is an error, not a rounding.
	_, err = tbl.ReadFile("duckdb_types.parquet", mustDDL(t, "d20 DECIMAL(18,1)"))
	if err == nil || !strings.Contains(err.Error(), "more than 1 digits after the point") {
		t.Errorf("reading DECIMAL(20,2) as DECIMAL(18,1): error %v", err)
	}
}

// TestReadFileSpark reads a file written by Spark 3.5 / Delta 3.1 (Delta Acceptance Tests,
// all_primitive_types), reading its SHORT/BYTE/FLOAT columns into the wider types.
func TestReadFileSpark(t *testing.T) {
	t.Parallel()
	tbl := New("testdata/all_primitive_types")
	s := mustDDL(t, "utf8 STRING, int64 BIGINT, int32 INT, int16 INT, int8 BIGINT, float32 DOUBLE, float64 DOUBLE, bool BOOLEAN, decimal DECIMAL(5,3), date32 DATE, timestamp TIMESTAMP")
	got, err := tbl.ReadFile("part-00000-9ef2c948-cdad-4fae-be77-ab46fd15cef4-c000.snappy.parquet", s)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	for i := range 5 {
		want = append(want, []any{
			fmt.Sprint(i), int64(i), int32(i), int32(i), int64(i), float64(i), float64(i), i%2 == 0,
			schema.Decimal((10 + i) * 1000), schema.Date(i), schema.Timestamp(int64(i) * 3600_000_000),
		})
	}
	assertRows(t, got, want)
}

// TestReadFileLegacyEncodings reads encodings other engines write, built here with parquet-go
// from their definitions: INT96 timestamps (nanoseconds of the day + Julian day), DECIMAL as
// FIXED_LEN_BYTE_ARRAY and BYTE_ARRAY (big-endian two's complement), TIMESTAMP MILLIS and NANOS,
// dictionary-encoded strings, INT32 read as BIGINT and FLOAT as DOUBLE.
func TestReadFileLegacyEncodings(t *testing.T) {
	t.Parallel()
	g := &orderedGroup{Group: parquet.Group{}}
	g.add("ts96", parquet.Optional(parquet.Leaf(parquet.Int96Type)))
	g.add("tsms", parquet.Optional(parquet.Timestamp(parquet.Millisecond)))
	g.add("tsns", parquet.Optional(parquet.Timestamp(parquet.Nanosecond)))
	g.add("flba", parquet.Optional(parquet.Decimal(2, 20, parquet.FixedLenByteArrayType(9))))
	g.add("ba", parquet.Optional(parquet.Decimal(2, 10, parquet.ByteArrayType)))
	g.add("dict", parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary)))
	g.add("i32", parquet.Optional(parquet.Leaf(parquet.Int32Type)))
	g.add("f32", parquet.Optional(parquet.Leaf(parquet.FloatType)))
	julian := uint32(19753 + 2440588) // 2024-01-31
	nanos := uint64(10*3600*1e9 + 123456789)
	row := func(vals ...parquet.Value) parquet.Row {
		r := make(parquet.Row, len(vals))
		for j, v := range vals {
			if v.IsNull() {
				r[j] = v.Level(0, 0, j)
			} else {
				r[j] = v.Level(0, 1, j)
			}
		}
		return r
	}
	rows := []parquet.Row{
		row(parquet.Int96Value(deprecated.Int96{uint32(nanos), uint32(nanos >> 32), julian}),
			parquet.Int64Value(1706695200123), parquet.Int64Value(1706695200123456789),
			parquet.FixedLenByteArrayValue([]byte{0, 0, 0, 0, 0, 0, 0, 0x04, 0xD2}), // 1234 -> 12.34
			parquet.ByteArrayValue([]byte{0xFB, 0x2E}),                              // -1234 -> -12.34
			parquet.ByteArrayValue([]byte("x")), parquet.Int32Value(-5), parquet.FloatValue(1.5)),
		row(parquet.Int96Value(deprecated.Int96{0, 0, 2440587}), // 1969-12-31T00:00:00Z
			parquet.Int64Value(-1), parquet.Int64Value(-1),
			parquet.FixedLenByteArrayValue([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), // -1 -> -0.01
			parquet.ByteArrayValue([]byte{0x00}),
			parquet.ByteArrayValue([]byte("x")), parquet.Int32Value(math.MaxInt32), parquet.FloatValue(-0.25)),
		row(parquet.NullValue(), parquet.NullValue(), parquet.NullValue(), parquet.NullValue(), parquet.NullValue(),
			parquet.ByteArrayValue([]byte("y")), parquet.NullValue(), parquet.NullValue()),
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "legacy.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, parquet.NewSchema("spark_schema", g))
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s := mustDDL(t, "ts96 TIMESTAMP, tsms TIMESTAMP, tsns TIMESTAMP, flba DECIMAL(18,2), ba DECIMAL(10,3), dict STRING, i32 BIGINT, f32 DOUBLE")
	got, err := New(dir).ReadFile("legacy.parquet", s)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{
		{ts("2024-01-31T10:00:00.123456Z"), ts("2024-01-31T10:00:00.123Z"), ts("2024-01-31T10:00:00.123456Z"),
			schema.Decimal(1234), schema.Decimal(-12340), "x", int64(-5), 1.5},
		{ts("1969-12-31T00:00:00Z"), schema.Timestamp(-1000), schema.Timestamp(-1), schema.Decimal(-1), schema.Decimal(0), "x", int64(math.MaxInt32), -0.25},
		{nil, nil, nil, nil, nil, "y", nil, nil},
	})
}

func TestBigEndianInt64(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []byte
		want int64
		ok   bool
	}{
		{nil, 0, true},
		{[]byte{0x7F}, 127, true},
		{[]byte{0x80}, -128, true},
		{[]byte{0xFF, 0x7F}, -129, true},
		{[]byte{0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, math.MaxInt64, true},
		{[]byte{0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0}, math.MinInt64, true},
		{[]byte{0x00, 0x80, 0, 0, 0, 0, 0, 0, 0}, 0, false}, // 2^63
		{[]byte{0x01, 0, 0, 0, 0, 0, 0, 0, 0}, 0, false},
	}
	for _, tc := range tests {
		got, ok := bigEndianInt64(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("bigEndianInt64(%x) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func benchRows(n int) (schema.Schema, [][]any) {
	s, _ := schema.ParseDDL("id BIGINT, name STRING, amount DECIMAL(10,2), at TIMESTAMP, score DOUBLE")
	rows := make([][]any, n)
	base := ts("2024-01-31T10:00:00Z")
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("customer-%d", i%1000), schema.Decimal(i * 7 % 100000), base + schema.Timestamp(i)*1000, float64(i) / 3}
		if i%10 == 0 {
			rows[i][4] = nil
		}
	}
	return s, rows
}

func BenchmarkWriteFile(b *testing.B) {
	s, rows := benchRows(100_000)
	tbl := New(b.TempDir())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a, err := tbl.WriteFile(s, rows)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(filepath.Join(tbl.Dir, a.Path))
		b.StartTimer()
	}
	b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadFile reads a file of 100,000 rows WriteFile wrote, its flat columns from the page
// buffers (plain, rawKind) and, beside it, through the value readers (values), the reader
// before the page buffers were read.
func BenchmarkReadFile(b *testing.B) {
	s, rows := benchRows(100_000)
	tbl := New(b.TempDir())
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		b.Fatal(err)
	}
	for _, plain := range []bool{true, false} {
		name := "values"
		if plain {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			plainPages = plain
			defer func() { plainPages = true }()
			b.ReportAllocs()
			for b.Loop() {
				got, err := tbl.ReadFile(a.Path, s)
				if err != nil || len(got) != len(rows) {
					b.Fatal(err, len(got))
				}
			}
			b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// TestReadFileLarge reads a file of several row groups and many pages, then forces garbage
// collections, so that values boxed into shared slabs are checked after the GC moved on.
// It is not parallel: it changes rowGroupRows.
func TestReadFileLarge(t *testing.T) {
	saved := rowGroupRows
	rowGroupRows = 7000
	defer func() { rowGroupRows = saved }()
	s, rows := benchRows(20_000)
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(tbl.Dir, a.Path))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pf.RowGroups()); n != 3 {
		t.Errorf("%d row groups, want 3", n)
	}
	f.Close()
	got, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	assertRows(t, got, rows)
}

// TestReadFileTiles reads a file of several row groups and many pages with tiles of 7 rows, so
// that tiles end inside pages and pages end inside tiles, differently for each column. It is not
// parallel: it changes rowGroupRows and tileRows.
func TestReadFileTiles(t *testing.T) {
	savedGroup, savedTile := rowGroupRows, tileRows
	rowGroupRows, tileRows = 7000, 7
	defer func() { rowGroupRows, tileRows = savedGroup, savedTile }()
	s, rows := benchRows(20_000)
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, rows)
}

// TestReadFileGroups reads a file of three row groups (7000, 7000 and 6000 rows) one group at a
// time, with a STRUCT column, and stops at fn's error. It is not parallel: it changes
// rowGroupRows.
func TestReadFileGroups(t *testing.T) {
	saved := rowGroupRows
	rowGroupRows = 7000
	defer func() { rowGroupRows = saved }()
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "s", Type: schema.Type{Kind: schema.StructKind, Struct: &schema.Schema{Fields: []schema.Field{
			{Name: "a", Type: schema.Type{Kind: schema.String}, Nullable: true},
		}}}, Nullable: true},
	}}
	rows := make([][]any, 20_000)
	for i := range rows {
		var st any
		if i%3 != 0 {
			st = []any{fmt.Sprint("v", i)}
		}
		rows[i] = []any{int64(i), st}
	}
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var got [][]any
	err = tbl.ReadFileGroups(a.Path, s, func(g [][]any) error {
		sizes = append(sizes, len(g))
		got = append(got, g...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != "[7000 7000 6000]" {
		t.Errorf("row groups of %v rows, want [7000 7000 6000]", sizes)
	}
	assertRows(t, got, rows)
	stop := errors.New("stop")
	calls := 0
	err = tbl.ReadFileGroups(a.Path, s, func([][]any) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("after fn's error: err %v, %d calls; want the error itself after 1 call", err, calls)
	}
}

// TestWriteFileFrom: rows handed over in parts of any size, each part's rows reused for the
// next, make the file WriteFileNamed makes of all of them: the same rows, row groups of
// rowGroupRows rows, and the same statistics. A bad row is an error counted from the file's
// first row, and leaves no file. It is not parallel: it changes rowGroupRows.
func TestWriteFileFrom(t *testing.T) {
	saved := rowGroupRows
	rowGroupRows = 7000
	defer func() { rowGroupRows = saved }()
	s, rows := benchRows(20_000)
	tbl := New(t.TempDir())
	whole, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	groups := func(a Add) []int64 {
		f, err := os.Open(filepath.Join(tbl.Dir, a.Path))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, g := range pf.RowGroups() {
			out = append(out, g.NumRows())
		}
		return out
	}
	for _, part := range []int{1, 999, 7000, 6999, 30_000} {
		buf := make([][]any, part)
		for i := range buf {
			buf[i] = make([]any, len(s.Fields))
		}
		next := 0
		a, err := tbl.WriteFileFrom(NewDataFileName(), s, func() ([][]any, error) {
			n := min(part, len(rows)-next)
			for i := range n {
				copy(buf[i], rows[next+i]) // the part's rows are reused
			}
			next += n
			return buf[:n], nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tbl.ReadFile(a.Path, s)
		if err != nil {
			t.Fatal(err)
		}
		assertRows(t, got, rows)
		if g, w := groups(a), groups(whole); fmt.Sprint(g) != fmt.Sprint(w) || fmt.Sprint(g) != "[7000 7000 6000]" {
			t.Errorf("parts of %d: row groups %v, WriteFile's %v, want [7000 7000 6000]", part, g, w)
		}
		if a.Stats != whole.Stats {
			t.Errorf("parts of %d: stats %s, WriteFile's %s", part, a.Stats, whole.Stats)
		}
	}
	// A row of the wrong width in the second part: named by its place in the file.
	bad := 0
	dir := t.TempDir()
	_, err = New(dir).WriteFileFrom(NewDataFileName(), s, func() ([][]any, error) {
		bad++
		switch bad {
		case 1:
			return rows[:10], nil
		case 2:
			return [][]any{rows[10], {int64(1)}}, nil
		}
		return nil, nil
	})
	if err == nil || !strings.Contains(err.Error(), "row 11 has 1 values") {
		t.Fatalf("err = %v, want row 11 named", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left behind: %v", left)
	}
	// next's own error ends the file too.
	_, err = New(dir).WriteFileFrom(NewDataFileName(), s, func() ([][]any, error) { return nil, os.ErrClosed })
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("err = %v, want next's", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left behind: %v", left)
	}
}
