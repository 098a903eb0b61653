package delta

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// assertExact fails unless got and want are the same rows with the same Go types, telling an
// empty ARRAY or MAP from a NULL one.
func assertExact(t *testing.T, s schema.Schema, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if !reflect.DeepEqual(got[i][j], want[i][j]) {
				t.Errorf("row %d column %s: got %s (%#v), want %s (%#v)", i, s.Fields[j].Name,
					schema.Text(s.Fields[j].Type, got[i][j]), got[i][j], schema.Text(s.Fields[j].Type, want[i][j]), want[i][j])
			}
		}
	}
}

func nestedSchema(t testing.TB) schema.Schema {
	return mustDDL(t, "id BIGINT, a ARRAY<INT>, m MAP<STRING, BIGINT>, s STRUCT<x: INT, l: ARRAY<STRING>>, "+
		"al ARRAY<STRUCT<a: INT, b: ARRAY<STRING>>>, mm MAP<STRING, ARRAY<INT>>, aa ARRAY<ARRAY<BIGINT>>, "+
		"ma MAP<INT, MAP<STRING, DECIMAL(10,2)>>, ms ARRAY<MAP<DATE, STRUCT<t: TIMESTAMP>>>")
}

func nestedRows() [][]any {
	return [][]any{
		// NULL everywhere.
		{int64(1), nil, nil, nil, nil, nil, nil, nil, nil},
		// Empty arrays and maps, not NULL ones.
		{int64(2), []any{}, schema.Map{}, []any{nil, []any{}}, []any{}, schema.Map{}, []any{}, schema.Map{}, []any{}},
		// NULL elements and values.
		{int64(3), []any{nil}, schema.Map{{Key: "k", Value: nil}}, []any{int32(1), []any{nil, "x", nil}},
			[]any{nil, []any{nil, nil}, []any{int32(2), []any{}}}, schema.Map{{Key: "n", Value: nil}, {Key: "e", Value: []any{}}, {Key: "z", Value: []any{nil}}},
			[]any{nil, []any{}, []any{nil}}, schema.Map{{Key: int32(0), Value: nil}, {Key: int32(1), Value: schema.Map{}}},
			[]any{nil, schema.Map{}, schema.Map{{Key: schema.Date(1), Value: nil}}}},
		// Values at every level.
		{int64(4), []any{int32(1), int32(-2), int32(3)}, schema.Map{{Key: "b", Value: int64(2)}, {Key: "a", Value: int64(1)}},
			[]any{nil, []any{"p", "q"}},
			[]any{[]any{int32(7), []any{"u", "v"}}, []any{int32(8), nil}},
			schema.Map{{Key: "x", Value: []any{int32(1), int32(2)}}, {Key: "y", Value: []any{int32(3)}}},
			[]any{[]any{int64(1), int64(2)}, []any{int64(3)}, []any{int64(4), nil, int64(5)}},
			schema.Map{{Key: int32(5), Value: schema.Map{{Key: "p", Value: schema.Decimal(125)}, {Key: "q", Value: schema.Decimal(-1)}}}},
			[]any{schema.Map{{Key: schema.Date(19753), Value: []any{schema.Timestamp(1706695200000000)}}, {Key: schema.Date(0), Value: []any{nil}}}}},
		{int64(5), []any{int32(9)}, nil, nil, nil, nil, []any{[]any{int64(6)}}, nil, nil},
	}
}

// TestNestedRoundTrip writes ARRAY, MAP and nested combinations and reads back exactly the same
// values: NULL, empty and NULL-holding arrays and maps stay apart, entry order is kept.
func TestNestedRoundTrip(t *testing.T) {
	t.Parallel()
	s := nestedSchema(t)
	tbl := New(t.TempDir())
	rows := nestedRows()
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertExact(t, s, got, rows)

	// Delta PROTOCOL.md, "Per-file Statistics", as Spark writes them: no bounds for ARRAY and MAP
	// columns, their nullCount counts the rows where the column is NULL (s.l: where s or s.l is).
	want := `{"numRecords":5,"minValues":{"id":1,"s":{"x":1}},"maxValues":{"id":5,"s":{"x":1}},` +
		`"nullCount":{"id":0,"a":1,"m":2,"s":{"x":4,"l":2},"al":2,"mm":2,"aa":1,"ma":2,"ms":2}}`
	if a.Stats != want {
		t.Errorf("stats\n got %s\nwant %s", a.Stats, want)
	}
}

// fileLevels returns, for each leaf column of the Parquet file, its path and its values as
// "rep/def/value" ("rep/def" for a NULL).
func fileLevels(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var leaves []*parquet.Column
	var walk func(c *parquet.Column)
	walk = func(c *parquet.Column) {
		if c.Leaf() {
			leaves = append(leaves, c)
		}
		for _, ch := range c.Columns() {
			walk(ch)
		}
	}
	walk(pf.Root())
	for _, rg := range pf.RowGroups() {
		for _, c := range leaves {
			pages := rg.ColumnChunks()[c.Index()].Pages()
			for {
				p, err := pages.ReadPage()
				if err != nil {
					break
				}
				vals := make([]parquet.Value, p.NumValues())
				n, _ := p.Values().ReadValues(vals)
				for _, v := range vals[:n] {
					s := fmt.Sprintf("%d/%d", v.RepetitionLevel(), v.DefinitionLevel())
					if !v.IsNull() {
						s += "/" + v.String()
					}
					out[strings.Join(c.Path(), ".")] = append(out[strings.Join(c.Path(), ".")], s)
				}
			}
			pages.Close()
		}
	}
	return out
}

// TestNestedLevels checks the file layout against Parquet LogicalTypes.md ("Lists", "Maps"): the
// 3-level list and the key_value map, and the repetition/definition levels of each case.
func TestNestedLevels(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "a ARRAY<INT>, m MAP<STRING, INT>, s STRUCT<l: ARRAY<STRUCT<x: INT>>>")
	tbl := New(t.TempDir())
	rows := [][]any{
		{nil, nil, nil},
		{[]any{}, schema.Map{}, []any{nil}},
		{[]any{nil}, schema.Map{{Key: "k", Value: nil}}, []any{[]any{}}},
		{[]any{int32(1), int32(2)}, schema.Map{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(2)}}, []any{[]any{nil, []any{nil}, []any{int32(3)}}}},
	}
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	got := fileLevels(t, filepath.Join(tbl.Dir, a.Path))
	// a: optional group (1) > repeated group list (2) > optional element (3).
	// m: optional group (1) > repeated key_value (2) > required key (2) / optional value (3).
	// s (1) > l (2) > list (3) > element (4) > x (5).
	want := map[string][]string{
		"a.list.element":     {"0/0", "0/1", "0/2", "0/3/1", "1/3/2"},
		"m.key_value.key":    {"0/0", "0/1", "0/2/k", "0/2/a", "1/2/b"},
		"m.key_value.value":  {"0/0", "0/1", "0/2", "0/3/1", "1/3/2"},
		"s.l.list.element.x": {"0/0", "0/1", "0/2", "0/3", "1/4", "1/5/3"},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: levels %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("leaf columns %v", got)
	}
	back, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertExact(t, s, back, rows)
}

// legacyList is a LIST-annotated group with the children given, for the legacy list layouts.
type legacyList struct{ parquet.Group }

func (legacyList) Type() parquet.Type { return parquet.List(parquet.Int(32)).Type() }

// TestReadLegacyLists reads the 2-level lists of Parquet LogicalTypes.md, "Backward-compatibility
// rules", that older writers (parquet-avro, Hive, Spark's legacy format) produce: a repeated
// field with no LIST group, a repeated primitive in a LIST group, a repeated group named array
// holding one field, and a repeated group of several fields.
func TestReadLegacyLists(t *testing.T) {
	t.Parallel()
	ps := parquet.NewSchema("spark_schema", parquet.Group{
		// a: repeated int32 a;                                        (max def 1, rep 1)
		"a": parquet.Repeated(parquet.Int(32)),
		// b: optional group b (LIST) { repeated int32 array; }        (max def 2)
		"b": parquet.Optional(legacyList{parquet.Group{"array": parquet.Repeated(parquet.Int(32))}}),
		// c: optional group c (LIST) { repeated group array { optional binary s (STRING); } }
		"c": parquet.Optional(legacyList{parquet.Group{"array": parquet.Repeated(parquet.Group{"s": parquet.Optional(parquet.String())})}}),
		// d: optional group d (LIST) { repeated group element { required int32 x; required int32 y; } }
		"d": parquet.Optional(legacyList{parquet.Group{"element": parquet.Repeated(parquet.Group{"x": parquet.Int(32), "y": parquet.Int(32)})}}),
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "legacy.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, ps)
	i32 := func(v int32, rep, def, col int) parquet.Value { return parquet.Int32Value(v).Level(rep, def, col) }
	null := func(rep, def, col int) parquet.Value { return parquet.NullValue().Level(rep, def, col) }
	str := func(v string, rep, def, col int) parquet.Value {
		return parquet.ByteArrayValue([]byte(v)).Level(rep, def, col)
	}
	// Three rows: (a=[], b=NULL, c=NULL, d=NULL), (a=[5], b=[], c=[{x}, {NULL}], d=[{1,2}]),
	// (a=[6,7], b=[1,2], c=[], d=[{3,4},{5,6}]).
	cols := [][]parquet.Value{
		{null(0, 0, 0), i32(5, 0, 1, 0), i32(6, 0, 1, 0), i32(7, 1, 1, 0)},
		{null(0, 0, 1), null(0, 1, 1), i32(1, 0, 2, 1), i32(2, 1, 2, 1)},
		{null(0, 0, 2), str("x", 0, 3, 2), null(1, 2, 2), null(0, 1, 2)},
		{null(0, 0, 3), i32(1, 0, 2, 3), i32(3, 0, 2, 3), i32(5, 1, 2, 3)},
		{null(0, 0, 4), i32(2, 0, 2, 4), i32(4, 0, 2, 4), i32(6, 1, 2, 4)},
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

	s := mustDDL(t, "a ARRAY<INT>, b ARRAY<BIGINT>, c ARRAY<STRUCT<s: STRING>>, d ARRAY<STRUCT<x: INT, y: INT>>")
	got, err := New(dir).ReadFile(path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertExact(t, s, got, [][]any{
		{[]any{}, nil, nil, nil},
		{[]any{int32(5)}, []any{}, []any{[]any{"x"}, []any{nil}}, []any{[]any{int32(1), int32(2)}}},
		{[]any{int32(6), int32(7)}, []any{int64(1), int64(2)}, []any{}, []any{[]any{int32(3), int32(4)}, []any{int32(5), int32(6)}}},
	})

	// ParquetSchema types them as ARRAY columns.
	fs, err := ParquetSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.DDL(); got != "a ARRAY<INT>, b ARRAY<INT>, c ARRAY<STRUCT<s: STRING>>, d ARRAY<STRUCT<x: INT, y: INT>>" {
		t.Errorf("ParquetSchema %s", got)
	}
}

// TestNestedManyRows writes enough nested values to fill many data pages and checks every row.
func TestNestedManyRows(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, a ARRAY<STRING>, m MAP<BIGINT, ARRAY<INT>>")
	var rows [][]any
	for i := range 30000 {
		r := []any{int64(i), nil, nil}
		if i%7 != 0 {
			a := make([]any, i%13)
			for k := range a {
				if (i+k)%5 != 0 {
					a[k] = fmt.Sprintf("value %d.%d with some text to fill pages", i, k)
				}
			}
			r[1] = a
		}
		if i%11 != 0 {
			m := schema.Map{}
			for k := range i % 4 {
				var v any
				if k != 2 {
					v = []any{int32(i), int32(k)}
				}
				m = append(m, schema.MapEntry{Key: int64(i*10 + k), Value: v})
			}
			r[2] = m
		}
		rows = append(rows, r)
	}
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size < 1<<20 {
		t.Fatalf("the file is only %d bytes: not enough pages", a.Size)
	}
	got, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertExact(t, s, got, rows)
}

// TestNestedWriteErrors: a value of the wrong shape is an error naming the row and the column.
func TestNestedWriteErrors(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, a ARRAY<INT>, m MAP<STRING, INT>")
	tbl := New(t.TempDir())
	for _, c := range []struct {
		row  []any
		want string
	}{
		{[]any{int64(1), []any{int64(1)}, nil}, `row 1: column "a.element": a int64 is not a value of INT`},
		{[]any{int64(1), map[string]any{}, nil}, `row 1: column "a.element": a map[string]interface {} is not an ARRAY value`},
		{[]any{int64(1), nil, schema.Map{{Key: nil, Value: int32(1)}}}, `row 1: column "m.key": entry 0 has a NULL key`},
		{[]any{int64(1), nil, []any{}}, `row 1: column "m.key": a []interface {} is not a MAP value`},
	} {
		_, err := tbl.WriteFile(s, [][]any{{int64(0), nil, nil}, c.row})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.row, err, c.want)
		}
	}
}

// TestDATNestedTypes reads the nested_types case of the Delta Acceptance Tests exactly: Spark's
// schema (array<short>, map<string,int>) and the rows the independent reader (DuckDB) sees.
func TestDATNestedTypes(t *testing.T) {
	t.Parallel()
	tbl := New(filepath.Join(datCases(t), "nested_types", "delta"))
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	s := snap.Metadata.Schema
	if got := s.DDL(); got != "pk INT, struct STRUCT<float64: DOUBLE, bool: BOOLEAN>, array ARRAY<SMALLINT>, map MAP<STRING, INT>" {
		t.Errorf("schema %s", got)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b []any) int { return schema.Compare(a[0], b[0]) })
	// Row pk = i: struct (i, i is even), array 0..i, map "0"->0 .. "i-1"->i-1.
	var want [][]any
	for i := range 5 {
		arr := []any{}
		m := schema.Map{}
		for k := range i + 1 {
			arr = append(arr, int32(k))
			if k < i {
				m = append(m, schema.MapEntry{Key: fmt.Sprint(k), Value: int32(k)})
			}
		}
		want = append(want, []any{int32(i), []any{float64(i), i%2 == 0}, arr, m})
	}
	assertExact(t, s, rows, want)
}

// fromDuck types a value of DuckDB's to_json (deltacheck's output) as a value of t, nested
// types included.
func fromDuck(t schema.Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t.Kind {
	case schema.StructKind:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%v is not an object", v)
		}
		out := make([]any, len(t.Struct.Fields))
		for i, f := range t.Struct.Fields {
			x, err := fromDuck(f.Type, m[f.Name])
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case schema.ArrayKind:
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%v is not an array", v)
		}
		out := make([]any, len(a))
		for i, e := range a {
			x, err := fromDuck(*t.Elem, e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case schema.MapKind:
		// DuckDB's to_json writes a MAP as an object, keys as text.
		return schema.FromJSON(t, v)
	}
	return fromDuckJSON(t, v)
}

// TestDeltacheckReadsNested checks our LIST and MAP layout with the independent reader
// (DuckDB reads the Parquet files) on a table of nested columns.
func TestDeltacheckReadsNested(t *testing.T) {
	t.Parallel()
	if os.Getenv("DELTACHECK") == "" {
		t.Skip("DELTACHECK is not set; build shared/tools/deltacheck and set DELTACHECK to run this test")
	}
	s := mustDDL(t, "id BIGINT, a ARRAY<INT>, m MAP<STRING, BIGINT>, s STRUCT<x: INT, l: ARRAY<STRING>>, "+
		"al ARRAY<STRUCT<a: INT, b: ARRAY<STRING>>>, mm MAP<STRING, ARRAY<INT>>, aa ARRAY<ARRAY<BIGINT>>")
	var rows [][]any
	for _, r := range nestedRows() {
		rows = append(rows, r[:len(s.Fields)])
	}
	// MAP entries in key order: DuckDB's to_json object keeps the entry order, FromJSON sorts.
	rows[3][2] = schema.Map{{Key: "a", Value: int64(1)}, {Key: "b", Value: int64(2)}}
	rows[2][5] = schema.Map{{Key: "e", Value: []any{}}, {Key: "n", Value: nil}, {Key: "z", Value: []any{nil}}}
	tbl := createTable(t, s)
	appendRows(t, tbl, rows)
	ours, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ours, func(a, b []any) int { return schema.Compare(a[0], b[0]) })
	assertExact(t, s, ours, rows)
	var theirs [][]any
	for _, ln := range deltacheck(t, "rows", tbl.Dir) {
		obj := decodeNumbers(t, ln).(map[string]any)
		row := make([]any, len(s.Fields))
		for j, f := range s.Fields {
			x, err := fromDuck(f.Type, obj[f.Name])
			if err != nil {
				t.Fatalf("deltacheck line %s, column %s: %v", ln, f.Name, err)
			}
			row[j] = x
		}
		theirs = append(theirs, row)
	}
	slices.SortFunc(theirs, func(a, b []any) int { return schema.Compare(a[0], b[0]) })
	assertExact(t, s, theirs, rows)
}

func decodeNumbers(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// TestNestedShapeMismatch: a file column of another shape than the table's type is an error
// naming the column, never a silent NULL.
func TestNestedShapeMismatch(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	a, err := tbl.WriteFile(mustDDL(t, "a ARRAY<INT>, s STRUCT<x: INT>, m MAP<STRING, INT>"), [][]any{{[]any{int32(1)}, []any{int32(2)}, schema.Map{}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ddl, want string }{
		{"a STRUCT<x: INT>", `column "a" is not a STRUCT in the file`},
		{"s ARRAY<INT>", `column "s.element" is not a LIST in the file`},
		{"m ARRAY<INT>", `column "m.element" is nested in the file, not INT`},
		{"a MAP<STRING, INT>", `column "a.key" is not a MAP in the file`},
		{"a ARRAY<STRUCT<x: INT>>", `column "a.element.x" is not a STRUCT in the file`},
		{"a INT", `column "a" is nested or repeated in the file`},
		{"a ARRAY<DATE>", `column "a.element"`},
	} {
		if _, err := tbl.ReadFile(a.Path, mustDDL(t, c.ddl)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.ddl, err, c.want)
		}
	}
}
