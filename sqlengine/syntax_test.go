package sqlengine

import (
	"context"
	"testing"
)

// TestSyntax: a query DuckDB's parser refuses gives its message and the offset it points at;
// queries that parse give nothing, whatever tables they name (nothing is looked up), and a
// statement that parses but has no JSON form (PIVOT) counts as parsed.
func TestSyntax(t *testing.T) {
	t.Parallel()
	queries := []string{
		"SELEC customer_id FROM orders",
		"SELECT id FROM STREAM(LIVE.raw) WHERE",
		"SELECT * FROM no_such_table",
		"PIVOT a ON id USING sum(v)",
		"WITH a AS (SELECT 1 AS x) SELECT x FROM a",
		"SELECT count(*) FROM LIVE.orders GROUP BY ALL",
		"SELECT 'ééé' AS s FROM x WHERE )",
		// Parses: DuckDB serializes the literal as Infinity, which is no JSON number.
		"SELECT a FROM q WHERE a < 1e999",
		"SELECT 1e999 AS x FROM q WHERE )",
	}
	got, err := Syntax("", queries)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]SyntaxError{
		0: {Message: `syntax error at or near "SELEC"`, Offset: 0},
		1: {Message: "syntax error at end of input", Offset: 37},
		// DuckDB points at character 31, the ")"; each é is two bytes
		6: {Message: `syntax error at or near ")"`, Offset: 34},
		8: {Message: `syntax error at or near ")"`, Offset: 31},
	}
	if len(got) != len(want) {
		t.Fatalf("errors %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("query %d %q: %+v, want %+v", i, queries[i], got[i], w)
		}
	}
}

// TestReleaseKeepsInstance: an engine released for a folder is the instance the next Open of that
// folder takes (one DuckDB opening for a run's check and its queries), without the relations a
// query registered on it; an Open of another folder opens an instance of its own.
func TestReleaseKeepsInstance(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := e.db
	rel := Relation{Name: "t", Schema: mustDDL(t, "x BIGINT"), Rows: [][]any{{int64(7)}}, RowsOnly: true}
	if _, rows, err := e.Query(context.Background(), "SELECT x FROM t", []Relation{rel}); err != nil || len(rows) != 1 || rows[0][0] != int64(7) {
		t.Fatalf("query: %v %v", rows, err)
	}
	e.Release(dir)
	if e.db != nil {
		t.Fatal("a released engine still holds its database")
	}
	other, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.db == db {
		t.Fatal("Open of another folder took the instance released for dir")
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.db != db {
		t.Fatal("Open after Release opened a new instance")
	}
	if _, _, err := again.Query(context.Background(), "SELECT x FROM t", nil); err == nil {
		t.Fatal("the relation registered before Release is still there")
	}
	if _, rows, err := again.Query(context.Background(), "SELECT 1 / 0 AS q", nil); err != nil || rows[0][0] != nil {
		t.Fatalf("the kept instance lost its session settings: 1 / 0 = %v (%v), want NULL", rows, err)
	}
}
