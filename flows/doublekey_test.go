package flows

import (
	"math"
	"testing"
)

// TestCanonicalDouble: -0.0 becomes 0.0 and any NaN the one NaN, inside STRUCT and ARRAY values
// too, which are copied rather than changed; other values are left as they are.
func TestCanonicalDouble(t *testing.T) {
	t.Parallel()
	negZero := math.Copysign(0, -1)
	otherNaN := math.Float64frombits(0x7ff8000000000abc)
	cases := []struct {
		name    string
		in      any
		bits    uint64 // the bits of the double out (of the first field, for a STRUCT)
		changed bool
	}{
		{"zero", 0.0, 0, false},
		{"negative zero", negZero, 0, true},
		{"NaN", math.NaN(), math.Float64bits(math.NaN()), false},
		{"other NaN", otherNaN, math.Float64bits(math.NaN()), true},
		{"struct", []any{negZero, "a"}, 0, true},
		{"struct kept", []any{1.5, "a"}, math.Float64bits(1.5), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, changed := canonicalDouble(c.in)
			d := out
			if s, ok := out.([]any); ok {
				d = s[0]
			}
			if changed != c.changed || math.Float64bits(d.(float64)) != c.bits {
				t.Errorf("canonicalDouble(%v) = %v (bits %x), changed %v; want bits %x, changed %v", c.in, out, math.Float64bits(d.(float64)), changed, c.bits, c.changed)
			}
		})
	}
	in := []any{negZero, "a"}
	canonicalDouble(in)
	if !math.Signbit(in[0].(float64)) {
		t.Errorf("the STRUCT given was changed in place: %v", in)
	}
	if out, changed := canonicalDouble("x"); out != "x" || changed {
		t.Errorf("canonicalDouble(\"x\") = %v, %v", out, changed)
	}
}
