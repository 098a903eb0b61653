package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
	"tributary/spec"
)

// TestInferJSONNested: with infer_column_types, JSON objects become STRUCT columns (the fields
// of every object merged, sorted by name, each widened as top-level values are), arrays ARRAY
// columns of their elements' type (an array only ever empty ARRAY<STRING>), and a column that
// holds both an object and a number STRING (its JSON text), as Spark's JSON inference does.
func TestInferJSONNested(t *testing.T) {
	t.Parallel()
	p, landing := inferPipeline(t, "      format: json\n      options: {infer_column_types: true}\n", map[string]string{
		"a.json": `{"id": 1, "user": {"name": "a", "age": 30}, "tags": ["x", "y"], "events": [{"t": 1}, {"t": 2, "k": "v"}], "empty": [], "mixed": {"a": 1}}` + "\n" +
			`{"id": 2, "user": {"name": "b", "zip": "123", "age": 31.5}, "tags": [], "events": null, "empty": [], "mixed": 3, "matrix": [[1, 2], [3.5], null, []]}` + "\n",
	})
	want := "empty ARRAY<STRING>, events ARRAY<STRUCT<k: STRING, t: BIGINT>>, id BIGINT, matrix ARRAY<ARRAY<DOUBLE>>, mixed STRING, " +
		"tags ARRAY<STRING>, user STRUCT<age: DOUBLE, name: STRING, zip: STRING>, _rescued_data STRING"
	if got := p.Dataset("raw").Schema.DDL(); got != want {
		t.Fatalf("schema %s\nwant   %s", got, want)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`[] [{"k":null,"t":1},{"k":"v","t":2}] 1 null "{\"a\":1}" ["x","y"] {"age":30,"name":"a","zip":null} null`,
		`[] null 2 [[1,2],[3.5],null,[]] "3" [] {"age":31.5,"name":"b","zip":"123"} null`)

	// A later file with a new field inside a struct: the stored schema is kept (new top-level
	// columns evolve, nested fields do not), the new field is not read, and nothing fails.
	write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 3, "user": {"name": "c", "city": "Oslo"}, "tags": ["z"]}`+"\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	rows := rawRows(t, p)
	if got := rows[len(rows)-1]; got != `null null 3 null null ["z"] {"age":null,"name":"c","zip":null} null` {
		t.Errorf("row with a new nested field: %s", got)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != want {
		t.Errorf("schema after a new nested field %s", got)
	}
}

// TestJSONDeclaredNested: declared ARRAY, MAP and nested STRUCT columns fill from JSON lines and
// from multiline JSON; a value that does not fit (an element, a key, a value) makes its column
// NULL, keeps the row, and is rescued with the reason in a WARN event.
func TestJSONDeclaredNested(t *testing.T) {
	t.Parallel()
	lines := `{"id": 1, "tags": ["a", null], "attrs": {"b": 2, "a": 1}, "s": {"l": [1.5], "m": {"7": ["x"]}}}` + "\n" +
		`{"id": 2, "tags": [], "attrs": {}, "s": {"l": [], "m": {}}}` + "\n" +
		`{"id": 3, "tags": null, "attrs": {"a": "one"}, "s": {"m": {"seven": []}}}` + "\n" +
		`{"id": 4, "tags": "x"}` + "\n"
	multi := "[\n" + strings.ReplaceAll(strings.TrimSuffix(lines, "\n"), "\n", ",\n") + "\n]\n"
	for _, c := range []struct{ name, opts, body string }{
		{"lines", "", lines},
		{"multiline", "      options: {multiline: true}\n", multi},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n"+
				"      schema: \"id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, INT>, s STRUCT<l: ARRAY<DOUBLE>, m: MAP<INT, ARRAY<STRING>>>\"\n"+
				"      rescued_data_column: _rescued\n"+c.opts)
			write(t, filepath.Join(dir, "landing", "a.json"), []byte(c.body))
			m, rec, err := ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			wantRows(t, p,
				`1 ["a",null] {"a":1,"b":2} {"l":[1.5],"m":{"7":["x"]}} null`,
				`2 [] {} {"l":[],"m":{}} null`,
				`3 null null null "{\"_file_path\":\"`+filepath.Join(dir, "landing", "a.json")+`\",\"attrs\":{\"a\":\"one\"},\"s\":{\"m\":{\"seven\":[]}}}"`,
				`4 null null null "{\"_file_path\":\"`+filepath.Join(dir, "landing", "a.json")+`\",\"tags\":\"x\"}"`)
			if m.BadRecords != 3 {
				t.Errorf("%d bad records, want 3", m.BadRecords)
			}
			for _, want := range []string{
				`value of key "a": "one" is not a whole number for INT`,
				`key "seven": "seven" is not a whole number for INT`,
				`a string is not an array for ARRAY<STRING>`,
			} {
				if !strings.Contains(rec.all(), want) {
					t.Errorf("no event saying %q:\n%s", want, rec.all())
				}
			}
		})
	}
}

// legacyList is a LIST-annotated group with the children given, as older Parquet writers lay
// lists out.
type legacyList struct{ parquet.Group }

func (legacyList) Type() parquet.Type { return parquet.List(parquet.Int(32)).Type() }

// TestParquetInputNested reads Parquet files with LIST and MAP columns: our writer's (Spark's
// layout) with a declared schema and with an inferred one, and a file with a legacy 2-level list
// (`repeated group array`, as parquet-avro writes it).
func TestParquetInputNested(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, pts ARRAY<STRUCT<x: INT>>"
`)
	fs, err := schema.ParseDDL("id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, pts ARRAY<STRUCT<x: INT>>")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "landing", "a.parquet"), parquetBytes(t, fs, [][]any{
		{int64(1), []any{"a", nil}, schema.Map{{Key: "k", Value: int64(1)}}, []any{[]any{int32(1)}, nil}},
		{int64(2), []any{}, schema.Map{}, []any{}},
		{int64(3), nil, nil, nil},
	}))
	// b.parquet: id, and pts as `optional group pts (LIST) { repeated group array { optional
	// int32 x; } }`, levels written by hand: pts = [{x: 5}, {x: NULL}].
	ps := parquet.NewSchema("hive_schema", parquet.Group{
		"id":  parquet.Optional(parquet.Int(64)),
		"pts": parquet.Optional(legacyList{parquet.Group{"array": parquet.Repeated(parquet.Group{"x": parquet.Optional(parquet.Int(32))})}}),
	})
	bpath := filepath.Join(dir, "b.parquet")
	f, err := os.Create(bpath)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, ps)
	if _, err := w.ColumnWriters()[0].WriteRowValues([]parquet.Value{parquet.Int64Value(4).Level(0, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ColumnWriters()[1].WriteRowValues([]parquet.Value{parquet.Int32Value(5).Level(0, 3, 1), parquet.NullValue().Level(1, 2, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(bpath)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "landing", "b.parquet"), b)
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.BadRecords != 0 {
		t.Fatalf("bad records: %s", rec.all())
	}
	wantRows(t, p,
		`1 ["a",null] {"k":1} [{"x":1},null]`,
		`2 [] {} []`,
		`3 null null null`,
		`4 null null [{"x":5},{"x":null}]`)

	// Without a schema, the columns are the first file's, nested types included.
	ip, _ := inferPipeline(t, "      format: parquet\n", map[string]string{"a.parquet": string(parquetBytes(t, fs, [][]any{{int64(1), []any{"z"}, schema.Map{}, nil}}))})
	if got := ip.Dataset("raw").Schema.DDL(); got != "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, pts ARRAY<STRUCT<x: INT>>, _rescued_data STRING" {
		t.Fatalf("inferred schema %s", got)
	}
	if _, _, err := ingest(t, ip); err != nil {
		t.Fatal(err)
	}
	wantRows(t, ip, `1 ["z"] {} null null`)
}

// TestInferCaseVariantFieldsAndPartitions: objects whose fields differ only in case cannot be a
// STRUCT (Delta names are case-insensitive), so the column keeps them as JSON text; a partition
// column that inference makes nested, or does not find, fails the set-up naming the dataset,
// the partition_by entry and a fix, before any table exists.
func TestInferCaseVariantFieldsAndPartitions(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n", map[string]string{
		"a.json": `{"id": 1, "s": {"Ab": 5, "ab": 6}, "u": {"x": 1}}` + "\n",
	})
	if got, want := p.Dataset("raw").Schema.DDL(), "id BIGINT, s STRING, u STRUCT<x: BIGINT>, _rescued_data STRING"; got != want {
		t.Fatalf("schema %s\nwant   %s", got, want)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 "{\"Ab\":5,\"ab\":6}" {"x":1} null`)

	for _, c := range []struct{ col, want string }{
		{"tags", "dataset raw: partition_by[0]: column tags was inferred as ARRAY<BIGINT>, which cannot be a partition column; hint: partition by a column of a primitive type, or pin it with `schema_hints: \"tags STRING\"`"},
		{"region", "dataset raw: partition_by[0]: column region is not among the columns inferred from LANDING (id, tags, _rescued_data); hint: pin it with `schema_hints: \"region STRING\"`, or partition by one of them"},
	} {
		dir := t.TempDir()
		text := "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    partition_by: [" + c.col + "]\n    source:\n      path: ./landing\n      format: json\n"
		p, err := spec.Parse(filepath.Join(dir, "pipeline.yaml"), []byte(text), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(mkdir(t, filepath.Join(dir, "landing")), "a.json"), []byte(`{"id": 1, "tags": [1, 2]}`+"\n"))
		err = Setup(p, p.Dataset("raw"))
		if want := strings.ReplaceAll(c.want, "LANDING", filepath.Join(dir, "landing")); err == nil || err.Error() != want {
			t.Errorf("partition_by [%s]: error %v\nwant %s", c.col, err, c.want)
		}
		if _, statErr := os.Stat(filepath.Join(dir, "storage", "tables", "raw")); !os.IsNotExist(statErr) {
			t.Errorf("partition_by [%s]: the table was created (%v)", c.col, statErr)
		}
	}
}
