package delta

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// wide parses decimal text as a value of the DECIMAL column t (precision above 18).
func wide(t *testing.T, typ schema.Type, s string) schema.Decimal128 {
	t.Helper()
	d, err := schema.ParseDecimal128(s, typ)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWideDecimalRoundTrip writes DECIMAL(38,18), DECIMAL(38,0) and DECIMAL(19,2) values,
// the extremes ±(10^38-1) among them, and a DECIMAL(38,18) partition column; it checks the
// Parquet layout Spark writes (FIXED_LEN_BYTE_ARRAY of 16 and 9 bytes, DECIMAL logical type,
// signed column chunk bounds), the Delta statistics (JSON numbers with every digit), the rows
// read back, and, with $DELTACHECK, the rows the independent reader sees.
func TestWideDecimalRoundTrip(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, amount DECIMAL(38,18), big DECIMAL(38,0), n DECIMAL(19,2), part DECIMAL(38,18)")
	data := mustDDL(t, "id BIGINT, amount DECIMAL(38,18), big DECIMAL(38,0), n DECIMAL(19,2)")
	a, b, n := s.Fields[1].Type, s.Fields[2].Type, s.Fields[3].Type
	nines := nines38
	rows := [][]any{
		{int64(1), wide(t, a, "12345678901234567890.123456789012345678"), wide(t, b, nines), wide(t, n, "99999999999999999.99")},
		{int64(2), wide(t, a, "-0.000000000000000001"), wide(t, b, "-"+nines), wide(t, n, "-99999999999999999.99")},
		{int64(3), wide(t, a, "-99999999999999999999.999999999999999999"), wide(t, b, "0"), wide(t, n, "0.01")},
		{int64(4), nil, nil, nil},
	}
	tbl := createTable(t, s, "part")
	tx := tbl.Begin(mustSnapshot(t, tbl, -1))
	add, err := tbl.WriteFile(data, rows)
	if err != nil {
		t.Fatal(err)
	}
	partValue := wide(t, a, "-12345678901234567890.000000000000000001")
	part := FormatPartitionValue(a, partValue)
	if part != "-12345678901234567890.000000000000000001" {
		t.Errorf("partition value %q", part)
	}
	add.PartitionValues = map[string]string{"part": part}
	tx.Add(add)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"minValues":{"id":1,"amount":-99999999999999999999.999999999999999999,"big":-` + nines + `,"n":-99999999999999999.99}`,
		`"maxValues":{"id":4,"amount":12345678901234567890.123456789012345678,"big":` + nines + `,"n":99999999999999999.99}`,
	} {
		if !strings.Contains(add.Stats, want) {
			t.Errorf("stats %s, want %s", add.Stats, want)
		}
	}
	st, err := ParseStats(add.Stats, data)
	if err != nil {
		t.Fatal(err)
	}
	if st.Min["amount"] != rows[2][1] || st.Max["big"] != rows[0][2] || st.Min["n"] != rows[1][3] {
		t.Errorf("parsed stats min %v, max %v", st.Min, st.Max)
	}

	// The Parquet layout, and the column chunk bounds in signed order.
	f, pf, err := openParquet(filepath.Join(tbl.Dir, add.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lens := map[string]int32{"amount": 16, "big": 16, "n": 9}
	for _, e := range pf.Metadata().Schema {
		want, ok := lens[e.Name]
		if !ok {
			continue
		}
		typ, _ := e.Type.Get()
		tl, _ := e.TypeLength.Get()
		dt, _ := e.LogicalType.Value.(*format.DecimalType)
		if typ != format.FixedLenByteArray || tl != want || dt == nil {
			t.Errorf("Parquet column %s: %v(%d) %s, want FIXED_LEN_BYTE_ARRAY(%d) DECIMAL", e.Name, typ, tl, e.LogicalType.String(), want)
		}
	}
	for i, cc := range pf.Metadata().RowGroups[0].Columns {
		md := cc.MetaData
		if i == 0 {
			continue
		}
		lo, ok1 := schema.Decimal128FromBytes(md.Statistics.MinValue)
		hi, ok2 := schema.Decimal128FromBytes(md.Statistics.MaxValue)
		var want [2]any
		switch i {
		case 1:
			want = [2]any{rows[2][1], rows[0][1]}
		case 2:
			want = [2]any{rows[1][2], rows[0][2]}
		case 3:
			want = [2]any{rows[1][3], rows[0][3]}
		}
		if !ok1 || !ok2 || lo != want[0] || hi != want[1] {
			t.Errorf("Parquet column %d bounds %v..%v, want %v..%v", i, lo.Big(), hi.Big(), want[0].(schema.Decimal128).Big(), want[1].(schema.Decimal128).Big())
		}
		// The column index of its one page says the same.
		cis, _, err := pf.ReadPageIndex()
		if err != nil || len(cis) <= i || len(cis[i].MinValues) != 1 {
			t.Fatalf("column index: %v, %v", cis, err)
		}
		plo, _ := schema.Decimal128FromBytes(cis[i].MinValues[0])
		phi, _ := schema.Decimal128FromBytes(cis[i].MaxValues[0])
		if plo != want[0] || phi != want[1] || cis[i].NullPages[0] || cis[i].NullCounts[0] != 1 {
			t.Errorf("Parquet column %d page index %v..%v, null page %v, %d NULLs", i, plo.Big(), phi.Big(), cis[i].NullPages[0], cis[i].NullCounts[0])
		}
	}

	got, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`[1,12345678901234567890.123456789012345678,` + nines + `,99999999999999999.99,-12345678901234567890.000000000000000001]`,
		`[2,-0.000000000000000001,-` + nines + `,-99999999999999999.99,-12345678901234567890.000000000000000001]`,
		`[3,-99999999999999999999.999999999999999999,0,0.01,-12345678901234567890.000000000000000001]`,
		`[4,null,null,null,-12345678901234567890.000000000000000001]`,
	}
	if c := canonical(s, got); !slices.Equal(c, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(c, "\n"), strings.Join(want, "\n"))
	}
	if got[0][4] != partValue {
		t.Errorf("partition value read as %v (%T)", got[0][4], got[0][4])
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if c := canonical(s, theirs); !slices.Equal(c, want) {
			t.Errorf("deltacheck rows\n%s\nwant\n%s", strings.Join(c, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestWideDecimalRescale reads DECIMAL(38,18) files as DECIMAL(38,20) (more fraction digits:
// exact) and as DECIMAL(38,2), where a value with more fraction digits does not fit, and a
// DECIMAL(18,2) file (INT64) as DECIMAL(38,2).
func TestWideDecimalRescale(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "amount DECIMAL(38,18)")
	tbl := createTable(t, s)
	_, add := appendRows(t, tbl, [][]any{{wide(t, s.Fields[0].Type, "-1.5")}})
	path := filepath.Join(tbl.Dir, add.Path)
	wider := mustDDL(t, "amount DECIMAL(38,20)")
	rows, err := tbl.ReadFile(path, wider)
	if err != nil || len(rows) != 1 || schema.Text(wider.Fields[0].Type, rows[0][0]) != "-1.50000000000000000000" {
		t.Errorf("as DECIMAL(38,20): %v, %v", rows, err)
	}
	narrow := mustDDL(t, "amount DECIMAL(38,0)")
	if _, err := tbl.ReadFile(path, narrow); err == nil || !strings.Contains(err.Error(), "decimal -1.500000000000000000 has more than 0 digits after the point for DECIMAL(38,0)") {
		t.Errorf("as DECIMAL(38,0): %v", err)
	}

	s18 := mustDDL(t, "amount DECIMAL(18,2)")
	t18 := createTable(t, s18)
	_, add = appendRows(t, t18, [][]any{{schema.Decimal(-999999999999999999)}})
	d382 := mustDDL(t, "amount DECIMAL(38,2)")
	rows, err = t18.ReadFile(filepath.Join(t18.Dir, add.Path), d382)
	if err != nil || len(rows) != 1 || schema.Text(d382.Fields[0].Type, rows[0][0]) != "-9999999999999999.99" {
		t.Errorf("DECIMAL(18,2) as DECIMAL(38,2): %v, %v", rows, err)
	}
}

// TestWideDecimalWriteChecks: a value of more digits than the precision, or of the int64
// Decimal type, is refused by the writer with the column type in the error.
func TestWideDecimalWriteChecks(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "amount DECIMAL(20,0)")
	tbl := createTable(t, s)
	big := wide(t, mustDDL(t, "x DECIMAL(38,0)").Fields[0].Type, "123456789012345678901")
	if _, err := tbl.WriteFile(s, [][]any{{big}}); err == nil || !strings.Contains(err.Error(), "123456789012345678901 does not fit DECIMAL(20,0)") {
		t.Errorf("21 digits in DECIMAL(20,0): %v", err)
	}
	if _, err := tbl.WriteFile(s, [][]any{{schema.Decimal(1)}}); err == nil || !strings.Contains(err.Error(), "is not a value of DECIMAL(20,0)") {
		t.Errorf("an int64 Decimal in DECIMAL(20,0): %v", err)
	}
}

// TestReadForeignWideDecimals reads wide DECIMAL columns as other writers store them: BINARY of
// the fewest bytes (parquet-mr, Impala), FIXED_LEN_BYTE_ARRAY(16) (DuckDB, Spark for precision
// 38), and INT32 and INT64 decimals into a DECIMAL(38,s) column, rescaled exactly (Parquet
// LogicalTypes.md, DECIMAL: big-endian two's complement).
func TestReadForeignWideDecimals(t *testing.T) {
	t.Parallel()
	ps := parquet.NewSchema("spark_schema", parquet.Group{
		"a": parquet.Optional(parquet.Decimal(2, 38, parquet.ByteArrayType)),
		"b": parquet.Optional(parquet.Decimal(2, 9, parquet.Int32Type)),
		"c": parquet.Optional(parquet.Decimal(4, 18, parquet.Int64Type)),
		"d": parquet.Optional(parquet.Decimal(10, 38, parquet.FixedLenByteArrayType(16))),
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "foreign.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, ps)
	hexv := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ba := func(b []byte, col int) parquet.Value { return parquet.ByteArrayValue(b).Level(0, 1, col) }
	fl := func(b []byte, col int) parquet.Value { return parquet.FixedLenByteArrayValue(b).Level(0, 1, col) }
	cols := [][]parquet.Value{
		{ba(hexv("ff123b1a8199614ad2c571918360b479"), 0), ba(hexv("01"), 0), ba(hexv("ff"), 0)},
		{parquet.Int32Value(-999999999).Level(0, 1, 1), parquet.Int32Value(0).Level(0, 1, 1), parquet.NullValue().Level(0, 0, 1)},
		{parquet.Int64Value(9223372036854775807).Level(0, 1, 2), parquet.Int64Value(-1).Level(0, 1, 2), parquet.Int64Value(1).Level(0, 1, 2)},
		{fl(hexv("0949b0f6f0023313c4499050de38f34e"), 3), fl(hexv("f6b64f090ffdccec3bb66faf21c70cb2"), 3), fl(make([]byte, 16), 3)},
	}
	for j, vals := range cols {
		if _, err := w.ColumnWriters()[j].WriteRowValues(vals); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fs, err := ParquetSchema(path)
	if err != nil || fs.DDL() != "a DECIMAL(38,2), b DECIMAL(9,2), c DECIMAL(18,4), d DECIMAL(38,10)" {
		t.Errorf("ParquetSchema %s, %v", fs.DDL(), err)
	}
	s := mustDDL(t, "a DECIMAL(38,2), b DECIMAL(38,2), c DECIMAL(38,4), d DECIMAL(38,10)")
	got, err := New(dir).ReadFile(path, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`[-0.01,null,0.0001,0.0000000000]`,
		`[-12345678901234567890123456789012345.67,-9999999.99,922337203685477.5807,1234567890123456789012345678.9012345678]`,
		`[0.01,0.00,-0.0001,-1234567890123456789012345678.9012345678]`,
	}
	if c := canonical(s, got); !slices.Equal(c, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(c, "\n"), strings.Join(want, "\n"))
	}
}

// TestNestedWideDecimals writes DECIMAL(38,18) values inside a STRUCT, an ARRAY and a MAP (as
// key and value) and reads them back, and, with $DELTACHECK, checks the independent reader.
func TestNestedWideDecimals(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, s STRUCT<x: DECIMAL(38,18), n INT>, a ARRAY<DECIMAL(20,2)>")
	x := s.Fields[1].Type.Struct.Fields[0].Type
	e := *s.Fields[2].Type.Elem
	rows := [][]any{
		{int64(1), []any{wide(t, x, "-12345678901234567890.123456789012345678"), int32(1)}, []any{wide(t, e, "-999999999999999999.99"), nil, wide(t, e, "0.01")}},
		{int64(2), []any{nil, int32(2)}, []any{}},
		{int64(3), nil, nil},
	}
	tbl := createTable(t, s)
	appendRows(t, tbl, rows)
	got, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`[1,{"x":-12345678901234567890.123456789012345678,"n":1},[-999999999999999999.99,null,0.01]]`,
		`[2,{"x":null,"n":2},[]]`,
		`[3,null,null]`,
	}
	if c := canonical(s, got); !slices.Equal(c, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(c, "\n"), strings.Join(want, "\n"))
	}
	m := mustDDL(t, "m MAP<DECIMAL(38,0), DECIMAL(38,18)>")
	k, v := *m.Fields[0].Type.Key, *m.Fields[0].Type.Value
	mrows := [][]any{{schema.Map{{Key: wide(t, k, nines38), Value: wide(t, v, "-0.000000000000000001")}, {Key: wide(t, k, "-1"), Value: nil}}}}
	mt := createTable(t, m)
	appendRows(t, mt, mrows)
	gotm, err := mt.Rows(mustSnapshot(t, mt, -1))
	if err != nil {
		t.Fatal(err)
	}
	if c := canonical(m, gotm); !slices.Equal(c, []string{`[{"` + nines38 + `":-0.000000000000000001,"-1":null}]`}) {
		t.Errorf("map rows %v", c)
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if c := canonical(s, theirs); !slices.Equal(c, want) {
			t.Errorf("deltacheck rows\n%s\nwant\n%s", strings.Join(c, "\n"), strings.Join(want, "\n"))
		}
	}
}

var nines38 = strings.Repeat("9", 38)

// BenchmarkWideDecimalFile writes and reads 100,000 rows of a BIGINT and a DECIMAL column, of
// precision 18 (INT64) and 38 (FIXED_LEN_BYTE_ARRAY(16)), for the cost of the wide layout.
func BenchmarkWideDecimalFile(b *testing.B) {
	for _, ddl := range []string{"id BIGINT, amount DECIMAL(18,2)", "id BIGINT, amount DECIMAL(38,2)"} {
		s := mustDDL(b, ddl)
		rows := make([][]any, 100_000)
		for i := range rows {
			v := int64(i*7919%1000003 - 500000)
			if s.Fields[1].Type.WideDecimal() {
				rows[i] = []any{int64(i), schema.Decimal128FromInt64(v)}
			} else {
				rows[i] = []any{int64(i), schema.Decimal(v)}
			}
		}
		tbl := New(b.TempDir())
		b.Run("write "+s.Fields[1].Type.DDL(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a, err := tbl.WriteFile(s, rows)
				if err != nil {
					b.Fatal(err)
				}
				os.Remove(filepath.Join(tbl.Dir, a.Path))
			}
		})
		a, err := tbl.WriteFile(s, rows)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("read "+s.Fields[1].Type.DDL(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tbl.ReadFile(a.Path, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecimalNegativeFileScale: a malformed file whose DECIMAL logical type has a negative scale
// is a column of another type (the reader's error for it), not a panic while rescaling.
func TestDecimalNegativeFileScale(t *testing.T) {
	t.Parallel()
	for _, ddl := range []string{"x DECIMAL(38,38)", "x DECIMAL(18,18)"} {
		s, err := schema.ParseDDL(ddl)
		if err != nil {
			t.Fatal(err)
		}
		called := false
		bad := func() (convertFunc, error) { called = true; return convertFunc{}, errors.New("bad") }
		if _, err := decimalConverter(parquet.FixedLenByteArray, &format.DecimalType{Scale: -1, Precision: 38}, s.Fields[0].Type, bad); err == nil || !called {
			t.Errorf("%s from a DECIMAL of scale -1: %v, want the reader's error for a column of another type", ddl, err)
		}
	}
}
