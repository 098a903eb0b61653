package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/spec"
)

// inferPipeline loads a pipeline whose dataset raw has no schema, with the given source lines,
// lands files first (the schema is inferred from them at Setup) and sets the table up.
func inferPipeline(t *testing.T, source string, files map[string]string) (*spec.Pipeline, string) {
	t.Helper()
	dir := t.TempDir()
	text := "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n" + source
	p, err := spec.Parse(filepath.Join(dir, "pipeline.yaml"), []byte(text), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	landing := filepath.Join(dir, "landing")
	for name, body := range files {
		write(t, filepath.Join(mkdir(t, landing), name), []byte(body))
	}
	if err := Setup(p, p.Dataset("raw")); err != nil {
		t.Fatal(err)
	}
	return p, landing
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := osMkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestInferJSONDefault: without infer_column_types a JSON source's columns take their values'
// types (issue "Bronze ingestion": "JSON value types"): integers BIGINT, a column with integers
// and decimals DOUBLE, arrays ARRAY; columns sorted by name, plus _rescued_data.
func TestInferJSONDefault(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n", map[string]string{
		"a.json": `{"id": 1, "name": "a", "tags": ["x"]}` + "\n" + `{"id": 2, "amount": 2.5}` + "\n" + `{"id": 3, "amount": 4}` + "\n",
	})
	if got := p.Dataset("raw").Schema.DDL(); got != "amount DOUBLE, id BIGINT, name STRING, tags ARRAY<STRING>, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `null 1 "a" ["x"] null`, `2.5 2 null null null`, `4 3 null null null`)
}

// TestInferJSONStrings: with infer_column_types: false every inferred column is STRING (Auto
// Loader's default for JSON), columns sorted by name, nested values kept as JSON text, plus
// _rescued_data; the schema is stored as the table's.
func TestInferJSONStrings(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n      options: {infer_column_types: false}\n", map[string]string{
		"a.json": `{"id": 1, "name": "a", "tags": ["x"]}` + "\n" + `{"id": 2, "amount": 2.5}` + "\n",
	})
	if got := p.Dataset("raw").Schema.DDL(); got != "amount STRING, id STRING, name STRING, tags STRING, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `null "1" "a" "[\"x\"]" null`, `"2.5" "2" null null null`)
}

// TestInferTypesHintsAndReuse: with infer_column_types JSON integers are BIGINT, a column with
// integers and decimals DOUBLE, booleans BOOLEAN, mixed kinds STRING; schema_hints pin a type and
// add a column; a later run reuses the stored schema, and a new field becomes a new column under
// the default schema_evolution_mode addNewColumns (old rows read NULL), committed with the batch.
func TestInferTypesHintsAndReuse(t *testing.T) {
	t.Parallel()
	src := "      format: json\n      options: {infer_column_types: true}\n      schema_hints: \"amount DECIMAL(10,2), extra DATE\"\n"
	p, landing := inferPipeline(t, src, map[string]string{
		"a.json": `{"id": 1, "amount": 2, "ratio": 1, "ok": true, "mixed": 1}` + "\n" + `{"id": 2, "amount": 2.5, "ratio": 0.5, "ok": false, "mixed": "x"}` + "\n",
	})
	want := "amount DECIMAL(10,2), id BIGINT, mixed STRING, ok BOOLEAN, ratio DOUBLE, extra DATE, _rescued_data STRING"
	if got := p.Dataset("raw").Schema.DDL(); got != want {
		t.Fatalf("schema %s\nwant   %s", got, want)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 3, "new": "n"}`+"\n"))
	p2, err := spec.Parse(p.File, []byte("name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n"+src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(p2, p2.Dataset("raw")); err != nil {
		t.Fatal(err)
	}
	if got := p2.Dataset("raw").Schema.DDL(); got != want {
		t.Fatalf("reused schema %s", got)
	}
	if _, _, err := ingest(t, p2); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p2,
		`2.00 1 "1" true 1 null null null`,
		`2.50 2 "x" false 0.5 null null null`,
		`null 3 null null null null "n" null`)
	if got := p2.Dataset("raw").Schema.DDL(); got != "amount DECIMAL(10,2), id BIGINT, mixed STRING, ok BOOLEAN, ratio DOUBLE, extra DATE, new STRING, _rescued_data STRING" {
		t.Fatalf("evolved schema %s", got)
	}
	snap, err := delta.New(TableDir(p2.Storage, "raw")).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Metadata.Schema.Equal(p2.Dataset("raw").Schema) {
		t.Fatalf("the table's schema did not evolve: %v %v", snap.Metadata.Schema.DDL(), err)
	}
}

// TestInferCSV: CSV columns in header order, STRING by default; with infer_column_types INT,
// BIGINT, DOUBLE, BOOLEAN as Spark's CSV inference tries them (empty values ignored); without a
// header the columns are _c0, _c1, ...
func TestInferCSV(t *testing.T) {
	t.Parallel()
	body := "id,big,x,flag,s\n1,3000000000,1,true,a\n2,,1.5,FALSE,\n"
	p, _ := inferPipeline(t, "      format: csv\n      options: {header: true}\n", map[string]string{"a.csv": body})
	if got := p.Dataset("raw").Schema.DDL(); got != "id STRING, big STRING, x STRING, flag STRING, s STRING, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	p, _ = inferPipeline(t, "      format: csv\n      mode: failfast\n      options: {header: true, infer_column_types: \"true\"}\n", map[string]string{"a.csv": body})
	if got := p.Dataset("raw").Schema.DDL(); got != "id INT, big BIGINT, x DOUBLE, flag BOOLEAN, s STRING" {
		t.Fatalf("typed schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 3000000000 1 true "a"`, `2 null 1.5 false null`)
	p, _ = inferPipeline(t, "      format: csv\n", map[string]string{"a.csv": "1,x\n2,y,z\n"})
	if got := p.Dataset("raw").Schema.DDL(); got != "_c0 STRING, _c1 STRING, _c2 STRING, _rescued_data STRING" {
		t.Fatalf("headerless schema %s", got)
	}
}

// TestInferIntegerBeyondBigint: an integer literal that BIGINT does not hold makes its column a
// DECIMAL of scale 0, as Spark's JSON and CSV inference type it (Jackson's BIG_INTEGER is
// DecimalType(digits, 0), widened with LongType to DecimalType(20, 0)), so that every digit is
// kept; beyond 38 digits a DOUBLE. A DOUBLE would hold 12345678901234567890 as
// 12345678901234567168.
func TestInferIntegerBeyondBigint(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n      mode: failfast\n", map[string]string{
		"a.json": `{"id": 1, "big": 12345678901234567890, "neg": -9223372036854775809, "huge": 1234567890123456789012345678901234567890}` + "\n" +
			`{"id": 2, "big": 7, "neg": null, "huge": 1}` + "\n",
	})
	if got := p.Dataset("raw").Schema.DDL(); got != "big DECIMAL(20,0), huge DOUBLE, id BIGINT, neg DECIMAL(19,0)" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `12345678901234567890 1.2345678901234568e+39 1 -9223372036854775809`, `7 1 2 null`)

	p, _ = inferPipeline(t, "      format: csv\n      mode: failfast\n      options: {header: true, infer_column_types: \"true\"}\n", map[string]string{
		"a.csv": "id,big\n1,99999999999999999999\n2,3\n",
	})
	if got := p.Dataset("raw").Schema.DDL(); got != "id INT, big DECIMAL(20,0)" {
		t.Fatalf("csv schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 99999999999999999999`, `2 3`)
}

// TestInferNoFiles: a source with nothing to infer from fails Setup and says why; no table is
// created.
func TestInferNoFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := spec.Parse(filepath.Join(dir, "pipeline.yaml"), []byte("name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source: {path: ./landing, format: json}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(dir, "landing"))
	err = Setup(p, p.Dataset("raw"))
	if err == nil || !strings.Contains(err.Error(), "has no files yet") {
		t.Fatalf("err = %v", err)
	}
	if _, err := delta.New(TableDir(p.Storage, "raw")).Snapshot(-1); err == nil {
		t.Fatal("a table was created")
	}
}

func osMkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }
