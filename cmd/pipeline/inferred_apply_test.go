package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inferredApplySpec is a bronze streaming table that infers its schema from JSON lines, read by
// an SCD type 1 and an SCD type 2 APPLY CHANGES flow (as Auto Loader feeds APPLY CHANGES in Delta
// Live Tables, with no schema declared).
const inferredApplySpec = `name: inferred_cdc
storage: ./storage
datasets:
  - name: bronze
    source:
      path: ./landing
      format: json
  - name: customers
    apply_changes:
      source: bronze
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op, _rescued_data]
  - name: customers_history
    apply_changes:
      source: bronze
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op, _rescued_data]
      stored_as_scd_type: 2
`

// TestApplyChangesFromInferredSource: APPLY CHANGES reads a bronze table whose schema is
// inferred. validate says its checks wait for the inferred columns; the first update infers them
// (JSON columns sorted by name, integers BIGINT) and the targets take them, less
// except_column_list; a later update's late and deleting events apply as with a declared schema
// (semantics.md "APPLY CHANGES"); a key that is not among the inferred columns fails the update
// at its place in the spec; and a column that a later file adds to the bronze table (its schema
// evolves, addNewColumns) makes the targets' next set-up ask for their full refresh, which
// rebuilds them with it.
func TestApplyChangesFromInferredSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "pipeline.yaml")
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(spec, inferredApplySpec)
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "landing", "1.json"), `{"op":"I","id":1,"name":"Ann","seq":1}
{"op":"I","id":2,"name":"Bo","seq":2}
{"op":"U","id":1,"name":"Anne","seq":3}
`)
	out := mustRun(t, "validate", spec)
	if !strings.Contains(out, "note: dataset customers: its keys, sequence_by and column lists are checked against the columns of dataset bronze when an update infers them (bronze declares no `schema:`)") {
		t.Errorf("validate:\n%s", out)
	}
	mustRun(t, "run", spec)
	show := func(ds string) []map[string]any {
		t.Helper()
		return readJSONL(t, mustRun(t, "show", spec, ds, "--format", "jsonl"))
	}
	assertRows(t, "customers", show("customers"), rowsOf(t,
		`{"id":1,"name":"Anne","seq":3}`,
		`{"id":2,"name":"Bo","seq":2}`))
	assertRows(t, "customers_history", show("customers_history"), rowsOf(t,
		`{"id":1,"name":"Ann","seq":1,"__START_AT":1,"__END_AT":3}`,
		`{"id":1,"name":"Anne","seq":3,"__START_AT":3,"__END_AT":null}`,
		`{"id":2,"name":"Bo","seq":2,"__START_AT":2,"__END_AT":null}`))

	// A late update of 1 (seq 2, before its seq 3) changes its history only; 2 is deleted.
	write(filepath.Join(dir, "landing", "2.json"), `{"op":"U","id":1,"name":"An","seq":2}
{"op":"D","id":2,"seq":4}
`)
	mustRun(t, "run", spec)
	assertRows(t, "customers", show("customers"), rowsOf(t, `{"id":1,"name":"Anne","seq":3}`))
	assertRows(t, "customers_history", show("customers_history"), rowsOf(t,
		`{"id":1,"name":"Ann","seq":1,"__START_AT":1,"__END_AT":2}`,
		`{"id":1,"name":"An","seq":2,"__START_AT":2,"__END_AT":3}`,
		`{"id":1,"name":"Anne","seq":3,"__START_AT":3,"__END_AT":null}`,
		`{"id":2,"name":"Bo","seq":2,"__START_AT":2,"__END_AT":4}`))
	if dc := os.Getenv("DELTACHECK"); dc != "" {
		got, err := exec.Command(dc, "rows", filepath.Join(dir, "storage", "tables", "customers")).Output()
		if err != nil {
			t.Fatalf("deltacheck rows: %v", err)
		}
		assertRows(t, "deltacheck rows customers", readJSONL(t, string(got)), rowsOf(t, `{"id":1,"name":"Anne","seq":3}`))
	}

	// A key the inferred columns lack: the problem at its place, as validate gives one.
	bad := filepath.Join(dir, "bad.yaml")
	write(bad, "name: inferred_cdc\nstorage: ./storage\ndatasets:\n  - name: bronze\n    source: {path: ./landing, format: json}\n"+
		"  - name: misfit\n    apply_changes: {source: bronze, keys: [customer_id], sequence_by: seq}\n")
	r := pipeline(t, nil, "run", bad)
	if r.code != 1 || !strings.Contains(r.stderr, "bad.yaml:7:44: datasets[1].apply_changes.keys[0]: unknown column customer_id: dataset bronze has no such column (hint: columns: id, name, op, seq, _rescued_data)") {
		t.Errorf("run with a misfit key: exit %d\n%s", r.code, r.stderr)
	}

	// A new column: bronze takes it; the targets' columns are fixed until a full refresh.
	write(filepath.Join(dir, "landing", "3.json"), `{"op":"U","id":1,"name":"Anne","seq":5,"city":"Lyon"}
`)
	mustRun(t, "run", spec)
	r = pipeline(t, nil, "run", spec)
	if r.code != 1 || !strings.Contains(r.stderr, "dataset customers: the schema changed (column city is new)") ||
		!strings.Contains(r.stderr, "but the columns inferred for its source bronze now give (id BIGINT, name STRING, seq BIGINT, city STRING)") ||
		!strings.Contains(r.stderr, "--full-refresh customers,customers_history") {
		t.Errorf("run after a new column: exit %d\n%s", r.code, r.stderr)
	}
	mustRun(t, "run", spec, "--full-refresh", "customers,customers_history")
	assertRows(t, "customers after its full refresh", show("customers"), rowsOf(t, `{"city":"Lyon","id":1,"name":"Anne","seq":5}`))
	assertRows(t, "customers_history after its full refresh", show("customers_history"), rowsOf(t,
		`{"city":null,"id":1,"name":"Ann","seq":1,"__START_AT":1,"__END_AT":2}`,
		`{"city":null,"id":1,"name":"An","seq":2,"__START_AT":2,"__END_AT":3}`,
		`{"city":null,"id":1,"name":"Anne","seq":3,"__START_AT":3,"__END_AT":5}`,
		`{"city":"Lyon","id":1,"name":"Anne","seq":5,"__START_AT":5,"__END_AT":null}`,
		`{"city":null,"id":2,"name":"Bo","seq":2,"__START_AT":2,"__END_AT":4}`))
}
