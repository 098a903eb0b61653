package spec

import "testing"

// FuzzDLTStatements: the readers of Delta Live Tables statements and Spark SQL forms, which see
// any query text a spec holds, never panic, and a hint they give is not empty.
func FuzzDLTStatements(f *testing.F) {
	for _, seed := range []string{
		"CREATE OR REFRESH STREAMING TABLE st (CONSTRAINT v EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW) AS SELECT * FROM STREAM(LIVE.b)",
		"CREATE LIVE TABLE g COMMENT 'x' PARTITIONED BY (a) TBLPROPERTIES ('k' = 'v', x.y = true) AS SELECT 1",
		"CREATE TABLE t TBLPROPERTIES (",
		"CREATE TABLE t (CONSTRAINT c EXPECT (",
		"CREATE TABLE t (CONSTRAINT c EXPECT",
		"APPLY CHANGES INTO t FROM STREAM(s) KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY struct(a, b) COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (x)",
		"APPLY CHANGES INTO t TRACK x APPLY AS",
		"AUTO CDC INTO t FROM STREAM( KEYS",
		"SELECT explode(a), datediff(a, (b), [1, 2]), size(x -> x + 1, {'a': 1}) FROM t",
		"SELECT `a b` FROM t WHERE x RLIKE 'p' LATERAL VIEW",
		"x IS NOT NULL AND y <> 'a''b' OR NOT z = \"q\"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if h, ok := dltDefinition(sql); ok && h == "" {
			t.Errorf("dltDefinition(%q): an empty hint", sql)
		}
		if h, ok := dltApplyChanges(sql); ok && h == "" {
			t.Errorf("dltApplyChanges(%q): an empty hint", sql)
		}
		if h, ok := sparkSyntaxHint(sql); ok && h == "" {
			t.Errorf("sparkSyntaxHint(%q): an empty hint", sql)
		}
		sqlCondition(sql)
		sparkCalls(sql)
		dltStatement(sql)
	})
}
