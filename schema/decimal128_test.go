package schema

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

var (
	d3818 = Type{Kind: DecimalKind, Precision: 38, Scale: 18}
	d380  = Type{Kind: DecimalKind, Precision: 38, Scale: 0}
	d382  = Type{Kind: DecimalKind, Precision: 38, Scale: 2}
	d192  = Type{Kind: DecimalKind, Precision: 19, Scale: 2}
)

// bigOf returns the integer of decimal digits s.
func bigOf(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad integer %q", s)
	}
	return n
}

// TestParseDecimal128 checks the unscaled values of wide decimals against their digits: the
// fast path (plain digits), the exact path (exponents, HALF_UP rounding of extra fraction digits)
// and the limits ±(10^38-1), and that 39 digits do not fit.
func TestParseDecimal128(t *testing.T) {
	t.Parallel()
	nines := strings.Repeat("9", 38)
	for _, c := range []struct {
		in   string
		t    Type
		want string // the unscaled value
	}{
		{"12345678901234567890.123456789012345678", d3818, "12345678901234567890123456789012345678"},
		{"-0.000000000000000001", d3818, "-1"},
		{"0", d3818, "0"},
		{"-0", d3818, "0"},
		{nines, d380, nines},
		{"-" + nines, d380, "-" + nines},
		{"99999999999999999999.999999999999999999", d3818, nines},
		{"1e2", d382, "10000"},
		{"1.235", d382, "124"},   // HALF_UP, as ParseDecimal
		{"-1.235", d382, "-124"}, // away from zero
		{"0.0000000000000000005", d3818, "1"},
		{"-0.0000000000000000005", d3818, "-1"},
		{"0.0000000000000000004", d3818, "0"},
		{" 7 ", d192, "700"},
		{"+4.1", d192, "410"},
		{"12345678901234567.89", d192, "1234567890123456789"},
		{"9223372036854775807", d380, "9223372036854775807"},
		{"9223372036854775808", d380, "9223372036854775808"},
		{"-9223372036854775809", d380, "-9223372036854775809"},
		{"18446744073709551616", d380, "18446744073709551616"},
	} {
		got, err := ParseDecimal128(c.in, c.t)
		if err != nil || got.Big().Cmp(bigOf(t, c.want)) != 0 {
			t.Errorf("ParseDecimal128(%q, %s) = %v, %v; want %s", c.in, c.t.DDL(), got.Big(), err, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		t    Type
		want string
	}{
		{"1" + nines, d380, "1" + nines + " does not fit DECIMAL(38,0)"},
		{"100000000000000000000", d3818, "100000000000000000000 does not fit DECIMAL(38,18)"},
		{"99999999999999999999.9999999999999999995", d3818, "99999999999999999999.9999999999999999995 does not fit DECIMAL(38,18)"},
		{"1e38", d380, "1e38 does not fit DECIMAL(38,0)"},
		{"1e400", d380, "1e400 does not fit DECIMAL(38,0)"},
		{"abc", d380, `"abc" is not a number`},
	} {
		if _, err := ParseDecimal128(c.in, c.t); err == nil || err.Error() != c.want {
			t.Errorf("ParseDecimal128(%q) error %v, want %s", c.in, err, c.want)
		}
	}
}

// TestDecimal128Format checks the text of wide decimals with their scale.
func TestDecimal128Format(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		unscaled string
		scale    int
		want     string
	}{
		{"12345678901234567890123456789012345678", 18, "12345678901234567890.123456789012345678"},
		{"-1", 18, "-0.000000000000000001"},
		{"0", 18, "0.000000000000000000"},
		{"0", 0, "0"},
		{"-" + strings.Repeat("9", 38), 0, "-" + strings.Repeat("9", 38)},
		{"10000000000000000000", 0, "10000000000000000000"},
		{"10000000000000000000000000000000000000", 2, "100000000000000000000000000000000000.00"},
		{"-123", 2, "-1.23"},
		{"5", 2, "0.05"},
	} {
		d, ok := Decimal128FromBig(bigOf(t, c.unscaled))
		if !ok {
			t.Fatalf("Decimal128FromBig(%s) failed", c.unscaled)
		}
		if got := FormatDecimal128(d, c.scale); got != c.want {
			t.Errorf("FormatDecimal128(%s, %d) = %s, want %s", c.unscaled, c.scale, got, c.want)
		}
	}
}

// TestDecimal128Bytes checks the FIXED_LEN_BYTE_ARRAY form against two's complement as Spark
// writes it (16 bytes for DECIMAL(38,s), 9 for DECIMAL(19,s)) and its reading back.
func TestDecimal128Bytes(t *testing.T) {
	t.Parallel()
	for p, want := range map[int]int{1: 1, 2: 1, 3: 2, 9: 4, 10: 5, 18: 8, 19: 9, 20: 9, 21: 9, 22: 10, 38: 16} {
		if got := DecimalBytes(p); got != want {
			t.Errorf("DecimalBytes(%d) = %d, want %d", p, got, want)
		}
	}
	for _, c := range []struct {
		unscaled string
		n        int
		hex      string
	}{
		{"1", 16, "00000000000000000000000000000001"},
		{"-1", 16, "ffffffffffffffffffffffffffffffff"},
		{"-1", 9, "ffffffffffffffffff"},
		{"99999999999999999999999999999999999999", 16, "4b3b4ca85a86c47a098a223fffffffff"},
		{"-99999999999999999999999999999999999999", 16, "b4c4b357a5793b85f675ddc000000001"},
		{"9999999999999999999", 9, "008ac7230489e7ffff"},
		{"-9999999999999999999", 9, "ff7538dcfb76180001"},
	} {
		d, _ := Decimal128FromBig(bigOf(t, c.unscaled))
		got := d.AppendBytes(nil, c.n)
		if hex.EncodeToString(got) != c.hex {
			t.Errorf("AppendBytes(%s, %d) = %x, want %s", c.unscaled, c.n, got, c.hex)
		}
		back, ok := Decimal128FromBytes(got)
		if !ok || back != d {
			t.Errorf("Decimal128FromBytes(%x) = %v, %v; want %v", got, back.Big(), ok, c.unscaled)
		}
		// Sign extension to more bytes reads the same value.
		pad := byte(0)
		if d.Sign() < 0 {
			pad = 0xff
		}
		if back, ok := Decimal128FromBytes(append(bytes.Repeat([]byte{pad}, 4), got...)); !ok || back != d {
			t.Errorf("Decimal128FromBytes of %x sign-extended = %v, %v", got, back.Big(), ok)
		}
	}
	if _, ok := Decimal128FromBytes(append([]byte{1}, make([]byte, 16)...)); ok {
		t.Error("a 17-byte value beyond 128 bits was read")
	}
}

// TestDecimal128Order checks Cmp, Compare, AppendKey and == across the sign and the 64-bit
// boundary.
func TestDecimal128Order(t *testing.T) {
	t.Parallel()
	vals := []string{"-99999999999999999999999999999999999999", "-18446744073709551616", "-9223372036854775809", "-1", "0", "1", "9223372036854775808", "18446744073709551616", "99999999999999999999999999999999999999"}
	for i, a := range vals {
		da, _ := Decimal128FromBig(bigOf(t, a))
		for j, b := range vals {
			db, _ := Decimal128FromBig(bigOf(t, b))
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(da, db); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
			if keyEq := string(AppendKey(nil, []any{da})) == string(AppendKey(nil, []any{db})); keyEq != (i == j) || (da == db) != (i == j) {
				t.Errorf("key or == of %s and %s: %v, %v", a, b, keyEq, da == db)
			}
		}
	}
	if d := Decimal128FromInt64(-5); d.Big().Int64() != -5 {
		t.Errorf("Decimal128FromInt64(-5) = %v", d.Big())
	}
}

// TestDecimal128Rescale checks MulPow10 and QuoPow10 (overflow, exactness, truncation toward zero).
func TestDecimal128Rescale(t *testing.T) {
	t.Parallel()
	d, _ := Decimal128FromBig(bigOf(t, "-12345678901234567890"))
	m, ok := d.MulPow10(18)
	if !ok || m.Big().String() != "-12345678901234567890000000000000000000" {
		t.Errorf("MulPow10(18) = %v, %v", m.Big(), ok)
	}
	if _, ok := d.MulPow10(19); ok {
		t.Error("MulPow10(19) of a 20-digit value fit 38 digits")
	}
	q, exact := m.QuoPow10(18)
	if !exact || q != d {
		t.Errorf("QuoPow10(18) = %v, %v", q.Big(), exact)
	}
	q, exact = d.QuoPow10(2)
	if exact || q.Big().String() != "-123456789012345678" {
		t.Errorf("QuoPow10(2) = %v, %v", q.Big(), exact)
	}
}

// TestWideDecimalJSON checks FromJSON and AppendJSON of DECIMAL(38,18) values: exact digits both
// ways, and a bad value of 39 digits.
func TestWideDecimalJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"12345678901234567890.123456789012345678", "-0.000000000000000001", "99999999999999999999.999999999999999999", "-99999999999999999999.999999999999999999"} {
		v, err := FromJSON(d3818, json.Number(in))
		if err != nil {
			t.Fatalf("FromJSON(%s): %v", in, err)
		}
		if _, ok := v.(Decimal128); !ok {
			t.Fatalf("FromJSON(%s) gave a %T", in, v)
		}
		if got := string(AppendJSON(nil, d3818, v)); got != in {
			t.Errorf("AppendJSON(FromJSON(%s)) = %s", in, got)
		}
		if got := Text(d3818, v); got != in {
			t.Errorf("Text(FromJSON(%s)) = %s", in, got)
		}
	}
	if _, err := FromJSON(d3818, json.Number("123456789012345678901")); err == nil || err.Error() != "123456789012345678901 does not fit DECIMAL(38,18)" {
		t.Errorf("21 integer digits in DECIMAL(38,18): %v", err)
	}
	if v, err := FromJSON(Type{Kind: DecimalKind, Precision: 18, Scale: 2}, json.Number("1.5")); err != nil || v != Decimal(150) {
		t.Errorf("DECIMAL(18,2) value %v (%T), %v: want the int64 Decimal 150", v, v, err)
	}
}

// TestWideDecimalTypes checks DDL and Delta schemaString types of precision 19 to 38, and the
// errors for precision 39 and a scale above the precision.
func TestWideDecimalTypes(t *testing.T) {
	t.Parallel()
	s, err := ParseDDL("a DECIMAL(38,18), b DECIMAL(19, 0), c DECIMAL(38)")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.DDL(); got != "a DECIMAL(38,18), b DECIMAL(19,0), c DECIMAL(38,0)" {
		t.Errorf("DDL = %s", got)
	}
	if !s.Fields[0].Type.WideDecimal() || (Type{Kind: DecimalKind, Precision: 18}).WideDecimal() {
		t.Error("WideDecimal")
	}
	back, err := ParseSparkJSON(s.SparkJSON())
	if err != nil || !back.Equal(s) {
		t.Errorf("schemaString round trip: %v, %v", back.DDL(), err)
	}
	if _, err := ParseDDL("a DECIMAL(39,2)"); err == nil || !strings.Contains(err.Error(), "DECIMAL precision 39 is out of range 1..38") || !strings.Contains(err.Error(), "use DECIMAL(38,2)") {
		t.Errorf("DECIMAL(39,2): %v", err)
	}
	for _, n := range []string{"decimal(39,2)", "decimal(10,11)", "decimal(0,0)"} {
		js := `{"type":"struct","fields":[{"name":"a","type":"` + n + `","nullable":true,"metadata":{}}]}`
		if _, err := ParseSparkJSON(js); err == nil || !strings.Contains(err.Error(), "is not a valid decimal") {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestDecimal128AgainstBig checks the 128-bit arithmetic against math/big on random values of
// every digit count up to 38: text both ways, bytes both ways, order, and rescaling.
func TestDecimal128AgainstBig(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	ten := big.NewInt(10)
	random := func() *big.Int {
		digits := 1 + r.IntN(38)
		n := new(big.Int)
		for range digits {
			n.Mul(n, ten).Add(n, big.NewInt(int64(r.IntN(10))))
		}
		if r.IntN(2) == 0 {
			n.Neg(n)
		}
		return n
	}
	for range 20000 {
		a, b := random(), random()
		da, ok1 := Decimal128FromBig(a)
		db, ok2 := Decimal128FromBig(b)
		if !ok1 || !ok2 || da.Big().Cmp(a) != 0 {
			t.Fatalf("Decimal128FromBig(%v) = %v", a, da.Big())
		}
		if da.Cmp(db) != a.Cmp(b) || Compare(da, db) != a.Cmp(b) {
			t.Fatalf("Cmp(%v, %v) = %d", a, b, da.Cmp(db))
		}
		scale := r.IntN(39)
		typ := Type{Kind: DecimalKind, Precision: 38, Scale: scale}
		text := FormatDecimal128(da, scale)
		back, err := ParseDecimal128(text, typ)
		if err != nil || back != da {
			t.Fatalf("ParseDecimal128(FormatDecimal128(%v, %d) = %s) = %v, %v", a, scale, text, back.Big(), err)
		}
		if want := new(big.Rat).SetFrac(a, new(big.Int).Exp(ten, big.NewInt(int64(scale)), nil)); !ratEqualText(want, text) {
			t.Fatalf("FormatDecimal128(%v, %d) = %s", a, scale, text)
		}
		by := da.AppendBytes(nil, 16)
		if back, ok := Decimal128FromBytes(by); !ok || back != da {
			t.Fatalf("bytes of %v: %x", a, by)
		}
		k := r.IntN(39)
		p := new(big.Int).Mul(a, new(big.Int).Exp(ten, big.NewInt(int64(k)), nil))
		m, ok := da.MulPow10(k)
		fits := new(big.Int).Abs(p).Cmp(new(big.Int).Exp(ten, big.NewInt(38), nil)) < 0
		if ok != fits || ok && m.Big().Cmp(p) != 0 {
			t.Fatalf("MulPow10(%v, %d) = %v, %v", a, k, m.Big(), ok)
		}
		q, rem := new(big.Int).QuoRem(a, new(big.Int).Exp(ten, big.NewInt(int64(k)), nil), new(big.Int))
		dq, exact := da.QuoPow10(k)
		if dq.Big().Cmp(q) != 0 || exact != (rem.Sign() == 0) {
			t.Fatalf("QuoPow10(%v, %d) = %v, %v", a, k, dq.Big(), exact)
		}
	}
}

// ratEqualText reports whether decimal text s has the value r.
func ratEqualText(r *big.Rat, s string) bool {
	v, ok := new(big.Rat).SetString(s)
	return ok && v.Cmp(r) == 0
}

// BenchmarkParseDecimal compares the fast paths of a DECIMAL(18,2) and a DECIMAL(38,18) value.
func BenchmarkParseDecimal(b *testing.B) {
	b.Run("DECIMAL(18,2)", func(b *testing.B) {
		typ := Type{Kind: DecimalKind, Precision: 18, Scale: 2}
		for b.Loop() {
			if _, err := ParseDecimal("1234567890123456.78", typ); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DECIMAL(38,18)", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseDecimal128("12345678901234567890.123456789012345678", d3818); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Format DECIMAL(38,18)", func(b *testing.B) {
		d, _ := ParseDecimal128("12345678901234567890.123456789012345678", d3818)
		buf := make([]byte, 0, 64)
		for b.Loop() {
			buf = AppendDecimal128(buf[:0], d, 18)
		}
	})
}
