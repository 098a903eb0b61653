package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseDDL(t *testing.T) {
	t.Parallel()
	s, err := ParseDDL("op STRING, order_id BIGINT, amount DECIMAL(10,2), d DATE, at TIMESTAMP, n INT, f DOUBLE, b BOOLEAN, `odd name` long")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		ddl  string
	}{{"op", "STRING"}, {"order_id", "BIGINT"}, {"amount", "DECIMAL(10,2)"}, {"d", "DATE"}, {"at", "TIMESTAMP"}, {"n", "INT"}, {"f", "DOUBLE"}, {"b", "BOOLEAN"}, {"odd name", "BIGINT"}}
	if len(s.Fields) != len(want) {
		t.Fatalf("got %d fields, want %d", len(s.Fields), len(want))
	}
	for i, w := range want {
		if s.Fields[i].Name != w.name || s.Fields[i].Type.DDL() != w.ddl {
			t.Errorf("field %d = %s %s, want %s %s", i, s.Fields[i].Name, s.Fields[i].Type.DDL(), w.name, w.ddl)
		}
	}
}

func TestParseDDLErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		offset int
	}{
		{"a BIGINT, b STRNG", 12},
		{"a BIGINT b STRING", 9},
		{"a BIGINT, a STRING", 10},
		{"a DECIMAL(40,2)", 2},
		{"a DECIMAL(5,6)", 2},
		{"", 0},
		{"a ARRAY<INTERVAL>", 8},
	}
	for _, c := range cases {
		_, err := ParseDDL(c.in)
		de, ok := err.(*DDLError)
		if !ok {
			t.Errorf("ParseDDL(%q) error = %v, want a *DDLError", c.in, err)
			continue
		}
		if de.Offset != c.offset {
			t.Errorf("ParseDDL(%q) offset = %d, want %d (%v)", c.in, de.Offset, c.offset, de)
		}
	}
}

// TestParseDDLColumnClauses: the clauses Spark DDL allows after a column's type (NOT NULL,
// COMMENT, DEFAULT, GENERATED, COLLATE), which Delta Live Tables schemas carry, are refused by
// name, at the clause, with what to do instead; a column named like one is still a column.
func TestParseDDLColumnClauses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		offset int
		msg    string
	}{
		{"id BIGINT NOT NULL, v STRING", 10, "NOT NULL after column \"id\" is not supported yet: remove it (every column is nullable; a `fail` expectation `id != nil` stops NULLs)"},
		{"id BIGINT, v STRING comment 'the value'", 20, "COMMENT after column \"v\" is not supported yet: remove it"},
		{"id BIGINT not\tnull", 10, "NOT NULL after column \"id\""},
		{"id BIGINT DEFAULT 0", 10, "DEFAULT after column \"id\""},
		{"d DATE GENERATED ALWAYS AS (CAST(at AS DATE))", 7, "GENERATED after column \"d\""},
		{"s STRING COLLATE UTF8_LCASE", 9, "COLLATE after column \"s\""},
		{"a BIGINT nothing", 9, "expected ',' or the end after column \"a\""},
	}
	for _, c := range cases {
		_, err := ParseDDL(c.in)
		de, ok := err.(*DDLError)
		if !ok || de.Offset != c.offset || !strings.HasPrefix(de.Msg, c.msg) {
			t.Errorf("ParseDDL(%q) = %v, want offset %d and %q", c.in, err, c.offset, c.msg)
		}
	}
	s, err := ParseDDL("comment STRING, default BIGINT, not BOOLEAN")
	if err != nil || len(s.Fields) != 3 {
		t.Errorf("columns named comment, default, not: %v, %v", s, err)
	}
}

func TestSparkJSONRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := ParseDDL("id BIGINT, amount DECIMAL(10,2), at TIMESTAMP")
	inner := Schema{Fields: []Field{{Name: "a", Type: Type{Kind: String}, Nullable: true}}}
	s.Fields = append(s.Fields, Field{Name: "origin", Type: Type{Kind: StructKind, Struct: &inner}, Nullable: true})
	js := s.SparkJSON()
	var generic map[string]any
	if err := json.Unmarshal([]byte(js), &generic); err != nil {
		t.Fatal(err)
	}
	fields := generic["fields"].([]any)
	if got := fields[1].(map[string]any)["type"]; got != "decimal(10,2)" {
		t.Errorf("decimal type = %v, want decimal(10,2)", got)
	}
	if got := fields[0].(map[string]any)["type"]; got != "long" {
		t.Errorf("bigint type = %v, want long", got)
	}
	back, err := ParseSparkJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) {
		t.Errorf("round trip = %s, want %s", back.DDL(), s.DDL())
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	dec := Type{Kind: DecimalKind, Precision: 10, Scale: 2}
	cases := []struct {
		name string
		t    Type
		in   any
		json string
	}{
		{"decimal number", dec, json.Number("25.5"), "25.50"},
		{"decimal string", dec, "12", "12.00"},
		{"negative decimal", dec, json.Number("-0.05"), "-0.05"},
		{"extra digits round half up", dec, json.Number("1.235"), "1.24"},
		{"extra digits round half up, negative", dec, json.Number("-1.235"), "-1.24"},
		{"extra digits round down", dec, json.Number("1.234"), "1.23"},
		{"timestamp offset", Type{Kind: TimestampKind}, "2024-01-31T12:00:00+02:00", `"2024-01-31T10:00:00.000000Z"`},
		{"date", Type{Kind: DateKind}, "2024-01-31", `"2024-01-31"`},
		{"bigint", Type{Kind: Long}, json.Number("1001"), "1001"},
		{"null", Type{Kind: Long}, nil, "null"},
	}
	for _, c := range cases {
		v, err := FromJSON(c.t, c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := string(AppendJSON(nil, c.t, v)); got != c.json {
			t.Errorf("%s: got %s, want %s", c.name, got, c.json)
		}
	}
	for _, bad := range []struct {
		t  Type
		in any
	}{{dec, json.Number("99999999.995")}, {dec, json.Number("123456789012")}, {Type{Kind: Long}, "x"}, {Type{Kind: Integer}, json.Number("3000000000")}, {Type{Kind: TimestampKind}, "yesterday"}} {
		if _, err := FromJSON(bad.t, bad.in); err == nil {
			t.Errorf("FromJSON(%s, %v) succeeded, want an error", bad.t.DDL(), bad.in)
		}
	}
}

func TestCompareAndKey(t *testing.T) {
	t.Parallel()
	if CompareTuple([]any{int64(1), "b"}, []any{int64(1), "a"}) != 1 {
		t.Error("tuple compare: (1,b) should be after (1,a)")
	}
	if Compare(Timestamp(5), Timestamp(7)) != -1 {
		t.Error("timestamps compare by instant")
	}
	a := string(AppendKey(nil, []any{int64(1), "x"}))
	b := string(AppendKey(nil, []any{int64(1), "x"}))
	c := string(AppendKey(nil, []any{"x", int64(1)}))
	if a != b || a == c {
		t.Error("AppendKey must be equal for equal values and differ otherwise")
	}
}
