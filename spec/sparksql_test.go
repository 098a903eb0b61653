package spec

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/sqlengine"
)

// sparkExamples are, for each entry of sparkFunctions and sparkSyntax, a Spark SQL query that
// uses it, the DuckDB query its hint gives, and the value Spark returns (Spark SQL's built-in
// function reference), which the DuckDB query must return too. duck is "" for a hint that is
// not SQL.
var sparkExamples = []struct {
	name, spark, duck, want string
}{
	{"explode", "SELECT explode([1, 2])", "SELECT unnest([1, 2])", "1;2"},
	{"explode_outer", "SELECT explode_outer(a) FROM (SELECT []::INT[] AS a)", "SELECT unnest(CASE WHEN len(a) > 0 THEN a ELSE [NULL] END) FROM (SELECT []::INT[] AS a)", "NULL"},
	{"posexplode", "SELECT posexplode(['a', 'b'])", "SELECT unnest(arr) AS v, unnest(generate_series(0, len(arr) - 1)) AS pos FROM (SELECT ['a', 'b'] AS arr)", "a,0;b,1"},
	{"collect_list", "SELECT collect_list(x) FROM (VALUES (1), (NULL), (1), (2)) t(x)", "SELECT list(x ORDER BY x) FILTER (WHERE x IS NOT NULL) FROM (VALUES (1), (NULL), (1), (2)) t(x)", "[1, 1, 2]"},
	{"collect_list, every x NULL", "SELECT collect_list(x) FROM (VALUES (NULL::INT)) t(x)", "SELECT coalesce(list(x) FILTER (WHERE x IS NOT NULL), []) FROM (VALUES (NULL::INT)) t(x)", "[]"},
	{"collect_set", "SELECT collect_set(x) FROM (VALUES (1), (NULL), (1), (2)) t(x)", "SELECT list(DISTINCT x ORDER BY x) FILTER (WHERE x IS NOT NULL) FROM (VALUES (1), (NULL), (1), (2)) t(x)", "[1, 2]"},
	{"get_json_object", `SELECT get_json_object('{"a": 5}', '$.a')`, `SELECT json_extract_string('{"a": 5}', '$.a')`, "5"},
	{"date_format", "SELECT date_format(TIMESTAMP '2024-01-31 10:00:00', 'yyyy-MM-dd')", "SELECT strftime(TIMESTAMP '2024-01-31 10:00:00', '%Y-%m-%d')", "2024-01-31"},
	{"to_date", "SELECT to_date('31/01/2024', 'dd/MM/yyyy')", "SELECT CAST(strptime('31/01/2024', '%d/%m/%Y') AS DATE)", "2024-01-31"},
	{"unix_timestamp", "SELECT unix_timestamp(TIMESTAMP '1970-01-02 00:00:00')", "SELECT epoch(TIMESTAMP '1970-01-02 00:00:00')", "86400"},
	{"from_unixtime", "SELECT from_unixtime(86400)", "SELECT strftime(to_timestamp(86400), '%Y-%m-%d %H:%M:%S')", "1970-01-02 00:00:00"},
	{"timestamp_seconds", "SELECT timestamp_seconds(86400)", "SELECT strftime(to_timestamp(86400), '%Y-%m-%d %H:%M:%S')", "1970-01-02 00:00:00"},
	{"nvl", "SELECT nvl(NULL, 1)", "SELECT coalesce(NULL, 1)", "1"},
	{"nvl2", "SELECT nvl2(NULL, 'a', 'b')", "SELECT CASE WHEN NULL IS NOT NULL THEN 'a' ELSE 'b' END", "b"},
	{"isnull", "SELECT isnull(NULL)", "SELECT NULL IS NULL", "true"},
	{"isnotnull", "SELECT isnotnull(1)", "SELECT 1 IS NOT NULL", "true"},
	{"size", "SELECT size([1, 2, 3])", "SELECT len([1, 2, 3])", "3"},
	{"array_size", "SELECT array_size([1, 2, 3])", "SELECT len([1, 2, 3])", "3"},
	{"array_join", "SELECT array_join(['a', 'b'], ',')", "SELECT array_to_string(['a', 'b'], ',')", "a,b"},
	{"sequence", "SELECT sequence(1, 3)", "SELECT generate_series(1, 3)", "[1, 2, 3]"},
	{"sha2", "SELECT sha2('abc', 256)", "SELECT sha256('abc')", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	{"monotonically_increasing_id", "SELECT monotonically_increasing_id()", "SELECT row_number() OVER ()", "1"},
	{"input_file_name", "SELECT input_file_name()", "", ""},
	{"read_files", "SELECT * FROM read_files('landing', format => 'json')", "", ""},
	{"cloud_files", "SELECT * FROM cloud_files('landing', 'json')", "", ""},
	{"substring_index", "SELECT substring_index('a.b.c', '.', 2)", "SELECT array_to_string(string_split('a.b.c', '.')[1:2], '.')", "a.b"},
	{"named_struct", "SELECT named_struct('a', 1, 'b', 'x')", "SELECT {'a': 1, 'b': 'x'}", "{'a': 1, 'b': x}"},
	{"percentile_approx", "SELECT percentile_approx(x, 0.5) FROM (VALUES (1), (2), (3)) t(x)", "SELECT approx_quantile(x, 0.5) FROM (VALUES (1), (2), (3)) t(x)", "2"},
	{"rlike", "SELECT rlike('abc', 'b')", "SELECT regexp_matches('abc', 'b')", "true"},
	{"regexp_like", "SELECT regexp_like('abc', 'b')", "SELECT regexp_matches('abc', 'b')", "true"},
	{"transform", "SELECT transform([1, 2], x -> x + 1)", "SELECT list_transform([1, 2], x -> x + 1)", "[2, 3]"},
	{"initcap", "SELECT initcap('hELLO')", "SELECT upper('hELLO'[1]) || lower('hELLO'[2:])", "Hello"},
	{"add_months", "SELECT add_months(DATE '2024-01-31', 1)", "SELECT CAST(DATE '2024-01-31' + INTERVAL (1) MONTH AS DATE)", "2024-02-29"},
	{"months_between", "SELECT months_between(DATE '2024-03-31', DATE '2024-01-31')", "SELECT datediff('month', DATE '2024-01-31', DATE '2024-03-31')", "2"},
	{"string", "SELECT string(3)", "SELECT CAST(3 AS VARCHAR)", "3"},
	{"tinyint", "SELECT tinyint('3')", "SELECT CAST('3' AS TINYINT)", "3"},
	{"try_divide", "SELECT try_divide(7, 2)", "SELECT 7 / 2", "3.5"},
	{"try_divide, by zero", "SELECT try_divide(7, 0)", "SELECT 7 / 0", "NULL"},
	{"current_timestamp", "SELECT current_timestamp() IS NOT NULL", "SELECT current_timestamp IS NOT NULL", "true"},
	{"datediff", "SELECT datediff(DATE '2024-01-10', DATE '2024-01-01')", "SELECT datediff('day', DATE '2024-01-01', DATE '2024-01-10')", "9"},
	{"date_sub", "SELECT date_sub(DATE '2024-01-10', 3)", "SELECT DATE '2024-01-10' - 3", "2024-01-07"},
	// Forms DuckDB runs with another result than Spark's (want is Spark's, from its built-in
	// function reference: log is the natural logarithm, regexp_extract's group is 1 by default,
	// regexp_replace replaces every match, dayofweek is 1 for a Sunday, weekday 0 for a Monday,
	// concat is NULL when an argument is, split takes a regular expression, substring from
	// position 0 starts at the first character, skewness and kurtosis are the population's).
	{"log", "SELECT round(log(100.0), 6)", "SELECT round(ln(100.0), 6)", "4.60517"},
	{"regexp_extract", "SELECT regexp_extract('ab12', '([a-z]+)([0-9]+)')", "SELECT regexp_extract('ab12', '([a-z]+)([0-9]+)', 1)", "ab"},
	{"regexp_replace", "SELECT regexp_replace('a-b-c', '-', '+')", "SELECT regexp_replace('a-b-c', '-', '+', 'g')", "a+b+c"},
	{"dayofweek", "SELECT dayofweek(DATE '2024-03-15')", "SELECT isodow(DATE '2024-03-15') % 7 + 1", "6"},
	{"extract", "SELECT extract(DAYOFWEEK FROM DATE '2024-03-17')", "SELECT isodow(DATE '2024-03-17') % 7 + 1", "1"},
	{"date_part", "SELECT date_part('dow', DATE '2024-03-16')", "SELECT isodow(DATE '2024-03-16') % 7 + 1", "7"},
	{"datepart", "SELECT datepart('dow', DATE '2024-03-16')", "SELECT isodow(DATE '2024-03-16') % 7 + 1", "7"},
	{"regexp_extract_all", "SELECT regexp_extract_all('100-200, 300-400', '([0-9]+)-([0-9]+)')", "SELECT regexp_extract_all('100-200, 300-400', '([0-9]+)-([0-9]+)', 1)", "[100, 300]"},
	{"weekday", "SELECT weekday(DATE '2024-03-15')", "SELECT isodow(DATE '2024-03-15') - 1", "4"},
	{"concat", "SELECT coalesce(concat('a', NULL), 'NULL')", "SELECT coalesce('a' || NULL, 'NULL')", "NULL"},
	{"split", "SELECT split('a.b;c', '[.;]')", "SELECT regexp_split_to_array('a.b;c', '[.;]')", "[a, b, c]"},
	{"substring", "SELECT substring('hello', 0, 2)", "SELECT substring('hello', 1, 2)", "he"},
	{"substring", "SELECT substring('hello' FROM 0 FOR 2)", "SELECT substring('hello' FROM 1 FOR 2)", "he"},
	{"substr", "SELECT substr('hello', 0, 2)", "SELECT substr('hello', 1, 2)", "he"},
	{"skewness", "SELECT round(skewness(x), 6) FROM (VALUES (2.5), (3.5), (-2.5), (10.0)) t(x)", "SELECT round((avg(power(x, 3)) - 3 * avg(x) * var_pop(x) - power(avg(x), 3)) / power(var_pop(x), 1.5), 6) FROM (VALUES (2.5), (3.5), (-2.5), (10.0)) t(x)", "0.247856"},
	{"kurtosis", "SELECT round(kurtosis(x), 6) FROM (VALUES (2.5), (3.5), (-2.5), (10.0)) t(x)", "SELECT round(kurtosis_pop(x), 6) FROM (VALUES (2.5), (3.5), (-2.5), (10.0)) t(x)", "-1.010862"},
	// Over an array; over a MAP, TestElementAtMap.
	{"element_at", "SELECT element_at([10, 20, 30], 2)", "SELECT [10, 20, 30][2]", "20"},
	{"element_at, from the end", "SELECT element_at(['a', 'b', 'c'], -1)", "SELECT list_extract(['a', 'b', 'c'], -1)", "c"},
	// sparkSyntax
	{"rlike operator", "SELECT 'abc' RLIKE 'b'", "SELECT regexp_matches('abc', 'b')", "true"},
	{"div operator", "SELECT 7 div 2", "SELECT 7 // 2", "3"},
	{"div operator, negative", "SELECT -7 div 2", "SELECT -7 // 2", "-3"},
	{"div operator, by zero", "SELECT 7 div 0", "SELECT 7 // 0", "NULL"},
	{"div operator, decimal", "SELECT 7.5 div 2", "SELECT CAST(7.5 / 2 AS BIGINT)", "3"},
	{"lateral view", "SELECT x FROM (SELECT [1, 2] AS arr) t LATERAL VIEW explode(arr) e AS x", "SELECT unnest(t.arr) AS x FROM (SELECT [1, 2] AS arr) t", "1;2"},
	{"array(", "SELECT array(1, 2)", "SELECT [1, 2]", "[1, 2]"},
	{"struct(", "SELECT struct(1 AS a)", "SELECT {'a': 1}", "{'a': 1}"},
	{"int(", "SELECT int('3')", "SELECT CAST('3' AS INTEGER)", "3"},
	{"bigint(", "SELECT bigint('3')", "SELECT CAST('3' AS BIGINT)", "3"},
	{"bigint(, a fraction", "SELECT bigint(-2.7)", "SELECT CAST(-2.7 AS BIGINT)", "-2"},
	{"smallint(", "SELECT smallint('3')", "SELECT CAST('3' AS SMALLINT)", "3"},
	{"float(", "SELECT float('1.5')", "SELECT CAST('1.5' AS FLOAT)", "1.5"},
	{"decimal(", "SELECT decimal('3.7')", "SELECT CAST('3.7' AS DECIMAL(10,0))", "4"},
	{"double(", "SELECT double('1.5')", "SELECT CAST('1.5' AS DOUBLE)", "1.5"},
	{"timestamp(", "SELECT timestamp('2024-01-31 10:00:00')", "SELECT CAST('2024-01-31 10:00:00' AS TIMESTAMP)", "2024-01-31 10:00:00"},
	{"boolean(", "SELECT boolean('true')", "SELECT CAST('true' AS BOOLEAN)", "true"},
}

// duckDB opens a DuckDB database as the engine's (sqlengine.OpenDB) with the cast macros a
// rewritten query calls, closed when the test ends.
func duckDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sqlengine.OpenDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := sqlengine.DefineMacros(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// duckText runs query on db and returns its rows, ';' between rows and ',' between columns, NULL
// as NULL, a DATE as 2024-01-31 and a TIMESTAMP as 2024-01-31 10:00:00.
func duckText(db *sql.DB, query string) (string, error) {
	rows, err := db.Query(query)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return "", err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		var parts []string
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts = append(parts, "NULL")
			case time.Time:
				layout := "2006-01-02 15:04:05"
				if types[i].DatabaseTypeName() == "DATE" {
					layout = "2006-01-02"
				}
				parts = append(parts, x.Format(layout))
			case []byte:
				parts = append(parts, string(x))
			default:
				parts = append(parts, duckValue(x))
			}
		}
		out = append(out, strings.Join(parts, ","))
	}
	return strings.Join(out, ";"), rows.Err()
}

// duckValue prints a scanned list or struct as DuckDB prints them ([1, 2], {'a': 1}).
func duckValue(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = duckValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("'%s': %s", k, duckValue(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// TestSparkFunctionsFailInDuckDB: every Spark SQL form that validation reports (sparkFunctions,
// sparkSyntax) fails in the bundled DuckDB, so that validation refuses no query DuckDB would
// run, and the DuckDB form of its hint runs there (its casts to integers rewritten, as a
// query's are) and returns what Spark returns. The examples cover every entry.
func TestSparkFunctionsFailInDuckDB(t *testing.T) {
	db := duckDB(t)
	covered := map[string]bool{}
	for _, ex := range sparkExamples {
		covered[ex.name] = true
		if got, err := duckText(db, ex.spark); err == nil && (sparkFunctions[ex.name].other == "" || got == ex.want) {
			// A form DuckDB runs is refused only when it returns another value than Spark's.
			t.Errorf("%s: DuckDB runs the Spark form %q (%s): validation must not refuse it", ex.name, ex.spark, got)
		}
		if len(sparkCalls(ex.spark)) == 0 && !strings.Contains(ex.name, " ") && !strings.Contains(ex.name, "(") {
			t.Errorf("%s: sparkCalls does not find the Spark form in %q", ex.name, ex.spark)
		}
		if strings.Contains(ex.name, ",") || ex.duck == "" {
		} else if calls := sparkCalls(ex.duck); len(calls) > 0 {
			t.Errorf("%s: the DuckDB form %q is refused itself (%s)", ex.name, ex.duck, calls[0].name)
		}
		if ex.duck == "" {
			continue
		}
		got, err := duckText(db, applyEdits(ex.duck, castEdits(ex.duck)))
		if err != nil {
			t.Errorf("%s: the DuckDB form %q fails: %v", ex.name, ex.duck, err)
		} else if got != ex.want {
			t.Errorf("%s: the DuckDB form %q returns %q, want %q (Spark's)", ex.name, ex.duck, got, ex.want)
		}
	}
	for name := range sparkFunctions {
		if !covered[name] {
			t.Errorf("sparkFunctions entry %s has no example", name)
		}
	}
	for _, s := range sparkSyntax {
		name := s.word + " " + s.next
		if s.next == "(" {
			name = s.word + "("
		} else if s.next == "" || s.next == " " {
			name = s.word + " operator"
		}
		if !covered[name] {
			t.Errorf("sparkSyntax entry %q has no example", name)
		}
	}
}

// TestSparkNamesAsRelations: a CTE or a table alias named like a Spark function, with a list
// of column names (`WITH RECURSIVE sequence(n) AS (...)`, `AS size(a, b)`, `FROM orders size(a, b)`), is no call: DuckDB
// runs each of these queries, and sparkCalls finds nothing in them, while it still finds the
// call of a query that calls such a function next to such a name, or names the columns of a
// call with AS (...) as Spark does.
func TestSparkNamesAsRelations(t *testing.T) {
	db := duckDB(t)
	for _, sql := range []string{
		"WITH RECURSIVE sequence(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM sequence WHERE n < 3) SELECT n FROM sequence",
		"WITH a AS (SELECT 1), transform(x, y) AS MATERIALIZED (SELECT 1, 2) SELECT x FROM transform",
		"WITH explode(v) AS NOT MATERIALIZED (SELECT 1) SELECT v FROM explode",
		"SELECT size.a FROM (VALUES (1, 2)) AS size(a, b)",
		"SELECT x FROM (VALUES (1)) explode(x)",
		`SELECT y FROM (SELECT 1) "t", (SELECT 2) AS nvl(y)`,
		// A bare table name, plain, qualified or after a comma or JOIN, then its alias's columns.
		"WITH orders AS (SELECT 1, 2) SELECT size.a FROM orders size(a, b)",
		"WITH orders AS (SELECT 1, 2) SELECT e.x FROM orders size(a, b), orders explode(x, y) JOIN orders AS e(x, z) ON true",
		"WITH orders AS (SELECT 1, 2) SELECT sequence.n FROM orders AS o(p, q) JOIN orders sequence(n, m) ON o.p = sequence.n",
	} {
		if _, err := duckText(db, sql); err != nil {
			t.Errorf("DuckDB does not run %q: %v", sql, err)
		}
		if calls := sparkCalls(sql); len(calls) != 0 {
			t.Errorf("sparkCalls(%q) = %v, want none", sql, calls)
		}
	}
	for sql, name := range map[string]string{
		"WITH sequence(n) AS (SELECT [1, 2]) SELECT size(n) FROM sequence": "size",
		// Spark's aliases of a generator's columns: a call, for all its AS (.
		"SELECT id, explode(m) AS (k, v) FROM t":                   "explode",
		"WITH x AS (SELECT posexplode(a) AS (p, v) FROM t) FROM x": "posexplode",
		// A call after a FROM item's clause words, not after the table name itself.
		"SELECT * FROM orders WHERE size(items) > 0":           "size",
		"SELECT * FROM orders o JOIN t ON nvl(o.id, 0) = t.id": "nvl",
		"SELECT DISTINCT size(items) FROM orders":              "size",
	} {
		if calls := sparkCalls(sql); len(calls) != 1 || calls[0].name != name || calls[0].at != strings.Index(sql, name+"(") {
			t.Errorf("sparkCalls(%q) = %v, want the call of %s alone", sql, calls, name)
		}
	}
}

// TestSparkSyntaxHintDuckForms: a query that does not parse gets no Spark hint for DuckDB's own
// parenthesized forms of the words of sparkSyntax (an ARRAY subquery, a STRUCT type after AS or
// ::), and still gets it for Spark's array(...) and struct(...) calls.
func TestSparkSyntaxHintDuckForms(t *testing.T) {
	for sql, want := range map[string]string{
		"SELECT ARRAY(SELECT 1) AS xs FROM":                      "",
		"SELECT CAST(x AS STRUCT(a INT)) AS s FROM t WHERE":      "",
		"SELECT x::STRUCT(a INT, b INT) FROM t WHERE":            "",
		"SELECT CAST(x AS STRUCT(a DECIMAL(10,2))) FROM t WHERE": "",
		"SELECT decimal(x) FROM t":                               "queries are DuckDB SQL: write CAST(x AS DECIMAL(10,0)) for decimal(x) (Spark's DECIMAL is DECIMAL(10,0))",
		"SELECT array(1, 2) FROM t WHERE":                        "queries are DuckDB SQL: write [a, b] (or list_value(a, b)) for array(a, b)",
		"SELECT struct(x AS a) FROM t WHERE":                     "queries are DuckDB SQL: write {'a': x} (or struct_pack(a := x)) for struct(x AS a)",
		// Backticks DuckDB parses and a word it refuses: both forms, the word's too.
		"SELECT `id`, s FROM t WHERE s RLIKE '^p'": "queries are DuckDB SQL, which quotes names with double quotes, not Spark SQL's backticks: write \"id\" for `id`; and write regexp_matches(s, pattern) for s RLIKE pattern",
		"SELECT `a b` FROM t":                      "queries are DuckDB SQL, which quotes names with double quotes, not Spark SQL's backticks: write \"a b\" for `a b`",
		// Spark's div operator, between two operands; a column named div is no operator.
		"SELECT (a + 1) div -b FROM t":   "queries are DuckDB SQL: write " + sparkSyntax[1].duck,
		"SELECT a DIV 2 FROM t":          "queries are DuckDB SQL: write " + sparkSyntax[1].duck,
		"SELECT div FROM t WHERE":        "",
		"SELECT t.div, div FROM t WHERE": "",
	} {
		if got, _ := sparkSyntaxHint(sql); got != want {
			t.Errorf("sparkSyntaxHint(%q) = %q, want %q", sql, got, want)
		}
	}
}

// TestElementAtMap: element_at over a MAP runs in DuckDB but returns a list of the value where
// Spark returns the value, so sparkCalls flags it too; the hint's m[key] returns Spark's value
// (NULL for a key the map does not have, as Spark's element_at with ANSI mode off).
func TestElementAtMap(t *testing.T) {
	db := duckDB(t)
	for sql, want := range map[string]string{
		"SELECT element_at(MAP {'a': 1}, 'a')": "[1]",
		"SELECT (MAP {'a': 1})['a']":           "1",
		"SELECT (MAP {'a': 1})['z']":           "NULL",
	} {
		if got, err := duckText(db, sql); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %s", sql, got, err, want)
		}
	}
	calls := sparkCalls("SELECT element_at(attrs, 'colour') AS colour FROM raw")
	if len(calls) != 1 || calls[0].name != "element_at" {
		t.Errorf("sparkCalls of element_at over a map = %v, want the call", calls)
	}
}

// TestDoubleQuoteHint: a bind error naming a column the query writes in double quotes (Spark
// SQL's string) gets the single-quoted string to write; one naming a column written bare, or no
// column, gets none.
func TestDoubleQuoteHint(t *testing.T) {
	for _, c := range []struct{ sql, msg, want string }{
		{`SELECT id FROM raw WHERE status = "paid"`, `Binder Error: Referenced column "paid" not found in FROM clause! Candidate bindings: "status"`,
			`queries are DuckDB SQL, where "paid" is a column's name, not a string as in Spark SQL: write the string 'paid'`},
		{`SELECT id FROM raw WHERE name = "O'Brien"`, `Binder Error: Referenced column "O'Brien" not found in FROM clause!`,
			`queries are DuckDB SQL, where "O'Brien" is a column's name, not a string as in Spark SQL: write the string 'O''Brien'`},
		{`SELECT id FROM raw WHERE stat = 'paid'`, `Binder Error: Referenced column "stat" not found in FROM clause! Candidate bindings: "status"`, ""},
		{`SELECT "x" FROM raw`, `Binder Error: No function matches the given name and argument types 'f(INTEGER)'`, ""},
	} {
		if got, _ := DoubleQuoteHint(c.sql, c.msg); got != c.want {
			t.Errorf("DoubleQuoteHint(%q, %q) = %q, want %q", c.sql, c.msg, got, c.want)
		}
	}
}

// TestSparkFormsDuckDBRunsAlike: the calls of names whose Spark form DuckDB runs with another
// result are not refused in the forms that give Spark's result in DuckDB too: split at a plain
// separator, substring from a position other than 0, log with a base, regexp_extract with a
// group, regexp_replace with options.
func TestSparkFormsDuckDBRunsAlike(t *testing.T) {
	for _, sql := range []string{
		"SELECT extract(isodow FROM d), extract(year FROM d), date_part('isodow', d), date_part('year', d) FROM t",
		"SELECT split(s, ','), split(s, ' -'), substring(s, 2, 3), substr(s, 1), substring(s FROM 2), log(2, x), regexp_extract(s, '(a)', 1), regexp_replace(s, 'a', 'b', 'g') FROM t",
	} {
		if calls := sparkCalls(sql); len(calls) > 0 {
			t.Errorf("%s: refused %s", sql, calls[0].name)
		}
	}
	for _, sql := range []string{
		"SELECT split(s, '.') FROM t", "SELECT split(s, '|') FROM t", "SELECT split(s, sep) FROM t", "SELECT split(s, ',', 2) FROM t",
		"SELECT substring(s, 0, 3) FROM t", "SELECT SUBSTR(s, 0) FROM t",
	} {
		if calls := sparkCalls(sql); len(calls) != 1 {
			t.Errorf("%s: %d calls refused, want 1", sql, len(calls))
		}
	}
}

// TestSparkFormsOtherInDuckDB: the forms of Spark SQL other than calls that DuckDB runs with
// another result (sparkForms) are found in the Spark query, each once, and not in the DuckDB
// query of its hint, which returns Spark's value (want: Spark SQL's reference: a string literal
// takes backslash escapes, LIKE's escape is a backslash, an array subscript counts from 0, ^ is
// a bitwise exclusive or, DECIMAL is DECIMAL(10,0)); the Spark query, run by DuckDB, does not.
func TestSparkFormsOtherInDuckDB(t *testing.T) {
	db := duckDB(t)
	for _, ex := range []struct{ spark, duck, want string }{
		{`SELECT regexp_extract('ab12', '([0-9]+)', 1) || regexp_extract('ab12', '(\\d+)', 1)`, `SELECT regexp_extract('ab12', '([0-9]+)', 1) || regexp_extract('ab12', '(\d+)', 1)`, "1212"},
		{`SELECT 'a_b' LIKE 'a\_b'`, `SELECT 'a_b' LIKE 'a\_b' ESCAPE '\'`, "true"},
		{`SELECT coalesce(string_split('a,b', ',')[0], 'NULL')`, `SELECT coalesce(string_split('a,b', ',')[1], 'NULL')`, "a"},
		{`SELECT 6 ^ 3`, `SELECT xor(6, 3)`, "5"},
		{`SELECT CAST('3.14159' AS DECIMAL)`, `SELECT CAST('3.14159' AS DECIMAL(10,0))`, "3"},
		{`SELECT '3.14159'::decimal`, `SELECT '3.14159'::decimal(10, 0)`, "3"},
	} {
		if calls := sparkCalls(ex.spark); len(calls) != 1 {
			t.Errorf("%s: %d Spark forms found, want 1", ex.spark, len(calls))
		}
		if calls := sparkCalls(ex.duck); len(calls) != 0 {
			t.Errorf("%s: the DuckDB form is refused (%s)", ex.duck, calls[0].name)
		}
		if got, err := duckText(db, ex.spark); err == nil && got == ex.want {
			t.Errorf("%s: DuckDB returns Spark's %s: validation must not refuse it", ex.spark, got)
		}
		if got, err := duckText(db, ex.duck); err != nil || got != ex.want {
			t.Errorf("%s: %s (%v), want %s", ex.duck, got, err, ex.want)
		}
	}
	// DuckDB SQL that these forms resemble is not refused.
	for _, sql := range []string{
		`SELECT [0], [0, 1][1], list_value(0)[1], 'abc' ^@ 'a', x AS decimal, CAST(x AS DECIMAL(10, 2)), s LIKE 'a_b', s LIKE 'a\_b' ESCAPE '\', E'a\\b', regexp_matches(s, '[^a]\d') FROM t WHERE x IN [0]`,
	} {
		if calls := sparkCalls(sql); len(calls) > 0 {
			t.Errorf("%s: refused %s", sql, calls[0].form)
		}
	}
}

// TestCollectHintsSkipNulls: Spark's collect_list and collect_set exclude NULL values (its
// function reference), where DuckDB's list keeps them, so their hints must filter NULLs out
// (the sparkExamples entries run the filtered form over a NULL).
func TestCollectHintsSkipNulls(t *testing.T) {
	for _, name := range []string{"collect_list", "collect_set"} {
		if hint := sparkFunctions[name].duck; !strings.Contains(hint, "FILTER (WHERE x IS NOT NULL)") {
			t.Errorf("%s: the hint %q keeps NULLs, which Spark's %s skips", name, hint, name)
		}
	}
}

// TestDoubledBackslashHint: the hint for a string with a doubled backslash is that string with
// each pair made one, as Spark reads it.
func TestDoubledBackslashHint(t *testing.T) {
	calls := sparkCalls(`SELECT 'C:\\temp\\x' AS p, regexp_extract(s, '(\\d+)', 1) AS n FROM t`)
	if len(calls) != 2 {
		t.Fatalf("%d forms found, want 2: %+v", len(calls), calls)
	}
	for i, want := range []string{`'C:\temp\x'`, `'(\d+)'`} {
		if !strings.Contains(calls[i].duck, "one backslash: "+want+" ") {
			t.Errorf("hint %q, want it to give %s", calls[i].duck, want)
		}
	}
}
