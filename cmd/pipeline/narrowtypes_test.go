package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeclaredNarrowTypes: a declared schema takes Spark's FLOAT (REAL), SMALLINT (SHORT) and
// TINYINT (BYTE). A FLOAT value is the nearest float32 (0.1 reads back as 0.1; beyond its range an
// infinity, as Spark's readers parse a FloatType value); a SMALLINT or TINYINT value beyond the
// type's range does not fit (NULL and a WARN), from JSON numbers and CSV alike (a JSON string
// fits none of them, as in Spark's JSON reader).
// An APPLY CHANGES target keyed by a SMALLINT keeps the types, and the tables' schemas name them
// as Spark does (short, byte, float).
func TestDeclaredNarrowTypes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "j"), "a.json", `{"op":"I","id":1,"f":0.1,"s":300,"t":-7,"seq":1}
{"op":"I","id":2,"f":3.5e39,"s":40000,"t":200,"seq":2}
{"op":"U","id":1,"f":2.5,"s":-32768,"t":127,"seq":3}
{"op":"I","id":70000,"f":1,"s":1,"t":1,"seq":4}
`)
	writeFile(t, filepath.Join(tmp, "c"), "a.csv", "id,f,s,t\n1,0.1,300,-7\n2,-1e40,-32769,-128\n")
	spec := filepath.Join(tmp, "pipeline.yaml")
	writeFile(t, tmp, "pipeline.yaml", `name: narrow
storage: ./storage
datasets:
  - name: j
    source: {path: ./j, format: json, schema: "op STRING, id SMALLINT, f FLOAT, s SMALLINT, t TINYINT, seq BIGINT"}
  - name: c
    source: {path: ./c, format: csv, options: {header: "true"}, schema: "id INT, f REAL, s SHORT, t BYTE"}
  - name: tgt
    apply_changes: {source: j, keys: [id], sequence_by: seq, except_column_list: [op]}
    expectations:
      - {name: has_id, expect: id != nil, on_violation: drop}
`)
	out := mustRun(t, "run", spec)
	for _, w := range []string{
		"40000 does not fit SMALLINT", "200 does not fit TINYINT", "70000 does not fit SMALLINT", "-32769 does not fit SMALLINT",
	} {
		if ev := mustRun(t, "events", spec, "--level", "WARN"); !strings.Contains(ev, w) {
			t.Errorf("no WARN saying %q:\n%s\n%s", w, ev, out)
		}
	}
	show := func(ds string) string {
		var lines []string
		for _, r := range readJSONL(t, mustRun(t, "show", spec, ds, "--format", "jsonl")) {
			lines = append(lines, fmt.Sprintf("%v %v %v %v", r["id"], r["f"], r["s"], r["t"]))
		}
		return strings.Join(lines, "; ")
	}
	// The id that does not fit is NULL in j; tgt's expectation drops that event. A FLOAT prints
	// as Spark's to_json writes it (Float.toString): 1.0.
	if got, want := show("j"), "1 0.1 300 -7; 2 Infinity <nil> <nil>; 1 2.5 -32768 127; <nil> 1.0 1 1"; got != want {
		t.Errorf("j: %s\nwant %s", got, want)
	}
	if got, want := show("c"), "1 0.1 300 -7; 2 -Infinity <nil> -128"; got != want {
		t.Errorf("c: %s\nwant %s", got, want)
	}
	if got, want := show("tgt"), "1 2.5 -32768 127; 2 Infinity <nil> <nil>"; got != want {
		t.Errorf("tgt: %s\nwant %s", got, want)
	}
	for ds, want := range map[string]string{
		"j":   `{"op":"string","id":"short","f":"float","s":"short","t":"byte","seq":"long"}`,
		"c":   `{"id":"integer","f":"float","s":"short","t":"byte"}`,
		"tgt": `{"id":"short","f":"float","s":"short","t":"byte","seq":"long"}`,
	} {
		if got := schemaTypes(t, filepath.Join(tmp, "storage", "tables", ds)); got != want {
			t.Errorf("%s: schema types %s, want %s", ds, got, want)
		}
	}
}

// schemaTypes returns the column types of the Delta table at dir as its first commit's
// schemaString names them, as a JSON object in column order.
func schemaTypes(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var a struct {
			MetaData *struct {
				SchemaString string `json:"schemaString"`
			} `json:"metaData"`
		}
		if json.Unmarshal([]byte(line), &a) != nil || a.MetaData == nil {
			continue
		}
		var s struct {
			Fields []struct {
				Name string `json:"name"`
				Type any    `json:"type"`
			} `json:"fields"`
		}
		if err := json.Unmarshal([]byte(a.MetaData.SchemaString), &s); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, f := range s.Fields {
			parts = append(parts, fmt.Sprintf("%q:%q", f.Name, fmt.Sprint(f.Type)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	t.Fatalf("%s: no metaData in the first commit", dir)
	return ""
}
