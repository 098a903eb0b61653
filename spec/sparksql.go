package spec

import (
	"fmt"
	"slices"
	"strings"
)

// sparkFunction is a Spark SQL function that DuckDB (which runs the queries) does not have, or
// has with other arguments: how to write it in DuckDB SQL.
type sparkFunction struct {
	args int    // the Spark form's argument count that DuckDB refuses; 0: any
	duck string // the DuckDB form, as a hint
	// other is what DuckDB does with the Spark form when that is not only a failure ("" when
	// DuckDB refuses it): it runs some forms with another result.
	other string
	// when, if set, says whether a call with these arguments (each its tokens) is the Spark
	// form that DuckDB runs otherwise; form then names that form in the report.
	when func(args [][]sqlToken) bool
	form string
}

// sparkFunctions are Spark SQL functions that queries ported from Delta Live Tables use and the
// bundled DuckDB does not run (TestSparkFunctionsFailInDuckDB checks each form fails there and
// each hint runs), by lower-case name. Each would fail the update when its query runs; they
// are reported when the spec is validated instead, with the DuckDB form.
var sparkFunctions = map[string]sparkFunction{
	"explode":                     {duck: "unnest(arr) in the SELECT list (it drops empty and NULL arrays)"},
	"explode_outer":               {duck: "unnest(CASE WHEN len(arr) > 0 THEN arr ELSE [NULL] END) to keep a row for an empty or NULL array"},
	"posexplode":                  {duck: "unnest(arr) AS v, unnest(generate_series(0, len(arr) - 1)) AS pos"},
	"collect_list":                {duck: "list(x) FILTER (WHERE x IS NOT NULL) (Spark's collect_list skips NULLs, DuckDB's list keeps them; coalesce(..., []) for Spark's [] where every x is NULL)"},
	"collect_set":                 {duck: "list(DISTINCT x) FILTER (WHERE x IS NOT NULL) (Spark's collect_set skips NULLs, DuckDB's list keeps one; coalesce(..., []) for Spark's [] where every x is NULL)"},
	"get_json_object":             {duck: "json_extract_string(j, '$.a')"},
	"date_format":                 {duck: "strftime(ts, '%Y-%m-%d') (strftime's % codes, not Java's yyyy-MM-dd)"},
	"to_date":                     {duck: "CAST(x AS DATE), or CAST(strptime(s, '%d/%m/%Y') AS DATE) for a format"},
	"unix_timestamp":              {duck: "epoch(ts) (seconds since 1970)"},
	"from_unixtime":               {duck: "to_timestamp(seconds), or strftime(to_timestamp(seconds), '%Y-%m-%d %H:%M:%S') for text"},
	"timestamp_seconds":           {duck: "to_timestamp(seconds)"},
	"nvl":                         {duck: "coalesce(a, b)"},
	"nvl2":                        {duck: "CASE WHEN a IS NOT NULL THEN b ELSE c END"},
	"isnull":                      {duck: "x IS NULL"},
	"isnotnull":                   {duck: "x IS NOT NULL"},
	"size":                        {duck: "len(arr) (cardinality(m) for a MAP)"},
	"array_size":                  {duck: "len(arr)"},
	"array_join":                  {duck: "array_to_string(arr, ',')"},
	"sequence":                    {duck: "generate_series(start, stop)"},
	"sha2":                        {duck: "sha256(x) for sha2(x, 256)"},
	"monotonically_increasing_id": {duck: "row_number() OVER ()"},
	"input_file_name":             {duck: "the _file_path column a file source adds with include_metadata: true"},
	"read_files":                  {duck: "a dataset with `source: {path: ..., format: json|csv|parquet}` (Auto Loader's incremental file reads), which queries then read by name"},
	"cloud_files":                 {duck: "a dataset with `source: {path: ..., format: json|csv|parquet}` (Auto Loader's incremental file reads), which queries then read by name"},
	"substring_index":             {duck: "array_to_string(string_split(s, delim)[1:n], delim) (split_part(s, delim, n) for the n-th part alone)"},
	"named_struct":                {duck: "{'a': x, 'b': y} (or struct_pack(a := x, b := y))"},
	"percentile_approx":           {duck: "approx_quantile(x, 0.5)"},
	"rlike":                       {duck: "regexp_matches(s, pattern)"},
	"regexp_like":                 {duck: "regexp_matches(s, pattern)"},
	"transform":                   {duck: "list_transform(arr, x -> x + 1)"},
	"initcap":                     {duck: "upper(s[1]) || lower(s[2:]) for one word"},
	"add_months":                  {duck: "CAST(d + INTERVAL (n) MONTH AS DATE)"},
	"months_between":              {duck: "datediff('month', start, end) for whole months (Spark's months_between counts fractions of one too)"},
	"string":                      {duck: "CAST(x AS VARCHAR)"},
	"tinyint":                     {duck: "CAST(x AS TINYINT)"},
	"try_divide":                  {duck: "a / b (NULL where b is 0, as Spark's try_divide: queries divide as Spark SQL does without ANSI mode)"},
	"current_timestamp":           {duck: "current_timestamp, without parentheses"},
	"datediff":                    {args: 2, duck: "datediff('day', start, end): DuckDB's takes the unit first and start before end (Spark's is datediff(end, start))"},
	"date_sub":                    {args: 2, duck: "d - n (a DATE minus a number of days): DuckDB's date_sub(unit, start, end) counts units between two dates"},
	"log": {args: 1, duck: "ln(x) for Spark's log(x), the natural logarithm (log10(x) for base 10)",
		other: "runs as the base-10 logarithm, where Spark's log(x) is the natural one (log(100) is 2 here, 4.605... in Spark)"},
	"regexp_extract": {args: 2, duck: "regexp_extract(s, pattern, 1): Spark's default group is 1",
		other: "runs returning the whole match (group 0), where Spark's returns group 1"},
	"regexp_extract_all": {args: 2, duck: "regexp_extract_all(s, pattern, 1): Spark's default group is 1",
		other: "runs returning the whole matches (group 0), where Spark's returns group 1 of each"},
	"regexp_replace": {args: 3, duck: "regexp_replace(s, pattern, replacement, 'g') to replace every match, as Spark's does",
		other: "runs replacing the first match only, where Spark's replaces every match"},
	"dayofweek": {duck: "isodow(d) % 7 + 1 (Spark's 1 = Sunday ... 7 = Saturday)",
		other: "runs numbering Sunday 0 to Saturday 6, where Spark's numbers Sunday 1 to Saturday 7"},
	"date_part": dayOfWeekPart("date_part('dow', d) (or 'dayofweek')"),
	"datepart":  dayOfWeekPart("datepart('dow', d) (or 'dayofweek')"),
	"extract":   dayOfWeekPart("extract(DOW FROM d) (or DAYOFWEEK)"),
	"weekday": {duck: "isodow(d) - 1 (Spark's 0 = Monday ... 6 = Sunday)",
		other: "runs numbering Sunday 0 to Saturday 6, where Spark's numbers Monday 0 to Sunday 6"},
	"concat": {duck: "a || b (NULL when any is NULL, as Spark's concat), or concat_ws('', a, b) to skip NULLs",
		other: "runs skipping NULL arguments (concat('a', NULL) is 'a'), where Spark's concat is NULL when any argument is NULL"},
	"split": {when: splitByPattern, form: "split(s, pattern) with a pattern that is not a plain separator",
		duck:  "regexp_split_to_array(s, pattern) for Spark's regular expression (string_split(s, sep) for a separator taken literally)",
		other: "runs splitting at the pattern's text taken literally (split('a.b', '[.]') is ['a.b']), where Spark's split takes a regular expression"},
	"substring": {when: fromPositionZero, form: "substring(s, 0, n)",
		duck:  "substring(s, 1, n): position 0 is position 1 in Spark",
		other: "runs counting position 0 as the place before the first character (substring('hello', 0, 2) is 'h'), where Spark starts at the first ('he')"},
	"substr": {when: fromPositionZero, form: "substr(s, 0, n)",
		duck:  "substr(s, 1, n): position 0 is position 1 in Spark",
		other: "runs counting position 0 as the place before the first character (substr('hello', 0, 2) is 'h'), where Spark starts at the first ('he')"},
	"skewness": {duck: "(avg(power(x, 3)) - 3 * avg(x) * var_pop(x) - power(avg(x), 3)) / power(var_pop(x), 1.5) for Spark's population skewness",
		other: "runs as the sample skewness (adjusted for the sample's size), where Spark's is the population skewness"},
	"kurtosis": {duck: "kurtosis_pop(x) for Spark's population excess kurtosis",
		other: "runs as the sample excess kurtosis (adjusted for the sample's size), where Spark's is the population one"},
	"element_at": {duck: "arr[i] for an array (1-based, a negative i counting from the end, as Spark's) and m[key] for a map", other: "has for a MAP only, where it returns a list of the value, not the value: over an array the update would fail here, over a map the column would hold lists"},
}

// dayOfWeekPart is the sparkFunctions entry of a call that takes the day of the week as Spark
// numbers it, from 1 (Sunday) to 7, and DuckDB from 0 (dayOfWeekField); form names the call.
func dayOfWeekPart(form string) sparkFunction {
	return sparkFunction{when: dayOfWeekField, form: form,
		duck:  "isodow(d) % 7 + 1 (Spark's 1 = Sunday ... 7 = Saturday)",
		other: "runs numbering Sunday 0 to Saturday 6, where Spark's DOW and DAYOFWEEK number Sunday 1 to Saturday 7"}
}

// sparkSyntax are Spark SQL forms that DuckDB's parser refuses, by lower-case word, with the
// DuckDB form: the hint of a query that does not parse and holds the word (followed by next,
// when set; between two operands, when next is " ", so that a column named so is no operator).
var sparkSyntax = []struct{ word, next, duck string }{
	{"rlike", "", "regexp_matches(s, pattern) for s RLIKE pattern"},
	{"div", " ", "a // b for Spark's a div b of integers (NULL where b is 0, as Spark's div), or CAST(a / b AS BIGINT) for DECIMAL or DOUBLE operands (DuckDB's // does not truncate those: 7.5 // 2 is 3.75)"},
	{"lateral", "view", "unnest in the SELECT list for LATERAL VIEW explode(arr): SELECT t.*, unnest(t.arr) AS x FROM t"},
	{"array", "(", "[a, b] (or list_value(a, b)) for array(a, b)"},
	{"struct", "(", "{'a': x} (or struct_pack(a := x)) for struct(x AS a)"},
	{"int", "(", "CAST(x AS INTEGER) for int(x)"},
	{"bigint", "(", "CAST(x AS BIGINT) for bigint(x)"},
	{"smallint", "(", "CAST(x AS SMALLINT) for smallint(x)"},
	{"float", "(", "CAST(x AS FLOAT) for float(x)"},
	{"decimal", "(", "CAST(x AS DECIMAL(10,0)) for decimal(x) (Spark's DECIMAL is DECIMAL(10,0))"},
	{"double", "(", "CAST(x AS DOUBLE) for double(x)"},
	{"timestamp", "(", "CAST(x AS TIMESTAMP) for timestamp(x)"},
	{"boolean", "(", "CAST(x AS BOOLEAN) for boolean(x)"},
}

// autoLoaderCall reports whether sql reads files with Auto Loader's table functions (read_files,
// cloud_files), which the spec says with a `source:`: that is the one problem reported of such a
// query, whose references, STREAM and syntax are Databricks SQL.
func autoLoaderCall(sql string) bool {
	for _, c := range sparkCalls(sql) {
		if n := strings.ToLower(c.name); n == "read_files" || n == "cloud_files" {
			return true
		}
	}
	return false
}

// sparkCall is a call in a query of a function of sparkFunctions: its name as written, its
// byte offset, the argument count that makes it Spark's form (0: any) and the DuckDB form.
type sparkCall struct {
	name  string
	at    int
	args  int
	duck  string
	other string // sparkFunction.other
	form  string // sparkFunction.form
}

// sparkCalls returns the calls of sparkFunctions in sql, in order: a name (not quoted, not after
// a dot) followed by "(", with the argument count the entry names when it names one. A name
// with a list of column names, of a CTE or a table alias (columnAliases), is no call.
func sparkCalls(sql string) []sparkCall {
	toks := tokenize(sql)
	ctes := cteNames(toks)
	var out []sparkCall
	for i, t := range toks {
		if t.kind != 'w' || i+1 >= len(toks) || toks[i+1].kind != 'p' || toks[i+1].text != "(" {
			continue
		}
		if i > 0 && toks[i-1].kind == 'p' && toks[i-1].text == "." {
			continue
		}
		if columnAliases(toks, i, ctes) {
			continue
		}
		f, ok := sparkFunctions[strings.ToLower(t.text)]
		if !ok || (f.args > 0 && callArgs(toks, i+1) != f.args) || (f.when != nil && !f.when(callArgTokens(toks, i+1))) {
			continue
		}
		out = append(out, sparkCall{name: t.text, at: t.start, args: f.args, duck: f.duck, other: f.other, form: f.form})
	}
	out = append(out, sparkForms(sql, toks)...)
	slices.SortStableFunc(out, func(a, b sparkCall) int { return a.at - b.at })
	return out
}

// noSubscript are the words after which a "[" opens a list, not a subscript.
var noSubscript = map[string]bool{"select": true, "array": true, "in": true, "then": true, "else": true, "when": true,
	"and": true, "or": true, "not": true, "case": true, "by": true, "values": true, "distinct": true, "all": true,
	"any": true, "some": true, "like": true, "ilike": true, "is": true, "between": true, "where": true, "having": true,
	"on": true, "return": true, "from": true, "qualify": true, "limit": true, "offset": true, "as": true}

// sparkForms returns the forms of Spark SQL other than calls that DuckDB runs with another
// result, in toks (sql's tokens), as sparkCalls: a string literal with a doubled backslash
// (Spark's '\\d' is \d, DuckDB keeps both backslashes), a LIKE pattern with a backslash and no
// ESCAPE (Spark's LIKE escapes with a backslash, DuckDB's with nothing), a subscript [0] (the
// first element in Spark, NULL in DuckDB, which counts from 1), the operator ^ (exclusive or in
// Spark, a power in DuckDB) and a cast to DECIMAL without precision (DECIMAL(10,0) in Spark,
// DECIMAL(18,3) in DuckDB).
func sparkForms(sql string, toks []sqlToken) []sparkCall {
	var out []sparkCall
	plain := func(t sqlToken) bool { return t.kind == 's' && sql[t.start] == '\'' }
	for i, t := range toks {
		switch {
		case plain(t) && strings.Contains(sql[t.start:t.end], `\\`):
			out = append(out, sparkCall{name: "'\\\\'", at: t.start,
				form:  "a string with a doubled backslash (" + sql[t.start:t.end] + ")",
				other: "keeps as written: two backslashes, where Spark SQL reads \\\\ in a string as one (so that '\\\\d+' is the regular expression \\d+ in Spark, and matches a backslash and d's here)",
				duck:  "one backslash: " + strings.ReplaceAll(sql[t.start:t.end], `\\`, `\`) + " (DuckDB strings take no escapes; E'...' strings do)"})
		case (t.is("like") || t.is("ilike")) && i+1 < len(toks) && plain(toks[i+1]) && strings.Contains(toks[i+1].text, `\`) &&
			(i+2 >= len(toks) || !toks[i+2].is("escape")):
			out = append(out, sparkCall{name: t.text, at: toks[i+1].start,
				form:  t.text + " " + sql[toks[i+1].start:toks[i+1].end] + " without ESCAPE",
				other: "runs taking the backslash as a character of the pattern, where Spark's LIKE escapes the next character with it ('a\\_b' matches a_b in Spark, not here)",
				duck:  t.text + " " + sql[toks[i+1].start:toks[i+1].end] + " ESCAPE '\\'"})
		case t.kind == 'p' && t.text == "[" && i > 0 && i+2 < len(toks) && toks[i+1].kind == 'n' && strings.Trim(toks[i+1].text, "0") == "" &&
			toks[i+2].kind == 'p' && toks[i+2].text == "]" && subscripted(toks[i-1]):
			out = append(out, sparkCall{name: "[0]", at: t.start, form: "the subscript [0]",
				other: "runs as NULL, as its lists (and strings) count from 1, where Spark's arrays count from 0 (split(s, ',')[0] is the first part in Spark)",
				duck:  "arr[1] for Spark's arr[0], arr[2] for Spark's arr[1], and so on"})
		case t.kind == 'p' && t.text == "^" && (i+1 >= len(toks) || toks[i+1].text != "@"):
			out = append(out, sparkCall{name: "^", at: t.start, form: "the operator ^",
				other: "runs as a power (2 ^ 3 is 8), where Spark's ^ is a bitwise exclusive or (2 ^ 3 is 1)",
				duck:  "xor(a, b) for Spark's a ^ b (power(a, b) for a power)"})
		case (t.is("decimal") || t.is("numeric") || t.is("dec")) && i > 0 && (i+1 >= len(toks) || toks[i+1].text != "(") &&
			((toks[i-1].kind == 'p' && toks[i-1].text == ":") || (toks[i-1].is("as") && i+1 < len(toks) && toks[i+1].text == ")")):
			out = append(out, sparkCall{name: t.text, at: t.start, form: t.text + " without precision and scale",
				other: "reads as DECIMAL(18,3), where Spark's DECIMAL is DECIMAL(10,0) (CAST('3.14159' AS DECIMAL) is 3.142 here, 3 in Spark)",
				duck:  "DECIMAL(10,0), Spark's DECIMAL, or the precision and scale you want"})
		}
	}
	return out
}

// subscripted reports whether a "[" after t subscripts what t ends: a name (not a keyword of
// noSubscript), a quoted name, a string, or a closing parenthesis or bracket.
func subscripted(t sqlToken) bool {
	switch t.kind {
	case 'w':
		return !noSubscript[strings.ToLower(t.text)]
	case 'q', 's':
		return true
	case 'p':
		return t.text == ")" || t.text == "]"
	}
	return false
}

// callArgTokens returns the tokens of each argument of the call whose "(" is toks[open]
// (splitTopLevel of what its parentheses hold, up to closing's bracket); none for a call without
// arguments or not closed.
func callArgTokens(toks []sqlToken, open int) [][]sqlToken {
	end := closing(toks, open)
	if end >= len(toks) || end == open+1 {
		return nil
	}
	return splitTopLevel(toks[open+1 : end])
}

// fromPositionZero reports whether a substring call's position, its second argument (or the
// number after FROM in substring(s FROM p FOR n)), is the number 0: DuckDB starts before the first character there, Spark at the first.
func fromPositionZero(args [][]sqlToken) bool {
	zero := func(t sqlToken) bool { return t.kind == 'n' && strings.Trim(t.text, "0.") == "" }
	if len(args) == 1 {
		// The SQL form substring(s FROM 0 FOR n).
		for i, t := range args[0] {
			if t.is("from") && i+1 < len(args[0]) && zero(args[0][i+1]) {
				return true
			}
		}
		return false
	}
	return len(args) >= 2 && len(args[1]) == 1 && zero(args[1][0])
}

// dayOfWeekField reports whether an extract or date_part call takes the day of the week as
// Spark numbers it from 1 and DuckDB from 0: DOW or DAYOFWEEK (a name for extract, a string
// for date_part), not DuckDB's and Spark's ISO forms, which agree.
func dayOfWeekField(args [][]sqlToken) bool {
	if len(args) == 0 || len(args[0]) == 0 {
		return false
	}
	f := args[0][0]
	if f.kind != 'w' && f.kind != 's' {
		return false
	}
	switch strings.ToLower(f.text) {
	case "dow", "dayofweek":
		return true
	}
	return false
}

// splitByPattern reports whether a split call's second argument may be a regular expression
// that is not a plain separator: anything but a string literal free of the characters a
// regular expression gives a meaning (Spark's split takes a regular expression, DuckDB's split
// the separator's text); a third argument (Spark's limit) too, which DuckDB's split does not take.
func splitByPattern(args [][]sqlToken) bool {
	if len(args) != 2 {
		return len(args) == 3
	}
	sep := args[1]
	return len(sep) != 1 || sep[0].kind != 's' || strings.ContainsAny(sep[0].text, `.[]()|*+?^$\{}`)
}

// columnAliases reports whether the name toks[i], followed by "(", names a relation and its
// columns rather than calls a function: a CTE (ctes: `WITH sequence(n) AS (...)`) or a table
// alias (`FROM (VALUES (1, 2)) AS size(a, b)`, `FROM read_csv('x.csv') explode(x)`,
// `FROM orders size(a, b)`): after AS, after a closing parenthesis or quoted name (a FROM
// item), or after a table name that follows FROM, JOIN or a FROM list's comma (aliasAfterTable).
func columnAliases(toks []sqlToken, i int, ctes map[int]bool) bool {
	if ctes[i] {
		return true
	}
	if i == 0 {
		return false
	}
	prev := toks[i-1]
	return prev.is("as") || prev.kind == 'q' || (prev.kind == 'p' && prev.text == ")") || aliasAfterTable(toks, i)
}

// aliasAfterTable reports whether toks[i] follows a bare table name of a FROM item: a name,
// maybe qualified (LIVE.orders) or after STREAM, right after FROM, JOIN or a comma, as in
// `FROM orders size(a, b)` or `FROM a, LIVE.b explode(x)`. A function is never called there
// (`FROM t WHERE size(a) > 0` has WHERE before the call, which follows no FROM itself); STREAM
// or a clause word right after FROM is no table name (`FROM STREAM read_files(...)` calls).
func aliasAfterTable(toks []sqlToken, i int) bool {
	j := i - 1
	if j < 1 || !toks[j].isName() || toks[j].is("stream") || (toks[j].kind == 'w' && clauseEnd[strings.ToLower(toks[j].text)]) {
		return false
	}
	for j >= 2 && toks[j-1].kind == 'p' && toks[j-1].text == "." && toks[j-2].isName() {
		j -= 2
	}
	if j >= 1 && toks[j-1].is("stream") {
		j--
	}
	if j < 1 {
		return false
	}
	before := toks[j-1]
	return before.is("from") || before.is("join") || (before.kind == 'p' && before.text == ",")
}

// cteNames returns the token indexes of the names of the CTEs of toks, where each is defined
// (cteScopes: after WITH [RECURSIVE], each `name [(columns)] AS [[NOT] MATERIALIZED] (query)`).
func cteNames(toks []sqlToken) map[int]bool {
	out := map[int]bool{}
	for _, c := range cteScopes(toks) {
		out[c.at] = true
	}
	return out
}

// callArgs counts the arguments of the call whose "(" is toks[open]: the commas at its top
// level plus one, 0 for an empty list.
func callArgs(toks []sqlToken, open int) int {
	depth, n := 0, 0
	for j := open; j < len(toks); j++ {
		t := toks[j]
		if t.kind != 'p' {
			if depth == 1 && n == 0 {
				n = 1
			}
			continue
		}
		switch t.text {
		case "(", "[", "{":
			if depth == 1 && n == 0 && j > open {
				n = 1
			}
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return n
			}
		case ",":
			if depth == 1 {
				n++
			}
		default:
			if depth == 1 && n == 0 {
				n = 1
			}
		}
	}
	return n
}

// duckParenthesized reports whether the word toks[i] of sparkSyntax, followed by "(", is DuckDB
// SQL: a type after AS or :: (`CAST(x AS STRUCT(a INT))`, `x::STRUCT(a INT)`) or after a field's
// name (`STRUCT(a DECIMAL(10,2))`: a name that is no keyword of noSubscript), or an ARRAY
// subquery (`ARRAY(SELECT ...)`).
func duckParenthesized(toks []sqlToken, i int) bool {
	if i > 0 && (toks[i-1].is("as") || (toks[i-1].kind == 'p' && toks[i-1].text == ":")) {
		return true
	}
	if i > 0 && (toks[i-1].kind == 'q' || toks[i-1].kind == 'w' && !noSubscript[strings.ToLower(toks[i-1].text)]) {
		return true
	}
	return toks[i].is("array") && subqueryAt(toks, i+2)
}

// sparkSyntaxHint returns the hint for a query that does not parse when it holds a Spark SQL form
// DuckDB's parser refuses (sparkSyntax, or a name in backticks); ok is false otherwise.
func sparkSyntaxHint(sql string) (hint string, ok bool) {
	bt, hasBT := BacktickHint(sql)
	if h, ok := sparkWordHint(sql); ok {
		if hasBT {
			// DuckDB parses some backticks (as an operator): the word may be what it refused
			return bt + "; and " + strings.TrimPrefix(h, "queries are DuckDB SQL: "), true
		}
		return h, true
	}
	return bt, hasBT
}

// sparkWordHint returns the hint for the first form of sparkSyntax that sql holds; ok is false
// when it holds none.
func sparkWordHint(sql string) (hint string, ok bool) {
	toks := tokenize(sql)
	for _, s := range sparkSyntax {
		for i, t := range toks {
			if !t.is(s.word) {
				continue
			}
			if s.next == " " && !betweenOperands(toks, i) {
				continue
			}
			if s.next != "" && s.next != " " && (i+1 >= len(toks) || !strings.EqualFold(toks[i+1].text, s.next)) {
				continue
			}
			if s.next == "(" && duckParenthesized(toks, i) {
				continue
			}
			return "queries are DuckDB SQL: write " + s.duck, true
		}
	}
	return "", false
}

// betweenOperands reports whether the word toks[i] stands where a binary operator does: after
// what ends an operand (a number, a name that is no keyword of noSubscript, a quoted name, a
// string, a closing parenthesis or bracket) and before what starts one (a number, a name, a
// quoted name, a string, an opening parenthesis, a sign).
func betweenOperands(toks []sqlToken, i int) bool {
	if i == 0 || i+1 >= len(toks) || (toks[i-1].kind != 'n' && !subscripted(toks[i-1])) {
		return false
	}
	switch next := toks[i+1]; next.kind {
	case 'n', 'q', 's':
		return true
	case 'w':
		return !clauseEnd[strings.ToLower(next.text)] && !sqlKeywords[strings.ToUpper(next.text)]
	default:
		return next.text == "(" || next.text == "-" || next.text == "+"
	}
}

// DoubleQuoteHint is the hint for a bind error, msg, of DuckDB's ("Referenced column "paid" not
// found ...") where sql writes that name in double quotes: Spark SQL reads "paid" as a string
// (unless spark.sql.ansi.doubleQuotedIdentifiers), DuckDB as a column's name, so a ported
// `status = "paid"` fails to bind (or, where a column has that name, compares with the column).
// ok is false when msg names no column or sql does not double-quote it.
func DoubleQuoteHint(sql, msg string) (hint string, ok bool) {
	const marker = `Referenced column "`
	i := strings.Index(msg, marker)
	if i < 0 {
		return "", false
	}
	name, _, found := strings.Cut(msg[i+len(marker):], `" not found`)
	if !found || name == "" || !strings.Contains(sql, `"`+name+`"`) {
		return "", false
	}
	return fmt.Sprintf("queries are DuckDB SQL, where \"%s\" is a column's name, not a string as in Spark SQL: write the string '%s'", name, strings.ReplaceAll(name, "'", "''")), true
}

// BacktickHint is the hint for a query that quotes a name with Spark SQL's backticks, which
// DuckDB may parse (as an operator) and then fail to bind with words about `__postfix` that
// do not say what is wrong; ok is false when sql holds no backtick outside strings and quoted
// names.
func BacktickHint(sql string) (hint string, ok bool) {
	name, ok := backtickName(sql)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("queries are DuckDB SQL, which quotes names with double quotes, not Spark SQL's backticks: write \"%s\" for `%s`", strings.ReplaceAll(name, `"`, `""`), name), true
}
