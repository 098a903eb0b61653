package flows

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tributary/spec"
)

// checkQueries parses the pipeline text in dir and returns, by dataset, the problems
// CheckQueries finds.
func checkQueries(t *testing.T, dir, text string) map[string]string {
	t.Helper()
	p, err := spec.Parse(filepath.Join(dir, "pipeline.yaml"), []byte(text), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := CheckQueries(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pr := range problems {
		if pr.Err == nil {
			out[pr.Dataset.Name] = pr.Expectations.Error()
			continue
		}
		out[pr.Dataset.Name] = pr.Err.Error()
	}
	return out
}

// TestCheckQueriesExpectations: the expectations of a query that binds are compiled against its
// result's columns, as its flow compiles them: a name the result does not have and a STRING
// compared with a number are problems at their `expect`, with expr's words; a valid expectation,
// one of a query over an inferred schema (not bound) and one over a query that does not bind
// are not.
func TestCheckQueriesExpectations(t *testing.T) {
	dir := t.TempDir()
	got := checkQueries(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, name STRING, v BIGINT"}
  - name: inferred
    source: {path: ./landing, format: json}
  - name: totals
    query: SELECT id, name, sum(v) AS total FROM raw GROUP BY 1, 2
    expectations:
      - {name: ok, expect: 'total > 0 and name != nil'}
      - {name: typo, expect: 'totl > 0'}
      - {name: types, expect: 'name > 1'}
  - name: good
    query: SELECT id FROM raw
    expectations: [{name: ok, expect: 'id > 0'}]
  - name: over_inferred
    query: SELECT * FROM inferred
    expectations: [{name: e, expect: 'nope > 1'}]
  - name: unbound
    query: SELECT nope FROM raw
    expectations: [{name: e, expect: 'other > 1'}]
`)
	file := filepath.Join(dir, "pipeline.yaml")
	want := file + ":12:31: datasets[2].expectations[1].expect: expectation typo does not compile: unknown name totl (hint: did you mean `total`?)\n" +
		file + ":13:37: datasets[2].expectations[2].expect: expectation types does not compile: invalid operation: > (mismatched types string and int) (hint: columns: id, name, total)"
	if got["totals"] != want {
		t.Errorf("totals: problems\n%s\nwant\n%s", got["totals"], want)
	}
	delete(got, "totals")
	if len(got) != 1 || !strings.Contains(got["unbound"], `Referenced column "nope" not found`) {
		t.Errorf("other problems %v, want unbound's column nope alone", got)
	}
}

// TestCheckQueriesDynamicPivot: a PIVOT whose columns are its input's values (no IN list) has
// none of them over empty tables, so neither a query that names one after the PIVOT nor a query
// reading its result is refused (both run); a PIVOT with IN lists is checked, and so are its
// readers.
func TestCheckQueriesDynamicPivot(t *testing.T) {
	got := checkQueries(t, t.TempDir(), `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, name STRING, v BIGINT"}
  - name: wide
    query: PIVOT raw ON name USING sum(v) GROUP BY id
  - name: alice
    query: SELECT id, alice FROM wide
  - name: inline
    query: |
      WITH p AS (PIVOT raw ON name USING sum(v) GROUP BY id)
      SELECT id, alice + bob AS total FROM p
  - name: fixed
    query: PIVOT raw ON name IN ('alice', 'bob') USING sum(v) GROUP BY id
  - name: fixed_ok
    query: SELECT id, alice + bob AS total FROM fixed
  - name: fixed_typo
    query: SELECT id, carol FROM fixed
`)
	if len(got) != 1 || !strings.Contains(got["fixed_typo"], `Referenced column "carol" not found`) {
		t.Errorf("problems %v, want fixed_typo's column carol alone", got)
	}
}

// TestCheckQueriesQuarantineSpecColumns: a query reading a quarantine table binds against the
// columns the update gives it, its dataset's as the spec declares them now and
// _failed_expectations, even when the table on disk has an older spec's (the full refresh the
// update asks for rebuilds it), and before the table exists.
func TestCheckQueriesQuarantineSpecColumns(t *testing.T) {
	dir := t.TempDir()
	const pipeline = `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "%s"}
    expectations:
      - {name: pos, expect: 'id > 0', on_violation: quarantine}
  - name: bad
    query: SELECT extra, _failed_expectations FROM raw_quarantine
  - name: typo
    query: SELECT extr FROM raw_quarantine
`
	text := func(schema string) string { return strings.Replace(pipeline, "%s", schema, 1) }
	got := checkQueries(t, dir, text("id BIGINT, extra STRING"))
	if len(got) != 1 || !strings.Contains(got["typo"], `Referenced column "extr" not found`) {
		t.Errorf("before the quarantine table exists: problems %v, want typo's column extr alone", got)
	}
	old, err := spec.Parse(filepath.Join(dir, "pipeline.yaml"), []byte(text("id BIGINT")), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(old, old.Dataset("raw")); err != nil { // raw_quarantine with id alone
		t.Fatal(err)
	}
	got = checkQueries(t, dir, text("id BIGINT, extra STRING"))
	if len(got) != 1 || !strings.Contains(got["typo"], `Referenced column "extr" not found`) {
		t.Errorf("over an older quarantine table: problems %v, want typo's column extr alone", got)
	}
}

// TestCheckQueriesStreamMessage: a bind error that names the relation of STREAM(x) or
// table_changes('x', ...) names it so, not by the runner's name for it nor by x (which does not
// qualify its columns), and says to give it an alias.
func TestCheckQueriesStreamMessage(t *testing.T) {
	got := checkQueries(t, t.TempDir(), `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, v BIGINT"}
  - name: dim
    source: {path: ./landing, format: json, schema: "id BIGINT, label STRING"}
  - name: s
    type: streaming_table
    query: SELECT id FROM STREAM(raw) JOIN dim ON true
  - name: c
    query: SELECT id FROM table_changes('raw', 0) JOIN dim ON true
`)
	want := map[string]string{
		"s": `Binder Error: Ambiguous reference to column name "id" (use: "STREAM(raw).id" or "dim.id") (STREAM(raw) has no name of its own: give it an alias to qualify its columns, as in FROM STREAM(raw) AS s ... s.id)`,
		"c": `Binder Error: Ambiguous reference to column name "id" (use: "table_changes('raw', ...).id" or "dim.id") (table_changes('raw', ...) has no name of its own: give it an alias to qualify its columns, as in FROM table_changes('raw', ...) AS s ... s.id)`,
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want s and c", got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
}

// TestCheckQueriesDuplicateColumnsUpstream: a query whose result has two columns of one name
// fails its own flow when it runs; a query reading it is not refused for it (DuckDB cannot
// make a table of those columns to bind it against, which is no fault of that query).
func TestCheckQueriesDuplicateColumnsUpstream(t *testing.T) {
	got := checkQueries(t, t.TempDir(), `name: t
storage: ./storage
datasets:
  - name: a
    source: {path: ./landing, format: json, schema: "id BIGINT, v BIGINT"}
  - name: b
    source: {path: ./landing, format: json, schema: "id BIGINT, w BIGINT"}
  - name: joined
    query: SELECT * FROM a JOIN b ON a.id = b.id
  - name: reader
    query: SELECT v, w FROM joined
`)
	if len(got) != 0 {
		t.Errorf("problems %v, want none", got)
	}
}

// TestCheckQueriesDeepChain: a chain of 40 query datasets, each reading the one before, is
// bound to its end in dependency order, whatever the order of the spec: the misspelt column of
// the last query is found, with DuckDB's candidate from the query before it.
func TestCheckQueriesDeepChain(t *testing.T) {
	const n = 40
	var entries []string
	for i := 1; i <= n; i++ {
		q := fmt.Sprintf("SELECT id, v%d + 1 AS v%d FROM q%d", i-1, i, i-1)
		if i == n {
			q = fmt.Sprintf("SELECT id, v%d FROM q%d", n, i-1) // q39 has v39, not v40
		}
		entries = append(entries, fmt.Sprintf("  - name: q%d\n    query: %s\n", i, q))
	}
	for _, c := range []struct {
		name  string
		order func([]string)
	}{
		{"in dependency order", func([]string) {}},
		{"last first", slices.Reverse[[]string]},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := slices.Clone(entries)
			c.order(e)
			got := checkQueries(t, t.TempDir(), `name: t
storage: ./storage
datasets:
  - name: q0
    source: {path: ./landing, format: json, schema: "id BIGINT, v0 BIGINT"}
`+strings.Join(e, ""))
			want := map[string]string{"q40": `Binder Error: Referenced column "v40" not found in FROM clause! Candidate bindings: "v39"`}
			if !maps.Equal(got, want) {
				t.Errorf("problems %v, want %v", got, want)
			}
		})
	}
}

// TestBindMessageFewerCandidates: DuckDB's list of candidate functions for an operator over a
// wrong type (about 40) is cut to its first five, saying how many were left out.
func TestBindMessageFewerCandidates(t *testing.T) {
	got := checkQueries(t, t.TempDir(), `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, ts STRING"}
  - name: q
    query: SELECT ts - 1 AS x FROM raw
`)["q"]
	if !strings.HasPrefix(got, "Binder Error: No function matches the given name and argument types '-(VARCHAR, INTEGER_LITERAL)'") {
		t.Fatalf("message %q", got)
	}
	if n := strings.Count(got, " -> "); n != 5 || !regexp.MustCompile(`\(and \d+ more\)$`).MatchString(got) {
		t.Errorf("message %q: %d candidates, want 5 and how many more", got, n)
	}
	if short := fewerCandidates("x Candidate functions:\n\ta() -> A\n\tb() -> B", 5); short != "x Candidate functions:\n\ta() -> A\n\tb() -> B" {
		t.Errorf("a short list changed: %q", short)
	}
}
