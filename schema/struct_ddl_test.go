package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseDDLStruct: STRUCT<name: TYPE, ...> (colon optional, nested, case-insensitive) parses
// and prints back as DDL; malformed STRUCTs are errors at their place.
func TestParseDDLStruct(t *testing.T) {
	s, err := ParseDDL("id BIGINT, a struct<x INT, `y z`: STRUCT<d: DECIMAL(5,2)>>")
	if err != nil {
		t.Fatal(err)
	}
	// A name that is not a plain identifier prints in backticks, so that the DDL parses back.
	if got := s.DDL(); got != "id BIGINT, a STRUCT<x: INT, `y z`: STRUCT<d: DECIMAL(5,2)>>" {
		t.Fatalf("DDL %s", got)
	}
	if back, err := ParseDDL(s.DDL()); err != nil || !back.Equal(s) {
		t.Fatalf("the DDL %s parses back as %s, error %v", s.DDL(), back.DDL(), err)
	}
	for ddl, want := range map[string]string{
		"a STRUCT":               "expected '<' after STRUCT",
		"a STRUCT<x INT":         "expected ',' or '>' in STRUCT",
		"a STRUCT<x INT, x INT>": `field "x" is declared twice`,
	} {
		if _, err := ParseDDL(ddl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", ddl, err, want)
		}
	}
}

// TestFromJSONStruct: an object fills a STRUCT by field name; anything else does not fit.
func TestFromJSONStruct(t *testing.T) {
	s, _ := ParseDDL("a STRUCT<x: INT, y: STRING>")
	ty := s.Fields[0].Type
	dec := json.NewDecoder(strings.NewReader(`{"x": 7, "z": true}`))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	got, err := FromJSON(ty, v)
	if err != nil || len(got.([]any)) != 2 || got.([]any)[0] != int32(7) || got.([]any)[1] != nil {
		t.Fatalf("got %v %v", got, err)
	}
	if _, err := FromJSON(ty, "x"); err == nil {
		t.Fatal("a string filled a STRUCT")
	}
	if Compare([]any{int32(1), "a"}, []any{int32(1), "b"}) != -1 {
		t.Fatal("STRUCT values compare field by field")
	}
}
