package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestParseQuery: the datasets a query reads, found in its text, with the spans Rewrite replaces.
func TestParseQuery(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sql string
		want      string // kind:name[from,to] of each ref, space-separated
		rewritten string
	}{
		{"from and join", "SELECT * FROM a JOIN LIVE.b ON a.x = b.x LEFT JOIN c USING (x)", "table:a table:b table:c", "SELECT * FROM <a> JOIN <b> ON a.x = b.x LEFT JOIN <c> USING (x)"},
		{"from list with aliases", "select * from a x, b as y, c where 1", "table:a table:b table:c", "select * from <a> x, <b> as y, <c> where 1"},
		{"stream forms", "SELECT * FROM STREAM(live.a) JOIN STREAM b ON true", "stream:a stream:b", "SELECT * FROM <a> JOIN <b> ON true"},
		{"table_changes", "SELECT * FROM table_changes('LIVE.t', 2, 5) UNION ALL SELECT * FROM table_changes('u', 0)", "table_changes:t[2,5] table_changes:u[0,-1]", "SELECT * FROM <t> UNION ALL SELECT * FROM <u>"},
		{"ctes, subqueries, functions, strings, comments", "WITH w AS (SELECT * FROM a), v AS (SELECT 1) SELECT 'FROM x' FROM w, (SELECT * FROM b) s, range(3) -- FROM y\n/* JOIN z */ JOIN read_parquet('f') ON true", "table:a table:b", "WITH w AS (SELECT * FROM <a>), v AS (SELECT 1) SELECT 'FROM x' FROM w, (SELECT * FROM <b>) s, range(3) -- FROM y\n/* JOIN z */ JOIN read_parquet('f') ON true"},
		{"functions that take FROM", "SELECT extract(year FROM d), trim(both ' ' FROM s), substring(s FROM 2) FROM (SELECT * FROM a) t", "table:a", "SELECT extract(year FROM d), trim(both ' ' FROM s), substring(s FROM 2) FROM (SELECT * FROM <a>) t"},
		{"quoted identifier", `SELECT * FROM "my table"`, "table:my table", `SELECT * FROM <my table>`},
		{"a CTE named as the dataset it reads", "WITH a AS (SELECT * FROM LIVE.a WHERE v > 0) SELECT count(*) AS n FROM a", "table:a", "WITH a AS (SELECT * FROM <a> WHERE v > 0) SELECT count(*) AS n FROM a"},
		{"LIVE and STREAM name datasets after a CTE of their name", "WITH a AS (SELECT 1) SELECT * FROM a, LIVE.a, STREAM(a), STREAM(LIVE.a) JOIN Live.A USING (id)", "table:a stream:a stream:a table:A", "WITH a AS (SELECT 1) SELECT * FROM a, <a>, <a>, <a> JOIN <A> USING (id)"},
		{"a bare name inside its own CTE is the table", "WITH a AS (SELECT * FROM a) SELECT * FROM a", "table:a", "WITH a AS (SELECT * FROM <a>) SELECT * FROM a"},
		{"a recursive CTE sees itself", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r JOIN b USING (n)", "table:b", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r JOIN <b> USING (n)"},
		{"a later CTE sees an earlier one, not the reverse", "WITH x AS (SELECT * FROM y), y AS (SELECT * FROM x) SELECT * FROM y", "table:y", "WITH x AS (SELECT * FROM <y>), y AS (SELECT * FROM x) SELECT * FROM y"},
		{"pivot statement", "PIVOT a ON id USING sum(v)", "table:a", "PIVOT <a> ON id USING sum(v)"},
		{"unpivot statement, LIVE", "unpivot LIVE.a ON q1, q2 INTO NAME quarter VALUE sales", "table:a", "unpivot <a> ON q1, q2 INTO NAME quarter VALUE sales"},
		{"pivot statements in a CTE and a subquery", "WITH p AS (PIVOT_WIDER a ON id) SELECT * FROM p, (UNPIVOT b ON c INTO NAME n VALUE v) u", "table:a table:b", "WITH p AS (PIVOT_WIDER <a> ON id) SELECT * FROM p, (UNPIVOT <b> ON c INTO NAME n VALUE v) u"},
		{"pivot after a WITH", "WITH p AS (SELECT 1) PIVOT a ON id USING count(*)", "table:a", "WITH p AS (SELECT 1) PIVOT <a> ON id USING count(*)"},
		{"pivot of a subquery", "PIVOT (SELECT * FROM a) ON id USING sum(v)", "table:a", "PIVOT (SELECT * FROM <a>) ON id USING sum(v)"},
		{"pivot and unpivot FROM items", "SELECT * FROM a PIVOT (sum(v) FOR id IN (1, 2)) JOIN b UNPIVOT INCLUDE NULLS (v FOR k IN (x, y)) ON true", "table:a table:b", "SELECT * FROM <a> PIVOT (sum(v) FOR id IN (1, 2)) JOIN <b> UNPIVOT INCLUDE NULLS (v FOR k IN (x, y)) ON true"},
		{"a column named pivot", "SELECT pivot FROM a WHERE (x) pivot", "table:a", "SELECT pivot FROM <a> WHERE (x) pivot"},
		{"dollar-quoted strings", "SELECT $$ FROM a $$ AS t, $q$ it's FROM c $q$ AS u, $1 AS p, id FROM b", "table:b", "SELECT $$ FROM a $$ AS t, $q$ it's FROM c $q$ AS u, $1 AS p, id FROM <b>"},
		{"escape strings", `SELECT E'it\'s FROM a' AS t, e'\\' AS u, id FROM b WHERE s = E'x''FROM c'`, "table:b", `SELECT E'it\'s FROM a' AS t, e'\\' AS u, id FROM <b> WHERE s = E'x''FROM c'`},
		{"an E column before a string is no escape string", "SELECT e FROM a WHERE e = 'x'", "table:a", "SELECT e FROM <a> WHERE e = 'x'"},
		{"an unclosed dollar quote", "SELECT id FROM b WHERE s = $x$ FROM a", "table:b", "SELECT id FROM <b> WHERE s = $x$ FROM a"},
		{"a FROM list goes on after a subquery", "SELECT * FROM (SELECT * FROM a) x, b y, STREAM(c) z, (SELECT 1) AS w(n), LIVE.d, range(3) r, e", "table:a table:b stream:c table:d table:e", "SELECT * FROM (SELECT * FROM <a>) x, <b> y, <c> z, (SELECT 1) AS w(n), <d>, range(3) r, <e>"},
		{"a FROM list goes on after an alias with column names", "SELECT * FROM a AS x(p, q), b WHERE p IN (SELECT 1), c", "table:a table:b", "SELECT * FROM <a> AS x(p, q), <b> WHERE p IN (SELECT 1), c"},
		{"a CTE of a subquery ends with it", "SELECT * FROM (WITH t AS MATERIALIZED (SELECT 1) SELECT * FROM t) s JOIN t USING (id)", "table:t", "SELECT * FROM (WITH t AS MATERIALIZED (SELECT 1) SELECT * FROM t) s JOIN <t> USING (id)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refs, _, probs, _ := parseQuery(c.sql)
			if len(probs) > 0 {
				t.Fatalf("problems: %+v", probs)
			}
			var got []string
			for _, r := range refs {
				s := r.Kind + ":" + r.Name
				if r.Kind == RefChanges {
					s += fmt.Sprintf("[%d,%d]", r.From, r.To)
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != c.want {
				t.Fatalf("refs %v, want %s", got, c.want)
			}
			q := &Query{SQL: c.sql, Refs: refs}
			if rw := q.Rewrite(func(r QueryRef) string { return "<" + r.Name + ">" }); rw != c.rewritten {
				t.Fatalf("rewritten %q, want %q", rw, c.rewritten)
			}
		})
	}
}

// TestQueryValidation: query datasets are accepted with their types and dependencies; mistakes
// are reported at their place inside the SQL (one-line and block scalars alike).
func TestQueryValidation(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#MORE": `  - name: gold
    query: SELECT op, count(*) AS n FROM LIVE.silver GROUP BY op
  - name: st
    type: streaming_table
    skip_change_commits: true
    query: |
      SELECT *
      FROM STREAM(bronze) JOIN gold USING (op)
  - name: v
    type: view
    query: SELECT * FROM table_changes('silver', 1)`})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Dataset("gold"); d.Type != MaterializedView || fmt.Sprint(g.Deps("gold")) != "[silver]" {
		t.Fatalf("gold: %s %v", d.Type, g.Deps("gold"))
	}
	if d := p.Dataset("st"); d.Type != StreamingTable || !d.SkipChangeCommits || fmt.Sprint(g.Deps("st")) != "[bronze gold]" {
		t.Fatalf("st: %s %v %v", d.Type, d.SkipChangeCommits, g.Deps("st"))
	}
	if d := p.Dataset("v"); d.Type != View || fmt.Sprint(g.Deps("v")) != "[silver]" {
		t.Fatalf("v: %s %v", d.Type, g.Deps("v"))
	}

	cases := []struct {
		name, more string
		want       []string
	}{
		{"unknown dataset", "  - name: gold\n    query: SELECT * FROM silverr", []string{"18:26: datasets[2].query: unknown dataset silverr: a query reads datasets of this pipeline (hint: did you mean `silver`?)"}},
		// A dataset's own name is never suggested: reading itself would be a cycle.
		{"unknown dataset, own name close", "  - name: silvers\n    query: SELECT * FROM silverz", []string{"18:26: datasets[2].query: unknown dataset silverz: a query reads datasets of this pipeline (hint: did you mean `silver`?)"}},
		{"unknown in a block", "  - name: gold\n    query: |\n      SELECT *\n        FROM silver JOIN nope USING (id)", []string{"20:26: datasets[2].query: unknown dataset nope"}},
		// Folded (>) and wrapped plain or double-quoted scalars: the place in the file, not the
		// scalar's start.
		{"unknown in a folded block", "  - name: gold\n    query: >\n      SELECT *\n        FROM silver\n      JOIN nope USING (id)", []string{"21:12: datasets[2].query: unknown dataset nope"}},
		{"unknown in a wrapped plain scalar", "  - name: gold\n    query: SELECT * FROM silver\n      JOIN nope USING (id)", []string{"19:12: datasets[2].query: unknown dataset nope"}},
		{"unknown in a wrapped quoted scalar", "  - name: gold\n    query: \"SELECT *\n      FROM nope\"", []string{"19:12: datasets[2].query: unknown dataset nope"}},
		{"a second statement in a folded block", "  - name: gold\n    query: >-\n      SELECT * FROM silver;\n        SELECT 1", []string{"20:9: datasets[2].query: a query is one statement"}},
		{"stream in a materialized view", "  - name: gold\n    query: SELECT * FROM STREAM(bronze)", []string{"18:26: datasets[2].query: STREAM(bronze) reads new rows incrementally, which only a streaming_table does; this dataset is a materialized_view"}},
		{"stream of a materialized view", "  - name: gold\n    query: SELECT 1 AS x\n  - name: st\n    type: streaming_table\n    query: SELECT * FROM STREAM(gold)", []string{"21:26: datasets[3].query: gold is a materialized_view: each update replaces its rows, so it has no appends to stream (hint: read it without STREAM (its current rows), read its changes with table_changes('gold', ...), or make gold a streaming_table)"}},
		{"a dataset qualified by a schema", "  - name: gold\n    query: SELECT * FROM main.silver JOIN cat.db.Bronze USING (id) JOIN information_schema.tables ON true", []string{
			"18:26: datasets[2].query: main.silver names dataset silver with a catalog or schema, which DuckDB looks up in its own catalog, where it does not exist: a query names the datasets of this pipeline alone or with LIVE. (hint: write silver or LIVE.silver)",
			"18:43: datasets[2].query: cat.db.Bronze names dataset bronze"}},
		{"a GROUP BY over a stream", "  - name: st\n    type: streaming_table\n    query: |\n      SELECT b.op, count(*) AS n\n      FROM STREAM(bronze) b JOIN (SELECT op FROM silver GROUP BY op) s USING (op)\n      GROUP BY b.op", []string{"22:7: datasets[2].query: a streaming_table appends the result of each update's new rows: a GROUP BY of its query gives a row per group and update"}},
		// What computes over one update's rows alone in a streaming table's outermost SELECT: a
		// DISTINCT, a window, an aggregate without GROUP BY (Spark refuses each on a stream).
		{"a DISTINCT over a stream", "  - name: st\n    type: streaming_table\n    query: SELECT DISTINCT op FROM STREAM(bronze)", []string{"19:19: datasets[2].query: a streaming_table appends the result of each update's new rows: SELECT DISTINCT removes the duplicates of each update's rows alone"}},
		{"a window over a stream", "  - name: st\n    type: streaming_table\n    query: SELECT op, row_number() OVER (PARTITION BY op ORDER BY id) AS rn FROM STREAM(bronze) WHERE id IN (SELECT DISTINCT id FROM silver)", []string{"19:36: datasets[2].query: a streaming_table appends the result of each update's new rows: a window function (OVER) numbers"}},
		{"an aggregate over a stream", "  - name: st\n    type: streaming_table\n    query: SELECT count(*) FILTER (WHERE op = 'I') AS n FROM STREAM(bronze)", []string{"19:19: datasets[2].query: a streaming_table appends the result of each update's new rows: an aggregate without GROUP BY gives one row per update"}},
		// Two streams joined match the rows of one update alone; a UNION of streams is fine.
		{"two streams joined", "  - name: st\n    type: streaming_table\n    query: SELECT * FROM STREAM(bronze) a JOIN STREAM(silver) b USING (id)", []string{"19:48: datasets[2].query: a streaming_table joins the new rows of each update: two streams joined"}},
		{"a stream in a subquery of a stream", "  - name: st\n    type: streaming_table\n    query: SELECT * FROM (SELECT * FROM STREAM(bronze) UNION ALL SELECT * FROM silver) a WHERE id IN (SELECT id FROM STREAM silver)", []string{"19:118: datasets[2].query: a streaming_table joins the new rows of each update: two streams joined"}},
		{"stream of an unknown dataset", "  - name: st\n    type: streaming_table\n    query: SELECT * FROM STREAM(bronz)", []string{"19:26: datasets[2].query: unknown dataset bronz"}},
		{"streaming table without stream", "  - name: gold\n    type: streaming_table\n    query: SELECT * FROM bronze", []string{"19:12: datasets[2].query: a streaming_table defined by a query must read at least one dataset with STREAM(...)"}},
		{"skip_change_commits on a materialized view", "  - name: gold\n    skip_change_commits: true\n    query: SELECT * FROM bronze", []string{"18:5: datasets[2].skip_change_commits: skip_change_commits applies to a streaming_table"}},
		{"bad table_changes", "  - name: gold\n    query: SELECT * FROM table_changes(silver)", []string{"18:26: datasets[2].query: table_changes takes a dataset name in quotes"}},
		{"a cycle", "  - name: gold\n    query: SELECT * FROM gold2\n  - name: gold2\n    query: SELECT * FROM gold", []string{"17:5: datasets[2]: dataset gold is part of a cycle", "19:5: datasets[3]: dataset gold2 is part of a cycle"}},
		// A Delta Live Tables SQL definition where a query goes: the keys that say it, and no
		// parse error besides.
		{"a DLT streaming table definition", "  - name: st\n    type: streaming_table\n    query: CREATE OR REFRESH STREAMING TABLE st (CONSTRAINT valid_id EXPECT (id IS NOT NULL AND op <> 'X') ON VIOLATION DROP ROW, CONSTRAINT has_op EXPECT (op IS NOT NULL), CONSTRAINT odd EXPECT (amt BETWEEN 1 AND 2) ON VIOLATION FAIL UPDATE) AS SELECT * FROM STREAM(LIVE.bronze)", []string{
			"19:12: datasets[2].query: a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with CREATE (hint: this is a Delta Live Tables definition; the spec says it with keys of the dataset: `type: streaming_table`, `query: SELECT * FROM STREAM(LIVE.bronze)`, `expectations: [{name: valid_id, expect: 'id != nil and op != \"X\"', on_violation: drop}, {name: has_op, expect: 'op != nil', on_violation: warn}, {name: odd, expect: 'amt BETWEEN 1 AND 2', on_violation: fail}]` (row expressions use the expr language, not SQL: `x BETWEEN 1 AND 9` is `x >= 1 and x <= 9`, `AND`, `OR`, `NOT` are `and`, `or`, `not` (or `&&`, `||`, `!`)))"}},
		{"a DLT APPLY CHANGES statement", "  - name: tgt\n    query: |\n      APPLY CHANGES INTO LIVE.tgt FROM STREAM(LIVE.bronze) KEYS (id, region)\n      APPLY AS DELETE WHEN op = 'D' OR deleted IS NOT NULL\n      SEQUENCE BY struct(ts, seq) COLUMNS * EXCEPT (op, deleted)\n      STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (note);", []string{
			"19:7: datasets[2].query: a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with APPLY (hint: this is a Delta Live Tables APPLY CHANGES statement; the spec says it with the dataset's `apply_changes:` {source: bronze, keys: [id, region], apply_as_deletes: 'op == \"D\" or deleted != nil', sequence_by: [ts, seq], except_column_list: [op, deleted], stored_as_scd_type: 2, track_history_except_column_list: [note]}, and no query)"}},
		{"a DLT live table definition", "  - name: gold\n    query: |\n      CREATE OR REFRESH LIVE TABLE gold\n      COMMENT \"by op\"\n      PARTITIONED BY (op)\n      TBLPROPERTIES ('quality' = 'gold', delta.enableChangeDataFeed = true)\n      AS SELECT op, count(*) AS n FROM LIVE.silver GROUP BY op;", []string{
			"19:7: datasets[2].query: a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with CREATE (hint: this is a Delta Live Tables definition; the spec says it with keys of the dataset: `type: materialized_view`, `comment: \"by op\"`, `table_properties: {quality: \"gold\", delta.enableChangeDataFeed: \"true\"}`, `query: SELECT op, count(*) AS n FROM LIVE.silver GROUP BY op`)"}},
		// Auto Loader's table functions: the one problem of the query is what to write instead.
		{"auto loader in a query", "  - name: st\n    type: streaming_table\n    query: SELECT * FROM STREAM read_files('/landing', format => 'json')", []string{
			"19:33: datasets[2].query: read_files(...) is Spark SQL, which DuckDB, the engine that runs queries, does not take: the update would fail here (hint: write a dataset with `source: {path: ..., format: json|csv|parquet}` (Auto Loader's incremental file reads), which queries then read by name)"}},
		// A DLT definition over Auto Loader: the definition's keys and the `source:` to write
		// (it was valid before: the Auto Loader rule dropped the CREATE error, and the DLT rule
		// the read_files one).
		{"a DLT streaming table over auto loader", "  - name: st\n    query: CREATE OR REFRESH STREAMING LIVE TABLE st COMMENT 'raw' AS SELECT * FROM cloud_files('/landing', 'json')", []string{
			"18:12: datasets[2].query: a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with CREATE (hint: this is a Delta Live Tables definition; the spec says it with keys of the dataset: `type: streaming_table`, `comment: \"raw\"`, `query: SELECT * FROM cloud_files('/landing', 'json')`; its Auto Loader read (read_files or cloud_files) is not a query either: make the dataset a `source: {path: ..., format: json|csv|parquet}` with those keys except `query:`)"}},
		// The DLT pair `CREATE ... TABLE x; APPLY CHANGES INTO x ...`: one problem, whose hint says
		// both, not a second one telling to remove the APPLY CHANGES after the `;`.
		{"a DLT target and its APPLY CHANGES", "  - name: tgt\n    query: |\n      CREATE OR REFRESH STREAMING TABLE tgt;\n      APPLY CHANGES INTO LIVE.tgt FROM STREAM(LIVE.bronze) KEYS (id) SEQUENCE BY ts;", []string{
			"19:7: datasets[2].query: a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with CREATE (hint: this is a Delta Live Tables APPLY CHANGES statement; the spec says it with the dataset's `apply_changes:` {source: bronze, keys: [id], sequence_by: ts}, and no query)"}},
		// A DLT append flow: its target, a streaming table whose query is the flow's SELECT (it
		// was a materialized view whose query was the INSERT INTO).
		{"a DLT append flow", "  - name: tgt\n    query: CREATE FLOW f AS INSERT INTO LIVE.tgt BY NAME SELECT * FROM STREAM(LIVE.bronze);", []string{
			"18:12: datasets[2].query: a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with CREATE (hint: this is a Delta Live Tables append flow into tgt; the spec has one flow per dataset, so say it with keys of dataset tgt: `type: streaming_table`, `query: SELECT * FROM STREAM(LIVE.bronze)` (the SELECTs of several append flows into tgt are one query joined by UNION ALL BY NAME))"}},
		// Spark SQL functions DuckDB does not take, each at its place; not in strings, quoted
		// names, after a dot or as a column, nor datediff and date_sub in DuckDB's three-argument
		// form.
		{"spark functions", "  - name: gold\n    query: SELECT explode(tags) AS t, size, 'nvl(x)' AS s, \"size\"(1), x.size(1), datediff('day', a, b), DATEDIFF(b, a), date_sub(d, 3) FROM silver", []string{
			"18:19: datasets[2].query: explode(...) is Spark SQL, which DuckDB, the engine that runs queries, does not take: the update would fail here (hint: write unnest(arr) in the SELECT list (it drops empty and NULL arrays))",
			"18:105: datasets[2].query: DATEDIFF with 2 arguments is Spark SQL, which DuckDB, the engine that runs queries, does not take: the update would fail here (hint: write datediff('day', start, end): DuckDB's takes the unit first and start before end (Spark's is datediff(end, start)))",
			"18:121: datasets[2].query: date_sub with 2 arguments is Spark SQL"}},
		// One argument is one argument.
		{"spark log", "  - name: gold\n    query: SELECT log(x) AS l FROM silver", []string{
			"18:19: datasets[2].query: log with 1 argument is Spark SQL, which DuckDB"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("p.yaml", []byte(build(map[string]string{"#MORE": c.more})), nil, nil)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want Errors", err)
			}
			if len(es) != len(c.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(es), len(c.want), err)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(es[i].Error(), "p.yaml:"+w) {
					t.Errorf("problem %d:\n%s\nwant a prefix:\np.yaml:%s", i, es[i].Error(), w)
				}
			}
		})
	}
}

// TestTableSource: `source: {table: x}` reads dataset x (a DAG edge), with x's columns plus the
// change feed's for `read: change_feed`; its mistakes are reported at their place.
func TestTableSource(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#MORE": "  - name: feed\n    source: {table: silver, read: change_feed}"})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := p.Graph()
	src := p.Dataset("feed").Source
	if src.Format != FormatDelta || src.Path != p.Storage+"/tables/silver" || fmt.Sprint(g.Deps("feed")) != "[silver]" ||
		p.Dataset("feed").Schema.DDL() != "id BIGINT, op STRING, seq BIGINT, _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP" {
		t.Fatalf("feed: %+v deps %v schema %s", src, g.Deps("feed"), p.Dataset("feed").Schema.DDL())
	}
	cases := []struct{ name, more, want string }{
		{"unknown", "  - name: feed\n    source: {table: silvr}", "18:21: datasets[2].source.table: unknown dataset silvr"},
		{"path too", "  - name: feed\n    source: {table: silver, path: x}", "18:29: datasets[2].source.path: path does not apply to a `table:` source"},
		{"skip with change_feed", "  - name: feed\n    source: {table: silver, read: change_feed, skip_change_commits: true}", "18:48: datasets[2].source.skip_change_commits: skip_change_commits applies to `read: append` only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("p.yaml", []byte(build(map[string]string{"#MORE": c.more})), nil, nil)
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), "p.yaml:"+c.want) {
				t.Fatalf("got:\n%v\nwant one problem starting with:\np.yaml:%s", err, c.want)
			}
		})
	}
}

// TestDatasetNamesCase: dataset names that differ only in case are refused (SQL resolves them as
// one, and so does a case-insensitive file system), and a query may spell a dataset's name in
// any case, as Spark SQL and DuckDB allow: the reference takes the dataset's own name.
func TestDatasetNamesCase(t *testing.T) {
	t.Parallel()
	const base = `name: t
datasets:
  - name: customers
    source: {path: ./in, format: json, schema: "id BIGINT"}
`
	_, err := Parse("p.yaml", []byte(base+"  - name: Customers\n    query: SELECT 42 AS id\n"), nil, nil)
	if want := "p.yaml:5:11: datasets[1].name: dataset Customers differs only in case from dataset customers at p.yaml:3:11"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("names differing in case: %v, want %q", err, want)
	}
	p, err := Parse("p.yaml", []byte(base+"  - name: gold\n    query: SELECT id FROM LIVE.Customers JOIN CUSTOMERS USING (id)\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Dataset("gold").Query
	if len(q.Refs) != 2 || q.Refs[0].Name != "customers" || q.Refs[1].Name != "customers" {
		t.Fatalf("refs %+v, want both named customers", q.Refs)
	}
	if got := q.Rewrite(func(r QueryRef) string { return `"` + r.Name + `"` }); got != `SELECT id FROM "customers" JOIN "customers" USING (id)` {
		t.Fatalf("rewritten %s", got)
	}
}

// TestSQLIdiomHint: an expectation written in SQL gets a hint naming each SQL form it uses in
// the expression language, or the row expression itself when its forms are simple
// (sqlCondition); expressions without SQL forms get none.
func TestSQLIdiomHint(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		"amt IS NOT NULL AND op <> 'D'":          "row expressions use the expr language, not SQL: `x IS NOT NULL` is `x != nil`, `<>` is `!=`, `AND`, `OR`, `NOT` are `and`, `or`, `not` (or `&&`, `||`, `!`)",
		"op IN ('I', 'U')":                       "row expressions use the expr language, not SQL: `x IN ('a', 'b')` is `x in [\"a\", \"b\"]`",
		"op = 'D'":                               "row expressions use the expr language, not SQL: `=` is `==`",
		"name is null":                           "row expressions use the expr language, not SQL: `x IS NULL` is `x == nil`",
		"amt >= 0 && op != \"D\"":                "",
		"name RLIKE '^a'":                        "row expressions use the expr language, not SQL: `x RLIKE '^a'` is `x matches \"^a\"`",
		"coalesce(amt, 0) >= 0":                  "row expressions use the expr language, not SQL: `coalesce(x, 0)` is `(x ?? 0)`",
		"nvl (amt, 0) >= 0":                      "row expressions use the expr language, not SQL: `coalesce(x, 0)` is `(x ?? 0)`",
		"amt between 1 and 9":                    "row expressions use the expr language, not SQL: `x BETWEEN 1 AND 9` is `x >= 1 and x <= 9`",
		"length(name) > 0":                       "row expressions use the expr language, not SQL: `length(s)` and `size(arr)` are `len(s)` and `len(arr)`",
		"SIZE (tags) > 0":                        "row expressions use the expr language, not SQL: `length(s)` and `size(arr)` are `len(s)` and `len(arr)`",
		"ucase(op) == \"D\"":                     "row expressions use the expr language, not SQL: `lcase(s)` and `ucase(s)` are `lower(s)` and `upper(s)`",
		"len(name) > 0 && lower(op) == \"d\"":    "",
		"name matches \"^a\" && (amt ?? 0) >= 1": "",
		"amt > 0 AND op != \"D\"":                "row expressions use the expr language, not SQL: `AND`, `OR`, `NOT` are `and`, `or`, `not` (or `&&`, `||`, `!`)",
	} {
		if got := sqlIdiomHint(code); got != want {
			t.Errorf("sqlIdiomHint(%q) = %q, want %q", code, got, want)
		}
	}
	const spec = `name: t
datasets:
  - name: raw
    source: {path: ./in, format: json, schema: "amt BIGINT"}
    expectations:
      - {name: has_amt, expect: amt IS NOT NULL}
`
	_, err := Parse("p.yaml", []byte(spec), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "expectation has_amt does not compile") || !strings.Contains(err.Error(), "(hint: row expressions use the expr language, not SQL: write amt != nil)") {
		t.Fatalf("a SQL expectation: %v", err)
	}
	// The forms the hints give compile as row expressions.
	const written = `name: t
datasets:
  - name: raw
    source: {path: ./in, format: json, schema: "amt BIGINT, name STRING"}
    expectations:
      - {name: a, expect: 'name matches "^a"'}
      - {name: b, expect: '(amt ?? 0) >= 0'}
      - {name: c, expect: 'amt >= 1 and amt <= 9'}
`
	if _, err := Parse("p.yaml", []byte(written), nil, nil); err != nil {
		t.Fatalf("the hints' forms: %v", err)
	}
	// sqlCondition writes the simple SQL forms as a row expression, and says when it cannot.
	for code, want := range map[string]string{
		"amt IS NOT NULL AND op <> 'D'":    `amt != nil and op != "D"`,
		"op = 'D' OR op = \"X\"":           `op == "D" or op == "X"`,
		"NOT (amt >= 10) AND note IS NULL": `not (amt >= 10) and note == nil`,
		"amt <= 5 AND amt != 3":            `amt <= 5 and amt != 3`,
		"name = 'it''s'":                   `name == "it's"`,
		"amt BETWEEN 1 AND 2":              "",
		"op IN ('I', 'U')":                 "",
	} {
		got, ok := sqlCondition(code)
		if want == "" {
			if ok {
				t.Errorf("sqlCondition(%q) = %q, want none", code, got)
			}
		} else if !ok || got != want {
			t.Errorf("sqlCondition(%q) = %q, %v; want %q", code, got, ok, want)
		}
	}
}

// TestQueryFiles: the file paths a query writes as literals where DuckDB reads files are found,
// and Rewrite puts the relative local ones as the spec's folder resolves them.
func TestQueryFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sql string
		want      string // the paths found, space-separated
		rewritten string
	}{
		{"read_csv", "SELECT * FROM read_csv('data/x.csv', header = true)", "data/x.csv",
			"SELECT * FROM read_csv('/spec/data/x.csv', header = true)"},
		{"a list, a glob and a quote", "SELECT * FROM read_parquet(['a.parquet', 'it''s/*.parquet']) JOIN Read_JSON_Auto('../j.json') USING (id)", "a.parquet it's/*.parquet ../j.json",
			"SELECT * FROM read_parquet(['/spec/a.parquet', '/spec/it''s/*.parquet']) JOIN Read_JSON_Auto('/j.json') USING (id)"},
		{"a string as a FROM item, in a FROM list", "SELECT * FROM 'x.csv' AS x, \"t\", 'y.json' y", "x.csv y.json",
			"SELECT * FROM '/spec/x.csv' AS x, <t>, '/spec/y.json' y"},
		{"absolute, home and URLs stay", "SELECT * FROM read_csv('/d/x.csv') JOIN read_csv('~/x.csv') USING (a) JOIN read_parquet('s3://b/k.parquet') USING (a) JOIN 'https://h/x.csv' USING (a)", "/d/x.csv ~/x.csv s3://b/k.parquet https://h/x.csv",
			"SELECT * FROM read_csv('/d/x.csv') JOIN read_csv('~/x.csv') USING (a) JOIN read_parquet('s3://b/k.parquet') USING (a) JOIN 'https://h/x.csv' USING (a)"},
		{"a file function in a lateral join", "SELECT * FROM t, LATERAL glob('logs/*.txt')", "logs/*.txt",
			"SELECT * FROM <t>, LATERAL glob('/spec/logs/*.txt')"},
		{"other strings stay", "SELECT 'data/x.csv' AS p, range(3) FROM read_csv('data/' || 'x.csv') WHERE f = 'y.csv'", "",
			"SELECT 'data/x.csv' AS p, range(3) FROM read_csv('data/' || 'x.csv') WHERE f = 'y.csv'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("/spec/p.yaml", []byte("name: p\ndatasets:\n  - name: t\n    source: {path: in, format: json, schema: \"a BIGINT\"}\n  - name: q\n    query: "+strconv.Quote(c.sql)+"\n"), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			q := p.Dataset("q").Query
			var got []string
			for _, f := range q.Files {
				got = append(got, f.Path)
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("files %q, want %q", got, c.want)
			}
			if rw := q.Rewrite(func(r QueryRef) string { return "<" + r.Name + ">" }); rw != c.rewritten {
				t.Errorf("rewritten\n%s\nwant\n%s", rw, c.rewritten)
			}
		})
	}
}

// TestGroupBy: only a GROUP BY of the outermost SELECT counts, not one in a subquery, a CTE or a
// string.
func TestGroupBy(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]int{
		"SELECT g, count(*) FROM STREAM(x) GROUP BY g":                                    34,
		"SELECT * FROM STREAM(x) JOIN (SELECT g FROM y GROUP BY g) USING (g)":             -1,
		"WITH a AS (SELECT g FROM y GROUP BY g) SELECT * FROM STREAM(x) JOIN a USING (g)": -1,
		"SELECT 'GROUP BY' AS s, sum(v) OVER (PARTITION BY g) FROM STREAM(x)":             -1,
	} {
		if got := groupBy(sql); got != want {
			t.Errorf("groupBy(%q) = %d, want %d", sql, got, want)
		}
	}
}

// TestDynamicPivot: a PIVOT whose ON column has no IN list of values (or takes them from a
// subquery) makes columns of its input's values; one with value lists for every ON column, no
// ON clause, UNPIVOT and queries without PIVOT do not.
func TestDynamicPivot(t *testing.T) {
	for sql, want := range map[string]bool{
		"PIVOT raw ON name USING sum(v) GROUP BY id":                                        true,
		"pivot raw on name":                                                                 true,
		"PIVOT_WIDER raw ON name USING sum(v)":                                              true,
		"PIVOT raw ON name IN ('a', 'b') USING sum(v)":                                      false,
		"PIVOT raw ON name IN ('a', 'b'), kind USING sum(v)":                                true,
		"PIVOT raw ON name IN ('a', 'b'), kind IN (1, 2) USING sum(v)":                      false,
		"PIVOT raw ON name IN (SELECT name FROM raw) USING sum(v)":                          true,
		"PIVOT raw ON name || '_x' USING sum(v)":                                            true,
		"PIVOT raw USING sum(v) GROUP BY name":                                              false,
		"PIVOT (SELECT * FROM raw JOIN k ON raw.id = k.id) ON name IN ('a') USING count(*)": false,
		"PIVOT (SELECT * FROM raw JOIN k ON raw.id = k.id) ON name USING count(*)":          true,
		"WITH p AS (PIVOT raw ON name USING sum(v) GROUP BY id) SELECT id, alice FROM p":    true,
		"SELECT * FROM (PIVOT raw ON name IN ('alice') USING sum(v)) p":                     false,
		"FROM raw PIVOT (sum(v) FOR name IN ('a', 'b'))":                                    false,
		"FROM raw PIVOT (sum(v) FOR name IN (SELECT name FROM raw))":                        true,
		"UNPIVOT raw ON a, b INTO NAME k VALUE v":                                           false,
		"SELECT 'PIVOT raw ON name' AS s FROM raw":                                          false,
		"SELECT * FROM raw JOIN k ON raw.id = k.id":                                         false,
	} {
		q := &Query{SQL: sql}
		if got := q.DynamicPivot(); got != want {
			t.Errorf("DynamicPivot(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestQueryNameAtPosAt: NameAt finds a name as a word or a quoted name, not inside a string or a
// comment, in any case for a word; PosAt places an offset of the SQL at its line and column in
// the spec file, inside a literal block too, and at the query's start for -1.
func TestQueryNameAtPosAt(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(`name: t
datasets:
  - name: raw
    source: {path: ./in, format: json, schema: "id BIGINT, nme STRING"}
  - name: q
    query: |
      SELECT 'nme' AS s, -- nme
        NME, "nme"
      FROM raw
`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Dataset("q").Query
	at := q.NameAt("nme")
	if at < 0 || q.SQL[at:at+3] != "NME" {
		t.Fatalf("NameAt(nme) = %d in %q, want the NME of the second line", at, q.SQL)
	}
	if got := q.PosAt(at).String(); got != "p.yaml:8:9" {
		t.Errorf("PosAt = %s, want p.yaml:8:9", got)
	}
	if q.NameAt("missing") != -1 {
		t.Error("NameAt finds a name the SQL lacks")
	}
	if got, want := q.PosAt(-1), q.Pos; got != want {
		t.Errorf("PosAt(-1) = %v, want the query's position %v", got, want)
	}
}

// TestJoinedStreams: two STREAM references that one SELECT joins (or reads one in a subquery of
// the other's) are found; streams combined by UNION, at any level, are not.
func TestJoinedStreams(t *testing.T) {
	for _, c := range []struct {
		sql    string
		joined bool
	}{
		{"SELECT * FROM STREAM(a) UNION ALL SELECT * FROM STREAM(b)", false},
		{"(SELECT * FROM STREAM(a)) UNION ALL BY NAME (SELECT * FROM STREAM b)", false},
		{"WITH x AS (SELECT * FROM STREAM(a) UNION ALL SELECT * FROM STREAM(b)) SELECT * FROM x JOIN c USING (id)", false},
		{"SELECT * FROM STREAM(a) JOIN STREAM(b) USING (id)", true},
		{"SELECT * FROM STREAM(a), STREAM(b)", true},
		{"SELECT * FROM (SELECT * FROM STREAM(a) UNION ALL SELECT * FROM c) x JOIN STREAM(b) USING (id)", true},
		{"WITH x AS (SELECT * FROM STREAM(a)) SELECT * FROM x JOIN STREAM(b) USING (id)", true},
	} {
		refs, _, _, _ := parseQuery(c.sql)
		if got := joinedStreams(c.sql, refs) >= 0; got != c.joined {
			t.Errorf("%s: joined %v, want %v", c.sql, got, c.joined)
		}
	}
}
