package sqlengine

import "testing"

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
