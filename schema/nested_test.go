package schema

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestParseDDLNested: ARRAY and MAP parse at any depth, in upper or lower case, and print back as
// Spark's DataType.sql prints them.
func TestParseDDLNested(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"a ARRAY<INT>", "a ARRAY<INT>"},
		{"a array<int>", "a ARRAY<INT>"},
		{"m MAP<STRING, BIGINT>", "m MAP<STRING, BIGINT>"},
		{"m map<string,bigint>", "m MAP<STRING, BIGINT>"},
		{"a ARRAY<STRUCT<a: INT, b: ARRAY<STRING>>>", "a ARRAY<STRUCT<a: INT, b: ARRAY<STRING>>>"},
		{"m MAP<STRING, ARRAY<INT>>", "m MAP<STRING, ARRAY<INT>>"},
		{"s STRUCT<m: MAP<INT, STRUCT<x: DECIMAL(5,2)>>, l: ARRAY<ARRAY<DATE>>>, t TIMESTAMP", "s STRUCT<m: MAP<INT, STRUCT<x: DECIMAL(5,2)>>, l: ARRAY<ARRAY<DATE>>>, t TIMESTAMP"},
		{"a ARRAY< MAP< STRING , INT > >", "a ARRAY<MAP<STRING, INT>>"},
	} {
		s, err := ParseDDL(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := s.DDL(); got != c.want {
			t.Errorf("%s: DDL %s, want %s", c.in, got, c.want)
		}
		back, err := ParseDDL(s.DDL())
		if err != nil || !back.Equal(s) {
			t.Errorf("%s: the DDL does not parse back to the same schema: %v", c.in, err)
		}
	}
}

// TestParseDDLNestedErrors: malformed ARRAY and MAP types are errors at the character where the
// problem is.
func TestParseDDLNestedErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in     string
		offset int
		msg    string
	}{
		{"a ARRAY", 7, "expected '<' after ARRAY: ARRAY<TYPE>"},
		{"a ARRAY<INT", 11, "expected '>' to close ARRAY<INT>"},
		{"a ARRAY<>", 8, "expected a type"},
		{"a ARRAY<FOO>", 8, `unknown type "FOO"`},
		{"m MAP<STRING>", 12, "expected ',' between the key and value types"},
		{"m MAP<STRING, INT", 17, "expected '>' to close MAP<STRING, INT>"},
		{"m MAP<MAP<INT, INT>, INT>", 6, "a MAP key cannot be a MAP"},
		{"m MAP", 5, "expected '<' after MAP"},
		{"s STRUCT<a: ARRAY<INT>> x", 24, "expected ',' or the end"},
	} {
		_, err := ParseDDL(c.in)
		var de *DDLError
		if !errors.As(err, &de) {
			t.Errorf("%s: error %v, want a DDLError", c.in, err)
			continue
		}
		if de.Offset != c.offset || !strings.Contains(de.Msg, c.msg) {
			t.Errorf("%s: error at %d %q, want at %d %q", c.in, de.Offset, de.Msg, c.offset, c.msg)
		}
	}
}

// TestSparkJSONNested: ARRAY and MAP render as Delta PROTOCOL.md "Array Type" and "Map Type"
// objects, and schemaStrings written by Spark read back.
func TestSparkJSONNested(t *testing.T) {
	t.Parallel()
	s, err := ParseDDL("a ARRAY<INT>, m MAP<STRING, ARRAY<BIGINT>>")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[` +
		`{"name":"a","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"long","containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{}}]}`
	if got := s.SparkJSON(); got != want {
		t.Fatalf("SparkJSON\n%s\nwant\n%s", got, want)
	}
	back, err := ParseSparkJSON(want)
	if err != nil || !back.Equal(s) {
		t.Fatalf("ParseSparkJSON: %v, %s", err, back.DDL())
	}
	// The nested_types table of the Delta Acceptance Tests (Spark 3.5), a short array included.
	spark := `{"type":"struct","fields":[{"name":"pk","type":"integer","nullable":true,"metadata":{}},{"name":"struct","type":{"type":"struct","fields":[{"name":"float64","type":"double","nullable":true,"metadata":{}},{"name":"bool","type":"boolean","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},{"name":"array","type":{"type":"array","elementType":"short","containsNull":true},"nullable":true,"metadata":{}},{"name":"map","type":{"type":"map","keyType":"string","valueType":"integer","valueContainsNull":true},"nullable":true,"metadata":{}}]}`
	got, err := ParseSparkJSON(spark)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.DDL(); d != "pk INT, struct STRUCT<float64: DOUBLE, bool: BOOLEAN>, array ARRAY<SMALLINT>, map MAP<STRING, INT>" {
		t.Errorf("DDL %s", d)
	}
	if _, err := ParseSparkJSON(`{"type":"struct","fields":[{"name":"x","type":{"type":"array"},"nullable":true}]}`); err == nil || !strings.Contains(err.Error(), `column "x": array type`) {
		t.Errorf("an array without elementType: %v", err)
	}
	if _, err := ParseSparkJSON(`{"type":"struct","fields":[{"name":"x","type":{"type":"map","keyType":"string","valueType":"variant"},"nullable":true}]}`); err == nil || !strings.Contains(err.Error(), `map value: type "variant"`) {
		t.Errorf("a map of an unknown type: %v", err)
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func ddlType(t *testing.T, ddl string) Type {
	t.Helper()
	s, err := ParseDDL("x " + ddl)
	if err != nil {
		t.Fatal(err)
	}
	return s.Fields[0].Type
}

// TestFromJSONNested: arrays and objects fill ARRAY and MAP columns, with keys converted to the
// key type; values that do not fit name the element or key.
func TestFromJSONNested(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ, in  string
		want     any
		wantJSON string // AppendJSON of the value
	}{
		{"ARRAY<INT>", `[1, null, 3]`, []any{int32(1), nil, int32(3)}, `[1,null,3]`},
		{"ARRAY<INT>", `[]`, []any{}, `[]`},
		{"ARRAY<STRING>", `null`, nil, `null`},
		{"MAP<STRING, BIGINT>", `{"b": 2, "a": null}`, Map{{"a", nil}, {"b", int64(2)}}, `{"a":null,"b":2}`},
		{"MAP<INT, STRING>", `{"10": "x", "7": "y"}`, Map{{int32(10), "x"}, {int32(7), "y"}}, `{"10":"x","7":"y"}`},
		{"MAP<STRING, INT>", `{}`, Map{}, `{}`},
		{"MAP<DATE, DECIMAL(5,2)>", `{"2024-01-31": 1.5}`, Map{{Date(19753), Decimal(150)}}, `{"2024-01-31":1.50}`},
		{"ARRAY<STRUCT<a: INT, b: ARRAY<STRING>>>", `[{"a": 1, "b": ["x", null]}, null, {"b": []}]`,
			[]any{[]any{int32(1), []any{"x", nil}}, nil, []any{nil, []any{}}}, `[{"a":1,"b":["x",null]},null,{"a":null,"b":[]}]`},
		{"MAP<STRING, ARRAY<INT>>", `{"k": [1, 2], "n": null}`, Map{{"k", []any{int32(1), int32(2)}}, {"n", nil}}, `{"k":[1,2],"n":null}`},
		{"STRUCT<m: MAP<STRING, INT>>", `{"m": {"z": 26}}`, []any{Map{{"z", int32(26)}}}, `{"m":{"z":26}}`},
	} {
		ty := ddlType(t, c.typ)
		got, err := FromJSON(ty, decodeJSON(t, c.in))
		if err != nil {
			t.Errorf("%s %s: %v", c.typ, c.in, err)
			continue
		}
		if !Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s %s: %#v, want %#v", c.typ, c.in, got, c.want)
		}
		if j := string(AppendJSON(nil, ty, got)); j != c.wantJSON {
			t.Errorf("%s %s: AppendJSON %s, want %s", c.typ, c.in, j, c.wantJSON)
		}
	}
	for _, c := range []struct{ typ, in, want string }{
		{"ARRAY<INT>", `{"a": 1}`, "an object is not an array for ARRAY<INT>"},
		{"ARRAY<INT>", `[1, "x"]`, `element 1: "x" is not a whole number for INT`},
		{"MAP<INT, STRING>", `{"seven": "x"}`, `key "seven": "seven" is not a whole number for INT`},
		{"MAP<STRING, INT>", `{"a": true}`, `value of key "a": a boolean is not a number for INT`},
		{"MAP<STRING, INT>", `[1]`, "an array is not an object for MAP<STRING, INT>"},
		{"ARRAY<ARRAY<INT>>", `[[1], [2, 3.5]]`, "element 1: element 1: 3.5 is not a whole number for INT"},
	} {
		if _, err := FromJSON(ddlType(t, c.typ), decodeJSON(t, c.in)); err == nil || err.Error() != c.want {
			t.Errorf("%s %s: error %v, want %q", c.typ, c.in, err, c.want)
		}
	}
}

// TestCompareNested: arrays order element by element, a prefix first; equal values have equal
// keys and different ones different keys.
func TestCompareNested(t *testing.T) {
	t.Parallel()
	a := []any{int32(1), int32(2)}
	b := []any{int32(1), int32(2), int32(0)}
	c := []any{int32(1), int32(3)}
	if Compare(a, b) != -1 || Compare(b, a) != 1 || Compare(b, c) != -1 || Compare(a, []any{int32(1), int32(2)}) != 0 {
		t.Error("array order")
	}
	if Compare([]any{nil}, []any{int32(0)}) != -1 {
		t.Error("a NULL element sorts first")
	}
	m1, m2 := Map{{"a", int64(1)}}, Map{{"a", int64(2)}}
	if Compare(m1, m2) != -1 || !Equal(m1, Map{{"a", int64(1)}}) || Equal(m1, Map{}) {
		t.Error("map order")
	}
	keys := map[string]bool{}
	for _, v := range []any{a, b, c, []any{}, m1, m2, Map{}, []any{[]any{}}, []any{nil}} {
		keys[string(AppendKey(nil, []any{v}))] = true
	}
	if len(keys) != 9 {
		t.Errorf("%d distinct keys for 9 distinct values", len(keys))
	}
	if string(AppendKey(nil, []any{Map{{"a", []any{"x"}}}})) != string(AppendKey(nil, []any{Map{{"a", []any{"x"}}}})) {
		t.Error("equal maps, different keys")
	}
}

// TestFromJSONMapDuplicateKeys: two key texts that convert to the same key make the MAP value
// not fit (a map holds each key once: Spark's spark.sql.mapKeyDedupPolicy EXCEPTION), naming
// both texts; distinct keys still convert.
func TestFromJSONMapDuplicateKeys(t *testing.T) {
	dec := func(s string) any {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		typ, in, err string
	}{
		{"MAP<INT, INT>", `{"7": 1, "07": 2}`, `keys "07" and "7" are the same INT key`},
		{"MAP<DECIMAL(10,2), INT>", `{"1.5": 1, "1.50": 2}`, `keys "1.5" and "1.50" are the same DECIMAL(10,2) key`},
		{"MAP<TIMESTAMP, INT>", `{"2024-01-31T10:00:00+02:00": 1, "2024-01-31T08:00:00Z": 2}`, `keys "2024-01-31T08:00:00Z" and "2024-01-31T10:00:00+02:00" are the same TIMESTAMP key`},
	} {
		s, err := ParseDDL("m " + c.typ)
		if err != nil {
			t.Fatal(err)
		}
		_, err = FromJSON(s.Fields[0].Type, dec(c.in))
		if err == nil || err.Error() != c.err {
			t.Errorf("%s %s: error %v, want %q", c.typ, c.in, err, c.err)
		}
	}
	s, _ := ParseDDL("m MAP<INT, INT>")
	got, err := FromJSON(s.Fields[0].Type, dec(`{"7": 1, "8": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Map{{Key: int32(7), Value: int32(1)}, {Key: int32(8), Value: int32(2)}}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// TestParseDDLStructCaseDuplicates: STRUCT field names, like column names, are case-insensitive
// in Delta, so two fields differing only in case are refused at the second one's position.
func TestParseDDLStructCaseDuplicates(t *testing.T) {
	_, err := ParseDDL("s STRUCT<Ab: INT, ab: INT>")
	want := `at character 19: field "ab" is declared twice in the STRUCT, as "Ab" and "ab" (Delta field names are case-insensitive)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestObjectInStringColumnKeepsItsCharacters: a JSON object or array in a STRING column is kept
// as JSON text whose strings hold <, > and & as they are, as Spark's JSON reader (Jackson's
// generator) writes them, not escaped as \u003c, \u003e and \u0026.
func TestObjectInStringColumnKeepsItsCharacters(t *testing.T) {
	str := Type{Kind: String}
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"h": "<a&b>"}, `{"h":"<a&b>"}`},
		{[]any{"<", "&", json.Number("1.50")}, `["<","&",1.50]`},
		{map[string]any{"q": "say \"hi\"\n"}, `{"q":"say \"hi\"\n"}`},
	}
	for _, c := range cases {
		got, err := FromJSON(str, c.in)
		if err != nil || got != c.want {
			t.Errorf("FromJSON(STRING, %v) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// TestFloatTextRoundsOnce: the text of a FLOAT value is rounded to float32 once, as Java's
// Float.parseFloat rounds it for Spark's JSON and CSV readers. 1.0000000596046448 lies just
// above the midpoint 1 + 2^-24 between the float32 values 1 and 1 + 2^-23, so it is 1 + 2^-23;
// rounding it to a float64 first lands on the midpoint itself, which ties to 1. The midpoint
// written exactly still ties to 1, a DOUBLE keeps its float64, and beyond FLOAT's range is an
// infinity.
func TestFloatTextRoundsOnce(t *testing.T) {
	float := Type{Kind: Double, Storage: StorageFloat}
	up := float64(float32(1) + float32(math.Pow(2, -23)))
	cases := []struct {
		t    Type
		in   any
		want float64
	}{
		{float, json.Number("1.0000000596046448"), up},
		{float, "1.000000059604644775390625000001", up},
		{float, json.Number("1.000000059604644775390625"), 1},
		{float, json.Number("3.5e38"), math.Inf(1)},
		{float, "-3.5e38", math.Inf(-1)},
		{Type{Kind: Double}, json.Number("1.0000000596046448"), 1.0000000596046448},
	}
	for _, c := range cases {
		got, err := FromJSON(c.t, c.in)
		if err != nil || got != c.want {
			t.Errorf("FromJSON(%s, %v) = %v, %v; want %v", c.t.DDL(), c.in, got, err, c.want)
		}
	}
}

// TestJSONValueText: an object or array given to a STRING column is kept as Spark's JSON reader
// writes it (Jackson copies the value's structure to a generator): members in their order, no
// white space between tokens, duplicate members kept, strings with their escapes resolved and
// <, > and & as they are, numbers as written. Text that is not one JSON value is not taken.
func TestJSONValueText(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{"{ \"b\" :\t[1, 2.50 ,{\"z\":\"<a&b>\",\"y\":null}] ,\n\"a\":true }", `{"b":[1,2.50,{"z":"<a&b>","y":null}],"a":true}`},
		{`["\u00e9", "x\"y", -0.5e3, false]`, `["é","x\"y",-0.5e3,false]`},
		{`{"x":1,"x":2}`, `{"x":1,"x":2}`},
		{`{}`, `{}`},
		{`[[],{}]`, `[[],{}]`},
	} {
		if got, ok := JSONValueText(c.raw); !ok || got != c.want {
			t.Errorf("JSONValueText(%q) = %q, %v; want %q", c.raw, got, ok, c.want)
		}
	}
	for _, raw := range []string{`{"a":1`, `{"a":1}{}`, `{"a":}`, `[1,]`} {
		if got, ok := JSONValueText(raw); ok {
			t.Errorf("JSONValueText(%q) = %q, true; want not ok", raw, got)
		}
	}
}
