package flows

import (
	"math"

	"tributary/schema"
)

// doubleKeyCols returns the positions in s of the columns of idx whose type is a DOUBLE or holds
// one (a STRUCT field, an ARRAY element): the key columns whose values canonicalDouble rewrites.
func doubleKeyCols(s schema.Schema, idx []int) []int {
	var out []int
	for _, j := range idx {
		if j >= 0 && holdsDouble(s.Fields[j].Type) {
			out = append(out, j)
		}
	}
	return out
}

// holdsDouble reports whether t is a DOUBLE or has one inside.
func holdsDouble(t schema.Type) bool {
	switch t.Kind {
	case schema.Double:
		return true
	case schema.ArrayKind:
		return t.Elem != nil && holdsDouble(*t.Elem)
	case schema.StructKind:
		for _, f := range t.Struct.Fields {
			if holdsDouble(f.Type) {
				return true
			}
		}
	}
	return false
}

// canonicalDouble returns v, a key value, with each DOUBLE in it made canonical: -0.0 becomes
// 0.0 and every NaN one NaN, as Spark normalizes floating-point join and grouping keys. Keys are
// told apart by their encoding (appendValues, a double by its bits), whereas -0.0 equals 0.0,
// and NaN equals NaN, as Spark SQL and schema.Compare compare them: without this, such a key
// would be two keys, and an SCD type 1 target two rows for it. changed reports whether v
// needed a change; a STRUCT or ARRAY that does is copied, never changed in place.
func canonicalDouble(v any) (out any, changed bool) {
	switch x := v.(type) {
	case float64:
		if x == 0 && math.Signbit(x) {
			return 0.0, true
		}
		if math.IsNaN(x) && math.Float64bits(x) != math.Float64bits(math.NaN()) {
			return math.NaN(), true
		}
	case []any:
		var c []any
		for i, e := range x {
			if ce, ok := canonicalDouble(e); ok {
				if c == nil {
					c = append([]any(nil), x...)
				}
				c[i] = ce
			}
		}
		if c != nil {
			return c, true
		}
	}
	return v, false
}
