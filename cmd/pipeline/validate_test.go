package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const badSpec = `name: broken
storage: ./_storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
      sheme: oops
    expectations:
      - {name: valid_op, expect: 'op in ["I", "U"', on_violation: drop}
  - name: items
    apply_changes:
      source: chnges
      keys: [id]
      sequence_by: seq
  - name: a
    apply_changes:
      source: b
      keys: [id]
      sequence_by: seq
  - name: b
    apply_changes:
      source: a
      keys: [id]
      sequence_by: seq
`

// TestValidateReportsEveryProblem checks that one `pipeline validate` run reports an unknown key
// (with a hint), an expression that does not compile, an unknown reference and a cycle, each with
// file:line:column, and exits 2.
func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(spec, []byte(badSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"validate", "dry-run", "run"} {
		r := pipeline(t, nil, verb, spec)
		if r.code != 2 {
			t.Fatalf("%s: exit %d, want 2\n%s%s", verb, r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{
			"pipeline.yaml:9:7:",   // unknown key sheme
			"schema",               // its did-you-mean hint
			"pipeline.yaml:11:",    // the expression
			"pipeline.yaml:14:15:", // unknown dataset chnges
			"changes",              // its hint
			"cycle",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", verb, want, r.stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "_storage")); err == nil {
		t.Error("an invalid spec must not create the storage folder")
	}
}

// TestUsageErrors checks exit status 2 for command-line mistakes.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run"},
		{"show", exampleSpec},
		{"graph", exampleSpec, "--format", "png"},
		{"run", exampleSpec, "--conf", "novalue"},
		{"run", "/nonexistent/pipeline.yaml"},
	} {
		if r := pipeline(t, nil, args...); r.code != 2 {
			t.Errorf("pipeline %v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
}

// TestGraph checks the three graph formats on the example.
func TestGraph(t *testing.T) {
	t.Parallel()
	for format, want := range map[string]string{"text": "orders", "dot": "digraph", "mermaid": "flowchart"} {
		out := mustRun(t, "graph", exampleSpec, "--format", format)
		if !strings.Contains(out, want) || !strings.Contains(out, "orders_changes") {
			t.Errorf("graph --format %s:\n%s", format, out)
		}
	}
}

// TestValidateSQLSyntax: a query that does not parse is a spec error (exit 2) at its place in the
// spec (the line and column of the text DuckDB's parser points at, in a one-line query and in a
// block), reported with the spec's other problems, from validate, and from run, dev and schedule
// before anything runs. A name in Spark SQL's backticks gets a hint with DuckDB's quoting.
func TestValidateSQLSyntax(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte(strings.ReplaceAll(`name: sqlv
storage: ./storage
datasets:
  - name: raw
    commnt: a typo
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: a
    query: SELEC id FROM raw
  - name: b
    query: |
      SELECT id
      FROM raw
      WHERE
  - name: c
    query: SELECT count(*) AS n FROM raw
  - name: d
    query: SELECT id AS ~Order "Id"~ FROM raw -- not ~this~
  - name: e
    query: SELECT id div 2 AS half FROM raw
  - name: f
    query: SELECT try_divide(id, 2) AS half FROM raw
`, "~", "`")), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		spec + ":5:5: datasets[0].commnt: unknown key commnt",
		spec + `:8:12: datasets[1].query: the SQL does not parse: syntax error at or near "SELEC" (hint: queries are DuckDB SQL (README "SQL datasets"))`,
		spec + `:13:12: datasets[2].query: the SQL does not parse: syntax error at end of input`,
		// Spark SQL's backticks: the hint gives the DuckDB spelling of the first such name.
		spec + `:17:25: datasets[4].query: the SQL does not parse: syntax error at or near "` + "`" + `" (hint: queries are DuckDB SQL, which quotes names with double quotes, not Spark SQL's backticks: write "Order ""Id""" for ` + "`Order \"Id\"`" + `)`,
		// Spark SQL's div operator and try_divide: the DuckDB forms, which divide by zero as Spark's.
		spec + `:19:26: datasets[5].query: the SQL does not parse: syntax error at or near "2" (hint: queries are DuckDB SQL: write a // b for Spark's a div b of integers (NULL where b is 0, as Spark's div), or CAST(a / b AS BIGINT) for DECIMAL or DOUBLE operands (DuckDB's // does not truncate those: 7.5 // 2 is 3.75))`,
		spec + `:21:19: datasets[6].query: try_divide(...) is Spark SQL, which DuckDB, the engine that runs queries, does not take: the update would fail here (hint: write a / b (NULL where b is 0, as Spark's try_divide: queries divide as Spark SQL does without ANSI mode))`,
	}
	for _, args := range [][]string{{"validate"}, {"run"}, {"dev"}, {"schedule", "--cron", "@every 1h"}} {
		cmd := args[0]
		r := pipeline(t, nil, append(args[:1:1], append([]string{spec}, args[1:]...)...)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", cmd, r.code, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr\n%s\ndoes not say\n%s", cmd, r.stderr, w)
			}
		}
		if strings.Contains(r.stderr, "datasets[3]") {
			t.Errorf("%s: the query that parses is reported:\n%s", cmd, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "storage")); err == nil {
		t.Error("run made the storage before refusing the spec")
	}
}

// TestValidateBindsQueries: validate, and run before anything runs, binds each query against
// the columns its inputs will have: the declared schema of a source, a table_changes relation's
// change columns, the result of the query a dataset is (a chain of them). A misspelt column or
// a function over the wrong type is a spec error at its place in the query (the line and column
// of the name DuckDB refuses), with DuckDB's candidates; a query
// over a file source that infers its schema, or over a query that does not bind, is not checked
// (its columns are not known), so it is not refused.
func TestValidateBindsQueries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, sub := range []string{"landing", "inferred"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(spec, []byte(`name: bindv
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, name STRING, ts TIMESTAMP"}
  - name: inf
    source: {path: ./inferred, format: json}
  - name: a
    query: SELECT id, nme FROM raw
  - name: b
    query: SELECT * FROM inf WHERE whatever = 1
  - name: c
    type: view
    query: SELECT id, upper(ts) AS u FROM raw
  - name: d
    query: SELECT u FROM c
  - name: e
    query: SELECT * FROM table_changes('raw', 0) WHERE _change_typ = 'insert'
  - name: f
    query: SELECT name, count(*) AS n FROM raw GROUP BY name
  - name: g
    query: SELECT n FROM f
  - name: h
    query: SELECT m FROM f
  - name: i
    query: SELECT r.id, r.nme FROM raw r JOIN raw s ON r.id = s.id
`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		spec + `:9:23: datasets[2].query: the query does not bind: Binder Error: Referenced column "nme" not found in FROM clause! Candidate bindings: "name"`,
		spec + `:14:23: datasets[4].query: the query does not bind: Binder Error: No function matches the given name and argument types 'upper(TIMESTAMP WITH TIME ZONE)'.`,
		spec + `:18:56: datasets[6].query: the query does not bind: Binder Error: Referenced column "_change_typ" not found in FROM clause! Candidate bindings: "_change_type"`,
		spec + `:24:19: datasets[9].query: the query does not bind: Binder Error: Referenced column "m" not found in FROM clause! Candidate bindings: "n"`,
		spec + `:26:27: datasets[10].query: the query does not bind: Binder Error: Table "r" does not have a column named "nme" Candidate bindings: "name"`,
	}
	for _, cmd := range []string{"validate", "run"} {
		r := pipeline(t, nil, cmd, spec)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", cmd, r.code, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr\n%s\ndoes not say\n%s", cmd, r.stderr, w)
			}
		}
		if got := strings.Count(r.stderr, "does not bind"); got != len(want) {
			t.Errorf("%s: %d queries refused, want %d (b, d, f and g bind or cannot be checked):\n%s", cmd, got, len(want), r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "storage")); err == nil {
		t.Error("run made the storage before refusing the spec")
	}
}

// TestValidateBindBackticks: a Spark SQL backtick name that DuckDB parses (as an operator) and
// cannot bind is refused with the double-quoted name to write, not only DuckDB's words about a
// `__postfix function.
func TestValidateBindBackticks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(spec, []byte(`name: bindbt
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, name STRING"}
  - name: a
    query: SELECT `+"`id`"+`, name FROM raw
  - name: b
    query: SELECT nme FROM raw
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pipeline(t, nil, "validate", spec)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	for _, w := range []string{
		spec + `:7:12: datasets[1].query: the query does not bind: `,
		"(hint: queries are DuckDB SQL, which quotes names with double quotes, not Spark SQL's backticks: write \"id\" for `id`; its inputs have the columns the spec declares for them)",
		spec + `:9:19: datasets[2].query: the query does not bind: Binder Error: Referenced column "nme" not found in FROM clause! Candidate bindings: "name" (hint: its inputs have the columns the spec declares for them (a query dataset's, its query's); queries are DuckDB SQL (README "SQL datasets"))`,
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr\n%s\ndoes not say\n%s", r.stderr, w)
		}
	}
}

// TestValidateJSONOnStdoutOnly: `validate --json` prints the problems as a JSON array on stdout
// and nothing on stderr, with the exit status of the problems (2): the spec's problems, each
// with its file, line and column; a --conf that is not key=value, as one problem of the spec;
// none, as [] with exit 0.
func TestValidateJSONOnStdoutOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(bad, []byte(badSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "shop")
	mustRun(t, "init", good)
	type problem struct {
		File    string `json:"file"`
		Line    int    `json:"line"`
		Column  int    `json:"column"`
		Path    string `json:"path"`
		Message string `json:"message"`
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want problem // one of the problems printed; zero: none
	}{
		{"spec problems", []string{"validate", "--json", bad}, 2, problem{File: bad, Line: 9, Column: 7, Path: "datasets[0].source.sheme", Message: "unknown key sheme"}},
		{"bad --conf", []string{"validate", "--json", "--conf", "novalue", bad}, 2, problem{File: bad, Message: `--conf "novalue": write it as key=value`}},
		{"valid spec", []string{"validate", "--json", filepath.Join(good, "pipeline.yaml")}, 0, problem{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := pipeline(t, nil, c.args...)
			if r.code != c.code || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q; want exit %d and nothing on stderr\nstdout: %s", r.code, r.stderr, c.code, r.stdout)
			}
			var got []problem
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not a JSON array of problems: %v\n%s", err, r.stdout)
			}
			if c.want == (problem{}) {
				if len(got) != 0 {
					t.Errorf("problems %+v, want none", got)
				}
				return
			}
			if !slices.Contains(got, c.want) {
				t.Errorf("problems:\n%+v\nwant among them %+v", got, c.want)
			}
		})
	}
}

// TestBindQuarantineAfterSchemaChange: a column added to a source's schema is refused by the
// update while its quarantine table has the old columns, naming the full refresh to run; that
// full refresh, which rebuilds the quarantine table with the new column, is not refused by
// the query that reads the column from the quarantine table, and its result has it.
func TestBindQuarantineAfterSchemaChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "extra": "x"}`+"\n"+`{"id": -1, "extra": "y"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "pipeline.yaml")
	write := func(schema, query string) {
		t.Helper()
		if err := os.WriteFile(spec, []byte(`name: quar
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "`+schema+`"}
    expectations:
      - {name: pos, expect: 'id > 0', on_violation: quarantine}
  - name: bad
    query: `+query+`
`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("id BIGINT", "SELECT id FROM raw_quarantine")
	mustRun(t, "run", spec)
	write("id BIGINT, extra STRING", "SELECT id, extra FROM raw_quarantine")
	r := pipeline(t, nil, "run", spec)
	if r.code != 1 || !strings.Contains(r.stderr, "--full-refresh raw,bad") {
		t.Fatalf("run after the schema change: exit %d, want 1 naming --full-refresh raw,bad\n%s", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "validate", spec); r.code != 0 {
		t.Fatalf("validate: exit %d\n%s", r.code, r.stderr)
	}
	mustRun(t, "run", spec, "--full-refresh", "raw,bad")
	out := mustRun(t, "show", spec, "bad", "--format", "jsonl")
	assertRows(t, "bad", readJSONL(t, out), rowsOf(t, `{"id": -1, "extra": "y"}`))
}

// TestBindAtRun: a query that validation cannot bind (its input infers its schema) and that
// DuckDB refuses when it runs fails its flow with the spec's names in DuckDB's words: STREAM(raw)
// rather than the relation the runner registers it as, with the alias to give it. A query that
// reads a file is not bound at validation, whatever the file holds then (an empty lookup file
// may be filled before the update runs).
func TestBindAtRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "landing"), "a.json", `{"id": 1}`+"\n")
	writeFile(t, filepath.Join(dir, "dim"), "d.json", `{"id": 1, "name": "one"}`+"\n")
	writeFile(t, dir, "lookup.csv", "")
	spec := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, dir, "pipeline.yaml", `name: bindrun
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json}
  - name: dim
    source: {path: ./dim, format: json, schema: "id BIGINT, name STRING"}
  - name: joined
    type: streaming_table
    query: SELECT raw.id, dim.name FROM STREAM(raw) JOIN dim ON raw.id = dim.id
  - name: looked_up
    query: SELECT code, label FROM read_csv('lookup.csv', header = true)
`)
	if r := pipeline(t, nil, "validate", spec); r.code != 0 {
		t.Fatalf("validate: exit %d\n%s", r.code, r.stderr)
	}
	time.Sleep(1100 * time.Millisecond) // files older than a second are read
	r := pipeline(t, nil, "run", spec)
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (joined fails)\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := `flow joined: dataset joined: Binder Error: Referenced table "raw" not found! Candidate tables: "STREAM(raw)"`
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "give it an alias") || strings.Contains(r.stderr, "__stream_") {
		t.Errorf("run: stderr\n%s\nwant %q, an alias hint and no __stream_ name", r.stderr, want)
	}
}

// TestValidateJSONKeepsOperators: `validate --json` writes a hint's operators as they are
// (`>=`, `<`, `&`), not as the \u003e escapes of Go's default HTML-safe JSON, and the JSON reads
// back to the same text.
func TestValidateJSONKeepsOperators(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "pipeline.yaml", `name: ops
datasets:
  - name: raw
    source: {path: ./in, format: json, schema: "amt BIGINT, op STRING"}
    expectations:
      - {name: sql, expect: "amt >= 0 AND op = 'D'"}
`)
	r := pipeline(t, nil, "validate", "--json", filepath.Join(dir, "pipeline.yaml"))
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `write amt >= 0 and op == \"D\"`) || strings.Contains(r.stdout, `\u003e`) {
		t.Errorf("stdout:\n%s\nwant the hint with >= as written", r.stdout)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || !strings.Contains(fmt.Sprint(got[0]["hint"]), `amt >= 0 and op == "D"`) {
		t.Errorf("the JSON does not read back: %v %v", got, err)
	}
}

// TestValidateBindsDespiteSpecProblems: the queries are bound even when the spec has other
// problems, and their bind errors come in the one report, in the order of their positions, from
// validate (its --json too) and from run before anything runs; a query that reads a dataset with
// a problem, or one whose own SQL has one, is not bound, so that a mistake is reported once
// (a misspelt source key that leaves a rescued column out, a query over a query that does not
// parse, over a misspelt dataset name, over a ${} not set, or a dataset entry that is no
// mapping, which shifts no path).
func TestValidateBindsDespiteSpecProblems(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, spec string
		want       []string // line:col: path: message (hint: ...)
	}{
		{"every problem at once", `name: gaps
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, name STRING"}
  - name: a
    query: SELECT id FROM raw WHERE
  - name: b
    source: {path: ./landing, format: json, schema: "id BIGINT"}
    coment: a typo
  - name: c
    query: SELECT id, nme FROM raw
`, []string{
			`7:36: datasets[1].query: the SQL does not parse: syntax error at end of input (hint: queries are DuckDB SQL (README "SQL datasets"))`,
			"10:5: datasets[2].coment: unknown key coment (hint: did you mean `comment`?)",
			`12:23: datasets[3].query: the query does not bind: Binder Error: Referenced column "nme" not found in FROM clause! Candidate bindings: "name" (hint: its inputs have the columns the spec declares for them (a query dataset's, its query's); queries are DuckDB SQL (README "SQL datasets"))`,
		}},
		{"no cascade", `name: cascade
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT", rescued_data_colum: _bad}
  - name: a
    query: SELECT id, _bad FROM raw
  - name: b
    query: SELECT id FROM raww
  - name: c
    query: SELECT id FROM a WHERE
  - name: d
    query: SELECT nope FROM c
  - name: e
    query: SELECT * FROM ${tributary_test_unset}
  - name: f
    query: SELECT nope FROM e
`, []string{
			"5:66: datasets[0].source.rescued_data_colum: unknown key rescued_data_colum (hint: did you mean `rescued_data_column`?)",
			"9:27: datasets[2].query: unknown dataset raww: a query reads datasets of this pipeline (hint: did you mean `raw`?)",
			`11:34: datasets[3].query: the SQL does not parse: syntax error at end of input (hint: queries are DuckDB SQL (README "SQL datasets"))`,
			"15:26: datasets[5].query: ${tributary_test_unset} is not set (hint: define it under `configuration:`, pass --conf tributary_test_unset=VALUE, or set the environment variable tributary_test_unset)",
		}},
		{"an entry that is no mapping", `name: paths
storage: ./storage
datasets:
  - just a name
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: a
    query: SELECT idd FROM raw
`, []string{
			"4:5: datasets[0]: expected a mapping of keys, found \"just a name\"",
			`8:19: datasets[2].query: the query does not bind: Binder Error: Referenced column "idd" not found in FROM clause! Candidate bindings: "id" (hint: its inputs have the columns the spec declares for them (a query dataset's, its query's); queries are DuckDB SQL (README "SQL datasets"))`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
				t.Fatal(err)
			}
			spec := filepath.Join(dir, "pipeline.yaml")
			if err := os.WriteFile(spec, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, w := range c.want {
				lines = append(lines, spec+":"+w)
			}
			want := "pipeline: " + strings.Join(lines, "\n") + "\n"
			for _, cmd := range []string{"validate", "run"} {
				r := pipeline(t, nil, cmd, spec)
				if r.code != 2 || r.stderr != want {
					t.Errorf("%s: exit %d, stderr\n%s\nwant exit 2 and\n%s", cmd, r.code, r.stderr, want)
				}
			}
			r := pipeline(t, nil, "validate", "--json", spec)
			var got []struct {
				File         string
				Line, Column int
				Path         string
				Message      string
				Hint         string
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("validate --json: %v\n%s", err, r.stdout)
			}
			var gotLines []string
			for _, p := range got {
				line := fmt.Sprintf("%s:%d:%d: %s: %s", p.File, p.Line, p.Column, p.Path, p.Message)
				if p.Hint != "" {
					line += " (hint: " + p.Hint + ")"
				}
				gotLines = append(gotLines, line)
			}
			if !slices.Equal(gotLines, lines) {
				t.Errorf("validate --json:\n%s\nwant\n%s", strings.Join(gotLines, "\n"), strings.Join(lines, "\n"))
			}
		})
	}
}

// validateReports writes text as the spec of a new folder (with an empty ./landing), runs
// `pipeline validate` on it and checks exit status 2 and stderr: each of problems ("LINE:COL:
// path: message (hint: ...)") after the spec's path, one a line, in order, and nothing else.
func validateReports(t *testing.T, text string, problems ...string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := writeSpec(t, dir, text)
	want := "pipeline: "
	for _, pr := range problems {
		want += spec + ":" + pr + "\n"
	}
	if r := pipeline(t, nil, "validate", spec); r.code != 2 || r.stderr != want {
		t.Errorf("exit %d, stderr\n%s\nwant exit 2 and\n%s", r.code, r.stderr, want)
	}
}

// TestValidateElementAtHint: Spark's element_at is a spec error at the name, over an array
// (which DuckDB refuses) and over a map (where DuckDB's returns a list of the value, not the
// value), each with the DuckDB form.
func TestValidateElementAtHint(t *testing.T) {
	t.Parallel()
	const msg = `element_at(...) is Spark SQL, which DuckDB, the engine that runs queries, has for a MAP only, where it returns a list of the value, not the value: over an array the update would fail here, over a map the column would hold lists (hint: write arr[i] for an array (1-based, a negative i counting from the end, as Spark's) and m[key] for a map)`
	validateReports(t, `name: elementat
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, STRING>"}
  - name: first_tag
    query: SELECT id, element_at(tags, 1) AS tag FROM raw
  - name: colour
    query: SELECT id, element_at(attrs, 'colour') AS colour FROM raw
`, "7:23: datasets[1].query: "+msg, "9:23: datasets[2].query: "+msg)
}

// TestValidateParseErrorOnly: a query that does not parse because a keyword stands where a
// dataset's name belongs (`JOIN ON`, `FROM WHERE`) has the parse error as its one problem, not
// an unknown dataset named after the keyword too.
func TestValidateParseErrorOnly(t *testing.T) {
	t.Parallel()
	validateReports(t, `name: r5
datasets:
  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT, status STRING"}
  - name: a
    query: SELECT id FROM raw JOIN ON raw.id = raw.id
  - name: b
    query: SELECT id, FROM WHERE raw
`,
		`6:36: datasets[1].query: the SQL does not parse: syntax error at or near "ON" (hint: queries are DuckDB SQL (README "SQL datasets"))`,
		`8:28: datasets[2].query: the SQL does not parse: syntax error at or near "WHERE" (hint: queries are DuckDB SQL (README "SQL datasets"))`)
}

// TestValidateKeywordDatasetName: a dataset named as an SQL keyword (`order`), read unquoted, is a
// syntax error whose hint says to write the name in double quotes; quoted, the query is valid.
func TestValidateKeywordDatasetName(t *testing.T) {
	t.Parallel()
	const spec = `name: kw
datasets:
  - name: order
    source: {path: ./l, format: json, schema: "id BIGINT"}
  - name: n
    query: SELECT count(*) AS n FROM %s
`
	validateReports(t, fmt.Sprintf(spec, "order"),
		`6:38: datasets[1].query: the SQL does not parse: syntax error at or near "order" (hint: order is a dataset's name and a keyword of SQL: write it in double quotes, "order")`)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "l"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, nil, "validate", writeSpec(t, dir, fmt.Sprintf(spec, `"order"`))); r.code != 0 {
		t.Errorf("quoted: exit %d, stderr %s; want a valid spec", r.code, r.stderr)
	}
}

// TestValidateDoubleQuotedString: Spark SQL's double-quoted string, which DuckDB reads as a
// column's name, is reported where it is with the single-quoted string to write.
func TestValidateDoubleQuotedString(t *testing.T) {
	t.Parallel()
	validateReports(t, `name: dq
datasets:
  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT, status STRING"}
  - name: paid
    query: SELECT id FROM raw WHERE status = "paid"
`, `6:46: datasets[1].query: the query does not bind: Binder Error: Referenced column "paid" not found in FROM clause! Candidate bindings: "status" (hint: queries are DuckDB SQL, where "paid" is a column's name, not a string as in Spark SQL: write the string 'paid')`)
}

// TestValidateBindsOverNeutralProblems: a misspelt `comment` and an expectation that does not
// compile change no column of their dataset, so a query over it is bound in the same report.
func TestValidateBindsOverNeutralProblems(t *testing.T) {
	t.Parallel()
	validateReports(t, `name: y
datasets:
  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT, status STRING"}
    commnt: bronze
    expectations: [{name: e, expect: "id >", on_violation: drop}]
  - name: q
    query: SELECT id, stat FROM raw
`,
		"5:5: datasets[0].commnt: unknown key commnt (hint: did you mean `comment`?)",
		"6:42: datasets[0].expectations[0].expect: expectation e does not compile: unexpected token EOF (hint: columns: id, status)",
		`8:23: datasets[1].query: the query does not bind: Binder Error: Referenced column "stat" not found in FROM clause! Candidate bindings: "status" (hint: its inputs have the columns the spec declares for them (a query dataset's, its query's); queries are DuckDB SQL (README "SQL datasets"))`)
}

// TestValidateNotesMissingSource: a spec whose source folder does not exist yet is valid (exit 0:
// the folder may be made later), and validate says that `pipeline run` fails until it exists,
// where in the spec, and how to fix it; once the folder exists the note is gone.
func TestValidateNotesMissingSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(specPath, []byte("name: p\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landng\n      format: json\n      schema: \"id BIGINT\"\n  - name: globbed\n    source:\n      path: ./later/*.json\n      format: json\n      schema: \"id BIGINT\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pipeline(t, nil, "validate", specPath)
	want := specPath + ":6:7: note: dataset raw: source path " + filepath.Join(dir, "landng") + " does not exist yet; `pipeline run` fails until it does"
	if r.code != 0 || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "globbed") {
		t.Fatalf("validate: exit %d\n%s%s\nwant exit 0 and the note %q (none for the glob)", r.code, r.stdout, r.stderr, want)
	}
	if err := os.MkdirAll(filepath.Join(dir, "landng"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, nil, "validate", specPath); r.code != 0 || strings.Contains(r.stdout, "note:") {
		t.Fatalf("validate with the folder made: exit %d\n%s%s\nwant no note", r.code, r.stdout, r.stderr)
	}
}

// queryExpectSpec is the spec of a new user's report: the expectation of a query dataset names
// nope, a column its query does not produce.
const queryExpectSpec = `name: qexpect
storage: ./storage
datasets:
  - name: tgt
    source: {path: ./landing, format: json, schema: "id BIGINT, v STRING"}
  - name: mv
    query: SELECT id, count(v) AS s FROM tgt GROUP BY 1
    expectations:
      - name: e
        expect: 'nope > 1'
`

// TestValidateQueryExpectations: the expectations of a query dataset are compiled against its
// query's result columns when validate binds the query: a column it does not produce (with the
// did-you-mean of a near one) and a STRING compared with a number are spec errors at their
// `expect`, with the spec's other problems; an expectation valid against the result is not, nor
// is one over a query that cannot be bound (its input infers its schema).
func TestValidateQueryExpectations(t *testing.T) {
	t.Parallel()
	t.Run("unknown column", func(t *testing.T) {
		t.Parallel()
		validateReports(t, queryExpectSpec,
			"10:18: datasets[1].expectations[0].expect: expectation e does not compile: unknown name nope (hint: columns: id, s)")
	})
	t.Run("near name, wrong type, other problems", func(t *testing.T) {
		t.Parallel()
		validateReports(t, `name: qexpect
datasets:
  - name: tgt
    source: {path: ./landing, format: json, schema: "id BIGINT, v STRING"}
  - name: mv
    query: SELECT id, v AS name, count(v) AS total FROM tgt GROUP BY 1, 2
    commnt: gold
    expectations:
      - {name: typo, expect: 'totl > 1'}
      - {name: types, expect: 'name > 1', on_violation: drop}
      - {name: ok, expect: 'total > 0 and name != nil'}
`,
			"7:5: datasets[1].commnt: unknown key commnt (hint: did you mean `comment`?)",
			"9:31: datasets[1].expectations[0].expect: expectation typo does not compile: unknown name totl (hint: did you mean `total`?)",
			"10:37: datasets[1].expectations[1].expect: expectation types does not compile: invalid operation: > (mismatched types string and int) (hint: columns: id, name, total)")
	})
	for _, c := range []struct{ name, text string }{
		{"valid", `name: qexpect
datasets:
  - name: tgt
    source: {path: ./landing, format: json, schema: "id BIGINT, v STRING"}
  - name: mv
    query: SELECT id, count(v) AS s FROM tgt GROUP BY 1
    expectations:
      - {name: e, expect: 's > 1 and id != nil'}
`},
		{"not bound", `name: qexpect
datasets:
  - name: tgt
    source: {path: ./landing, format: json}
  - name: mv
    query: SELECT * FROM tgt
    expectations:
      - {name: e, expect: 'nope > 1'}
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
				t.Fatal(err)
			}
			spec := writeSpec(t, dir, c.text)
			if r := pipeline(t, nil, "validate", spec); r.code != 0 || r.stderr != "" {
				t.Errorf("validate: exit %d, stderr\n%s\nwant exit 0 and nothing on stderr", r.code, r.stderr)
			}
		})
	}
}

// TestValidateQueryExpectationsJSON: `validate --json` prints the expectation that does not
// compile against its query's result as a problem at its `expect`, with exit status 2 and
// nothing on stderr.
func TestValidateQueryExpectationsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := writeSpec(t, dir, queryExpectSpec)
	r := pipeline(t, nil, "validate", "--json", spec)
	if r.code != 2 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q; want exit 2 and nothing on stderr\nstdout: %s", r.code, r.stderr, r.stdout)
	}
	type problem struct {
		File    string `json:"file"`
		Line    int    `json:"line"`
		Column  int    `json:"column"`
		Path    string `json:"path"`
		Message string `json:"message"`
		Hint    string `json:"hint"`
	}
	var got []problem
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not a JSON array of problems: %v\n%s", err, r.stdout)
	}
	want := []problem{{File: spec, Line: 10, Column: 18, Path: "datasets[1].expectations[0].expect",
		Message: "expectation e does not compile: unknown name nope", Hint: "columns: id, s"}}
	if !slices.Equal(got, want) {
		t.Errorf("problems\n%+v\nwant\n%+v", got, want)
	}
}

// TestRunRefusesQueryExpectation: `run` refuses the spec whose query dataset's expectation does
// not compile against the query's result with the message and exit status of validate, before
// any flow runs (no storage folder), rather than failing the flow once the flows before it ran.
func TestRunRefusesQueryExpectation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "landing"), "a.json", `{"id": 1, "v": "a"}`+"\n")
	spec := writeSpec(t, dir, queryExpectSpec)
	v := pipeline(t, nil, "validate", spec)
	r := pipeline(t, nil, "run", spec)
	if v.code != 2 || !strings.Contains(v.stderr, "expectation e does not compile: unknown name nope") {
		t.Fatalf("validate: exit %d, stderr\n%s\nwant exit 2 and the expectation's error", v.code, v.stderr)
	}
	if r.code != v.code || r.stderr != v.stderr {
		t.Errorf("run: exit %d, stderr\n%s\nwant validate's exit %d and stderr\n%s", r.code, r.stderr, v.code, v.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "storage")); err == nil {
		t.Error("run made the storage folder of a spec it refuses")
	}
}
