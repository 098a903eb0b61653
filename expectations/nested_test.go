package expectations

import (
	"strings"
	"testing"

	"tributary/schema"
)

// TestNestedColumns: expressions see an ARRAY as a list and a MAP as a map from its keys' text.
func TestNestedColumns(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("tags ARRAY<STRING>, attrs MAP<INT, DECIMAL(5,2)>, pts ARRAY<STRUCT<x: BIGINT>>")
	if err != nil {
		t.Fatal(err)
	}
	row := []any{
		[]any{"a", nil},
		schema.Map{{Key: int32(7), Value: schema.Decimal(150)}},
		[]any{[]any{int64(3)}},
	}
	for code, want := range map[string]bool{
		`len(tags) == 2`:        true,
		`"a" in tags`:           true,
		`"b" in tags`:           false,
		`attrs["7"] == 1.5`:     true,
		`attrs["8"] == nil`:     true,
		`len(attrs) == 1`:       true,
		`pts[0].x == 3`:         true,
		`all(pts, {.x > 2})`:    true,
		`len(tags) == 0`:        false,
		`any(tags, {# == nil})`: true,
	} {
		p, err := Compile(code, s)
		if err != nil {
			t.Errorf("%s: %v", code, err)
			continue
		}
		if got, err := p.Eval(row); got != want || err != nil {
			t.Errorf("%s = %v, %v; want %v", code, got, err, want)
		}
	}
	p, err := Compile(`len(tags) > 0`, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Eval([]any{nil, nil, nil}); got {
		t.Error("a NULL array passed len(tags) > 0")
	}
}

// TestNestedFieldNames: a STRUCT's fields are known to the compiler, at any depth and inside
// arrays, so a misspelt field is a compile error naming it rather than a value that is always
// nil (every row would then fail the expectation); a MAP takes any key text.
func TestNestedFieldNames(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("addr STRUCT<city: STRING, geo: STRUCT<lat: DOUBLE>>, pts ARRAY<STRUCT<x: BIGINT>>, attrs MAP<STRING, INT>")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{`addr.cty == "x"`, `addr.geo.lon > 1`, `all(pts, {.y > 2})`} {
		if _, err := Compile(code, s); err == nil {
			t.Errorf("%s compiled", code)
		}
	}
	_, err = Compile(`addr.cty == "x"`, s)
	if err == nil || !strings.Contains(err.Error(), "cty") {
		t.Errorf("error %v does not name the field cty", err)
	}
	row := []any{[]any{"Oslo", []any{59.9}}, []any{[]any{int64(3)}}, schema.Map{{Key: "any key", Value: int32(1)}}}
	for _, code := range []string{`addr.city == "Oslo"`, `addr.geo.lat > 59`, `all(pts, {.x > 2})`, `attrs["any key"] == 1`, `attrs.other == nil`} {
		p, err := Compile(code, s)
		if err != nil {
			t.Errorf("%s: %v", code, err)
			continue
		}
		if got, err := p.Eval(row); !got || err != nil {
			t.Errorf("%s = %v, %v; want true", code, got, err)
		}
	}
}
