package sqlengine

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

// TestQueryNested reads ARRAY, MAP and STRUCT columns from our Parquet files and from rows, and
// types DuckDB's LIST, MAP and STRUCT results as ARRAY, MAP and STRUCT columns.
func TestQueryNested(t *testing.T) {
	dir := t.TempDir()
	s := mustDDL(t, "id BIGINT, arr ARRAY<INT>, m MAP<STRING, BIGINT>, st STRUCT<a: STRING, l: ARRAY<DATE>>")
	add, err := delta.New(dir).WriteFile(s, [][]any{
		{int64(1), []any{int32(3), nil, int32(5)}, schema.Map{{Key: "b", Value: int64(2)}, {Key: "a", Value: nil}}, []any{"x", []any{schema.Date(19753)}}},
		{int64(2), []any{}, schema.Map{}, []any{nil, []any{}}},
		{int64(3), nil, nil, nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// One engine for both: the first query's view is gone when the second registers t again.
	for _, rel := range []Relation{
		{Name: "t", Schema: s, Files: []string{filepath.Join(dir, add.Path)}},
		{Name: "t", Schema: s, Rows: [][]any{
			{int64(1), []any{int32(3), nil, int32(5)}, schema.Map{{Key: "b", Value: int64(2)}, {Key: "a", Value: nil}}, []any{"x", []any{schema.Date(19753)}}},
			{int64(2), []any{}, schema.Map{}, []any{nil, []any{}}},
			{int64(3), nil, nil, nil},
		}},
	} {
		out, rows, err := e.Query(context.Background(), `SELECT id, arr, m, st, len(arr) AS n, arr[1] AS first, cardinality(m) AS entries,
			st.l AS days, [m] AS maps, MAP {'k': arr} AS by_key FROM t ORDER BY id`, []Relation{rel})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := out.DDL(), "id BIGINT, arr ARRAY<INT>, m MAP<STRING, BIGINT>, st STRUCT<a: STRING, l: ARRAY<DATE>>, n BIGINT, first INT, entries BIGINT, days ARRAY<DATE>, maps ARRAY<MAP<STRING, BIGINT>>, by_key MAP<STRING, ARRAY<INT>>"; got != want {
			t.Fatalf("schema %s, want %s", got, want)
		}
		arr1 := []any{int32(3), nil, int32(5)}
		m1 := schema.Map{{Key: "b", Value: int64(2)}, {Key: "a", Value: nil}}
		want := [][]any{
			{int64(1), arr1, m1, []any{"x", []any{schema.Date(19753)}}, int64(3), int32(3), int64(2), []any{schema.Date(19753)}, []any{m1}, schema.Map{{Key: "k", Value: arr1}}},
			{int64(2), []any{}, schema.Map{}, []any{nil, []any{}}, int64(0), nil, int64(0), []any{}, []any{schema.Map{}}, schema.Map{{Key: "k", Value: []any{}}}},
			{int64(3), nil, nil, nil, nil, nil, nil, nil, []any{nil}, schema.Map{{Key: "k", Value: nil}}},
		}
		if !reflect.DeepEqual(rows, want) {
			t.Errorf("rows (files %v)\n%#v\nwant\n%#v", rel.Files != nil, rows, want)
		}
	}
}

// TestKindOfNested parses DuckDB's spelling of nested types.
func TestKindOfNested(t *testing.T) {
	for name, want := range map[string]string{
		`INTEGER[]`:                         "ARRAY<INT>",
		`INTEGER[2]`:                        "ARRAY<INT>",
		`MAP(VARCHAR, DECIMAL(10,2)[])`:     "MAP<STRING, ARRAY<DECIMAL(10,2)>>",
		`STRUCT("x" INTEGER, "y z" DATE[])`: "STRUCT<x: INT, `y z`: ARRAY<DATE>>",
		`STRUCT(a VARCHAR, "b,""c" BIGINT)`: "STRUCT<a: STRING, `b,\"c`: BIGINT>",
		`MAP(INTEGER, DATE[])[]`:            "ARRAY<MAP<INT, ARRAY<DATE>>>",
	} {
		got, err := kindOf(name, resultTypes{})
		if err != nil || got.DDL() != want {
			t.Errorf("%s: %s, %v; want %s", name, got.DDL(), err, want)
		}
	}
	if _, err := kindOf("UNION(a INTEGER)[]", resultTypes{}); err == nil {
		t.Error("a list of UNION is accepted")
	}
}

// TestReadDuckDBNestedParquet writes LIST, MAP and STRUCT columns with DuckDB's own Parquet
// writer and reads them with the delta package: the schema and the values another engine wrote.
func TestReadDuckDBNestedParquet(t *testing.T) {
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "duck.parquet")
	q := `COPY (SELECT * FROM (VALUES
		(1, [1, NULL, 3], MAP {'b': 2, 'a': NULL}, {'x': 'p', 'l': [[1.5], []]}),
		(2, [], MAP {}::MAP(VARCHAR, BIGINT), {'x': NULL, 'l': []}),
		(3, NULL, NULL, NULL)
	) AS t(id, arr, m, st)) TO ` + quoteString(path) + ` (FORMAT parquet)`
	if _, err := e.db.Exec(q); err != nil {
		t.Fatal(err)
	}
	s, err := delta.ParquetSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.DDL(), "id INT, arr ARRAY<INT>, m MAP<STRING, BIGINT>, st STRUCT<x: STRING, l: ARRAY<ARRAY<DECIMAL(2,1)>>>"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	rows, err := delta.New(dir).ReadFile(path, s)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int32(1), []any{int32(1), nil, int32(3)}, schema.Map{{Key: "b", Value: int64(2)}, {Key: "a", Value: nil}}, []any{"p", []any{[]any{schema.Decimal(15)}, []any{}}}},
		{int32(2), []any{}, schema.Map{}, []any{nil, []any{}}},
		{int32(3), nil, nil, nil},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows\n%#v\nwant\n%#v", rows, want)
	}
}

// TestUnnamedStructResult: row(...) gives a STRUCT without field names, which no Delta schema
// can hold; the error says how to name the fields.
func TestUnnamedStructResult(t *testing.T) {
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, _, err = e.Query(context.Background(), "SELECT row(1, 'x') AS r", nil)
	if err == nil || !strings.Contains(err.Error(), "a result column is a STRUCT with unnamed fields") || !strings.Contains(err.Error(), "struct_pack(a := 1, b := 'x')") {
		t.Fatalf("error %v", err)
	}
}
