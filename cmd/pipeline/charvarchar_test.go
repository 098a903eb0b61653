package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// charVarcharSpec applies JSON change events to a target whose table schema declares VARCHAR(5)
// and CHAR(3) columns (the events' STRING values), and computes a SQL view over it.
const charVarcharSpec = `name: vc
storage: ${storage}
datasets:
  - name: people_changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, code STRING, seq BIGINT"
  - name: people
    schema: "id BIGINT, name VARCHAR(5), code CHAR(3), seq BIGINT"
    apply_changes:
      source: people_changes
      keys: [id]
      sequence_by: seq
      except_column_list: [op]
  - name: codes
    type: materialized_view
    query: SELECT id, code, length(code) AS n FROM LIVE.people
`

// TestCharVarcharEndToEnd: an APPLY CHANGES target's VARCHAR(5) and CHAR(3) columns take values as
// Spark's writes do: CHAR padded with spaces ("a" is "a  "), trailing spaces beyond the length
// trimmed ("xyz " is "xyz", "Chris   " is "Chris"), those within kept ("Béa  "); the table's
// schemaString has type string with __CHAR_VARCHAR_TYPE_STRING metadata, so Spark reads the
// columns as varchar(5) and char(3); the independent reader reads the same values. A later event
// too long for VARCHAR(5) fails the update with Spark's "Exceeds char/varchar type length
// limitation: 5", naming the column, file and line, and nothing of the batch is applied.
func TestCharVarcharEndToEnd(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(charVarcharSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	landing := filepath.Join(tmp, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(tmp, "storage")
	conf := []string{"--conf", "storage=" + storage}
	write := func(name string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(landing, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1.json",
		`{"op":"I","id":1,"name":"Ann","code":"a","seq":1}`,
		`{"op":"I","id":2,"name":"Béa  ","code":"xyz ","seq":1}`,
		`{"op":"I","id":3,"name":"Chris   ","code":"","seq":1}`)
	mustRun(t, append([]string{"run", file}, conf...)...)
	want := rowsOf(t,
		`{"id": 1, "name": "Ann", "code": "a  ", "seq": 1}`,
		`{"id": 2, "name": "Béa  ", "code": "xyz", "seq": 1}`,
		`{"id": 3, "name": "Chris", "code": "   ", "seq": 1}`)
	show := func(ds string) []map[string]any {
		t.Helper()
		return readJSONL(t, mustRun(t, append([]string{"show", file, ds, "--format", "jsonl"}, conf...)...))
	}
	assertRows(t, "people", show("people"), want)
	assertRows(t, "codes", show("codes"), rowsOf(t,
		`{"id": 1, "code": "a  ", "n": 3}`, `{"id": 2, "code": "xyz", "n": 3}`, `{"id": 3, "code": "   ", "n": 3}`))

	dir := filepath.Join(storage, "tables", "people")
	log, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`{\"name\":\"name\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"__CHAR_VARCHAR_TYPE_STRING\":\"varchar(5)\"}}`,
		`{\"name\":\"code\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"__CHAR_VARCHAR_TYPE_STRING\":\"char(3)\"}}`,
	} {
		if !strings.Contains(string(log), w) {
			t.Errorf("the schemaString of people lacks %s", w)
		}
	}
	if os.Getenv("DELTACHECK") != "" {
		assertRows(t, "deltacheck people", deltacheckRows(t, dir), want)
	}

	write("2.json",
		`{"op":"U","id":2,"name":"Bea","code":"b","seq":2}`,
		`{"op":"U","id":1,"name":"Annabel","code":"a","seq":2}`)
	r := pipeline(t, nil, append([]string{"run", file}, conf...)...)
	out := r.stdout + r.stderr
	if r.code != 1 || !strings.Contains(out, `column name VARCHAR(5) of people (first at `+filepath.Join(landing, "2.json")+`:2: "Annabel", 7 characters): Exceeds char/varchar type length limitation: 5`) || !strings.Contains(out, "nothing of this batch was applied") {
		t.Fatalf("exit %d, want 1 and the length error:\n%s", r.code, out)
	}
	assertRows(t, "people after the failed batch", show("people"), want)
}
