package schema

import (
	"strings"
	"testing"
)

// TestParseTableDDLCharVarchar: a table's schema takes CHAR(n) and VARCHAR(n) for a column (any
// case, spaces inside the brackets), printed back as Spark prints them; not inside a STRUCT,
// ARRAY or MAP, and not in a schema data is read with (ParseDDL), as Spark refuses them there.
func TestParseTableDDLCharVarchar(t *testing.T) {
	t.Parallel()
	s, err := ParseTableDDL("id BIGINT, name varchar( 10 ), code CHAR(3), empty VARCHAR(0)")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.DDL(), "id BIGINT, name VARCHAR(10), code CHAR(3), empty VARCHAR(0)"; got != want {
		t.Errorf("DDL %q, want %q", got, want)
	}
	name := s.Fields[1].Type
	if !name.IsCharVarchar() || name.Kind != String || name.Storage != StorageVarchar || name.Length != 10 {
		t.Errorf("name: %+v, want VARCHAR(10)", name)
	}
	if name.Equal(Type{Kind: String}) || name.Equal(Type{Kind: String, Storage: StorageVarchar, Length: 11}) || name.Equal(s.Fields[2].Type) {
		t.Error("VARCHAR(10) equals another type")
	}
	for _, c := range []struct {
		ddl  string
		want string
	}{
		{"s STRUCT<n: VARCHAR(5)>", "type VARCHAR(5) inside a STRUCT, ARRAY or MAP is not supported yet; declare it STRING"},
		{"a ARRAY<CHAR(2)>", "type CHAR(2) inside a STRUCT, ARRAY or MAP is not supported yet"},
		{"m MAP<VARCHAR(2), INT>", "type VARCHAR(2) inside"},
		{"n VARCHAR(2147483648)", "VARCHAR length 2147483648 is above 2147483647"},
		{"n VARCHAR", "expected '(' after VARCHAR"},
	} {
		if _, err := ParseTableDDL(c.ddl); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTableDDL(%q): %v, want %q", c.ddl, err, c.want)
		}
	}
	if _, err := ParseDDL("name VARCHAR(10)"); err == nil || !strings.Contains(err.Error(), "char/varchar type can only be used in the table schema") {
		t.Errorf("ParseDDL: %v, want Spark's refusal", err)
	}
}

// TestCharVarcharSchemaString: a CHAR or VARCHAR column is stored as Spark stores it, type string
// with its own type under __CHAR_VARCHAR_TYPE_STRING in the field's metadata, and a schemaString
// so written (by Spark, or by us) reads back as that type; CharVarcharAsString gives the STRING
// columns a read of the table has.
func TestCharVarcharSchemaString(t *testing.T) {
	t.Parallel()
	s, err := ParseTableDDL("id BIGINT, name VARCHAR(10), code CHAR(3)")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"name","type":"string","nullable":true,"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"varchar(10)"}},` +
		`{"name":"code","type":"string","nullable":true,"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"char(3)"}}]}`
	if got := s.SparkJSON(); got != want {
		t.Errorf("schemaString\n got %s\nwant %s", got, want)
	}
	back, err := ParseSparkJSON(want)
	if err != nil || !back.Equal(s) {
		t.Errorf("read back: %s, %v; want %s", back.DDL(), err, s.DDL())
	}
	// As Spark writes it, other metadata beside it (a column comment).
	spark := `{"type":"struct","fields":[{"name":"c","type":"string","nullable":true,"metadata":{"comment":"x","__CHAR_VARCHAR_TYPE_STRING":"char(5)"}},` +
		`{"name":"a","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"array<varchar(2)>"}}]}`
	got, err := ParseSparkJSON(spark)
	if err != nil {
		t.Fatal(err)
	}
	if ddl := got.DDL(); ddl != "c CHAR(5), a ARRAY<STRING>" {
		t.Errorf("Spark's schemaString reads as %s, want c CHAR(5), a ARRAY<STRING>", ddl)
	}
	if plain := s.CharVarcharAsString(); plain.DDL() != "id BIGINT, name STRING, code STRING" || s.DDL() != "id BIGINT, name VARCHAR(10), code CHAR(3)" {
		t.Errorf("CharVarcharAsString %s (of %s)", plain.DDL(), s.DDL())
	}
}

// TestFitCharVarchar: a value written to a CHAR(n) or VARCHAR(n) column, as Spark writes it
// (CharVarcharCodegenUtils): lengths in characters; a longer value loses trailing spaces down to
// n, and fails if still longer ("Exceeds char/varchar type length limitation"); CHAR pads with
// spaces to n.
func TestFitCharVarchar(t *testing.T) {
	t.Parallel()
	varchar5 := Type{Kind: String, Storage: StorageVarchar, Length: 5}
	char5 := Type{Kind: String, Storage: StorageChar, Length: 5}
	for _, c := range []struct {
		t    Type
		in   string
		want string
		ok   bool
	}{
		{varchar5, "abc", "abc", true},
		{varchar5, "abcde", "abcde", true},
		{varchar5, "abc  ", "abc  ", true},                       // trailing spaces that fit are kept
		{varchar5, "a" + strings.Repeat(" ", 10), "a    ", true}, // trimmed down to 5, no further
		{varchar5, "abcdef", "", false},
		{varchar5, "abcdef ", "", false},
		{varchar5, " abcde", "", false},    // a leading space counts
		{varchar5, "ééééé", "ééééé", true}, // 5 characters, 10 bytes
		{varchar5, "", "", true},
		{char5, "a", "a    ", true},
		{char5, "", "     ", true},
		{char5, "abcde", "abcde", true},
		{char5, "a" + strings.Repeat(" ", 10), "a    ", true},
		{char5, "abcdef", "", false},
		{char5, "日本", "日本   ", true},
		{Type{Kind: String}, "abcdefgh", "abcdefgh", true},
	} {
		got, ok := c.t.FitCharVarchar(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s %q: %q, %v; want %q, %v", c.t.DDL(), c.in, got, ok, c.want, c.ok)
		}
	}
}
