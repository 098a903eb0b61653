package expectations

import (
	"testing"

	"tributary/schema"
)

// TestNullStructField: a field of a NULL STRUCT is NULL, as Spark's GetStructField gives it (a
// NULL child of a NULL struct), at any depth and inside an array's element: `addr.zip == nil`
// holds when addr is NULL, and a comparison with such a field is not true, rather than an
// evaluation error that fails every row whose struct is NULL.
func TestNullStructField(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id INT, addr STRUCT<zip: STRING, geo: STRUCT<lat: DOUBLE>>, pts ARRAY<STRUCT<x: BIGINT>>")
	if err != nil {
		t.Fatal(err)
	}
	nullAddr := []any{int32(3), nil, nil}
	nullGeo := []any{int32(4), []any{"123", nil}, []any{nil}}
	for _, c := range []struct {
		code string
		row  []any
		want bool
	}{
		{`addr.zip == nil or addr.zip matches "^[0-9]+$"`, nullAddr, true},
		{`addr.zip == nil`, nullAddr, true},
		{`addr.zip != nil`, nullAddr, false},
		{`addr.geo.lat == nil`, nullAddr, true},
		{`addr.geo.lat == nil`, nullGeo, true},
		{`addr.geo.lat > 1.5`, nullGeo, false},
		{`addr.zip == "123" and addr.geo.lat == nil`, nullGeo, true},
		{`all(pts, {.x == nil})`, nullGeo, true},
		{`addr.zip matches "^[0-9]+$"`, []any{int32(1), []any{"123", nil}, nil}, true},
	} {
		p, err := Compile(c.code, s)
		if err != nil {
			t.Errorf("%s: %v", c.code, err)
			continue
		}
		if got, err := p.Eval(c.row); got != c.want || err != nil {
			t.Errorf("%s on %v = %v, %v; want %v", c.code, c.row, got, err, c.want)
		}
	}
}
