package sqlengine

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestCastMacrosFold: a CastMacro call over a column is folded by the column's type when DuckDB
// binds the query, so that what runs is one plain cast (CAST(trunc(d) AS BIGINT) for a DOUBLE
// d, CAST(n AS BIGINT) for an INT n: no CASE, no lambda); the OnceMacro form runs its lambda.
func TestCastMacrosFold(t *testing.T) {
	t.Parallel()
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := Relation{Name: "t", Schema: mustDDL(t, "d DOUBLE, n INT, m DECIMAL(10,2), s STRING"), Rows: [][]any{{2.5, int32(1), nil, "x"}}, RowsOnly: true}
	plan := func(expr string) string {
		t.Helper()
		_, rows, err := e.Query(context.Background(), "EXPLAIN SELECT max("+expr+") FROM t", []Relation{rel})
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return fmt.Sprint(rows)
	}
	for expr, want := range map[string]string{
		CastMacro("BIGINT", false) + "(d)":  "CAST(trunc(d) AS BIGINT)",
		CastMacro("BIGINT", false) + "(n)":  "CAST(n AS BIGINT)",
		CastMacro("INTEGER", true) + "(m)":  "TRY_CAST(trunc(",
		CastMacro("VARCHAR", false) + "(n)": "CAST(n AS VARCHAR)",
	} {
		p := plan(expr)
		if !strings.Contains(p, want) || strings.Contains(p, "CASE") || strings.Contains(p, "list_transform") {
			t.Errorf("%s runs as\n%s\nwant %s alone", expr, p, want)
		}
	}
	if p := plan(OnceMacro(CastMacro("BIGINT", false)) + "(d)"); !strings.Contains(p, "list_transform") {
		t.Errorf("the once form runs as\n%s\nwant its lambda", p)
	}
}

// TestMacrosDefinedWhenCalled: a database has no cast macro until a query calls one (a run whose
// queries cast nothing does not define them), and then has them, for every connection.
func TestMacrosDefinedWhenCalled(t *testing.T) {
	t.Parallel()
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	count := func() int64 {
		t.Helper()
		_, rows, err := e.Query(context.Background(), "SELECT count(*) FROM duckdb_functions() WHERE function_name LIKE 'spark%cast%'", nil)
		if err != nil {
			t.Fatal(err)
		}
		return rows[0][0].(int64)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d cast macros before any query calls one, want none", n)
	}
	_, rows, err := e.Query(context.Background(), "SELECT "+CastMacro("INTEGER", false)+"(2.7) AS v", nil)
	if err != nil || rows[0][0] != int32(2) {
		t.Fatalf("the cast of 2.7: %v (%v), want 2", rows, err)
	}
	if n, want := count(), int64(4*len(CastTypes)); n != want {
		t.Errorf("%d cast macros after a query called one, want %d (each type, TRY_CAST, their once forms)", n, want)
	}
}

// TestDefineMacrosAgainAfterFailure: a definition stopped by its query's context (a Ctrl-C) is
// made again by the next query, not kept as that failure: the database may serve later queries
// (Engine.Release, `pipeline dev`).
func TestDefineMacrosAgainAfterFailure(t *testing.T) {
	t.Parallel()
	db, err := OpenDB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if err := DefineMacros(stopped, db); err == nil {
		t.Fatal("defining the macros under a canceled context did not fail")
	}
	if err := DefineMacros(context.Background(), db); err != nil {
		t.Fatalf("defining them again: %v", err)
	}
	var v int32
	if err := db.QueryRow("SELECT " + CastMacro("INTEGER", false) + "(-2.7)").Scan(&v); err != nil || v != -2 {
		t.Fatalf("the cast of -2.7: %d (%v), want -2", v, err)
	}
}
