package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// cdcDir is a pipeline folder with a landing folder, for the tests of APPLY CHANGES from
// sources whose columns are known only when an update runs.
type cdcDir struct {
	t         *testing.T
	dir, spec string
}

func newCDCDir(t *testing.T, specText string) *cdcDir {
	t.Helper()
	d := &cdcDir{t: t, dir: t.TempDir()}
	d.spec = filepath.Join(d.dir, "pipeline.yaml")
	if err := os.MkdirAll(filepath.Join(d.dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.write(d.spec, specText)
	return d
}

// write writes text to the file name.
func (d *cdcDir) write(name, text string) {
	d.t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// land writes text to the landing folder's file name.
func (d *cdcDir) land(name, text string) { d.write(filepath.Join(d.dir, "landing", name), text) }

// show returns the rows of dataset ds.
func (d *cdcDir) show(ds string) []map[string]any {
	d.t.Helper()
	return readJSONL(d.t, mustRun(d.t, "show", d.spec, ds, "--format", "jsonl"))
}

// firstChanges and lateChanges are the change events of both tests: ids 1 and 2 inserted, 1
// updated; then a late update of 1 (seq 2, before its seq 3), which changes its history only,
// and a delete of 2.
const (
	firstChanges = `{"op":"I","id":1,"name":"Ann","seq":1}
{"op":"I","id":2,"name":"Bo","seq":2}
{"op":"U","id":1,"name":"Anne","seq":3}
`
	lateChanges = `{"op":"U","id":1,"name":"An","seq":2}
{"op":"D","id":2,"seq":4}
`
)

// checkTargets checks customers (SCD type 1) and customers_history (SCD type 2) after
// firstChanges, and, late, after lateChanges too (semantics.md "APPLY CHANGES"); name is how the
// flow's source spells the names.
func (d *cdcDir) checkTargets(late bool, name func(string) string) {
	d.t.Helper()
	row := func(format string, names ...any) string {
		for i, n := range names {
			names[i] = name(n.(string))
		}
		return fmt.Sprintf(format, names...)
	}
	if !late {
		assertRows(d.t, "customers", d.show("customers"), rowsOf(d.t,
			row(`{"id":1,"name":"%s","seq":3}`, "Anne"),
			row(`{"id":2,"name":"%s","seq":2}`, "Bo")))
		assertRows(d.t, "customers_history", d.show("customers_history"), rowsOf(d.t,
			row(`{"id":1,"name":"%s","seq":1,"__START_AT":1,"__END_AT":3}`, "Ann"),
			row(`{"id":1,"name":"%s","seq":3,"__START_AT":3,"__END_AT":null}`, "Anne"),
			row(`{"id":2,"name":"%s","seq":2,"__START_AT":2,"__END_AT":null}`, "Bo")))
		return
	}
	want := rowsOf(d.t, row(`{"id":1,"name":"%s","seq":3}`, "Anne"))
	assertRows(d.t, "customers", d.show("customers"), want)
	assertRows(d.t, "customers_history", d.show("customers_history"), rowsOf(d.t,
		row(`{"id":1,"name":"%s","seq":1,"__START_AT":1,"__END_AT":2}`, "Ann"),
		row(`{"id":1,"name":"%s","seq":2,"__START_AT":2,"__END_AT":3}`, "An"),
		row(`{"id":1,"name":"%s","seq":3,"__START_AT":3,"__END_AT":null}`, "Anne"),
		row(`{"id":2,"name":"%s","seq":2,"__START_AT":2,"__END_AT":4}`, "Bo")))
	if dc := os.Getenv("DELTACHECK"); dc != "" {
		got, err := exec.Command(dc, "rows", filepath.Join(d.dir, "storage", "tables", "customers")).Output()
		if err != nil {
			d.t.Fatalf("deltacheck rows: %v", err)
		}
		assertRows(d.t, "deltacheck rows customers", readJSONL(d.t, string(got)), want)
	}
}

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
	d := newCDCDir(t, inferredApplySpec)
	dir, spec, write, show := d.dir, d.spec, d.write, d.show
	d.land("1.json", firstChanges)
	out := mustRun(t, "validate", spec)
	if !strings.Contains(out, "note: dataset customers: its keys, sequence_by and column lists are checked against the columns of dataset bronze when an update infers them (bronze declares no `schema:`)") {
		t.Errorf("validate:\n%s", out)
	}
	mustRun(t, "run", spec)
	same := func(s string) string { return s }
	d.checkTargets(false, same)
	d.land("2.json", lateChanges)
	mustRun(t, "run", spec)
	d.checkTargets(true, same)

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
	// The update that adds the column leaves it out of the targets, and says so.
	if warns := mustRun(t, "events", spec, "--update", "latest", "--level", "WARN"); !strings.Contains(warns, "column(s) city of bronze are not columns of customers, whose columns were fixed when its table was created: their values are left out; run ") ||
		!strings.Contains(warns, "--full-refresh customers` to rebuild it with them, or add them to except_column_list") {
		t.Errorf("WARN events of the update that adds city:\n%s", warns)
	}
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

// queryApplySpec cleans a bronze change log in a query streaming table and applies it to SCD type
// 1 and 2 targets (Delta Live Tables' APPLY CHANGES FROM STREAM(silver)), with a materialized
// view over the SCD type 2 target.
const queryApplySpec = `name: query_cdc
storage: ./storage
datasets:
  - name: bronze
    source: {path: ./landing, format: json, schema: "op STRING, id BIGINT, name STRING, seq BIGINT"}
  - name: clean
    type: streaming_table
    query: SELECT op, id, upper(trim(name)) AS name, seq FROM STREAM(bronze) WHERE id IS NOT NULL
  - name: customers
    apply_changes: {source: clean, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op]}
  - name: customers_history
    apply_changes: {source: clean, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op], stored_as_scd_type: 2}
  - name: versions
    type: materialized_view
    query: SELECT id, count(*) AS n FROM customers_history GROUP BY id
`

// TestApplyChangesFromQuerySource: APPLY CHANGES reads a query streaming table. Its first update
// has no table of the query's at set-up: the targets are set up by their flows, after the
// query's, with its columns; an update whose query made no table yet leaves them idle; a key
// the query's columns lack fails the flow at its place in the spec; later updates apply late
// and deleting events as with any source (semantics.md "APPLY CHANGES"); a materialized view is
// refused as a source.
func TestApplyChangesFromQuerySource(t *testing.T) {
	t.Parallel()
	// A key the query does not return: a spec error at its place, against the columns the query
	// binds to, before anything runs.
	d := newCDCDir(t, strings.Replace(queryApplySpec, "{source: clean, keys: [id]", "{source: clean, keys: [customer_id]", 1))
	dir, spec, write, show := d.dir, d.spec, d.write, d.show
	d.land("1.json", firstChanges+`{"op":"I","id":null,"name":"nobody","seq":1}`+"\n")
	for _, cmd := range []string{"validate", "run"} {
		r := pipeline(t, nil, cmd, spec)
		if r.code != 2 || !strings.Contains(r.stderr, "pipeline.yaml:10:43: datasets[2].apply_changes.keys[0]: unknown column customer_id: dataset clean has no such column (hint: columns: op, id, name, seq)") {
			t.Fatalf("%s with a misfit key: exit %d\n%s", cmd, r.code, r.stderr)
		}
	}
	write(spec, queryApplySpec)
	if out := mustRun(t, "validate", spec); strings.Contains(out, "note:") {
		t.Errorf("validate:\n%s", out)
	}
	mustRun(t, "run", spec)
	d.checkTargets(false, strings.ToUpper)
	d.land("2.json", lateChanges)
	mustRun(t, "run", spec)
	d.checkTargets(true, strings.ToUpper)
	assertRows(t, "versions", show("versions"), rowsOf(t, `{"id":1,"n":3}`, `{"id":2,"n":1}`))

	// A materialized view is no change log.
	mv := filepath.Join(dir, "mv.yaml")
	write(mv, strings.Replace(queryApplySpec, "    type: streaming_table\n    query: SELECT op, id, upper(trim(name)) AS name, seq FROM STREAM(bronze)", "    type: materialized_view\n    query: SELECT op, id, upper(trim(name)) AS name, seq FROM bronze", 1))
	r := pipeline(t, nil, "validate", mv)
	if r.code != 2 || !strings.Contains(r.stderr+r.stdout, "mv.yaml:10:29: datasets[2].apply_changes.source: apply_changes reads an append-only change log, but clean is a materialized_view, whose updates recompute its rows") {
		t.Errorf("validate with a materialized view source: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestApplyChangesFromQueryWithoutRows: in a first update whose query streaming table reads no
// row (its source has no file yet), its APPLY CHANGES targets are set up by their flows, empty,
// and IDLE; the update after the first file lands fills them.
func TestApplyChangesFromQueryWithoutRows(t *testing.T) {
	t.Parallel()
	d := newCDCDir(t, queryApplySpec)
	out := summaryOf(mustRun(t, "run", d.spec))
	for _, ds := range []string{"customers", "customers_history"} {
		if !regexp.MustCompile(`(?m)^  ` + ds + ` +IDLE`).MatchString(out) {
			t.Errorf("first update: %s not IDLE:\n%s", ds, out)
		}
		if rows := d.show(ds); len(rows) != 0 {
			t.Errorf("%s: %v, want no row", ds, rows)
		}
	}
	d.land("1.json", `{"op":"I","id":7,"name":"x","seq":1}`+"\n")
	mustRun(t, "run", d.spec)
	assertRows(t, "customers", d.show("customers"), rowsOf(t, `{"id":7,"name":"X","seq":1}`))
}

// TestApplyChangesTextSequenceWarns: a CSV source whose schema is inferred types every column
// STRING by default, so its sequence_by orders events as text ("10" before "9"): the flow says
// so in a WARN with the schema_hints and full refresh to write, which, followed, orders them as
// numbers (semantics.md "APPLY CHANGES": the latest by sequence_by wins).
func TestApplyChangesTextSequenceWarns(t *testing.T) {
	t.Parallel()
	spec := `name: csv_cdc
storage: ./storage
datasets:
  - name: bronze
    source: {path: ./landing, format: csv, options: {header: true}#HINTS}
  - name: s
    apply_changes: {source: bronze, keys: [id], sequence_by: seq, except_column_list: [op, _rescued_data]}
`
	d := newCDCDir(t, strings.Replace(spec, "#HINTS", "", 1))
	d.land("a.csv", "op,id,name,seq\nI,1,a,9\nU,1,b,10\n")
	mustRun(t, "run", d.spec)
	// As text, "9" is the latest.
	assertRows(t, "s as text", d.show("s"), rowsOf(t, `{"id":"1","name":"a","seq":"9"}`))
	warns := mustRun(t, "events", d.spec, "--update", "latest", "--level", "WARN")
	if !strings.Contains(warns, "sequence_by seq of s is STRING, as CSV schema inference types every column by default: events are ordered as text (\"10\" before \"9\"); give it a type with `schema_hints: \"seq BIGINT\"` (or `options: {infer_column_types: true}`) on bronze, then run ") ||
		!strings.Contains(warns, "--full-refresh bronze,s`") {
		t.Fatalf("WARN events:\n%s", warns)
	}
	d.write(d.spec, strings.Replace(spec, "#HINTS", `, schema_hints: "seq BIGINT"`, 1))
	mustRun(t, "run", d.spec, "--full-refresh", "bronze,s")
	assertRows(t, "s as numbers", d.show("s"), rowsOf(t, `{"id":"1","name":"b","seq":10}`))
	if warns := mustRun(t, "events", d.spec, "--update", "latest", "--level", "WARN"); strings.Contains(warns, "sequence_by") {
		t.Errorf("WARN with schema_hints:\n%s", warns)
	}
}

// TestApplyChangesFromQueryNullKeyHint: a NULL key from a query streaming table fails the flow
// with the full refresh that reads the input files again: of the file source the query reads,
// not only of the query's table (which a refresh would fill from the same bronze rows); followed
// after fixing the file, it applies the fixed events.
func TestApplyChangesFromQueryNullKeyHint(t *testing.T) {
	t.Parallel()
	d := newCDCDir(t, queryApplySpec)
	d.land("1.json", `{"op":"I","id":1,"name":"a","seq":1}`+"\n"+`{"op":"U","id":null,"name":"b","seq":2}`+"\n")
	// The query keeps the NULL key: drop its filter.
	d.write(d.spec, strings.Replace(queryApplySpec, " WHERE id IS NOT NULL", "", 1))
	r := pipeline(t, nil, "run", d.spec)
	if r.code != 1 || !strings.Contains(r.stderr, "the events are already in clean, so fixing the input files needs ") ||
		!strings.Contains(r.stderr, "--full-refresh bronze,clean,customers,customers_history,versions`") {
		t.Fatalf("run with a NULL key: exit %d\n%s", r.code, r.stderr)
	}
	d.land("1.json", `{"op":"I","id":1,"name":"a","seq":1}`+"\n"+`{"op":"U","id":2,"name":"b","seq":2}`+"\n")
	mustRun(t, "run", d.spec, "--full-refresh", "bronze,clean,customers,customers_history,versions")
	assertRows(t, "customers", d.show("customers"), rowsOf(t, `{"id":1,"name":"A","seq":1}`, `{"id":2,"name":"B","seq":2}`))
}
