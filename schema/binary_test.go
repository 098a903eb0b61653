package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseDDLBinary: BINARY (any case) is Spark's BinaryType, a String kind with Storage binary,
// at the top level and nested, and prints back as BINARY in DDL and as binary in a Delta
// schemaString (Delta PROTOCOL.md, "Primitive Types").
func TestParseDDLBinary(t *testing.T) {
	t.Parallel()
	s, err := ParseDDL("id BIGINT, payload BINARY, parts ARRAY<binary>, m MAP<STRING, Binary>")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Fields[1].Type.IsBinary() || !s.Fields[1].Type.Equal(Binary) || s.Fields[1].Type.Kind != String {
		t.Errorf("payload: %+v, want Binary", s.Fields[1].Type)
	}
	if got, want := s.DDL(), "id BIGINT, payload BINARY, parts ARRAY<BINARY>, m MAP<STRING, BINARY>"; got != want {
		t.Errorf("DDL %q, want %q", got, want)
	}
	want := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"payload","type":"binary","nullable":true,"metadata":{}},` +
		`{"name":"parts","type":{"type":"array","elementType":"binary","containsNull":true},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":"binary","valueContainsNull":true},"nullable":true,"metadata":{}}]}`
	if got := s.SparkJSON(); got != want {
		t.Errorf("schemaString\n got %s\nwant %s", got, want)
	}
	back, err := ParseSparkJSON(want)
	if err != nil || !back.Equal(s) {
		t.Errorf("ParseSparkJSON: %v, %v; want %s", back.DDL(), err, s.DDL())
	}
	if Binary.Equal(Type{Kind: String}) {
		t.Error("BINARY equals STRING")
	}
}

// TestFromJSONBinary: a JSON string fills a BINARY column with its base64-decoded bytes, as Spark's
// JSON reader reads a BinaryType value (JacksonParser: getBinaryValue, Jackson's default variant
// MIME-NO-LINEFEEDS, padding required); anything else does not fit.
func TestFromJSONBinary(t *testing.T) {
	t.Parallel()
	ok := []struct{ in, want string }{
		{"AQL/", "\x01\x02\xff"},
		{"AQI=", "\x01\x02"},
		{"AQ==", "\x01"},
		{"", ""},
		{"aGVsbG8=", "hello"},
		{"+/+/", "\xfb\xff\xbf"},
		{" AQL/ AQ==", "\x01\x02\xff\x01"}, // white space before a group is skipped
		{"AQ==AQ==", "\x01\x01"},           // Jackson decodes group after group
		{"AR==", "\x01"},                   // the bits past the last byte are dropped
	}
	for _, c := range ok {
		got, err := FromJSON(Binary, c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := []struct {
		in   any
		want string
	}{
		{"AQI", "ends without its '=' padding"},
		{"AQ", "ends without its '=' padding"},
		{"AQL/A", "ends without its '=' padding"},
		{"AQ=", "ends in a group of 3 characters"},
		{"AQ-_", `"-" at character 3`},        // the URL-safe alphabet is not base64's
		{"A===", `"=" at character 2`},        // padding in the second place
		{"AQ L/", `" " at character 3`},       // white space inside a group
		{"hello world", `" " at character 6`}, // text that is not base64
		{json.Number("12"), "a number is not a base64 string for BINARY"},
		{true, "a boolean is not a base64 string for BINARY"},
		{[]any{json.Number("1")}, "an array is not a base64 string for BINARY"},
	}
	for _, c := range bad {
		got, err := FromJSON(Binary, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %q, %v; want an error with %q", c.in, got, err, c.want)
		}
	}
	if v, err := FromJSON(Binary, nil); v != nil || err != nil {
		t.Errorf("null: %v, %v; want NULL", v, err)
	}
	st, _ := ParseDDL("s STRUCT<b: BINARY>, a ARRAY<BINARY>")
	if v, err := FromJSON(st.Fields[0].Type, map[string]any{"b": "AQL/"}); err != nil || v.([]any)[0] != "\x01\x02\xff" {
		t.Errorf("STRUCT<b: BINARY>: %q, %v", v, err)
	}
	if _, err := FromJSON(st.Fields[1].Type, []any{"AQL/", "AQI"}); err == nil || !strings.Contains(err.Error(), "element 1") {
		t.Errorf("ARRAY<BINARY> with a bad element: %v", err)
	}
}

// TestBinaryText: jsonl and csv write a BINARY value as base64 (Spark's to_json), a table shows it
// as Spark's Dataset.show does, "[01 02 FF]".
func TestBinaryText(t *testing.T) {
	t.Parallel()
	v := "\x01\x02\xff"
	if got := string(AppendJSON(nil, Binary, v)); got != `"AQL/"` {
		t.Errorf("AppendJSON %s, want \"AQL/\"", got)
	}
	if got := Text(Binary, v); got != "AQL/" {
		t.Errorf("Text %s, want AQL/", got)
	}
	for _, c := range []struct {
		v    any
		want string
	}{{v, "[01 02 FF]"}, {"", "[]"}, {"\x00\xab", "[00 AB]"}, {nil, "NULL"}} {
		if got := Show(Binary, c.v); got != c.want {
			t.Errorf("Show(%q) %s, want %s", c.v, got, c.want)
		}
	}
	if got := Show(Type{Kind: String}, "AQL/"); got != "AQL/" {
		t.Errorf("Show of a STRING %s, want it as it is", got)
	}
	// What AppendJSON writes, FromJSON reads back (a binary column kept as JSON, as CDC state is).
	var x any
	if err := json.Unmarshal(AppendJSON(nil, Binary, v), &x); err != nil {
		t.Fatal(err)
	}
	if back, err := FromJSON(Binary, x); err != nil || back != v {
		t.Errorf("round trip: %q, %v", back, err)
	}
}

// TestDDLRefusedTypes: CHAR(n) and VARCHAR(n) are refused as Spark refuses them in a read schema,
// INTERVAL and VOID as a table cannot hold them; each error says what to write instead, at the
// type's offset.
func TestDDLRefusedTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ddl    string
		offset int
		want   []string
	}{
		{"id INT, name VARCHAR(10)", 13, []string{"type VARCHAR(10) is not supported", "char/varchar type can only be used in the table schema", "declare the column STRING"}},
		{"code char( 3 )", 5, []string{"type CHAR(3) is not supported", "declare the column STRING"}},
		{"s STRUCT<n: VARCHAR(5)>", 12, []string{"type VARCHAR(5) is not supported"}},
		{"name VARCHAR", 12, []string{"expected '(' after VARCHAR: VARCHAR(length)"}},
		{"name VARCHAR(x)", 13, []string{"expected a number"}},
		{"name CHAR(3", 11, []string{"expected ')' to close CHAR(length)"}},
		{"d INTERVAL DAY", 2, []string{"type INTERVAL is not supported", "Cannot use interval type in the table schema", "BIGINT", "STRING"}},
		{"n VOID", 2, []string{"type VOID is not supported", "leave the column out", "STRING"}},
	}
	for _, c := range cases {
		_, err := ParseDDL(c.ddl)
		de, ok := err.(*DDLError)
		if !ok {
			t.Errorf("%q: %v, want a *DDLError", c.ddl, err)
			continue
		}
		if de.Offset != c.offset {
			t.Errorf("%q: offset %d, want %d (%v)", c.ddl, de.Offset, c.offset, err)
		}
		for _, w := range c.want {
			if !strings.Contains(de.Msg, w) {
				t.Errorf("%q: %q lacks %q", c.ddl, de.Msg, w)
			}
		}
	}
}
