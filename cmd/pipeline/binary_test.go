package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// binarySpec ingests JSON change events with BINARY key and payload (base64 in the JSON, as
// Spark's JSON reader reads BinaryType), applies them to an SCD type 1 and an SCD type 2 target
// keyed by the BINARY column, and computes a SQL materialized view over the SCD type 1 target.
const binarySpec = `name: bin
storage: ${storage}
datasets:
  - name: blobs_changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, k BINARY, payload BINARY, seq BIGINT"
  - name: blobs
    apply_changes:
      source: blobs_changes
      keys: [k]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
  - name: blobs_history
    apply_changes:
      source: blobs_changes
      keys: [k]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
      stored_as_scd_type: 2
      track_history_column_list: [payload]
  - name: sizes
    type: materialized_view
    query: SELECT k, payload, octet_length(payload) AS n, hex(payload) AS h FROM LIVE.blobs
`

// TestBinaryEndToEnd: BINARY columns from JSON (base64 "AQL/" is the bytes 01 02 FF) through a
// streaming table, APPLY CHANGES keyed by a BINARY column (SCD type 1 and 2, the BINARY payload
// tracked) and a SQL materialized view (DuckDB's BLOB: octet_length and hex of the bytes).
// `pipeline show` prints BINARY as Spark's show does ([01 02 FF]) in a table and as base64 in
// jsonl and csv, as does `changes`; every table's schemaString has type binary, and the
// independent reader (DuckDB over the Parquet files) reads the same bytes.
func TestBinaryEndToEnd(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(binarySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	landing := filepath.Join(tmp, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(tmp, "storage")
	conf := []string{"--conf", "storage=" + storage}
	batch := func(name string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(landing, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"run", file}, conf...)...)
	}
	// Keys 01, 02, 03; payloads 01 02 FF, no bytes, "hi" (68 69).
	batch("1.json",
		`{"op":"I","k":"AQ==","payload":"AQL/","seq":1}`,
		`{"op":"I","k":"Ag==","payload":"","seq":1}`,
		`{"op":"I","k":"Aw==","payload":"aGk=","seq":1}`)
	// 01 gets payload FF, 02 is deleted, 03 gets the payload it has (a new seq only).
	batch("2.json",
		`{"op":"U","k":"AQ==","payload":"/w==","seq":2}`,
		`{"op":"D","k":"Ag==","seq":2}`,
		`{"op":"U","k":"Aw==","payload":"aGk=","seq":2}`)

	show := func(ds string, format ...string) string {
		t.Helper()
		return mustRun(t, append(append([]string{"show", file, ds}, format...), conf...)...)
	}
	assertRows(t, "blobs", readJSONL(t, show("blobs", "--format", "jsonl")), rowsOf(t,
		`{"k": "AQ==", "payload": "/w==", "seq": 2}`,
		`{"k": "Aw==", "payload": "aGk=", "seq": 2}`))
	assertRows(t, "blobs_history", readJSONL(t, show("blobs_history", "--format", "jsonl")), rowsOf(t,
		`{"k": "AQ==", "payload": "AQL/", "seq": 1, "__START_AT": 1, "__END_AT": 2}`,
		`{"k": "AQ==", "payload": "/w==", "seq": 2, "__START_AT": 2, "__END_AT": null}`,
		`{"k": "Ag==", "payload": "", "seq": 1, "__START_AT": 1, "__END_AT": 2}`,
		`{"k": "Aw==", "payload": "aGk=", "seq": 2, "__START_AT": 1, "__END_AT": null}`))
	assertRows(t, "sizes", readJSONL(t, show("sizes", "--format", "jsonl")), rowsOf(t,
		`{"k": "AQ==", "payload": "/w==", "n": 1, "h": "FF"}`,
		`{"k": "Aw==", "payload": "aGk=", "n": 2, "h": "6869"}`))

	table := show("blobs_history")
	for _, w := range []string{"[01] | [01 02 FF] | 1", "[01] | [FF]       | 2", "[02] | []", "[03] | [68 69]"} {
		if !strings.Contains(table, w) {
			t.Errorf("show (table) lacks %q:\n%s", w, table)
		}
	}
	if got, want := show("blobs", "--format", "csv"), "k,payload,seq\nAQ==,/w==,2\nAw==,aGk=,2\n"; got != want {
		t.Errorf("show --format csv:\n%s\nwant:\n%s", got, want)
	}
	changes := readJSONL(t, mustRun(t, append([]string{"changes", file, "blobs", "--from-version", "2", "--format", "jsonl"}, conf...)...))
	for _, c := range changes {
		delete(c, "_commit_timestamp")
	}
	assertRows(t, "changes of blobs", changes, rowsOf(t,
		`{"k": "AQ==", "payload": "AQL/", "seq": 1, "_change_type": "update_preimage", "_commit_version": 2}`,
		`{"k": "AQ==", "payload": "/w==", "seq": 2, "_change_type": "update_postimage", "_commit_version": 2}`,
		`{"k": "Ag==", "payload": "", "seq": 1, "_change_type": "delete", "_commit_version": 2}`,
		`{"k": "Aw==", "payload": "aGk=", "seq": 1, "_change_type": "update_preimage", "_commit_version": 2}`,
		`{"k": "Aw==", "payload": "aGk=", "seq": 2, "_change_type": "update_postimage", "_commit_version": 2}`))

	for _, ds := range []string{"blobs_changes", "blobs", "blobs_history", "sizes"} {
		log, err := os.ReadFile(filepath.Join(storage, "tables", ds, "_delta_log", "00000000000000000000.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"k", "payload"} {
			if w := `{\"name\":\"` + col + `\",\"type\":\"binary\",\"nullable\":true,\"metadata\":{}}`; !strings.Contains(string(log), w) {
				t.Errorf("%s: the schemaString lacks %s", ds, w)
			}
		}
	}
	if os.Getenv("DELTACHECK") == "" {
		return
	}
	// DuckDB prints a BLOB as its text, a byte that is not printable ASCII as \xHH.
	assertRows(t, "deltacheck blobs_history", deltacheckRows(t, filepath.Join(storage, "tables", "blobs_history")), rowsOf(t,
		`{"k": "\\x01", "payload": "\\x01\\x02\\xFF", "seq": 1, "__START_AT": 1, "__END_AT": 2}`,
		`{"k": "\\x01", "payload": "\\xFF", "seq": 2, "__START_AT": 2, "__END_AT": null}`,
		`{"k": "\\x02", "payload": "", "seq": 1, "__START_AT": 1, "__END_AT": 2}`,
		`{"k": "\\x03", "payload": "hi", "seq": 2, "__START_AT": 1, "__END_AT": null}`))
	assertRows(t, "deltacheck sizes", deltacheckRows(t, filepath.Join(storage, "tables", "sizes")), rowsOf(t,
		`{"k": "\\x01", "payload": "\\xFF", "n": 1, "h": "FF"}`,
		`{"k": "\\x03", "payload": "hi", "n": 2, "h": "6869"}`))
}
