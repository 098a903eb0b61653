package flows

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEvolutionModes: what a column the schema lacks does in each schema_evolution_mode with a
// declared schema: none (the default) ignores it, rescue keeps it in _rescued_data (added to the
// table), failOnNewColumns fails the batch naming the file and the column and commits nothing.
func TestEvolutionModes(t *testing.T) {
	t.Parallel()
	input := `{"id": 1, "extra": "e"}` + "\n"
	for _, tc := range []struct{ mode, ddl, want, err string }{
		{"none", "id BIGINT", "1", ""},
		{"rescue", "id BIGINT, _rescued_data STRING", `1 "{\"_file_path\":\"%F\",\"extra\":\"e\"}"`, ""},
		{"failOnNewColumns", "id BIGINT", "", "a.json has column extra, which the schema of raw does not have (schema_evolution_mode: failOnNewColumns); add it to the schema of raw"},
	} {
		dir := t.TempDir()
		p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n      schema: \"id BIGINT\"\n      schema_evolution_mode: "+tc.mode+"\n")
		file := filepath.Join(dir, "landing", "a.json")
		write(t, file, []byte(input))
		if got := p.Dataset("raw").Schema.DDL(); got != tc.ddl {
			t.Errorf("%s: schema %s, want %s", tc.mode, got, tc.ddl)
		}
		_, _, err := ingest(t, p)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: err %v, want %q", tc.mode, err, tc.err)
			}
			if rows := rawRows(t, p); len(rows) != 0 {
				t.Fatalf("%s: committed %v", tc.mode, rows)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		if got, want := strings.Join(rawRows(t, p), "\n"), strings.ReplaceAll(tc.want, "%F", file); got != want {
			t.Errorf("%s: rows %s, want %s", tc.mode, got, want)
		}
	}
}

// TestEvolutionAddNewColumnsCSV: with an inferred CSV schema, a later file whose header has a
// new column adds it (STRING) after the known columns; rows of the older file read NULL there.
func TestEvolutionAddNewColumnsCSV(t *testing.T) {
	t.Parallel()
	p, landing := inferPipeline(t, "      format: csv\n      options: {header: true}\n", map[string]string{"a.csv": "id,name\n1,a\n"})
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(landing, "b.csv"), []byte("name,city,id\nb,Oslo,2\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "id STRING, name STRING, city STRING, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	wantRows(t, p, `"1" "a" null null`, `"2" "b" "Oslo" null`)
}

// TestInferHeaderlessHints: without a header the inferred columns are _c0, _c1, ...; a
// schema_hints column not in the files comes after them and is NULL, and a later file with more
// fields adds _c2 (addNewColumns), whose values land in _c2, not in the hinted column.
func TestInferHeaderlessHints(t *testing.T) {
	t.Parallel()
	p, landing := inferPipeline(t, "      format: csv\n      schema_hints: \"_c0 INT, note STRING\"\n", map[string]string{"a.csv": "1,x\n"})
	if got := p.Dataset("raw").Schema.DDL(); got != "_c0 INT, _c1 STRING, note STRING, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(landing, "b.csv"), []byte("2,y,z\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "_c0 INT, _c1 STRING, note STRING, _c2 STRING, _rescued_data STRING" {
		t.Fatalf("evolved schema %s", got)
	}
	wantRows(t, p, `1 "x" null null null`, `2 "y" null "z" null`)
}

// TestInferCaseVariants: a field whose name differs only in case from a column is not a column
// of its own, at inference or later: its value goes to _rescued_data (semantics.md "Ingestion").
func TestInferCaseVariants(t *testing.T) {
	t.Parallel()
	p, landing := inferPipeline(t, "      format: json\n", map[string]string{"a.json": `{"id": 1, "ID": 2}` + "\n"})
	if got := p.Dataset("raw").Schema.DDL(); got != "ID BIGINT, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	write(t, filepath.Join(landing, "b.json"), []byte(`{"Id": 3}`+"\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "ID BIGINT, _rescued_data STRING" {
		t.Fatalf("schema after b.json %s", got)
	}
	a, b := filepath.Join(landing, "a.json"), filepath.Join(landing, "b.json")
	wantRows(t, p, `2 "{\"_file_path\":\"`+a+`\",\"id\":1}"`, `null "{\"Id\":3,\"_file_path\":\"`+b+`\"}"`)
}

// TestCSVSafeHeader: a CSV header naming a column twice (in any case), or not at all, gets the
// names Spark's CSV reader makes (the position appended to a repeated name, _c<position> for an
// empty one), so that every field keeps its value.
func TestCSVSafeHeader(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: csv\n      options: {header: true}\n", map[string]string{"a.csv": "id,ID,,name\n1,2,x,a\n"})
	if got := p.Dataset("raw").Schema.DDL(); got != "id0 STRING, ID1 STRING, _c2 STRING, name STRING, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `"1" "2" "x" "a" null`)
}

// TestCSVHeaderNamesKeepTable: the safe names of a repeated or empty CSV header name apply to new
// tables; a table inferred before they were made safe (a column of the name as written, none of
// the safe one) keeps the name as written, so that its columns go on being filled.
func TestCSVHeaderNamesKeepTable(t *testing.T) {
	t.Parallel()
	fields := []csvField{{text: "id"}, {text: "name"}, {text: "id"}, {text: ""}}
	has := func(cols ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(cols, n) }
	}
	for _, c := range []struct {
		has  func(string) bool
		want string
	}{
		{nil, "id0,name,id2,_c3"},
		{has("id0", "name", "id2", "_c3"), "id0,name,id2,_c3"},
		{has("id", "name", ""), "id,name,id,"},
	} {
		if got := strings.Join(headerNames(fields, "", c.has), ","); got != c.want {
			t.Errorf("headerNames = %s, want %s", got, c.want)
		}
	}
}

// TestCSVSafeHeaderMadeNameClash: a made name that meets a name as written takes a further
// suffix, so that no two columns share a name.
func TestCSVSafeHeaderMadeNameClash(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{"id1,id,id": "id1,id1_1,id2", "_c1,,x": "_c1,_c1_1,x"} {
		var fields []csvField
		for _, f := range strings.Split(header, ",") {
			fields = append(fields, csvField{text: f})
		}
		if got := strings.Join(safeHeader(fields, ""), ","); got != want {
			t.Errorf("safeHeader(%s) = %s, want %s", header, got, want)
		}
	}
}

// TestInferHintsAnyCase: a schema hint names its column in any case, as Delta column names and
// Spark's schema hints match: it sets the type of the inferred column, which keeps the files'
// spelling (so that its values are read), rather than adding a second column that differs only
// in case (which Delta refuses when the table is created).
func TestInferHintsAnyCase(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n      schema_hints: \"id BIGINT, amt DECIMAL(10,2), NOTE INT\"\n", map[string]string{
		"a.json": `{"Id": 1, "AMT": "1.5"}` + "\n" + `{"Id": 2, "AMT": 2}` + "\n",
	})
	if got := p.Dataset("raw").Schema.DDL(); got != "AMT DECIMAL(10,2), Id BIGINT, NOTE INT, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1.50 1 null null`, `2.00 2 null null`)
}

// TestInferReservedNames: a field named like a column the source adds (its rescued data column,
// or under include_metadata _file_path and _file_modification_time), in any case, is not an
// inferred column, at the first run or as a new column later: the table would have two columns
// of one name (the reading then failed on rows one value short). Its values are rescued.
func TestInferReservedNames(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n", map[string]string{"a.json": `{"id": 1, "_rescued_data": "x"}` + "\n"})
	if got := p.Dataset("raw").Schema.DDL(); got != "id BIGINT, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if rows := rawRows(t, p); len(rows) != 1 || !strings.HasPrefix(rows[0], `1 "{`) || !strings.Contains(rows[0], `\"_rescued_data\":\"x\"`) {
		t.Errorf("rows %q, want id 1 with the field rescued", rows)
	}

	q, landing := inferPipeline(t, "      format: csv\n      options: {header: true}\n      include_metadata: true\n", map[string]string{"a.csv": "id,_File_Path\n1,x\n"})
	if got := q.Dataset("raw").Schema.DDL(); got != "id STRING, _rescued_data STRING, _file_path STRING, _file_modification_time TIMESTAMP" {
		t.Fatalf("schema with metadata %s", got)
	}
	if _, _, err := ingest(t, q); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(landing, "b.csv"), []byte("id,_file_modification_time,note\n2,y,z\n"))
	if _, _, err := ingest(t, q); err != nil {
		t.Fatal(err)
	}
	if got := q.Dataset("raw").Schema.DDL(); got != "id STRING, note STRING, _rescued_data STRING, _file_path STRING, _file_modification_time TIMESTAMP" {
		t.Fatalf("evolved schema with metadata %s", got)
	}
}

// TestEvolutionFailOnNewColumnsInferred: with an inferred schema, failOnNewColumns's error does
// not ask to add the column to a `schema:` the dataset does not have: it names the full refresh
// that infers the schema again; nothing of the batch is committed.
func TestEvolutionFailOnNewColumnsInferred(t *testing.T) {
	t.Parallel()
	p, landing := inferPipeline(t, "      format: csv\n      options: {header: true}\n      schema_evolution_mode: failOnNewColumns\n", map[string]string{"a.csv": "id,a\n1,x\n"})
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(landing, "b.csv")
	write(t, file, []byte("id,a,New\n2,y,z\n"))
	_, _, err := ingest(t, p)
	want := file + " has column New, which the schema of raw does not have (schema_evolution_mode: failOnNewColumns); the schema of raw is inferred: run `pipeline run "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--full-refresh raw` to infer it again from the files") || strings.Contains(err.Error(), "add it to the schema") {
		t.Fatalf("err %v, want %q", err, want)
	}
	if rows := rawRows(t, p); len(rows) != 1 {
		t.Fatalf("rows %v, want the first file's only", rows)
	}
}
