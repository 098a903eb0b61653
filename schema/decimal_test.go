package schema

import "testing"

// TestParseDecimal covers the fast path (plain digits) and the exact path (exponents, extra
// fraction digits rounded HALF_UP, signs, spaces) with the unscaled values they must give.
func TestParseDecimal(t *testing.T) {
	t.Parallel()
	d102 := Type{Kind: DecimalKind, Precision: 10, Scale: 2}
	d180 := Type{Kind: DecimalKind, Precision: 18, Scale: 0}
	for _, c := range []struct {
		in   string
		t    Type
		want Decimal
	}{
		{"25.5", d102, 2550},
		{"-3", d102, -300},
		{"0.07", d102, 7},
		{"-0.5", d102, -50},
		{"12345678.99", d102, 1234567899},
		{"1e2", d102, 10000},
		{"1.235", d102, 124},
		{"-1.235", d102, -124},
		{"+4.1", d102, 410},
		{" 7 ", d102, 700},
		{"999999999999999999", d180, 999999999999999999},
		{"-999999999999999999", d180, -999999999999999999},
	} {
		got, err := ParseDecimal(c.in, c.t)
		if err != nil || got != c.want {
			t.Errorf("ParseDecimal(%q, %s) = %d, %v; want %d", c.in, c.t.DDL(), got, err, c.want)
		}
	}
	for _, c := range []struct {
		in, want string
	}{
		{"123456789", "123456789 does not fit DECIMAL(10,2)"},
		{"-100000000.00", "-100000000.00 does not fit DECIMAL(10,2)"},
		{"abc", `"abc" is not a number`},
		{"-", `"-" is not a number`},
	} {
		if _, err := ParseDecimal(c.in, d102); err == nil || err.Error() != c.want {
			t.Errorf("ParseDecimal(%q) error %v, want %s", c.in, err, c.want)
		}
	}
}

// TestParseDecimalSyntax: DECIMAL text is a decimal number as Java's BigDecimal(String) reads it
// (sign, digits, point, exponent), as Spark's readers parse it; what big.Rat takes besides (a
// fraction, hexadecimal, binary, underscores) is not a number, for both value types.
func TestParseDecimalSyntax(t *testing.T) {
	t.Parallel()
	narrow := Type{Kind: DecimalKind, Precision: 12, Scale: 2}
	wide := Type{Kind: DecimalKind, Precision: 38, Scale: 2}
	for _, s := range []string{"1/3", "0x10", "0x1p4", "0b101", "0o17", "1_000", "1e", ".", "+", "--1", "1.2.3", "Infinity", "NaN"} {
		if v, err := ParseDecimal(s, narrow); err == nil {
			t.Errorf("ParseDecimal(%q) = %v, want an error", s, v)
		}
		if v, err := ParseDecimal128(s, wide); err == nil {
			t.Errorf("ParseDecimal128(%q) = %v, want an error", s, v)
		}
	}
	for s, want := range map[string]Decimal{"+5": 500, ".5": 50, "5.": 500, "1E+2": 10000, "-1.005": -101, "2.5e-1": 25} {
		if v, err := ParseDecimal(s, narrow); err != nil || v != want {
			t.Errorf("ParseDecimal(%q) = %v, %v; want %d", s, v, err, want)
		}
		w, err := ParseDecimal128(s, wide)
		if err != nil || FormatDecimal128(w, 2) != FormatDecimal(want, 2) {
			t.Errorf("ParseDecimal128(%q) = %v, %v; want %s", s, w, err, FormatDecimal(want, 2))
		}
	}
}

// TestPlainDecimalAgreesWithExact: where the fast path takes a text (parsePlainDecimal ok), its
// value is the exact path's (parseDecimalBig, BigDecimal's reading); texts it must leave to the
// exact path (a second point, a bare point at either end, a sign alone, too many digits or
// fraction digits, an exponent, spaces) it does not take.
func TestPlainDecimalAgreesWithExact(t *testing.T) {
	t.Parallel()
	taken := []string{"0", "-0", "7", "25.5", "0.07", "-0.5", "3869.57", "0012.50", "-12345678.99", "9999999999999999.99"}
	left := []string{"", "-", ".", ".5", "5.", "-.5", "1.2.3", "1..2", "1.235", "1e2", "+4.1", " 7", "7 ", "1,5",
		"99999999999999999.00", "1234567890123456789", "12a", "--1", "0x10"}
	for _, s := range taken {
		got, ok := parsePlainDecimal(s, 2)
		want, err := parseDecimalBig(s, 2)
		if !ok || err != nil || want.Int64() != got {
			t.Errorf("parsePlainDecimal(%q, 2) = %d, %v; the exact path gives %v, %v", s, got, ok, want, err)
		}
	}
	for _, s := range left {
		if got, ok := parsePlainDecimal(s, 2); ok {
			t.Errorf("parsePlainDecimal(%q, 2) = %d, took a text it must leave to the exact path", s, got)
		}
	}
}
