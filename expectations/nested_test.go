package expectations

import (
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
