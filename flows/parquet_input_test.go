package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/delta"
	"tributary/schema"
)

// TestParquetInput: Parquet files are read by column name: a declared column the file lacks is
// NULL, a file column the schema lacks is ignored, DECIMAL, DATE and TIMESTAMP keep their
// values; a file that is not Parquet is one malformed record (a row of NULLs, reported), and the
// other files are still read.
func TestParquetInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT, amount DECIMAL(10,2), day DATE, missing STRING"
`)
	fileSchema, err := schema.ParseDDL("extra STRING, id BIGINT, amount DECIMAL(10,2), day DATE")
	if err != nil {
		t.Fatal(err)
	}
	src := delta.New(t.TempDir())
	adds, err := src.WriteData(delta.Metadata{Schema: fileSchema}, [][]any{
		{"x", int64(1), schema.Decimal(2550), schema.Date(19753)},
		{nil, int64(2), nil, nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src.Dir, adds[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "landing", "a.parquet"), data)
	write(t, filepath.Join(dir, "landing", "b.parquet"), []byte("id,amount\n3,1.00\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 25.50 "2024-01-31" null`, `2 null null null`, `null null null null`)
	// The rows before the error are kept (none here) and the rest of the file is one row of
	// NULLs; the reader's error is given without the file's path, which the WARN names already.
	want := `b.parquet:1: the file cannot be read as Parquet (invalid magic header of parquet file: "id,a"); the rows before this line are kept and the rest of the file becomes a row of NULLs (mode: permissive; the dataset's expectations still apply to it). ` + restOfFileFix
	if m.BadRecords != 1 || !strings.Contains(rec.all(), want) {
		t.Errorf("bad %d, events:\n%s", m.BadRecords, rec.all())
	}
}

// TestParquetInferAndEvolve: without a schema, the columns are the Parquet files' own (types
// kept, STRUCT included); a later file with a new column adds it (addNewColumns); a file that is
// not Parquet does not stop inference.
func TestParquetInferAndEvolve(t *testing.T) {
	t.Parallel()
	fileA, err := schema.ParseDDL("id BIGINT, amount DECIMAL(10,2), at STRUCT<day: DATE>")
	if err != nil {
		t.Fatal(err)
	}
	a := parquetBytes(t, fileA, [][]any{{int64(1), schema.Decimal(150), []any{schema.Date(19753)}}})
	p, landing := inferPipeline(t, "      format: parquet\n", map[string]string{"a.parquet": string(a), "0-bad.parquet": "not parquet"})
	if got := p.Dataset("raw").Schema.DDL(); got != "id BIGINT, amount DECIMAL(10,2), at STRUCT<day: DATE>, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	fileB, _ := schema.ParseDDL("id BIGINT, note STRING")
	write(t, filepath.Join(landing, "b.parquet"), parquetBytes(t, fileB, [][]any{{int64(2), "n"}}))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "id BIGINT, amount DECIMAL(10,2), at STRUCT<day: DATE>, note STRING, _rescued_data STRING" {
		t.Fatalf("evolved schema %s", got)
	}
	rows := rawRows(t, p)
	if len(rows) != 3 || rows[1] != `1 1.50 {"day":"2024-01-31"} null null` || rows[2] != `2 null null "n" null` || !strings.HasPrefix(rows[0], `null null null null "{\"_corrupt_record\":`) {
		t.Fatalf("rows:\n%s", strings.Join(rows, "\n"))
	}
}

// parquetBytes writes rows of s as one Parquet file (the Delta writer's, Spark's types).
func parquetBytes(t *testing.T, s schema.Schema, rows [][]any) []byte {
	t.Helper()
	tb := delta.New(t.TempDir())
	adds, err := tb.WriteData(delta.Metadata{Schema: s}, rows)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tb.Dir, adds[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParquetUnfinishedWaits: a Parquet file read while it is written (it starts with "PAR1" and
// has no footer yet, or holds only the start of the first "PAR1") is left unread with a WARN,
// not made a malformed row; once complete, the update after reads every row of it. Read at once,
// it would be recorded as read, and the complete file "changed after it was read", never read.
// A file whose footer is there but whose data is damaged is still one malformed record.
func TestParquetUnfinishedWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT"
`)
	fileSchema, err := schema.ParseDDL("id BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	data := parquetBytes(t, fileSchema, [][]any{{int64(1)}, {int64(2)}})
	landing := filepath.Join(dir, "landing")
	write(t, filepath.Join(landing, "a.parquet"), data[:len(data)-10])
	write(t, filepath.Join(landing, "b.parquet"), data[:2])
	damaged := append([]byte(nil), data...)
	copy(damaged[4:], "XXXXXXXXXXXXXXXX") // the footer is there; the data it points at is not
	write(t, filepath.Join(landing, "c.parquet"), damaged)
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "null")
	for _, want := range []string{
		`a.parquet: the file starts as a Parquet file but has no footer yet (it does not end with "PAR1"): it is still being written, or truncated; it is left unread`,
		`b.parquet: the file holds 2 bytes, the start of a Parquet file's first "PAR1": it is still being written, or truncated; it is left unread`,
		"c.parquet:1: the file cannot be read as Parquet",
	} {
		if !strings.Contains(rec.all(), want) {
			t.Errorf("events lack %q:\n%s", want, rec.all())
		}
	}
	if m.Files != 1 || m.BadRecords != 1 {
		t.Errorf("metrics %+v", m)
	}
	write(t, filepath.Join(landing, "a.parquet"), data)
	write(t, filepath.Join(landing, "b.parquet"), data)
	if m, rec, err = ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "null", "1", "2", "1", "2")
	if m.Files != 2 || m.ChangedFiles != 0 {
		t.Errorf("once complete: metrics %+v, events:\n%s", m, rec.all())
	}
}

// TestParquetCaseVariants: a Parquet column whose name differs only in case from a declared
// column is not that column (Delta names are case-insensitive, and a column is read by its own
// name): its values go to the rescued data column, as JSON under the file's name with the file's
// path, rather than disappearing; rows whose variants are all NULL rescue nothing.
func TestParquetCaseVariants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT, amount DECIMAL(10,2), note STRING"
      rescued_data_column: _rescued
`)
	fileA, err := schema.ParseDDL("ID BIGINT, amount DECIMAL(10,2), Note STRUCT<x: STRING>")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "landing", "a.parquet"), parquetBytes(t, fileA, [][]any{
		{int64(1), schema.Decimal(2550), []any{"q"}},
		{nil, nil, nil},
	}))
	fileB, _ := schema.ParseDDL("id BIGINT, ID BIGINT")
	write(t, filepath.Join(dir, "landing", "b.parquet"), parquetBytes(t, fileB, [][]any{{int64(3), int64(4)}}))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "landing", "a.parquet"), filepath.Join(dir, "landing", "b.parquet")
	want := []string{
		`null 25.50 null "{\"ID\":1,\"Note\":{\"x\":\"q\"},\"_file_path\":\"` + a + `\"}"`,
		`null null null null`,
		`3 null null "{\"ID\":4,\"_file_path\":\"` + b + `\"}"`,
	}
	if got := rawRows(t, p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// parquetFile is a Parquet input file of a test: its columns (Spark DDL) and rows.
type parquetFile struct {
	ddl  string
	rows [][]any
}

// parquetWarnCase ingests two Parquet files, a.parquet and b.parquet, with the declared schema
// (and the source lines extra, such as a rescued_data_column), and checks the rows and that the
// events hold the WARN want about a.parquet and none about b.parquet (want "": no WARN at all);
// $A in a row stands for a.parquet's path.
func parquetWarnCase(t *testing.T, declared, extra string, a, b parquetFile, want string, rows ...string) {
	t.Helper()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "`+declared+`"
`+extra)
	for name, f := range map[string]parquetFile{"a.parquet": a, "b.parquet": b} {
		sch, err := schema.ParseDDL(f.ddl)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "landing", name), parquetBytes(t, sch, f.rows))
	}
	_, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i] = strings.ReplaceAll(rows[i], "$A", filepath.Join(dir, "landing", "a.parquet"))
	}
	wantRows(t, p, rows...)
	if want == "" {
		if strings.Contains(rec.all(), "WARN") {
			t.Errorf("events:\n%s\nwant no WARN", rec.all())
		}
		return
	}
	want = "WARN landing/a.parquet: " + want // relative to the pipeline's folder, as every WARN names a file
	if !strings.Contains(rec.all(), want) || strings.Contains(rec.all(), "b.parquet: the Parquet file") {
		t.Errorf("events:\n%s\nwant a WARN about a.parquet only: %s", rec.all(), want)
	}
}

// TestParquetNoDeclaredColumn: a Parquet file that has none of the declared columns (a file of
// another table, or, with a rescued data column, its columns spelt in another case) is read all
// the same, its rows NULL, as a CSV file whose header names none of them is, and a WARN event
// names the file, the schema's columns, the file's and those that differ only in case, so that
// the NULLs are not silent.
func TestParquetNoDeclaredColumn(t *testing.T) {
	t.Parallel()
	parquetWarnCase(t, "id BIGINT, amount DOUBLE", "",
		parquetFile{"key BIGINT, total DOUBLE", [][]any{{int64(1), 2.5}}},
		parquetFile{"id BIGINT", [][]any{{int64(2)}}},
		"the Parquet file has none of the schema's columns (id, amount): its columns are key, total; every row of the file is read with NULL in those columns. Check that the file belongs to this source, and the schema's column names",
		`null null`, `2 null`)
	parquetWarnCase(t, "id BIGINT, amount DOUBLE", "      rescued_data_column: _rescued\n",
		parquetFile{"ID BIGINT, total DOUBLE", [][]any{{int64(1), 2.5}}},
		parquetFile{"id BIGINT", [][]any{{int64(2)}}},
		"the Parquet file has none of the schema's columns (id, amount): its columns are ID, total; every row of the file is read with NULL in those columns. With a rescued_data_column columns are matched by name as written, and the file spells some in another case (ID for id): their values are kept in _rescued; declare them as the file does, or leave rescued_data_column unset to read them into their columns",
		`null null "{\"ID\":1,\"_file_path\":\"`+"$A"+`\"}"`, `2 null null`)
}

// TestParquetNestedCaseVariants: a nested field of a Parquet file (in a STRUCT column, a LIST's
// elements, a MAP's values) whose name differs only in case from the declared field at its place
// fills that field, as Spark's Parquet reader matches nested names without regard to case under
// its default spark.sql.caseSensitive=false (ParquetReadSupport.clipParquetSchema), with no WARN.
// With a rescued data column names are matched as written and a nested field is not rescued, so
// the field is NULL and a WARN names each; fields spelt as declared are read, and a file without
// such variants gets no WARN.
func TestParquetNestedCaseVariants(t *testing.T) {
	t.Parallel()
	declared := "id BIGINT, info STRUCT<Name: STRING, age: BIGINT>, tags ARRAY<STRUCT<Label: STRING>>, m MAP<STRING, STRUCT<v: BIGINT>>"
	a := parquetFile{"id BIGINT, info STRUCT<name: STRING, age: BIGINT>, tags ARRAY<STRUCT<label: STRING>>, m MAP<STRING, STRUCT<V: BIGINT>>", [][]any{
		{int64(1), []any{"ann", int64(30)}, []any{[]any{"x"}}, schema.Map{{Key: "k", Value: []any{int64(5)}}}},
	}}
	b := parquetFile{"id BIGINT, info STRUCT<Name: STRING, age: BIGINT>", [][]any{{int64(2), []any{"bo", int64(40)}}}}
	parquetWarnCase(t, declared, "", a, b, "",
		`1 {"Name":"ann","age":30} [{"Label":"x"}] {"k":{"v":5}}`, `2 {"Name":"bo","age":40} null null`)
	// A STRUCT none of whose declared fields the file has (tags' elements, m's values) is NULL.
	parquetWarnCase(t, declared, "      rescued_data_column: _rescued\n", a, b,
		"the Parquet file spells nested fields in another case than the schema (info.name for info.Name, tags[].label for tags[].Label, m{}.V for m{}.v): with a rescued_data_column names are matched as written (a column so spelt is rescued), and a nested field is not rescued, so those fields are read as NULL; declare them as the file does",
		`1 {"Name":null,"age":30} null {"k":null} null`, `2 {"Name":"bo","age":40} null null null`)
}

// TestParquetCaseVariantsWithoutRescue: without a rescued data column, a Parquet column whose
// name differs only in case from a declared column the file lacks fills that column, as Spark's
// Parquet reader matches names without regard to case under its default
// spark.sql.caseSensitive=false, with no WARN (with a rescued data column its values are kept
// there: TestParquetCaseVariants); so does a file all of whose columns are so spelt.
func TestParquetCaseVariantsWithoutRescue(t *testing.T) {
	t.Parallel()
	parquetWarnCase(t, "id BIGINT, amount DOUBLE", "",
		parquetFile{"id BIGINT, Amount DOUBLE", [][]any{{int64(1), 2.5}}},
		parquetFile{"ID BIGINT, AMOUNT DOUBLE", [][]any{{int64(2), 3.5}}},
		"", `1 2.5`, `2 3.5`)
}

// TestParquetNarrowRange: a Parquet INT32 column declared SMALLINT or TINYINT keeps the values in
// the type's range; one beyond it is NULL, a bad value of its row (kept in the rescued data column
// when the source has one), as a JSON or CSV value that does not fit is, and the rest of the file
// is read: it is not a file that cannot be read.
func TestParquetNarrowRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id INT, s SMALLINT, b TINYINT"
      rescued_data_column: _rescued
`)
	file, err := schema.ParseDDL("id INT, s INT, b INT")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "landing", "a.parquet")
	write(t, path, parquetBytes(t, file, [][]any{
		{int32(1), int32(-32768), int32(127)},
		{int32(2), int32(40000), int32(-129)},
		{int32(3), nil, int32(5)},
	}))
	_, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`1 -32768 127 null`,
		`2 null null "{\"_file_path\":\"`+path+`\",\"b\":-129,\"s\":40000}"`,
		`3 null 5 null`)
	for _, w := range []string{"40000 does not fit SMALLINT", "-129 does not fit TINYINT"} {
		if !strings.Contains(rec.all(), w) {
			t.Errorf("events:\n%s\nwant a WARN saying %q", rec.all(), w)
		}
	}
}

// TestParquetUnsignedIntegers: columns of unsigned integers (UINT_32, UINT_64, as pyarrow and
// DuckDB write uint columns) hold their unsigned values, as Spark's Parquet reader reads them:
// inferred, a UINT_32 is a BIGINT and a UINT_64 a DECIMAL(20,0), so 4000000000 and
// 12345678901234567890 are kept rather than read as the negative integers of the same bits;
// declared BIGINT, a UINT_32 of 4000000000 and a UINT_64 that fits are read as they are.
func TestParquetUnsignedIntegers(t *testing.T) {
	t.Parallel()
	type row struct {
		Ub uint64 `parquet:"ub"`
		Ui uint32 `parquet:"ui"`
	}
	rows := []row{{12345678901234567890, 4000000000}, {7, 8}}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(filepath.Join(dir, "landing", "a.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
`)
	if err := Setup(p, p.Dataset("raw")); err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "ub DECIMAL(20,0), ui BIGINT, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `12345678901234567890 4000000000 null`, `7 8 null`)

	small := t.TempDir()
	if err := os.MkdirAll(filepath.Join(small, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(filepath.Join(small, "landing", "a.parquet"), []row{{9223372036854775807, 4000000000}, {7, 8}}); err != nil {
		t.Fatal(err)
	}
	p = loadPipeline(t, small, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "ub BIGINT, ui BIGINT"
`)
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `9223372036854775807 4000000000`, `7 8`)
}
