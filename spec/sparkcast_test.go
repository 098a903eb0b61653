package spec

import (
	"context"
	"math"
	"reflect"
	"testing"

	"tributary/schema"
	"tributary/sqlengine"
)

// TestIntegralCastsTruncate: a cast to an integral type truncates a fraction toward zero, as
// Spark SQL's does (Java's narrowing of a double, Decimal.toInt, and for a string
// UTF8String.toInt, which drops the digits after the '.': CAST('1.2' AS INT) is 1, SPARK-19178),
// where DuckDB's own CAST rounds (CAST(2.7 AS INT) is 3 there): in every form a query writes it
// (CAST, TRY_CAST, ::, Spark's type names BYTE, SHORT, LONG too), over a column, a literal, an
// aggregate and a lambda's parameter. Values of other types cast as before, and the result
// column of a cast keeps the name DuckDB gives it.
func TestIntegralCastsTruncate(t *testing.T) {
	t.Parallel()
	e, err := sqlengine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := sqlengine.Relation{Name: "t", Schema: mustSchema(t, "d DOUBLE, f FLOAT, m DECIMAL(10,2), w DECIMAL(38,2), s STRING, i INT, b BOOLEAN, p DECIMAL(15,14), q DECIMAL(17,16), z DECIMAL(12,0)"),
		Rows: [][]any{
			{2.7, float32(-2.75), schema.Decimal(275), schema.Decimal(1234567890123456789), "2.7", int32(7), true, schema.Decimal(999999999999999), schema.Decimal(79999999999999999), schema.Decimal(123456789012)},
			{-2.7, float32(2.75), schema.Decimal(-275), schema.Decimal(-1234567890123456789), " -2.7 ", int32(-7), false, schema.Decimal(-999999999999999), schema.Decimal(-79999999999999999), schema.Decimal(-123456789012)},
		}}
	cases := []struct {
		name, sql string
		want      []any // per row of t
	}{
		{"double", "SELECT CAST(d AS INT) FROM t", []any{int32(2), int32(-2)}},
		{"float", "SELECT CAST(f AS BIGINT) FROM t", []any{int64(-2), int64(2)}},
		{"decimal", "SELECT CAST(m AS SMALLINT) FROM t", []any{int32(2), int32(-2)}},
		{"decimal of 15 digits, as its DOUBLE", "SELECT CAST(p AS INT) FROM t", []any{int32(9), int32(-9)}},
		{"decimal of 17 digits, as its text (its DOUBLE is 8.0)", "SELECT CAST(q AS INT) FROM t", []any{int32(7), int32(-7)}},
		{"decimal of scale 0", "SELECT CAST(z AS BIGINT) FROM t", []any{int64(123456789012), int64(-123456789012)}},
		{"wide decimal, exactly", "SELECT CAST(w AS LONG) FROM t", []any{int64(12345678901234567), int64(-12345678901234567)}},
		{"string", "SELECT CAST(s AS INTEGER) FROM t", []any{int32(2), int32(-2)}},
		{"try_cast", "SELECT TRY_CAST(d AS TINYINT) FROM t", []any{int32(2), int32(-2)}},
		{"try_cast of text that is no number", "SELECT try_cast(s || 'x' AS INT) FROM t", []any{nil, nil}},
		{"byte", "SELECT CAST(d * 10 AS BYTE) FROM t", []any{int32(27), int32(-27)}},
		{"short", "SELECT CAST(d AS SHORT) FROM t", []any{int32(2), int32(-2)}},
		{"double colon", "SELECT d::INT FROM t", []any{int32(2), int32(-2)}},
		{"double colon of a qualified name", "SELECT t.d::BIGINT FROM t", []any{int64(2), int64(-2)}},
		{"double colon of a call", "SELECT abs(d)::INT FROM t", []any{int32(2), int32(2)}},
		{"double colon of a parenthesized expression", "SELECT (d + 0.5)::INT FROM t", []any{int32(3), int32(-2)}},
		{"double colon of a cast", "SELECT m::DOUBLE::INT FROM t", []any{int32(2), int32(-2)}},
		{"double colons twice", "SELECT d::INT::BIGINT FROM t", []any{int64(2), int64(-2)}},
		{"double colon of CASE", "SELECT CASE WHEN b THEN d ELSE m END::INT FROM t", []any{int32(2), int32(-2)}},
		{"double colon of a number with an exponent", "SELECT 27e-1::INT + i - i FROM t", []any{int32(2), int32(2)}},
		{"literal", "SELECT CAST(2.7 AS INT) + CAST(-2.7 AS INT) * 10 + i - i FROM t", []any{int32(-18), int32(-18)}},
		{"string literal", "SELECT CAST('2.7' AS INT) + i - i FROM t", []any{int32(2), int32(2)}},
		{"nested cast", "SELECT CAST(CAST(d AS INT) AS BIGINT) FROM t", []any{int64(2), int64(-2)}},
		{"casts of casts", "SELECT CAST(CAST(CAST(CAST(CAST(d * 10 AS INT) AS VARCHAR) AS BIGINT) AS VARCHAR) AS SHORT) FROM t", []any{int32(27), int32(-27)}},
		{"grouped by the cast", "SELECT CAST(d AS INT) FROM t GROUP BY CAST(d AS INT) ORDER BY 1 DESC", []any{int32(2), int32(-2)}},
		{"lambda", "SELECT list_transform([d, d / 3], x -> CAST(x AS INT))[2] FROM t", []any{int32(0), int32(0)}},
		{"aggregate", "SELECT CAST(sum(d) + 0.9 AS INT) FROM t GROUP BY i ORDER BY i", []any{int32(-1), int32(3)}},
		{"integer, boolean and NULL alike", "SELECT CAST(i AS BIGINT) + CAST(b AS INT) + coalesce(CAST(NULL AS INT), 0) FROM t", []any{int64(8), int64(-7)}},
		{"a list type is no integral cast", "SELECT CAST([d] AS INT[])[1] FROM t", []any{int32(3), int32(-3)}},
	}
	for _, c := range cases {
		refs, files, _, _ := parseQuery(c.sql)
		q := &Query{SQL: c.sql, Refs: refs, Files: files}
		sql := q.Rewrite(func(r QueryRef) string { return sqlengine.RelationRef(r.Name) })
		_, rows, err := e.Query(context.Background(), sql, []sqlengine.Relation{rel})
		if err != nil {
			t.Errorf("%s: %s: %v", c.name, sql, err)
			continue
		}
		var got []any
		for _, r := range rows {
			got = append(got, r[0])
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %s gives %v, want %v (Spark's)", c.name, c.sql, got, c.want)
		}
	}
}

// TestIntegralCastNames: a query's casts rewritten, its result columns keep the names DuckDB
// gives the casts as written, so that no dataset's column changes its name.
func TestIntegralCastNames(t *testing.T) {
	t.Parallel()
	e, err := sqlengine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := sqlengine.Relation{Name: "t", Schema: mustSchema(t, "d DOUBLE, s STRING"), Rows: [][]any{{2.7, "a(b"}}}
	sql := `SELECT CAST(d AS INT), d::BIGINT + 1, TRY_CAST(d AS SHORT), CAST(CAST(d AS INT) AS BIGINT),
		CAST(length(s || ')') AS INT) FROM t`
	want := []string{"CAST(d AS INTEGER)", "(CAST(d AS BIGINT) + 1)", "TRY_CAST(d AS SMALLINT)",
		"CAST(CAST(d AS INTEGER) AS BIGINT)", "CAST(length((s || ')')) AS INTEGER)"}
	refs, _, _, _ := parseQuery(sql)
	q := &Query{SQL: sql, Refs: refs}
	rewritten := q.Rewrite(func(r QueryRef) string { return sqlengine.RelationRef(r.Name) })
	for _, describe := range []bool{false, true} {
		var s schema.Schema
		if describe {
			s, err = e.Describe(context.Background(), rewritten, []sqlengine.Relation{rel})
		} else {
			s, _, err = e.Query(context.Background(), rewritten, []sqlengine.Relation{rel})
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range s.Fields {
			got = append(got, f.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("describe %v: names %q, want %q", describe, got, want)
		}
	}
}

// TestCastMacroNames: the macros the rewritten casts call are those the engine defines.
func TestCastMacroNames(t *testing.T) {
	t.Parallel()
	for _, typ := range sqlengine.CastTypes {
		for _, try := range []bool{false, true} {
			if got, want := castCall(typ, try), sqlengine.CastMacro(typ, try); got != want {
				t.Errorf("%s (try %v): %s, the engine's %s", typ, try, got, want)
			}
		}
	}
	if concatWSPart != sqlengine.ConcatWSPart {
		t.Errorf("concat_ws: %s, the engine's %s", concatWSPart, sqlengine.ConcatWSPart)
	}
	for name, typ := range castTypes {
		if !contains(sqlengine.CastTypes, typ) {
			t.Errorf("castTypes: %s is %s, which the engine has no macro for", name, typ)
		}
	}
}

// mustSchema parses a Spark DDL schema of a test.
func mustSchema(t *testing.T, ddl string) schema.Schema {
	t.Helper()
	s, err := schema.ParseDDL(ddl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIntegralCastEdits: the text a cast to an integral type becomes, and casts left alone.
func TestIntegralCastEdits(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		"SELECT CAST(x AS INT) FROM t":                      "SELECT spark_cast_integer(x) FROM t",
		"SELECT try_cast(x AS long)":                        "SELECT spark_try_cast_bigint(x)",
		"SELECT a.b[1]::SHORT":                              "SELECT spark_cast_smallint(a.b[1])",
		"SELECT f(x)::INT::BIGINT":                          "SELECT spark_cast_bigint_once(spark_cast_integer(f(x)))",
		"SELECT x, .5::INT":                                 "SELECT x, spark_cast_integer(.5)",
		"SELECT x, 1e-5::INT":                               "SELECT x, spark_cast_integer(1e-5)",
		"SELECT CAST((SELECT max(v) FROM t) AS TINYINT)":    "SELECT spark_cast_tinyint((SELECT max(v) FROM t))",
		"SELECT CAST(d AS STRING), d::text":                 "SELECT spark_cast_varchar(d), spark_cast_varchar(d)",
		"SELECT CAST(x AS VARCHAR(10))":                     "SELECT CAST(x AS VARCHAR(10))",
		"SELECT CAST(x AS INT[]), x::INT[], x::DOUBLE":      "SELECT CAST(x AS INT[]), x::INT[], x::DOUBLE",
		"SELECT CAST(x AS DECIMAL(10,0)), 'CAST(x AS INT)'": "SELECT CAST(x AS DECIMAL(10,0)), 'CAST(x AS INT)'",
	} {
		if got := applyEdits(sql, castEdits(sql)); got != want {
			t.Errorf("%s: %s, want %s", sql, got, want)
		}
	}
}

// TestDoubleCastToString: a DOUBLE or FLOAT cast to a string is written as Spark SQL writes it,
// Java's Double.toString and Float.toString: plain from 10^-3 up to 10^7, with at least one digit
// after the point, and in scientific notation with an E otherwise (CAST(1e20 AS STRING) is
// 1.0E20, where DuckDB writes 1e+20), NaN, Infinity; other types cast as in DuckDB.
func TestDoubleCastToString(t *testing.T) {
	t.Parallel()
	e, err := sqlengine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	doubles := map[float64]string{
		1e20: "1.0E20", 1.5e-5: "1.5E-5", -1.5e-7: "-1.5E-7", 1e-4: "1.0E-4", 0.001: "0.001", 0.00123: "0.00123",
		0.1: "0.1", 1.5: "1.5", 100: "100.0", 1234567: "1234567.0", 9999999.5: "9999999.5", 1e7: "1.0E7",
		123456789: "1.23456789E8", 12345678.9: "1.23456789E7", -1e16: "-1.0E16", 1.2345678901234568e17: "1.2345678901234568E17",
		0: "0.0", math.Copysign(0, -1): "-0.0", math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity",
		math.MaxFloat64: "1.7976931348623157E308",
	}
	for d, want := range doubles {
		rel := sqlengine.Relation{Name: "t", Schema: mustSchema(t, "d DOUBLE, f FLOAT, i INT, m DECIMAL(10,2)"),
			Rows: [][]any{{d, float32(1e10), int32(7), schema.Decimal(250)}}}
		sql := "SELECT CAST(d AS STRING), d::VARCHAR, TRY_CAST(d AS STRING), CAST(f AS STRING), CAST(i AS STRING), CAST(m AS VARCHAR) FROM t"
		refs, _, _, _ := parseQuery(sql)
		q := &Query{SQL: sql, Refs: refs}
		s, rows, err := e.Query(context.Background(), q.Rewrite(func(r QueryRef) string { return sqlengine.RelationRef(r.Name) }), []sqlengine.Relation{rel})
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		if got, w := rows[0], []any{want, want, want, "1.0E10", "7", "2.50"}; !reflect.DeepEqual(got, w) {
			t.Errorf("%v: %q, want %q (Spark's)", d, got, w)
		}
		if s.Fields[0].Name != "CAST(d AS VARCHAR)" || s.Fields[4].Name != "CAST(i AS VARCHAR)" {
			t.Errorf("%v: columns %v, want DuckDB's names of the casts", d, s.Fields)
		}
	}
}

// TestConcatWSArrays: concat_ws joins the elements of an array argument that are not NULL, as
// Spark SQL's does (concat_ws(',', array('a', NULL, 'b')) is 'a,b'; an empty array or NULL adds
// nothing), where DuckDB's writes the array as text ('[a, NULL, b]'); strings, NULLs and a
// NULL separator as in Spark's reference (concat_ws('/', 'foo', null, 'bar') is 'foo/bar',
// concat_ws(null, 'Spark', 'SQL') NULL), a column as the separator too; a DOUBLE is written as
// CAST(x AS STRING) writes it.
// The result column keeps DuckDB's name.
func TestConcatWSArrays(t *testing.T) {
	t.Parallel()
	e, err := sqlengine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := sqlengine.Relation{Name: "t", Schema: mustSchema(t, "tags ARRAY<STRING>, none ARRAY<STRING>, s STRING, d DOUBLE"),
		Rows: [][]any{{[]any{"a", nil, "b"}, []any{}, "c", 1e20}}}
	for sql, want := range map[string]any{
		"SELECT concat_ws(',', tags) FROM t":                             "a,b",
		"SELECT concat_ws('-', s, tags, NULL, none, s) FROM t":           "c-a-b-c",
		"SELECT concat_ws(' ', 'Spark', 'SQL') FROM t":                   "Spark SQL",
		"SELECT concat_ws('/', 'foo', null, 'bar') FROM t":               "foo/bar",
		"SELECT concat_ws(null, 'Spark', 'SQL') FROM t":                  nil,
		"SELECT concat_ws(s, tags, s) FROM t":                            "acbcc",
		"SELECT concat_ws(':', s, d) FROM t":                             "c:1.0E20",
		"SELECT concat_ws(',', concat_ws('+', tags), s::VARCHAR) FROM t": "a+b,c",
	} {
		refs, _, _, _ := parseQuery(sql)
		q := &Query{SQL: sql, Refs: refs}
		s, rows, err := e.Query(context.Background(), q.Rewrite(func(r QueryRef) string { return sqlengine.RelationRef(r.Name) }), []sqlengine.Relation{rel})
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		if rows[0][0] != want {
			t.Errorf("%s gives %v, want %v (Spark's)", sql, rows[0][0], want)
		}
		if sql == "SELECT concat_ws(',', tags) FROM t" && s.Fields[0].Name != "concat_ws(',', tags)" {
			t.Errorf("%s: column %s, want DuckDB's name concat_ws(',', tags)", sql, s.Fields[0].Name)
		}
	}
}
