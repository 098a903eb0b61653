package schema

import (
	"bytes"
	"math"
	"strconv"
)

// AppendJavaFloat appends x as Java's Double.toString writes it (Float.toString when bits is 32,
// for a FLOAT's value), which is how Spark prints a DOUBLE (Dataset.show, CAST to STRING, to_json,
// the CSV writer): NaN, Infinity, -Infinity; 0.0 and -0.0; when 10^-3 <= |x| < 10^7, the
// shortest decimal digits that read back as x with at least one digit after the point (2.0,
// 0.001, 1234567.5); else the shortest digits in computerized scientific notation, one digit
// before the point and at least one after it, then E and the exponent (1.0E7, 1.23456789E8,
// 1.0E-4). The digits are Go's shortest (strconv), which Java writes since JDK 19 (JDK-4511638).
func AppendJavaFloat(buf []byte, x float64, bits int) []byte {
	switch {
	case math.IsNaN(x):
		return append(buf, "NaN"...)
	case math.IsInf(x, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(x, -1):
		return append(buf, "-Infinity"...)
	case x == 0:
		if math.Signbit(x) {
			return append(buf, "-0.0"...)
		}
		return append(buf, "0.0"...)
	}
	// The shortest digits; Java writes at least two, the two closest to x when one would do
	// (Double.MIN_VALUE is 4.9E-324, not 5.0E-324).
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], x, 'e', -1, bits) // -1.2345e+08
	if bytes.IndexByte(e, '.') < 0 {
		e = strconv.AppendFloat(tmp[:0], x, 'e', 1, bits)
	}
	if e[0] == '-' {
		buf = append(buf, '-')
		e = e[1:]
	}
	at := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[at+1:]))
	var digits [24]byte
	d := append(append(digits[:0], e[0]), e[2:at]...) // the digits without the point
	if a := math.Abs(x); a >= 1e-3 && a < 1e7 {
		var whole, frac []byte
		if exp >= 0 {
			for len(d) < exp+1 {
				d = append(d, '0')
			}
			whole, frac = d[:exp+1], d[exp+1:]
		} else {
			whole = []byte{'0'}
			frac = append(bytes.Repeat([]byte{'0'}, -exp-1), d...)
		}
		buf = append(append(buf, whole...), '.')
		return append(buf, fracDigits(frac)...)
	}
	buf = append(append(buf, d[0], '.'), fracDigits(d[1:])...)
	return strconv.AppendInt(append(buf, 'E'), int64(exp), 10)
}

// fracDigits returns the digits after a point: f without its trailing zeros, or "0" for none.
func fracDigits(f []byte) []byte {
	f = bytes.TrimRight(f, "0")
	if len(f) == 0 {
		return []byte{'0'}
	}
	return f
}
