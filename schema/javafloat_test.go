package schema

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestAppendJavaFloat: the texts of Java's Double.toString and Float.toString (JDK 19 and later,
// the shortest digits; the cases of their Javadoc's rules): plain between 10^-3 and 10^7 with a
// digit after the point, else computerized scientific notation.
func TestAppendJavaFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		x    float64
		bits int
		want string
	}{
		{2, 64, "2.0"},
		{-2, 64, "-2.0"},
		{0.1, 64, "0.1"},
		{1.5, 64, "1.5"},
		{0.001, 64, "0.001"},
		{0.0001, 64, "1.0E-4"},
		{0.00012345, 64, "1.2345E-4"},
		{1234567.5, 64, "1234567.5"},
		{9999999, 64, "9999999.0"},
		{1e7, 64, "1.0E7"},
		{123456789, 64, "1.23456789E8"},
		{1e20, 64, "1.0E20"},
		{-1.5e300, 64, "-1.5E300"},
		{5e-324, 64, "4.9E-324"},
		{math.MaxFloat64, 64, "1.7976931348623157E308"},
		{0, 64, "0.0"},
		{math.Copysign(0, -1), 64, "-0.0"},
		{math.NaN(), 64, "NaN"},
		{math.Inf(1), 64, "Infinity"},
		{math.Inf(-1), 64, "-Infinity"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(1e10)), 32, "1.0E10"},
		{float64(float32(3.4028235e38)), 32, "3.4028235E38"},
		{float64(float32(16777216)), 32, "1.6777216E7"},
	} {
		if got := string(AppendJavaFloat(nil, tc.x, tc.bits)); got != tc.want {
			t.Errorf("AppendJavaFloat(%v, %d) = %s, want %s", tc.x, tc.bits, got, tc.want)
		}
	}
	// Every text reads back as its value.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		x := math.Float64frombits(r.Uint64())
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		text := string(AppendJavaFloat(nil, x, 64))
		if back, err := strconv.ParseFloat(text, 64); err != nil || back != x || !strings.Contains(text, ".") {
			t.Fatalf("AppendJavaFloat(%v) = %s, which reads back as %v, %v", x, text, back, err)
		}
	}
}

// TestOutputForms: what the CLI prints writes a DOUBLE as Java does, nested ones too, while
// AppendJSON and Text keep Go's shortest form, which the CDC state and rescued data hold.
func TestOutputForms(t *testing.T) {
	t.Parallel()
	dbl := Type{Kind: Double}
	st := Type{Kind: StructKind, Struct: &Schema{Fields: []Field{{Name: "d", Type: dbl}}}}
	arr := Type{Kind: ArrayKind, Elem: &dbl}
	for _, tc := range []struct {
		typ               Type
		v                 any
		json, text, plain string
	}{
		{dbl, 2.0, "2.0", "2.0", "2"},
		{dbl, 1e20, "1.0E20", "1.0E20", "1e+20"},
		{dbl, math.Inf(1), `"Infinity"`, "Infinity", `"Infinity"`},
		{st, []any{3.0}, `{"d":3.0}`, `{"d":3.0}`, `{"d":3}`},
		{arr, []any{1.0, nil, 0.5}, "[1.0,null,0.5]", "[1.0,null,0.5]", "[1,null,0.5]"},
	} {
		if got := string(AppendOutputJSON(nil, tc.typ, tc.v)); got != tc.json {
			t.Errorf("AppendOutputJSON(%v) = %s, want %s", tc.v, got, tc.json)
		}
		if got := OutputText(tc.typ, tc.v); got != tc.text {
			t.Errorf("OutputText(%v) = %s, want %s", tc.v, got, tc.text)
		}
		if got := string(AppendJSON(nil, tc.typ, tc.v)); got != tc.plain {
			t.Errorf("AppendJSON(%v) = %s, want %s", tc.v, got, tc.plain)
		}
	}
}
