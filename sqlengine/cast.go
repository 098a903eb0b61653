package sqlengine

import (
	"fmt"
	"strings"
)

// IntegralCastTypes are the DuckDB integral types of Spark SQL (TINYINT, SMALLINT, INT,
// BIGINT) whose casts truncate toward zero here, as in Spark: a query's CAST(x AS INT) (and
// TRY_CAST, x::INT) is called as the macro IntegralCastMacro names, which every connection
// defines (castMacros).
var IntegralCastTypes = []string{"TINYINT", "SMALLINT", "INTEGER", "BIGINT"}

// IntegralCastMacro returns the name of the macro that casts its argument to typ, one of
// IntegralCastTypes, as Spark SQL does: a DOUBLE, FLOAT, DECIMAL or VARCHAR with a fraction
// truncated toward zero (CAST(2.7 AS INT) is 2 and CAST(-2.7 AS INT) -2, where DuckDB's own
// CAST rounds to 3 and -3; CAST('2.7' AS INT) is 2, as in Spark 3), any other value as DuckDB's
// CAST. try names the TRY_CAST form (NULL where the cast fails). A result column named by such
// a call is renamed as DuckDB names the CAST (castName), so a column's name does not change.
func IntegralCastMacro(typ string, try bool) string {
	if try {
		return "spark_try_cast_" + strings.ToLower(typ)
	}
	return "spark_cast_" + strings.ToLower(typ)
}

// castMacros are the statements that define IntegralCastMacro's macros on a connection, as
// temporary macros (each connection has its own, so that none conflicts with another's). Which
// branch a value takes depends on its type alone (typeof): a DOUBLE or FLOAT is truncated as a
// DOUBLE (exact: trunc of a DOUBLE is an integer DOUBLE); a DECIMAL loses its fraction as text
// (exact at any precision, where a DOUBLE would round past 15 digits); a string, as Spark reads
// one (UTF8String.toLong: white space around it, a sign, digits, then a '.' and digits that
// are dropped, so '-.5' is 0), becomes the digits before its '.'; another type is DuckDB's
// CAST. A value out of the type's range fails (or is NULL under TRY_CAST) as DuckDB's CAST of
// it does, where Spark without ANSI mode wraps or saturates.
func castMacros() []string {
	var out []string
	for _, typ := range IntegralCastTypes {
		for _, try := range []bool{false, true} {
			cast := "CAST"
			if try {
				cast = "TRY_CAST"
			}
			out = append(out, fmt.Sprintf("CREATE OR REPLACE TEMP MACRO %s(x) AS CASE"+
				" WHEN typeof(x) IN ('DOUBLE', 'FLOAT') THEN %[2]s(trunc(TRY_CAST(x AS DOUBLE)) AS %[3]s)"+
				" WHEN typeof(x) LIKE 'DECIMAL(%%' THEN %[2]s(split_part(CAST(x AS VARCHAR), '.', 1) AS %[3]s)"+
				` WHEN typeof(x) = 'VARCHAR' THEN %[2]s(regexp_replace(CAST(x AS VARCHAR), '^\s*([+-]?)([0-9]*)\.[0-9]*\s*$', '\10\2') AS %[3]s)`+
				" ELSE %[2]s(x AS %[3]s) END",
				IntegralCastMacro(typ, try), cast, typ))
		}
	}
	return out
}

// castName returns a result column's name with each call of an IntegralCastMacro macro written
// as the cast DuckDB names it (spark_cast_integer(a) is CAST(a AS INTEGER), as DuckDB names
// the column of CAST(a AS INT) and a::INT), so that rewriting a query's casts changes no name.
func castName(name string) string {
	for {
		at, typ, try := lastCastCall(name)
		if at < 0 {
			return name
		}
		open := at + len(IntegralCastMacro(typ, try))
		end := closingParen(name, open)
		if end < 0 {
			return name
		}
		cast := "CAST("
		if try {
			cast = "TRY_CAST("
		}
		name = name[:at] + cast + name[open+1:end] + " AS " + typ + ")" + name[end+1:]
	}
}

// lastCastCall returns the byte offset in s of the last call of an IntegralCastMacro macro
// (its name followed by "("), with its type and form; at is -1 when there is none.
func lastCastCall(s string) (at int, typ string, try bool) {
	at = -1
	for _, t := range IntegralCastTypes {
		for _, tr := range []bool{false, true} {
			if i := strings.LastIndex(s, IntegralCastMacro(t, tr)+"("); i > at {
				at, typ, try = i, t, tr
			}
		}
	}
	return at, typ, try
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
