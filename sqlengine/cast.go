package sqlengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// CastTypes are the DuckDB types whose casts differ from Spark SQL's and run as Spark's here: a
// query's CAST(x AS INT) (and TRY_CAST, x::INT) is called as the macro CastMacro names, which
// the engine defines before it runs a query that calls it (DefineMacros). The integral types of Spark (TINYINT, SMALLINT, INT,
// BIGINT) truncate a fraction toward zero, where DuckDB's CAST rounds; VARCHAR (Spark's STRING)
// writes a DOUBLE or FLOAT as Java does, where DuckDB writes its own text.
var CastTypes = []string{"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "VARCHAR"}

// CastMacro returns the name of the macro that casts its argument to typ, one of CastTypes, as
// Spark SQL does; try names the TRY_CAST form (NULL where the cast fails). To an integral type,
// a DOUBLE, FLOAT, DECIMAL or VARCHAR with a fraction is truncated toward zero (CAST(2.7 AS INT)
// is 2 and CAST(-2.7 AS INT) -2, where DuckDB's own CAST rounds to 3 and -3; CAST('2.7' AS INT)
// is 2, as in Spark 3). To VARCHAR, a DOUBLE or FLOAT is written as Java's Double.toString and
// Float.toString write it (javaFloatText: 1.0E20, where DuckDB writes 1e+20). Any other value
// casts as DuckDB's CAST. A result column named by such a call is renamed as DuckDB names the
// CAST (castName), so a column's name does not change.
//
// The macro names its argument in each branch of a CASE on its type, which DuckDB folds when it
// binds the query: what runs is the one cast the argument's type takes (CAST(trunc(d) AS
// BIGINT) for a DECIMAL d, CAST(n AS BIGINT) for an INT n), with no cost of its own. An argument
// that itself holds such a call is to be given to the Once form instead (OnceMacro), or binding
// a cast of casts would take as many copies of the innermost as the product of the branches.
func CastMacro(typ string, try bool) string {
	if try {
		return "spark_try_cast_" + strings.ToLower(typ)
	}
	return "spark_cast_" + strings.ToLower(typ)
}

// OnceMacro returns the name of the form of macro (a CastMacro or ConcatWSPart) that computes its
// argument once, as a lambda's parameter: for an argument that holds another such call, which
// the plain form would copy into each branch. The lambda runs for each row (a list of one value
// made and read), so the plain form is the one for every other argument.
func OnceMacro(macro string) string { return macro + "_once" }

// castMacros are the statements that define CastMacro's macros (and their OnceMacro forms) in a
// database's catalog (DefineMacros). Which branch a value takes depends on its type alone
// (typeof).
//
// To an integral type: a DOUBLE or FLOAT is truncated as a DOUBLE (exact: trunc of a DOUBLE is an
// integer DOUBLE); a DECIMAL of scale 0 is cast as it is; one of at most 15 digits is truncated
// as its DOUBLE (exact: its nearest DOUBLE is nearer to it than 10^-15 of it, and so on the same
// side of every integer, as the value is at least 10^-15 of it away from the next one); a wider
// one loses its fraction as text (exact at any precision, about 25 times the time of the
// others); a string, as Spark reads one (UTF8String.toLong: white space
// around it, a sign, digits, then a '.' and digits that are dropped, so '-.5' is 0), becomes the
// digits before its '.'; another type is DuckDB's CAST. A value out of the type's range fails
// (or is NULL under TRY_CAST) as DuckDB's CAST of it does, where Spark without ANSI mode wraps
// or saturates.
//
// To VARCHAR: a DOUBLE or FLOAT is DuckDB's text of it (the shortest that reads back as the same
// number, as Java's) written as Java writes it (javaFloatText).
func castMacros() []string {
	out := slices.Clone(javaFloatText)
	for _, typ := range CastTypes {
		for _, try := range []bool{false, true} {
			cast := "CAST"
			if try {
				cast = "TRY_CAST"
			}
			body := func(v string) string {
				if typ == "VARCHAR" {
					return fmt.Sprintf("CASE WHEN typeof(%[1]s) IN ('DOUBLE', 'FLOAT') THEN spark_java_float(CAST(%[1]s AS VARCHAR)) ELSE CAST(%[1]s AS VARCHAR) END", v)
				}
				return fmt.Sprintf("CASE"+
					" WHEN typeof(%[3]s) IN ('DOUBLE', 'FLOAT') THEN %[1]s(trunc(TRY_CAST(%[3]s AS DOUBLE)) AS %[2]s)"+
					" WHEN typeof(%[3]s) LIKE 'DECIMAL(%%,0)' THEN %[1]s(%[3]s AS %[2]s)"+
					" WHEN regexp_matches(typeof(%[3]s), '^DECIMAL[(]([0-9]|1[0-5]),') THEN %[1]s(trunc(TRY_CAST(%[3]s AS DOUBLE)) AS %[2]s)"+
					" WHEN typeof(%[3]s) LIKE 'DECIMAL(%%' THEN %[1]s(split_part(CAST(%[3]s AS VARCHAR), '.', 1) AS %[2]s)"+
					` WHEN typeof(%[3]s) = 'VARCHAR' THEN %[1]s(regexp_replace(CAST(%[3]s AS VARCHAR), '^\s*([+-]?)([0-9]*)\.[0-9]*\s*$', '\10\2') AS %[2]s)`+
					" ELSE %[1]s(%[3]s AS %[2]s) END", cast, typ, v)
			}
			out = append(out, macroPair(CastMacro(typ, try), "x", body)...)
		}
	}
	// The list branch casts v to a list of strings so that it binds whatever v's type is; it
	// runs for a list alone. It joins with list_reduce, not array_to_string, whose separator
	// must be a constant (concat_ws's may be a column).
	return append(out, macroPair(ConcatWSPart, "x, sep", func(v string) string {
		return fmt.Sprintf("CASE WHEN typeof(%[1]s) LIKE '%%[]' THEN"+
			" CASE WHEN list_count(CAST(%[1]s AS VARCHAR[])) = 0 THEN NULL"+
			" ELSE list_reduce(list_filter(CAST(%[1]s AS VARCHAR[]), lambda e: e IS NOT NULL), lambda a, b: a || sep || b) END"+
			" ELSE %[2]s(%[1]s) END", v, CastMacro("VARCHAR", false))
	})...)
}

// macroPair returns the statements that define the macro name(params) and its OnceMacro form:
// body(x), and body(v) for v a lambda's parameter bound to x (the first parameter), computed
// once.
func macroPair(name, params string, body func(v string) string) []string {
	return []string{
		fmt.Sprintf("CREATE OR REPLACE MACRO %s(%s) AS %s", name, params, body("x")),
		fmt.Sprintf("CREATE OR REPLACE MACRO %s(%s) AS list_transform([x], lambda v: %s)[1]", OnceMacro(name), params, body("v")),
	}
}

// ConcatWSPart is the macro that a query's concat_ws(sep, a, b, ...) calls on each argument after
// the separator, as ConcatWSPart(a, sep), so that concat_ws joins as Spark SQL's does: an array
// becomes its elements that are not NULL, joined by sep (NULL when there is none, so that it
// adds no separator), where DuckDB's concat_ws writes the array as text ('[a, NULL, b]'); any
// other value is a string as CAST(x AS STRING) makes it (CastMacro). A result column named by
// such a call is renamed without it (castName).
const ConcatWSPart = "spark_concat_ws_part"

// javaFloatText are the macros that write DuckDB's text s of a DOUBLE or FLOAT as Java's
// Double.toString and Float.toString write the number (which Spark's CAST to STRING gives):
// spark_java_float(s). From s ('123456789.0', '1e+20', '-1.5e-05', 'nan', 'inf') come the
// number's sign, its significant digits d ('123456789', '1', '15'; ” for zero) and the decimal
// exponent e of the first one (8, 20, -5); spark_java_digits(sign, d, e) writes them: a number of
// at least 10^-3 and below 10^7 in plain notation with at least one digit after the point
// (1234567.0, 0.001), any other in Java's scientific notation (1.23456789E8, 1.0E20, -1.5E-5),
// zero as 0.0 (-0.0), NaN, Infinity and -Infinity.
var javaFloatText = []string{
	"CREATE OR REPLACE MACRO spark_java_digits(sign, d, e) AS sign || CASE" +
		" WHEN d = '' THEN '0.0'" +
		" WHEN e >= 0 AND e < 7 THEN rpad(substr(d, 1, e + 1), CAST(e + 1 AS INTEGER), '0') || '.' || coalesce(nullif(substr(d, e + 2), ''), '0')" +
		" WHEN e < 0 AND e >= -3 THEN '0.' || repeat('0', -e - 1) || d" +
		" ELSE substr(d, 1, 1) || '.' || coalesce(nullif(substr(d, 2), ''), '0') || 'E' || CAST(e AS VARCHAR) END",
	// m is s without its sign and exponent, digits m without its point.
	"CREATE OR REPLACE MACRO spark_java_parts(sign, m, digits, x) AS spark_java_digits(sign," +
		" rtrim(ltrim(digits, '0'), '0')," +
		" x + length(split_part(m, '.', 1)) - 1 - (length(digits) - length(ltrim(digits, '0'))))",
	// s is a lambda's parameter, so that the text given is computed once, not once for each
	// time the macros above name their arguments.
	"CREATE OR REPLACE MACRO spark_java_float(text) AS list_transform([text], lambda s: CASE" +
		" WHEN s = 'nan' THEN 'NaN' WHEN s = 'inf' THEN 'Infinity' WHEN s = '-inf' THEN '-Infinity'" +
		" ELSE spark_java_parts(CASE WHEN starts_with(s, '-') THEN '-' ELSE '' END," +
		" split_part(ltrim(s, '-'), 'e', 1), replace(split_part(ltrim(s, '-'), 'e', 1), '.', '')," +
		" coalesce(TRY_CAST(split_part(s, 'e', 2) AS INTEGER), 0)) END)[1]",
}

// castName returns a result column's name with each call of a CastMacro macro written as the
// cast DuckDB names it (spark_cast_integer(a) is CAST(a AS INTEGER), as DuckDB names the column
// of CAST(a AS INT) and a::INT), and each call of ConcatWSPart as its first argument, so that
// rewriting a query's casts changes no name.
func castName(name string) string {
	for {
		at, macro, typ, try := lastCastCall(name)
		if at < 0 {
			return name
		}
		open := at + len(macro)
		end := closingParen(name, open)
		if end < 0 {
			return name
		}
		inner := name[open+1 : end]
		if typ == "" {
			comma := lastTopComma(inner)
			if comma < 0 {
				return name
			}
			name = name[:at] + inner[:comma] + name[end+1:]
			continue
		}
		cast := "CAST("
		if try {
			cast = "TRY_CAST("
		}
		name = name[:at] + cast + inner + " AS " + typ + ")" + name[end+1:]
	}
}

// lastCastCall returns the byte offset in s of the last call of a CastMacro macro or of
// ConcatWSPart, or of their OnceMacro forms (its name followed by "("), with its name, type (""
// for ConcatWSPart) and form; at is -1 when there is none.
func lastCastCall(s string) (at int, name, typ string, try bool) {
	at = -1
	for _, n := range []string{ConcatWSPart, OnceMacro(ConcatWSPart)} {
		if i := strings.LastIndex(s, n+"("); i > at {
			at, name = i, n
		}
	}
	for _, t := range CastTypes {
		for _, tr := range []bool{false, true} {
			for _, n := range []string{CastMacro(t, tr), OnceMacro(CastMacro(t, tr))} {
				if i := strings.LastIndex(s, n+"("); i > at {
					at, name, typ, try = i, n, t, tr
				}
			}
		}
	}
	return at, name, typ, try
}

// closingParen returns the offset of the ")" closing the "(" at s[open], skipping quoted text
// ('...' and "...", a doubled quote inside); -1 when it is not closed.
func closingParen(s string, open int) int {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote reopens at the next byte
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// lastTopComma returns the offset of the last comma of s outside parentheses, brackets and
// quoted text, or -1.
func lastTopComma(s string) int {
	depth, last := 0, -1
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			last = i
		}
	}
	return last
}

// macroOnce is DefineMacros's work for one database: done once it has succeeded.
type macroOnce struct {
	mu   sync.Mutex
	done bool
}

// macrosDefined holds, by database, whether DefineMacros defined the macros in it.
var macrosDefined sync.Map // *sql.DB -> *macroOnce

// DefineMacros defines the macros of CastMacro, OnceMacro and ConcatWSPart (castMacros) in the
// catalog of db, an in-memory database OpenDB opened, the first time it is called for db; later
// calls do nothing, unless the calls before failed (a query stopped by its ctx while they were
// being defined: the next call defines them again, as the database may be kept for later queries,
// Engine.Release). They are defined when a query first calls them (usesMacros), not as each
// connection opens: about 25 statements of some 0.5 ms each, which a run whose queries cast
// nothing does not pay (Engine.Query, Engine.Describe).
func DefineMacros(ctx context.Context, db *sql.DB) error {
	v, _ := macrosDefined.LoadOrStore(db, &macroOnce{})
	m := v.(*macroOnce)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil
	}
	for _, s := range castMacros() {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sqlengine: defining the cast macros: %w", err)
		}
	}
	m.done = true
	return nil
}

// usesMacros reports whether query may call a macro of DefineMacros (every one of whose names
// starts with spark_).
func usesMacros(query string) bool { return strings.Contains(strings.ToLower(query), "spark_") }

// forgetMacros drops what DefineMacros knows of db, which is being closed.
func forgetMacros(db *sql.DB) { macrosDefined.Delete(db) }
