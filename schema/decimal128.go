package schema

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
)

// MaxLongDecimalPrecision is the largest DECIMAL precision whose values are a Decimal (an
// unscaled int64), Spark's Decimal.MAX_LONG_DIGITS; a wider DECIMAL's values are a Decimal128.
// Parquet stores the narrower decimals as INT32 (precision up to 9) or INT64 and the wider ones
// as FIXED_LEN_BYTE_ARRAY (Parquet LogicalTypes.md, DECIMAL; Spark's ParquetWriteSupport).
const MaxLongDecimalPrecision = 18

// Decimal128 is the value of a DECIMAL(p,s) column with p above MaxLongDecimalPrecision (19 to
// 38 digits): the unscaled integer (12345678901234567890.12 in DECIMAL(38,2) is
// 1234567890123456789012) as a 128-bit two's complement number, Hi its upper 64 bits (they carry
// the sign) and Lo its lower 64 bits. Every value of a column is exact, |unscaled| < 10^p.
//
// Equal values have equal fields, so == compares two values and a Decimal128 is a valid map key;
// Cmp orders them numerically. The zero Decimal128 is 0.
type Decimal128 struct {
	Hi int64
	Lo uint64
}

// Decimal128FromInt64 returns v as a Decimal128 (the same unscaled value).
func Decimal128FromInt64(v int64) Decimal128 { return Decimal128{Hi: v >> 63, Lo: uint64(v)} }

// Sign returns -1, 0 or +1 as d is negative, zero or positive.
func (d Decimal128) Sign() int {
	switch {
	case d.Hi < 0:
		return -1
	case d.Hi == 0 && d.Lo == 0:
		return 0
	}
	return 1
}

// Cmp compares the unscaled values numerically: -1, 0 or +1.
func (d Decimal128) Cmp(o Decimal128) int {
	switch {
	case d.Hi < o.Hi:
		return -1
	case d.Hi > o.Hi:
		return 1
	case d.Lo < o.Lo:
		return -1
	case d.Lo > o.Lo:
		return 1
	}
	return 0
}

// Neg returns -d (two's complement; -(-2^127) is itself, a value no DECIMAL holds).
func (d Decimal128) Neg() Decimal128 {
	lo, borrow := bits.Sub64(0, d.Lo, 0)
	hi, _ := bits.Sub64(0, uint64(d.Hi), borrow)
	return Decimal128{Hi: int64(hi), Lo: lo}
}

// Int64 returns d as an int64 when it fits one.
func (d Decimal128) Int64() (int64, bool) {
	v := int64(d.Lo)
	return v, d.Hi == v>>63
}

// Big returns the unscaled value as a big.Int.
func (d Decimal128) Big() *big.Int {
	u := d.abs()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.hi)
	binary.BigEndian.PutUint64(b[8:], u.lo)
	n := new(big.Int).SetBytes(b[:])
	if d.Hi < 0 {
		n.Neg(n)
	}
	return n
}

// Decimal128FromBig returns n as a Decimal128; ok is false when n is outside the 128-bit two's
// complement range.
func Decimal128FromBig(n *big.Int) (d Decimal128, ok bool) {
	if n.BitLen() > 127 {
		return Decimal128{}, false
	}
	var b [16]byte
	new(big.Int).Abs(n).FillBytes(b[:])
	d = Decimal128{Hi: int64(binary.BigEndian.Uint64(b[:8])), Lo: binary.BigEndian.Uint64(b[8:])}
	if n.Sign() < 0 {
		d = d.Neg()
	}
	return d, true
}

// Decimal128FromBytes decodes a big-endian two's complement integer of any length, the
// unscaled value of a Parquet FIXED_LEN_BYTE_ARRAY or BINARY decimal (Parquet LogicalTypes.md,
// DECIMAL); ok is false when it does not fit in 128 bits. No bytes is 0.
func Decimal128FromBytes(b []byte) (d Decimal128, ok bool) {
	if len(b) == 0 {
		return Decimal128{}, true
	}
	neg := b[0]&0x80 != 0
	for len(b) > 16 { // the leading bytes must be sign extension
		if (neg && b[0] != 0xff) || (!neg && b[0] != 0) {
			return Decimal128{}, false
		}
		b = b[1:]
	}
	if len(b) == 16 && (b[0]&0x80 != 0) != neg {
		return Decimal128{}, false
	}
	var buf [16]byte
	if neg {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(b):], b)
	return Decimal128{Hi: int64(binary.BigEndian.Uint64(buf[:8])), Lo: binary.BigEndian.Uint64(buf[8:])}, true
}

// AppendBytes appends d as n bytes of big-endian two's complement (n from 1 to 16; the value
// must fit them, as a DECIMAL of DecimalBytes(p) bytes does): the FIXED_LEN_BYTE_ARRAY form of
// a Parquet DECIMAL (Parquet LogicalTypes.md, DECIMAL).
func (d Decimal128) AppendBytes(buf []byte, n int) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(d.Hi))
	binary.BigEndian.PutUint64(b[8:], d.Lo)
	return append(buf, b[16-n:]...)
}

// DecimalBytes returns the fewest bytes that hold every unscaled value of a DECIMAL of this
// precision in two's complement: the length of its Parquet FIXED_LEN_BYTE_ARRAY, as Spark picks
// it (Decimal.minBytesForPrecision: 9 for precision 19 and 20, 16 for 38).
func DecimalBytes(precision int) int { return decimalBytes[precision] }

// decimalBytes[p] is DecimalBytes(p): the least n with 2^(8n-1) >= 10^p, for p from 0 to 38.
var decimalBytes = func() [39]int {
	var b [39]int
	lim, ten := big.NewInt(1), big.NewInt(10)
	for p := range b {
		n := 1
		for new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(lim) < 0 {
			n++
		}
		b[p] = n
		lim.Mul(lim, ten)
	}
	return b
}()

// FitsPrecision reports whether d has at most precision digits (|d| < 10^precision), precision
// from 0 to 38.
func (d Decimal128) FitsPrecision(precision int) bool { return d.abs().less(pow10x[precision]) }

// MulPow10 returns d * 10^k (k from 0 to 38); ok is false when the product has more than 38
// digits.
func (d Decimal128) MulPow10(k int) (Decimal128, bool) {
	u := d.abs()
	hi1, lo := bits.Mul64(u.lo, pow10x[k].lo)
	hi2, lo2 := bits.Mul64(u.hi, pow10x[k].lo)
	hi3, lo3 := bits.Mul64(u.lo, pow10x[k].hi)
	if hi2 != 0 || hi3 != 0 || (u.hi != 0 && pow10x[k].hi != 0) {
		return Decimal128{}, false
	}
	hi, c1 := bits.Add64(hi1, lo2, 0)
	hi, c2 := bits.Add64(hi, lo3, 0)
	p := u128{hi, lo}
	if c1 != 0 || c2 != 0 || !p.less(pow10x[38]) {
		return Decimal128{}, false
	}
	return p.signed(d.Hi < 0), true
}

// QuoPow10 returns d / 10^k (k from 0 to 38), truncated toward zero, and whether the division
// was exact.
func (d Decimal128) QuoPow10(k int) (Decimal128, bool) {
	q, exact := d.abs(), true
	for k > 0 {
		step := min(k, 19)
		var rem uint64
		q, rem = q.quoRem(pow10x[step].lo)
		exact = exact && rem == 0
		k -= step
	}
	return q.signed(d.Hi < 0), exact
}

// ParseDecimal128 is ParseDecimal for a DECIMAL of precision 19 to 38: decimal text ("25.5",
// "-3", "1e2") to the unscaled value, extra fraction digits rounded half away from zero
// (HALF_UP, Spark's JSON and CSV readers), and a value of more than precision digits an error
// ("... does not fit DECIMAL(38,18)").
func ParseDecimal128(s string, t Type) (Decimal128, error) {
	if v, ok := parsePlainDecimal128(s, t.Scale); ok {
		if !v.FitsPrecision(t.Precision) {
			return Decimal128{}, fmt.Errorf("%s does not fit %s", s, t.DDL())
		}
		return v, nil
	}
	n, err := parseDecimalBig(s, t.Scale)
	if err != nil {
		return Decimal128{}, err
	}
	d, ok := Decimal128FromBig(n)
	if !ok || !d.FitsPrecision(t.Precision) {
		return Decimal128{}, fmt.Errorf("%s does not fit %s", s, t.DDL())
	}
	return d, nil
}

// ParseDecimalValue parses decimal text into the Go value of a DECIMAL column of type t: a
// Decimal (ParseDecimal) for a precision up to MaxLongDecimalPrecision, else a Decimal128
// (ParseDecimal128), with their rounding and errors; nil with an error.
func ParseDecimalValue(s string, t Type) (any, error) {
	if t.Precision > MaxLongDecimalPrecision {
		d, err := ParseDecimal128(s, t)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	d, err := ParseDecimal(s, t)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// WideDecimal reports whether t is a DECIMAL whose values are Decimal128 (precision above
// MaxLongDecimalPrecision).
func (t Type) WideDecimal() bool {
	return t.Kind == DecimalKind && t.Precision > MaxLongDecimalPrecision
}

// HasWideDecimal reports whether t is a DECIMAL of precision above MaxLongDecimalPrecision or
// holds one (a STRUCT field, ARRAY element or MAP key or value at any depth).
func (t Type) HasWideDecimal() bool { return t.Holds(Type.WideDecimal) }

// HasWideDecimal reports whether any column of s is or holds a DECIMAL of precision above
// MaxLongDecimalPrecision (see Type.HasWideDecimal).
func (s Schema) HasWideDecimal() bool { return s.Holds(Type.WideDecimal) }

// FormatDecimal128 writes the unscaled value d with exactly scale digits after the point
// ("12345678901234567890.12"), as FormatDecimal does.
func FormatDecimal128(d Decimal128, scale int) string {
	return string(AppendDecimal128(nil, d, scale))
}

// AppendDecimal128 appends FormatDecimal128(d, scale) to buf.
func AppendDecimal128(buf []byte, d Decimal128, scale int) []byte {
	// The digits of |d|: at most 39, in chunks of 19 (10^19 < 2^64), the first without zeros
	// before it.
	var chunks [3]uint64
	n := 0
	for u := d.abs(); ; n++ {
		var r uint64
		u, r = u.quoRem(1e19)
		chunks[n] = r
		if u == (u128{}) {
			break
		}
	}
	var digits [40]byte
	s := strconv.AppendUint(digits[:0], chunks[n], 10)
	for i := n - 1; i >= 0; i-- {
		var c [19]byte
		x := chunks[i]
		for j := len(c) - 1; j >= 0; j-- {
			c[j] = byte('0' + x%10)
			x /= 10
		}
		s = append(s, c[:]...)
	}
	if d.Hi < 0 {
		buf = append(buf, '-')
	}
	if scale == 0 {
		return append(buf, s...)
	}
	if len(s) <= scale {
		buf = append(buf, '0', '.')
		for range scale - len(s) {
			buf = append(buf, '0')
		}
		return append(buf, s...)
	}
	buf = append(buf, s[:len(s)-scale]...)
	buf = append(buf, '.')
	return append(buf, s[len(s)-scale:]...)
}

// parsePlainDecimal128 is ParseDecimal128's fast path, parsePlainDecimal for up to 38 digits
// once scaled.
func parsePlainDecimal128(s string, scale int) (Decimal128, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	intPart, frac, dot := strings.Cut(s, ".")
	if intPart == "" || (dot && frac == "") || len(frac) > scale || len(intPart)+scale > 38 {
		return Decimal128{}, false
	}
	var v u128
	for _, part := range [2]string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return Decimal128{}, false
			}
			v = v.mulAdd(10, uint64(c-'0'))
		}
	}
	for range scale - len(frac) {
		v = v.mulAdd(10, 0)
	}
	return v.signed(neg), true
}

// decimalSyntax is the text of a decimal number as Java's BigDecimal(String), which Spark's JSON
// and CSV readers parse a DECIMAL with, takes it: a sign, digits with a point, an exponent.
var decimalSyntax = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseDecimalBig is the exact path of ParseDecimal and ParseDecimal128: the unscaled value of s
// at scale, rounded HALF_UP.
func parseDecimalBig(s string, scale int) (*big.Int, error) {
	text := strings.TrimSpace(s)
	if !decimalSyntax.MatchString(text) {
		// big.Rat takes more than a decimal: "1/3", "0x10", "0b101", "1_000".
		return nil, fmt.Errorf("%q is not a number", s)
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	n := new(big.Int)
	if r.IsInt() {
		return n.Set(r.Num()), nil
	}
	// HALF_UP: |r| + 1/2, truncated toward zero, with r's sign.
	abs := new(big.Rat).Abs(r)
	abs.Add(abs, big.NewRat(1, 2))
	n.Quo(abs.Num(), abs.Denom())
	if r.Sign() < 0 {
		n.Neg(n)
	}
	return n, nil
}

// u128 is an unsigned 128-bit integer, the magnitude of a Decimal128.
type u128 struct{ hi, lo uint64 }

// pow10x holds 10^0 to 10^38.
var pow10x = func() [39]u128 {
	var p [39]u128
	p[0] = u128{0, 1}
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1].mulAdd(10, 0)
	}
	return p
}()

func (d Decimal128) abs() u128 {
	if d.Hi < 0 {
		n := d.Neg()
		return u128{uint64(n.Hi), n.Lo}
	}
	return u128{uint64(d.Hi), d.Lo}
}

// signed returns u, negated when neg, as a Decimal128.
func (u u128) signed(neg bool) Decimal128 {
	d := Decimal128{Hi: int64(u.hi), Lo: u.lo}
	if neg {
		return d.Neg()
	}
	return d
}

func (u u128) less(o u128) bool { return u.hi < o.hi || u.hi == o.hi && u.lo < o.lo }

// mulAdd returns u*m + a, modulo 2^128.
func (u u128) mulAdd(m, a uint64) u128 {
	hi, lo := bits.Mul64(u.lo, m)
	hi += u.hi * m
	lo, c := bits.Add64(lo, a, 0)
	return u128{hi + c, lo}
}

// quoRem returns u / d and u % d.
func (u u128) quoRem(d uint64) (u128, uint64) {
	qhi, r := u.hi/d, u.hi%d
	qlo, r := bits.Div64(r, u.lo, d)
	return u128{qhi, qlo}, r
}
