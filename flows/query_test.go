package flows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// update runs the flows of every dataset of p in spec order (the tests' specs list datasets in
// dependency order), failing the test on an error.
func update(t *testing.T, p *spec.Pipeline) map[string]Metrics {
	t.Helper()
	out := map[string]Metrics{}
	for _, d := range p.Datasets {
		m, err := Run(context.Background(), &Env{Pipeline: p, Events: &recorder{}}, d)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		out[d.Name] = m
	}
	return out
}

// sortedRows returns a table's rows as sorted lines of space-separated JSON values.
func sortedRows(t *testing.T, p *spec.Pipeline, name string) string {
	t.Helper()
	snap, rows := readTable(t, p, name)
	return strings.Join(jsonLines(snap.Metadata.Schema, rows), "\n")
}

func jsonLines(s schema.Schema, rows [][]any) []string {
	var out []string
	for _, r := range rows {
		var b []byte
		for i, f := range s.Fields {
			if i > 0 {
				b = append(b, ' ')
			}
			b = schema.AppendJSON(b, f.Type, r[i])
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

func check(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n%s\nwant:\n%s", what, got, want)
	}
}

const querySpec = `name: q
storage: ./storage
datasets:
  - name: sales
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, shop STRING, amount DECIMAL(10,2)"
  - name: sales_x2
    type: streaming_table
    query: SELECT id, shop, CAST(amount * 2 AS DECIMAL(10,2)) AS doubled FROM STREAM(LIVE.sales) WHERE amount > 0
  - name: by_shop
    query: |
      -- gold: one row per shop
      SELECT shop, count(*) AS n, sum(amount) AS total
      FROM sales GROUP BY shop
`

// TestQueryStreamOnceAndMaterializedView: a streaming table over STREAM(sales) processes each
// appended row exactly once across three updates (an update without new files is idle), and a
// materialized view equals its query after each update, its change data feed holding the rows
// that changed (a changed group as delete + insert; unchanged groups not at all).
func TestQueryStreamOnceAndMaterializedView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, querySpec)
	land := filepath.Join(dir, "landing")
	write(t, filepath.Join(land, "1.json"), []byte(`{"id":1,"shop":"a","amount":10.00}
{"id":2,"shop":"b","amount":5.50}
{"id":3,"shop":"a","amount":-1.00}
`))
	update(t, p)
	check(t, "sales_x2 after 1", sortedRows(t, p, "sales_x2"), "1 \"a\" 20.00\n2 \"b\" 11.00")
	check(t, "by_shop after 1", sortedRows(t, p, "by_shop"), "\"a\" 2 9.00\n\"b\" 1 5.50")

	write(t, filepath.Join(land, "2.json"), []byte(`{"id":4,"shop":"a","amount":1.00}
`))
	m := update(t, p)
	check(t, "sales_x2 after 2", sortedRows(t, p, "sales_x2"), "1 \"a\" 20.00\n2 \"b\" 11.00\n4 \"a\" 2.00")
	check(t, "by_shop after 2", sortedRows(t, p, "by_shop"), "\"a\" 3 10.00\n\"b\" 1 5.50")
	if m["sales_x2"].NumOutputRows != 1 {
		t.Fatalf("update 2 appended %d rows to sales_x2, want 1", m["sales_x2"].NumOutputRows)
	}
	mv := delta.New(TableDir(p.Storage, "by_shop"))
	cs, ch, err := mv.Changes(m["by_shop"].Version, m["by_shop"].Version)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "by_shop changes of update 2", strings.Join(jsonLines(schema.Schema{Fields: cs.Fields[:4]}, ch), "\n"),
		"\"a\" 2 9.00 \"delete\"\n\"a\" 3 10.00 \"insert\"")

	m = update(t, p) // nothing new
	if !m["sales_x2"].Idle || m["by_shop"].Version != -1 {
		t.Fatalf("update 3 without input: sales_x2 idle %v, by_shop committed version %d", m["sales_x2"].Idle, m["by_shop"].Version)
	}
	write(t, filepath.Join(land, "3.json"), []byte(`{"id":5,"shop":"c","amount":2.00}
`))
	update(t, p)
	check(t, "sales_x2 after 4", sortedRows(t, p, "sales_x2"), "1 \"a\" 20.00\n2 \"b\" 11.00\n4 \"a\" 2.00\n5 \"c\" 4.00")
	check(t, "by_shop after 4", sortedRows(t, p, "by_shop"), "\"a\" 3 10.00\n\"b\" 1 5.50\n\"c\" 1 2.00")

	// A full refresh of sales re-creates it: the stream refuses to go on and names the full
	// refresh of sales_x2, which then reads every row once again.
	env := &Env{Pipeline: p, Events: &recorder{}}
	for _, name := range []string{"sales", "sales_x2"} {
		if err := Reset(p, p.Dataset("sales")); err != nil || Setup(p, p.Dataset("sales")) != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), env, p.Dataset("sales")); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), env, p.Dataset("sales_x2"))
		if name == "sales" {
			if err == nil || !strings.Contains(err.Error(), "sales was re-created since") || !strings.Contains(err.Error(), "--full-refresh sales_x2") {
				t.Fatalf("stream over a re-created table: %v", err)
			}
			if err := Reset(p, p.Dataset("sales_x2")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	check(t, "sales_x2 after its full refresh", sortedRows(t, p, "sales_x2"), "1 \"a\" 20.00\n2 \"b\" 11.00\n4 \"a\" 2.00\n5 \"c\" 4.00")
}

const changeSpec = `name: q
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, v STRING, seq BIGINT"
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
  - name: feed
    query: SELECT id, v, _change_type, _commit_version FROM table_changes('target', 1) WHERE _change_type != 'update_preimage'
  - name: long_v
    type: view
    query: SELECT id, v FROM target WHERE length(v) > 1
    expectations:
      - {name: not_bad, expect: 'v != "bad"', on_violation: drop}
  - name: long_count
    query: SELECT count(*) AS n FROM long_v
  - name: appended
    type: streaming_table
    query: SELECT id, v FROM STREAM target
%SKIP%`

// TestQueryChangeFeedViewAndStreamChanges: table_changes reads an APPLY CHANGES target's feed
// with _change_type and _commit_version; a view is not stored, its drop expectation applies to
// what readers see; STREAM over a table whose commit updated rows fails naming the version and
// skip_change_commits, unless skip_change_commits is set.
func TestQueryChangeFeedViewAndStreamChanges(t *testing.T) {
	t.Parallel()
	for _, skip := range []bool{false, true} {
		dir := t.TempDir()
		text := strings.ReplaceAll(changeSpec, "%SKIP%", "")
		if skip {
			text = strings.ReplaceAll(changeSpec, "%SKIP%", "    skip_change_commits: true\n")
		}
		p := loadPipeline(t, dir, text)
		land := filepath.Join(dir, "landing")
		write(t, filepath.Join(land, "1.json"), []byte(`{"op":"I","id":1,"v":"xx","seq":1}
{"op":"I","id":2,"v":"y","seq":1}
{"op":"I","id":3,"v":"bad","seq":1}
`))
		update(t, p)
		check(t, "feed after 1", sortedRows(t, p, "feed"), "1 \"xx\" \"insert\" 1\n2 \"y\" \"insert\" 1\n3 \"bad\" \"insert\" 1")
		check(t, "long_count after 1", sortedRows(t, p, "long_count"), "1")
		check(t, "appended after 1", sortedRows(t, p, "appended"), "1 \"xx\"\n2 \"y\"\n3 \"bad\"")
		if _, err := delta.New(TableDir(p.Storage, "long_v")).Snapshot(-1); !errors.Is(err, delta.ErrNoTable) {
			t.Fatalf("the view has a table: %v", err)
		}

		write(t, filepath.Join(land, "2.json"), []byte(`{"op":"U","id":2,"v":"yy","seq":2}
{"op":"D","id":1,"seq":2}
`))
		env := &Env{Pipeline: p, Events: &recorder{}}
		for _, d := range p.Datasets {
			_, err := Run(context.Background(), env, d)
			if d.Name == "appended" && !skip {
				if err == nil || !strings.Contains(err.Error(), "version 2 of target updated or deleted rows") || !strings.Contains(err.Error(), "skip_change_commits") {
					t.Fatalf("STREAM over an updated table: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
		}
		check(t, "feed after 2", sortedRows(t, p, "feed"),
			"1 \"xx\" \"delete\" 2\n1 \"xx\" \"insert\" 1\n2 \"y\" \"insert\" 1\n2 \"yy\" \"update_postimage\" 2\n3 \"bad\" \"insert\" 1")
		check(t, "long_count after 2", sortedRows(t, p, "long_count"), "1")
		check(t, "appended after 2", sortedRows(t, p, "appended"), "1 \"xx\"\n2 \"y\"\n3 \"bad\"")
	}
}

const feedSpec = `name: q
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, country STRING, doses BIGINT, seq BIGINT"
  - name: silver
    apply_changes:
      source: changes
      keys: [country]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op, seq]
  - name: silver_feed
    source: {table: silver, read: change_feed}
  - name: gold
    apply_changes:
      source: silver_feed
      keys: [country]
      sequence_by: _commit_version
      apply_as_deletes: _change_type == "delete"
      except_column_list: [_change_type, _commit_version, _commit_timestamp]
`

// TestTableChangeFeedSource: `source: {table: silver, read: change_feed}` streams silver's change
// data feed incrementally, without update pre-images, so an APPLY CHANGES flow keeps gold equal
// to silver through inserts, an update and a delete.
func TestTableChangeFeedSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, feedSpec)
	if fmt.Sprint(p.Dataset("silver_feed").Schema.DDL()) != "country STRING, doses BIGINT, _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP" {
		t.Fatalf("silver_feed columns: %s", p.Dataset("silver_feed").Schema.DDL())
	}
	land := filepath.Join(dir, "landing")
	write(t, filepath.Join(land, "1.json"), []byte(`{"op":"I","country":"FR","doses":10,"seq":1}
{"op":"I","country":"DE","doses":20,"seq":1}
{"op":"I","country":"IT","doses":30,"seq":1}
`))
	update(t, p)
	check(t, "gold after 1", sortedRows(t, p, "gold"), "\"DE\" 20\n\"FR\" 10\n\"IT\" 30")
	write(t, filepath.Join(land, "2.json"), []byte(`{"op":"U","country":"FR","doses":15,"seq":2}
{"op":"D","country":"IT","seq":2}
`))
	m := update(t, p)
	check(t, "gold after 2", sortedRows(t, p, "gold"), "\"DE\" 20\n\"FR\" 15")
	check(t, "silver", sortedRows(t, p, "silver"), sortedRows(t, p, "gold"))
	if m["silver_feed"].NumOutputRows != 2 || m["gold"].NumUpsertedRows != 1 || m["gold"].NumDeletedRows != 1 {
		t.Fatalf("update 2: feed %d rows (want 2: the post-image and the delete), gold upserted %d deleted %d (want 1 and 1)",
			m["silver_feed"].NumOutputRows, m["gold"].NumUpsertedRows, m["gold"].NumDeletedRows)
	}
	m = update(t, p)
	if !m["silver_feed"].Idle {
		t.Fatal("update 3 without input read the feed again")
	}
}

// TestQueryOverDeletionVectors: a materialized view over a table with deletion vectors reads the
// table's Parquet files through DuckDB, which leaves out the rows the DVs delete. The source
// table gets delta.enableDeletionVectors from `table_properties:` (protocol 3/7), then a DELETE
// by deletion vector of the row with the negative amount (remove + add with the DV).
func TestQueryOverDeletionVectors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: q
storage: ./storage
datasets:
  - name: sales
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, shop STRING, amount DECIMAL(10,2)"
    table_properties:
      delta.enableDeletionVectors: "true"
  - name: by_shop
    query: SELECT shop, count(*) AS n, sum(amount) AS total FROM sales GROUP BY shop
`)
	write(t, filepath.Join(dir, "landing", "1.json"), []byte(`{"id":1,"shop":"a","amount":10.00}
{"id":2,"shop":"b","amount":5.50}
{"id":3,"shop":"a","amount":-1.00}
`))
	update(t, p)
	check(t, "by_shop before", sortedRows(t, p, "by_shop"), "\"a\" 2 9.00\n\"b\" 1 5.50")

	tbl := delta.New(TableDir(p.Storage, "sales"))
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Protocol != (delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7}) || !slices.Equal(snap.ReaderFeatures, []string{"deletionVectors"}) {
		t.Fatalf("sales protocol %+v %v", snap.Protocol, snap.ReaderFeatures)
	}
	if len(snap.Files) != 1 {
		t.Fatalf("%d files", len(snap.Files))
	}
	a := snap.Files[0]
	rows, err := tbl.ReadFile(a.Path, snap.Metadata.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var del []uint64
	for i, r := range rows {
		if r[0] == int64(3) {
			del = append(del, uint64(i))
		}
	}
	dvs, err := tbl.WriteDeletionVectors([][]uint64{del})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(snap)
	tx.Remove(tbl.RemoveFor(a, 0))
	a.DeletionVector = dvs[0]
	tx.Add(a)
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	rel, err := tableRelation(p, "sales")
	if err != nil {
		t.Fatal(err)
	}
	if rel.RowsOnly || len(rel.Files) != 1 || !slices.Equal(rel.Deleted[rel.Files[0]], []int64{int64(del[0])}) {
		t.Fatalf("relation: rows only %v, files %v, deleted %v", rel.RowsOnly, rel.Files, rel.Deleted)
	}
	update(t, p)
	check(t, "by_shop after the DELETE", sortedRows(t, p, "by_shop"), "\"a\" 1 10.00\n\"b\" 1 5.50")
	check(t, "sales after the DELETE", sortedRows(t, p, "sales"), "1 \"a\" 10.00\n2 \"b\" 5.50")
}

// TestQueryStreamSourceRenamed: a streaming table whose STREAM source is renamed (the old name no
// longer read, the new one never read) is refused with the full refresh to run, instead of
// reading the renamed table from its start into the rows it holds (every row twice). Adding a
// second source beside the first is not refused: the new one is read from its start.
func TestQueryStreamSourceRenamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	specOf := func(bronze, query string) *spec.Pipeline {
		return loadPipeline(t, dir, `name: renamed
storage: ./storage
datasets:
  - name: `+bronze+`
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: more
    source: {path: ./more, format: json, schema: "id BIGINT"}
  - name: silver
    type: streaming_table
    query: `+query+`
`)
	}
	for _, f := range [][2]string{{"landing", `{"id": 1}`}, {"more", `{"id": 2}`}} {
		if err := os.MkdirAll(filepath.Join(dir, f[0]), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, f[0], "a.json"), []byte(f[1]+"\n"))
	}
	update(t, specOf("raw", "SELECT id FROM STREAM(raw)"))

	p := specOf("bronze", "SELECT id FROM STREAM(bronze)")
	env := &Env{Pipeline: p, Events: &recorder{}}
	for _, name := range []string{"bronze", "more"} {
		if _, err := Run(context.Background(), env, p.Dataset(name)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Run(context.Background(), env, p.Dataset("silver"))
	want := "dataset silver holds the rows it read from STREAM(raw), which its query no longer reads, and now streams STREAM(bronze), which it has not read"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--full-refresh silver") {
		t.Fatalf("renamed source: error %v, want it to say %q and name the full refresh of silver", err, want)
	}
	check(t, "silver after the refused update", sortedRows(t, p, "silver"), "1")

	update(t, specOf("raw", "SELECT id FROM STREAM(raw) UNION ALL SELECT id FROM STREAM(more)"))
	check(t, "silver with a second source", sortedRows(t, p, "silver"), "1\n2")

	// raw dropped, then a third source added in a later update: not a rename, not refused.
	for _, f := range []string{"third", "fourth"} {
		if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	withSources := func(query string) *spec.Pipeline {
		return loadPipeline(t, dir, `name: renamed
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: more
    source: {path: ./more, format: json, schema: "id BIGINT"}
  - name: third
    source: {path: ./third, format: json, schema: "id BIGINT"}
  - name: fourth
    source: {path: ./fourth, format: json, schema: "id BIGINT"}
  - name: silver
    type: streaming_table
    query: `+query+`
`)
	}
	write(t, filepath.Join(dir, "more", "b.json"), []byte(`{"id": 3}`+"\n"))
	update(t, specOf("raw", "SELECT id FROM STREAM(more)"))
	check(t, "silver with raw dropped", sortedRows(t, p, "silver"), "1\n2\n3")
	write(t, filepath.Join(dir, "third", "c.json"), []byte(`{"id": 4}`+"\n"))
	p = withSources("SELECT id FROM STREAM(more) UNION ALL SELECT id FROM STREAM(third)")
	update(t, p)
	check(t, "silver with a source added after one was dropped", sortedRows(t, p, "silver"), "1\n2\n3\n4")

	// more dropped in an update with nothing new to read, then a fourth source added: the idle
	// update recorded the sources, so the fourth is no rename of more.
	p = withSources("SELECT id FROM STREAM(third)")
	if m := update(t, p); !m["silver"].Idle {
		t.Fatalf("silver with nothing new: %+v", m["silver"])
	}
	write(t, filepath.Join(dir, "fourth", "d.json"), []byte(`{"id": 5}`+"\n"))
	p = withSources("SELECT id FROM STREAM(third) UNION ALL SELECT id FROM STREAM(fourth)")
	update(t, p)
	check(t, "silver with a source added after an idle drop", sortedRows(t, p, "silver"), "1\n2\n3\n4\n5")
}

// TestMaterializedViewQueryColumnsChange: a materialized view whose query's columns change (one
// added, one dropped and one retyped) is replaced, schema and all, in the next update, as a
// Delta Live Tables materialized view takes a changed query, instead of asking for a full
// refresh. Its change data feed cannot be read across that version (the old rows do not fit the
// new columns): reading it says so, and reading from the next version on works.
func TestMaterializedViewQueryColumnsChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, querySpec)
	write(t, filepath.Join(dir, "landing", "1.json"), []byte(`{"id":1,"shop":"a","amount":10.00}
{"id":2,"shop":"b","amount":5.50}
`))
	update(t, p)
	check(t, "by_shop before", sortedRows(t, p, "by_shop"), "\"a\" 1 10.00\n\"b\" 1 5.50")

	changed := strings.Replace(querySpec, "SELECT shop, count(*) AS n, sum(amount) AS total", "SELECT shop, CAST(count(*) AS VARCHAR) AS n, max(id) AS last_id", 1)
	p = loadPipeline(t, dir, changed)
	m := update(t, p)
	snap, _ := readTable(t, p, "by_shop")
	if got := snap.Metadata.Schema.DDL(); got != "shop STRING, n STRING, last_id BIGINT" {
		t.Fatalf("by_shop's schema after the query changed: %s", got)
	}
	check(t, "by_shop after", sortedRows(t, p, "by_shop"), "\"a\" \"1\" 1\n\"b\" \"1\" 2")
	if m["by_shop"].NumUpsertedRows != 2 || m["by_shop"].NumDeletedRows != 2 {
		t.Errorf("by_shop's update: %d inserted, %d deleted; want the 2 old rows replaced by 2 new", m["by_shop"].NumUpsertedRows, m["by_shop"].NumDeletedRows)
	}
	mv := delta.New(TableDir(p.Storage, "by_shop"))
	// Version 1 replaced the columns: a read that holds it says so, names it and where the
	// readable changes start, whatever the range's start.
	for _, from := range []int64{0, 1} {
		_, _, err := mv.Changes(from, -1)
		want := fmt.Sprintf("changes from version %d to 1 of %s: version 1 changed the columns from (shop STRING, n BIGINT, total DECIMAL(18,2)) to (shop STRING, n STRING, last_id BIGINT): the change data feed cannot be read across a change of columns; the changes after it start at version 2", from, mv.Dir)
		if !errors.Is(err, delta.ErrFeedSchemaChange) || !strings.Contains(err.Error(), want) {
			t.Fatalf("the feed from %d across the change: %v\nwant %q", from, err, want)
		}
	}
	write(t, filepath.Join(dir, "landing", "2.json"), []byte(`{"id":3,"shop":"a","amount":1.00}
`))
	m = update(t, p)
	cs, ch, err := mv.Changes(m["by_shop"].Version, -1)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "by_shop changes after the change", strings.Join(jsonLines(schema.Schema{Fields: cs.Fields[:4]}, ch), "\n"),
		"\"a\" \"1\" 1 \"delete\"\n\"a\" \"2\" 3 \"insert\"")
}

// TestQueryStreamAddedColumn: a streaming table over STREAM(x) whose source gains a column
// (schema_evolution_mode: addNewColumns) takes it after its own columns, as a Delta Live Tables
// streaming table takes an additive schema change: the rows before read NULL there. A column it
// has that the query drops is still an error naming the full refresh.
func TestQueryStreamAddedColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := `name: added
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema_evolution_mode: addNewColumns}
  - name: silver
    type: streaming_table
    query: SELECT * FROM STREAM(raw)
`
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "landing", "1.json"), []byte(`{"id": 1}`+"\n"))
	p := loadPipeline(t, dir, text)
	update(t, p)
	write(t, filepath.Join(dir, "landing", "2.json"), []byte(`{"id": 2, "note": "n2"}`+"\n"))
	p = loadPipeline(t, dir, text)
	update(t, p)
	snap, _ := readTable(t, p, "silver")
	if got := snap.Metadata.Schema.DDL(); got != "id BIGINT, _rescued_data STRING, note STRING" {
		t.Fatalf("silver's schema: %s", got)
	}
	check(t, "silver", sortedRows(t, p, "silver"), "1 null null\n2 null \"n2\"")

	p = loadPipeline(t, dir, strings.Replace(text, "SELECT * FROM", "SELECT id FROM", 1))
	write(t, filepath.Join(dir, "landing", "3.json"), []byte(`{"id": 3}`+"\n"))
	env := &Env{Pipeline: p, Events: &recorder{}}
	if _, err := Run(context.Background(), env, p.Dataset("raw")); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), env, p.Dataset("silver"))
	if !errors.Is(err, ErrSchemaChanged) || !strings.Contains(err.Error(), "--full-refresh silver") {
		t.Fatalf("columns dropped from the query: %v", err)
	}
}

// TestQueryColumnNamesWarn: a query result column whose name Spark's Delta writer refuses
// without column mapping (DuckDB's count_star() for an unaliased count(*)) gets a WARN that
// names it and the alias to give, when the table is created; an aliased column gets none.
func TestQueryColumnNamesWarn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: names
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: counts
    query: SELECT count(*), count(*) AS n FROM raw
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1}`+"\n"))
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec}
	for _, name := range []string{"raw", "counts"} {
		if _, err := Run(context.Background(), env, p.Dataset(name)); err != nil {
			t.Fatal(err)
		}
	}
	want := "WARN dataset counts: the column name(s) `count_star()` hold characters (space , ; { } ( ) tab newline =) that Spark's Delta writer refuses without column mapping (readers take them); name such columns in the query, e.g. count(*) AS n"
	if rec.all() != want {
		t.Errorf("events:\n%s\nwant:\n%s", rec.all(), want)
	}
	// A column named with words gets its own alias as the example.
	for name, want := range map[string]string{
		"Company Very Short": `"Company Very Short" AS company_very_short`,
		"net (EUR)":          `"net (EUR)" AS net_eur`,
		"sum(amount)":        "count(*) AS n",
		"2024 sales":         `"2024 sales" AS c_2024_sales`,
		`a "b"=c`:            `"a ""b""=c" AS a_b_c`,
	} {
		if got := aliasExample(name); got != want {
			t.Errorf("aliasExample(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestMaterializedViewBecomesStreamingTable: a materialized view turned into a streaming table
// of the same name and columns (fed by files, or by a query over STREAM) would append every row
// of its input to the view's result, which its table still holds: Setup refuses it, naming the
// full refresh, after which the table is rebuilt as the streaming table from its input alone.
func TestMaterializedViewBecomesStreamingTable(t *testing.T) {
	t.Parallel()
	const bronze = `name: q
storage: ./storage
datasets:
  - name: sales
    source: {path: ./landing, format: json, schema: "id BIGINT, amount DECIMAL(10,2)"}
`
	for _, c := range []struct{ name, now string }{
		{"files", "  - name: copy\n    source: {path: ./landing, format: json, schema: \"id BIGINT, amount DECIMAL(10,2)\"}\n"},
		{"stream query", "  - name: copy\n    type: streaming_table\n    query: SELECT * FROM STREAM(sales)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, bronze+"  - name: copy\n    query: SELECT * FROM sales\n")
			write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "amount": 2.5}`+"\n"+`{"id": 2, "amount": 4}`+"\n"))
			update(t, p)
			check(t, "the view", sortedRows(t, p, "copy"), "1 2.50\n2 4.00")

			if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(bronze+c.now), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := spec.Load(filepath.Join(dir, "pipeline.yaml"), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = Setup(p, p.Dataset("copy"))
			if err == nil || !strings.Contains(err.Error(), "dataset copy is a streaming_table, but its table holds the result of a materialized view") || !strings.Contains(err.Error(), "--full-refresh copy`") {
				t.Fatalf("Setup of the view's table as a streaming table gave %v", err)
			}
			check(t, "the refused table", sortedRows(t, p, "copy"), "1 2.50\n2 4.00")

			if err := Reset(p, p.Dataset("copy")); err != nil {
				t.Fatal(err)
			}
			for _, d := range p.Datasets {
				if err := Setup(p, d); err != nil {
					t.Fatal(err)
				}
			}
			update(t, p)
			check(t, "the rebuilt table", sortedRows(t, p, "copy"), "1 2.50\n2 4.00")
			if err := Setup(p, p.Dataset("copy")); err != nil {
				t.Fatalf("Setup once the streaming table has committed: %v", err)
			}
		})
	}
}

// TestQueryDuplicateColumns: a result with two columns of one name, in any case (a join's
// a.id, b.id), fails the flow naming the dataset, the column and the alias that fixes it, for a
// materialized view, a streaming table and a view alike; nothing is committed.
func TestQueryDuplicateColumns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, dataset, want string }{
		{"materialized view", "  - name: joined\n    query: SELECT a.id, b.id FROM sales a JOIN sales b USING (id)\n",
			"dataset joined: the query returns column id twice; give each a name of its own with AS (e.g. `... id AS id_2`)"},
		{"streaming table, case", "  - name: joined\n    type: streaming_table\n    query: SELECT id AS Amount, amount FROM STREAM(sales)\n",
			"dataset joined: the query returns column Amount twice (as Amount and amount: column names are case-insensitive)"},
		{"view", "  - name: joined\n    type: view\n    query: SELECT id, id FROM sales\n",
			"dataset joined: the query returns column id twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, `name: q
storage: ./storage
datasets:
  - name: sales
    source: {path: ./landing, format: json, schema: "id BIGINT, amount DECIMAL(10,2)"}
`+c.dataset)
			write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "amount": 2.5}`+"\n"))
			env := &Env{Pipeline: p, Events: &recorder{}}
			if _, err := Run(context.Background(), env, p.Dataset("sales")); err != nil {
				t.Fatal(err)
			}
			_, err := Run(context.Background(), env, p.Dataset("joined"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the flow gave %v, want %q", err, c.want)
			}
			if _, err := delta.New(TableDir(p.Storage, "joined")).Snapshot(-1); !errors.Is(err, delta.ErrNoTable) {
				t.Fatalf("the failed flow left a table (%v)", err)
			}
		})
	}
}

// TestQueryExpectationUnknownColumn: an expectation of a query dataset is compiled once the
// query has run (its columns are known only then); one naming a column the result lacks fails
// the flow naming the dataset, the expectation, its place in the spec and the result's columns.
func TestQueryExpectationUnknownColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: q
storage: ./storage
datasets:
  - name: sales
    source: {path: ./landing, format: json, schema: "id BIGINT, amount DECIMAL(10,2)"}
  - name: totals
    query: SELECT sum(amount) AS total FROM sales
    expectations:
      - {name: positive, expect: 'total > 0'}
      - {name: typo, expect: 'amount > 0', on_violation: drop}
`)
	env := &Env{Pipeline: p, Events: &recorder{}}
	if _, err := Run(context.Background(), env, p.Dataset("sales")); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), env, p.Dataset("totals"))
	want := fmt.Sprintf(`dataset totals: expectation "typo" (%s:10:9) does not compile: unknown name amount`, filepath.Join(dir, "pipeline.yaml"))
	if !errors.Is(err, ErrBadExpectation) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(columns: total)") {
		t.Fatalf("the flow gave %v, want %q", err, want)
	}
}

// TestMaterializedViewNestedChange: a materialized view whose result changes in a way that
// prints alike with %v (an ARRAY ["a", "b"] that becomes ["a b"], a MAP whose key and value trade
// a space, strings that trade what looked like a separator) is replaced: its change data feed
// has the old row as a delete and the new one as an insert, and the table the new result.
func TestMaterializedViewNestedChange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, before, after, want string }{
		{"array", "['a', 'b'] AS tags", "['a b'] AS tags", `["a b"]`},
		{"map", "MAP {'k x': 'y'} AS attrs", "MAP {'k': 'x y'} AS attrs", `{"k":"x y"}`},
		{"strings", "'a' || chr(0) || 'string:b' AS x, 'c' AS y", "'a' AS x, 'b' || chr(0) || 'string:c' AS y", `"a" "b\u0000string:c"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, `name: q
storage: ./storage
datasets:
  - name: sales
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: v
    query: SELECT CASE WHEN count(*) > 1 THEN 2 ELSE 1 END AS n FROM sales
  - name: m
    query: "SELECT `+c.before+` FROM v WHERE n = 1 UNION ALL SELECT `+c.after+` FROM v WHERE n = 2"
`)
			write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1}`+"\n"))
			update(t, p)
			write(t, filepath.Join(dir, "landing", "b.json"), []byte(`{"id": 2}`+"\n"))
			if m := update(t, p)["m"]; m.Version != 1 {
				t.Fatalf("the changed result committed version %d, want 1", m.Version)
			}
			check(t, "the view", sortedRows(t, p, "m"), c.want)
			_, rows, err := delta.New(TableDir(p.Storage, "m")).Changes(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range rows {
				kinds = append(kinds, r[len(r)-3].(string))
			}
			slices.Sort(kinds)
			if strings.Join(kinds, " ") != "delete insert" {
				t.Fatalf("the change data feed of version 1 holds %v, want a delete and an insert", kinds)
			}
		})
	}
}
