package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
)

const nestedSpec = `name: nested
storage: ./storage
datasets:
  - name: declared
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, user STRUCT<name: STRING, langs: ARRAY<STRING>>, events ARRAY<STRUCT<t: BIGINT, kv: MAP<STRING, STRING>>>"
  - name: inferred
    source:
      path: ./landing
      format: json
      options: {infer_column_types: true}
  - name: summary
    query: SELECT id, tags, attrs, len(tags) AS n_tags, cardinality(attrs) AS n_attrs, "user".langs AS langs, events[1].kv AS first_kv FROM declared
`

const nestedInput = `{"id": 1, "tags": ["a", "b"], "attrs": {"y": 2, "x": 1}, "user": {"name": "Ann", "langs": ["fr", "en"]}, "events": [{"t": 10, "kv": {"k": "v"}}, {"t": 11, "kv": {}}]}
{"id": 2, "tags": [], "attrs": {}, "user": {"name": "Bo", "langs": []}, "events": []}
{"id": 3, "tags": [null, "c"], "attrs": {"z": null}, "user": null, "events": [null, {"t": null, "kv": null}]}
{"id": 4}
`

// sortedLines returns the non-empty lines of text, sorted.
func sortedLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// canonicalJSON re-encodes each JSON line with object keys sorted and numbers as written.
func canonicalJSON(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		dec := json.NewDecoder(strings.NewReader(l))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// TestNestedEndToEnd runs a pipeline whose JSON source has nested arrays, maps and structs, read
// with a declared schema and with an inferred one, and a materialized view over them; `pipeline
// show` prints them as JSON arrays and objects, the tables have the nested types, and the
// independent reader (DuckDB over our Parquet files) reads the same rows.
func TestNestedEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(spec, []byte(nestedSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "a.json"), []byte(nestedInput), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "run", spec)

	want := map[string][]string{
		"declared": {
			`{"id":1,"tags":["a","b"],"attrs":{"x":1,"y":2},"user":{"name":"Ann","langs":["fr","en"]},"events":[{"t":10,"kv":{"k":"v"}},{"t":11,"kv":{}}]}`,
			`{"id":2,"tags":[],"attrs":{},"user":{"name":"Bo","langs":[]},"events":[]}`,
			`{"id":3,"tags":[null,"c"],"attrs":{"z":null},"user":null,"events":[null,{"t":null,"kv":null}]}`,
			`{"id":4,"tags":null,"attrs":null,"user":null,"events":null}`,
		},
		// Inferred as Spark infers JSON: objects STRUCT (fields sorted by name), arrays ARRAY.
		"inferred": {
			`{"attrs":{"x":1,"y":2,"z":null},"events":[{"kv":{"k":"v"},"t":10},{"kv":{"k":null},"t":11}],"id":1,"tags":["a","b"],"user":{"langs":["fr","en"],"name":"Ann"},"_rescued_data":null}`,
			`{"attrs":{"x":null,"y":null,"z":null},"events":[],"id":2,"tags":[],"user":{"langs":[],"name":"Bo"},"_rescued_data":null}`,
			`{"attrs":{"x":null,"y":null,"z":null},"events":[null,{"kv":null,"t":null}],"id":3,"tags":[null,"c"],"user":null,"_rescued_data":null}`,
			`{"attrs":null,"events":null,"id":4,"tags":null,"user":null,"_rescued_data":null}`,
		},
		"summary": {
			`{"id":1,"tags":["a","b"],"attrs":{"x":1,"y":2},"n_tags":2,"n_attrs":2,"langs":["fr","en"],"first_kv":{"k":"v"}}`,
			`{"id":2,"tags":[],"attrs":{},"n_tags":0,"n_attrs":0,"langs":[],"first_kv":null}`,
			`{"id":3,"tags":[null,"c"],"attrs":{"z":null},"n_tags":2,"n_attrs":1,"langs":null,"first_kv":null}`,
			`{"id":4,"tags":null,"attrs":null,"n_tags":null,"n_attrs":null,"langs":null,"first_kv":null}`,
		},
	}
	schemas := map[string]string{
		"declared": "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, user STRUCT<name: STRING, langs: ARRAY<STRING>>, events ARRAY<STRUCT<t: BIGINT, kv: MAP<STRING, STRING>>>",
		"inferred": "attrs STRUCT<x: BIGINT, y: BIGINT, z: STRING>, events ARRAY<STRUCT<kv: STRUCT<k: STRING>, t: BIGINT>>, id BIGINT, tags ARRAY<STRING>, user STRUCT<langs: ARRAY<STRING>, name: STRING>, _rescued_data STRING",
		"summary":  "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, n_tags BIGINT, n_attrs BIGINT, langs ARRAY<STRING>, first_kv MAP<STRING, STRING>",
	}
	for ds, rows := range want {
		// jsonl: keys in column order, nested values as JSON arrays and objects.
		got := sortedLines(mustRun(t, "show", spec, ds, "--format", "jsonl"))
		for i, l := range got {
			got[i] = strings.NewReplacer(`": `, `":`, `, "`, `,"`).Replace(l)
		}
		w := append([]string(nil), rows...)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s rows:\n%s\nwant:\n%s", ds, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
		tableDir := filepath.Join(dir, "storage", "tables", ds)
		snap, err := delta.New(tableDir).Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Metadata.Schema.DDL(); got != schemas[ds] {
			t.Errorf("%s schema %s\nwant %s", ds, got, schemas[ds])
		}
		if dc := os.Getenv("DELTACHECK"); dc != "" {
			out, err := exec.Command(dc, "rows", tableDir).Output()
			if err != nil {
				t.Fatalf("deltacheck rows %s: %v", ds, err)
			}
			if got, w := canonicalJSON(t, sortedLines(string(out))), canonicalJSON(t, rows); !slices.Equal(got, w) {
				t.Errorf("%s: deltacheck rows:\n%s\nwant:\n%s", ds, strings.Join(got, "\n"), strings.Join(w, "\n"))
			}
		}
	}

	// The table output prints nested values as JSON text.
	table := mustRun(t, "show", spec, "declared", "--format", "table")
	for _, want := range []string{`["a","b"]`, `{"x":1,"y":2}`, `{"name":"Ann","langs":["fr","en"]}`, `[null,{"t":null,"kv":null}]`} {
		if !strings.Contains(table, want) {
			t.Errorf("table output lacks %s:\n%s", want, table)
		}
	}
}
