package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeSpec writes text as dir/pipeline.yaml and returns its path.
func writeSpec(t *testing.T, dir, text string) string {
	t.Helper()
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// writeFile writes text to dir/name, creating its folders.
func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestQueryTimeZone runs a query that formats, truncates and splits a TIMESTAMP under several
// TZ settings: every run gives the UTC result, as all timestamps of the product are UTC.
func TestQueryTimeZone(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"UTC", "Asia/Tokyo", "America/Los_Angeles"} {
		t.Run(tz, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, dir, "landing/a.json", `{"ts":"2024-01-10 02:00:00"}`+"\n")
			spec := writeSpec(t, dir, `name: tz
datasets:
  - name: bronze
    source: {path: ./landing, format: json, schema: "ts TIMESTAMP"}
  - name: gold
    query: SELECT CAST(ts AS VARCHAR) AS s, date_trunc('day', ts) AS d, hour(ts) AS h, strftime(ts, '%Y-%m-%d %H') AS f FROM bronze
`)
			env := []string{"TZ=" + tz}
			if r := pipeline(t, env, "run", spec); r.code != 0 {
				t.Fatalf("run with TZ=%s: exit %d\n%s%s", tz, r.code, r.stdout, r.stderr)
			}
			r := pipeline(t, env, "show", spec, "gold", "--format", "jsonl")
			if r.code != 0 {
				t.Fatalf("show with TZ=%s: exit %d\n%s", tz, r.code, r.stderr)
			}
			assertRows(t, "gold with TZ="+tz, readJSONL(t, r.stdout), rowsOf(t,
				`{"s": "2024-01-10 02:00:00+00", "d": "2024-01-10T00:00:00.000000Z", "h": 2, "f": "2024-01-10 02"}`))
		})
	}
}

// TestQueryCTENamedAsDataset: a CTE named as the dataset it reads with LIVE. (and, inside its own
// definition, by its bare name) reads the dataset, and the bare name after it the CTE, where
// LIVE.a still reads the dataset: the graph has the edges and the run computes the queries.
func TestQueryCTENamedAsDataset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "landing/a.json", `{"id": 1, "v": 5}`+"\n"+`{"id": 2, "v": -1}`+"\n"+`{"id": 3, "v": 7}`+"\n")
	spec := writeSpec(t, dir, `name: cte
datasets:
  - name: a
    source: {path: ./landing, format: json, schema: "id BIGINT, v BIGINT"}
  - name: live_cte
    query: WITH a AS (SELECT * FROM LIVE.a WHERE v > 0) SELECT count(*) AS n FROM a
  - name: bare_cte
    query: WITH a AS (SELECT * FROM a WHERE v < 6) SELECT a.id FROM a
  - name: both
    query: WITH a AS (SELECT 1 AS id) SELECT x.v FROM a JOIN LIVE.a x USING (id)
`)
	mustRun(t, "validate", spec)
	graph := mustRun(t, "graph", spec)
	for _, want := range []string{"live_cte <- a", "bare_cte <- a", "both <- a"} {
		if !strings.Contains(graph, want) {
			t.Errorf("graph lacks %q:\n%s", want, graph)
		}
	}
	mustRun(t, "run", spec)
	assertRows(t, "live_cte", readJSONL(t, mustRun(t, "show", spec, "live_cte", "--format", "jsonl")), rowsOf(t, `{"n": 2}`))
	assertRows(t, "bare_cte", readJSONL(t, mustRun(t, "show", spec, "bare_cte", "--format", "jsonl")), rowsOf(t, `{"id": 1}`, `{"id": 2}`))
	assertRows(t, "both", readJSONL(t, mustRun(t, "show", spec, "both", "--format", "jsonl")), rowsOf(t, `{"v": 5}`))
}

// TestQueryPivotAndDollarQuotes: PIVOT and UNPIVOT statements read the dataset they name (an
// edge, and the run computes them), and a dollar-quoted string is text, not a reference.
func TestQueryPivotAndDollarQuotes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "landing/a.json", `{"id": "x", "v": 1, "w": 10}`+"\n"+`{"id": "y", "v": 2, "w": 20}`+"\n"+`{"id": "x", "v": 3, "w": 30}`+"\n")
	spec := writeSpec(t, dir, `name: pivot
datasets:
  - name: a
    source: {path: ./landing, format: json, schema: "id STRING, v BIGINT, w BIGINT"}
  - name: pivoted
    query: PIVOT a ON id USING sum(v)
  - name: unpivoted
    query: UNPIVOT LIVE.a ON v, w INTO NAME col VALUE val
  - name: pivot_item
    query: SELECT * FROM a PIVOT (sum(w) FOR id IN ('x', 'y'))
  - name: dollars
    query: SELECT $$ FROM nowhere $$ AS t, $tag$it's$tag$ AS u, count(*) AS n FROM a
`)
	mustRun(t, "validate", spec)
	graph := mustRun(t, "graph", spec)
	for _, want := range []string{"pivoted <- a", "unpivoted <- a", "pivot_item <- a", "dollars <- a\n"} {
		if !strings.Contains(graph, want) {
			t.Errorf("graph lacks %q:\n%s", want, graph)
		}
	}
	mustRun(t, "run", spec)
	show := func(ds string) []map[string]any {
		return readJSONL(t, mustRun(t, "show", spec, ds, "--format", "jsonl"))
	}
	// the columns neither pivoted on nor aggregated (w) group the rows
	assertRows(t, "pivoted", show("pivoted"), rowsOf(t, `{"w": 10, "x": 1, "y": null}`, `{"w": 20, "x": null, "y": 2}`, `{"w": 30, "x": 3, "y": null}`))
	assertRows(t, "unpivoted", show("unpivoted"), rowsOf(t,
		`{"id": "x", "col": "v", "val": 1}`, `{"id": "x", "col": "w", "val": 10}`,
		`{"id": "y", "col": "v", "val": 2}`, `{"id": "y", "col": "w", "val": 20}`,
		`{"id": "x", "col": "v", "val": 3}`, `{"id": "x", "col": "w", "val": 30}`))
	assertRows(t, "pivot_item", show("pivot_item"), rowsOf(t, `{"v": 1, "x": 10, "y": null}`, `{"v": 2, "x": null, "y": 20}`, `{"v": 3, "x": 30, "y": null}`))
	assertRows(t, "dollars", show("dollars"), rowsOf(t, `{"t": " FROM nowhere ", "u": "it's", "n": 3}`))
}

// TestQueryRelativeFiles runs, from another working directory that holds decoys under the same
// relative paths, queries that read files by relative paths: each reads the file under the
// spec's folder, whether the path is a literal (read_csv, a list, a glob, a FROM item) or one
// DuckDB computes (found through file_search_path).
func TestQueryRelativeFiles(t *testing.T) {
	t.Parallel()
	dir, cwd := t.TempDir(), t.TempDir()
	for _, d := range []struct{ dir, who string }{{dir, "spec"}, {cwd, "cwd"}} {
		writeFile(t, d.dir, "data/x.csv", "id,who\n1,"+d.who+"\n")
		writeFile(t, d.dir, "data/parts/a.csv", "id,who\n2,"+d.who+"\n")
		writeFile(t, d.dir, "data/parts/b.csv", "id,who\n3,"+d.who+"\n")
		writeFile(t, d.dir, "data/y.json", `{"id": 4, "who": "`+d.who+`"}`+"\n")
	}
	writeFile(t, dir, "data/z.csv", "id,who\n5,spec\n") // only under the spec's folder
	writeSpec(t, dir, `name: files
datasets:
  - name: csv
    query: SELECT id, who FROM read_csv('data/x.csv')
  - name: listed
    query: SELECT id, who FROM read_csv(['data/parts/a.csv', './data/parts/b.csv'])
  - name: globbed
    query: SELECT id, who FROM read_csv('data/parts/*.csv')
  - name: from_item
    query: SELECT id, who FROM 'data/y.json'
  - name: computed
    query: SELECT id, who FROM read_csv('data/' || 'z.csv')
`)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Dir = cwd
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pipeline %s in %s: %v\n%s", strings.Join(args, " "), cwd, err, out)
		}
		return string(out)
	}
	spec := filepath.Join(dir, "pipeline.yaml")
	run("run", spec)
	for ds, want := range map[string][]string{
		"csv":       {`{"id": 1, "who": "spec"}`},
		"listed":    {`{"id": 2, "who": "spec"}`, `{"id": 3, "who": "spec"}`},
		"globbed":   {`{"id": 2, "who": "spec"}`, `{"id": 3, "who": "spec"}`},
		"from_item": {`{"id": 4, "who": "spec"}`},
		"computed":  {`{"id": 5, "who": "spec"}`},
	} {
		assertRows(t, ds, readJSONL(t, run("show", spec, ds, "--format", "jsonl")), rowsOf(t, want...))
	}
}

// TestDeepViewChain: a chain of 34 views, each reading the one before, and a materialized view
// over the last run to the end (a chain deeper than the 32 views the runner once took), and the
// materialized view holds the source's rows with each view's step applied.
func TestDeepViewChain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "landing/a.json", `{"id": 1, "v0": 10}`+"\n"+`{"id": 2, "v0": 20}`+"\n")
	var b strings.Builder
	b.WriteString("name: chain\nstorage: ./storage\ndatasets:\n  - name: q0\n    source: {path: ./landing, format: json, schema: \"id BIGINT, v0 BIGINT\"}\n")
	for i := 1; i <= 34; i++ {
		fmt.Fprintf(&b, "  - name: q%d\n    type: view\n    query: SELECT id, v%d + 1 AS v%d FROM q%d\n", i, i-1, i, i-1)
	}
	b.WriteString("  - name: top\n    query: SELECT id, v34 AS v FROM q34\n")
	writeFile(t, dir, "pipeline.yaml", b.String())
	spec := filepath.Join(dir, "pipeline.yaml")
	mustRun(t, "run", spec)
	got := mustRun(t, "show", spec, "top", "--format", "csv")
	if want := "id,v\n1,44\n2,54\n"; got != want {
		t.Errorf("top after 34 views:\n%s\nwant\n%s", got, want)
	}
}
