package schema

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestFromJSONRanges: a JSON number beyond a type's range is an error that says so (BIGINT; a
// whole number written with an exponent or a fraction gets the integer literal to write), an
// infinity (DOUBLE, as Spark's JSON reader reads it), or an error (TIMESTAMP epoch seconds
// outside the years 1 to 9999, which the type does not hold; they once wrapped around to a
// wrong instant); RFC 3339 text takes T and Z in either case.
func TestFromJSONRanges(t *testing.T) {
	t.Parallel()
	long, double, ts := Type{Kind: Long}, Type{Kind: Double}, Type{Kind: TimestampKind}
	for _, tc := range []struct {
		typ  Type
		in   any
		want any
		err  string
	}{
		{long, json.Number("9223372036854775808"), nil, "9223372036854775808 does not fit BIGINT"},
		{long, "-9223372036854775809", nil, `"-9223372036854775809" does not fit BIGINT`},
		{long, json.Number("1.5"), nil, "1.5 is not a whole number for BIGINT"},
		{long, json.Number("99999999999999999999.5"), nil, "99999999999999999999.5 is not a whole number for BIGINT"},
		// Whole values written with an exponent or a fraction are not integer literals, which is
		// all Spark's JSON reader takes for an integer column: the error gives the literal.
		{long, json.Number("1e2"), nil, "1e2 is written with a fraction or an exponent, and BIGINT takes integer literals only, as Spark's JSON reader does: write 100, or declare the column DOUBLE or DECIMAL"},
		{long, json.Number("-1E+3"), nil, "write -1000,"},
		{long, json.Number("2.0"), nil, "write 2,"},
		{long, json.Number("9223372036854775807.0"), nil, "write 9223372036854775807,"},
		{long, json.Number("0e999"), nil, "write 0,"},
		{long, json.Number("1e19"), nil, "1e19 does not fit BIGINT"},
		{long, json.Number("1e401"), nil, "1e401 does not fit BIGINT"},
		{long, json.Number("9223372036854775808.0"), nil, "9223372036854775808.0 does not fit BIGINT"},
		{Type{Kind: Integer}, json.Number("3e9"), nil, "3e9 does not fit INT"},
		{Type{Kind: Integer}, json.Number("3e2"), nil, "INT takes integer literals only, as Spark's JSON reader does: write 300,"},
		{long, json.Number("1.00000000000000000000001"), nil, "1.00000000000000000000001 is not a whole number for BIGINT"},
		{long, json.Number("1e-999999999"), nil, "1e-999999999 is not a whole number for BIGINT"},
		{double, json.Number("1e400"), math.Inf(1), ""},
		{double, json.Number("-1e400"), math.Inf(-1), ""},
		{ts, json.Number("10000000000000"), nil, "10000000000000 seconds since 1970 is outside the years 1 to 9999 that a TIMESTAMP holds"},
		{ts, json.Number("-1e20"), nil, "-1e20 seconds since 1970 is outside the years 1 to 9999"},
		{ts, json.Number("1e400"), nil, "1e400 seconds since 1970 is outside"},
		{ts, json.Number("253402300799.5"), Timestamp(253402300799500000), ""},
		{ts, json.Number("253402300800"), nil, "253402300800 seconds since 1970 is outside"},
		{ts, json.Number("-62135596800"), Timestamp(-62135596800000000), ""},
		{ts, json.Number("1.7e9"), Timestamp(1700000000000000), ""},
		{ts, "2024-01-01t10:00:00z", Timestamp(1704103200000000), ""},
		{ts, "2024-01-01T10:00:00Z", Timestamp(1704103200000000), ""},
		{ts, "2024-13-01", nil, `"2024-13-01" is not an RFC 3339 timestamp`},
	} {
		got, err := FromJSON(tc.typ, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %v: %v, error %v; want an error saying %q", tc.typ.DDL(), tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %v (%T), error %v; want %v", tc.typ.DDL(), tc.in, got, got, err, tc.want)
		}
	}
}

// TestCompareDouble: DOUBLEs order as Spark orders them: NaN equal to NaN and above every other
// value, +Inf included; -0.0 equal to 0.0. (NaN once compared equal to everything, so a NaN
// sequence_by value won or lost by arrival order.)
func TestCompareDouble(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, tc := range []struct {
		a, b float64
		want int
	}{
		{nan, 2.5, 1}, {2.5, nan, -1}, {nan, nan, 0}, {nan, math.Inf(1), 1}, {math.Inf(1), nan, -1},
		{math.Copysign(0, -1), 0, 0}, {1, 2, -1}, {2, 1, 1}, {math.Inf(-1), -1e308, -1},
	} {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestAppendJSONNonFinite: a DOUBLE that JSON has no number for is written as the string Spark's
// to_json writes: "NaN", "Infinity", "-Infinity"; others as numbers.
func TestAppendJSONNonFinite(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{math.Inf(1): `"Infinity"`, math.Inf(-1): `"-Infinity"`, 2.5: `2.5`} {
		if got := string(AppendJSON(nil, Type{Kind: Double}, v)); got != want {
			t.Errorf("AppendJSON(%v) = %s, want %s", v, got, want)
		}
	}
	if got := string(AppendJSON(nil, Type{Kind: Double}, math.NaN())); got != `"NaN"` {
		t.Errorf("AppendJSON(NaN) = %s, want \"NaN\"", got)
	}
}

// TestNarrowTypesDDL: FLOAT (REAL), SMALLINT (SHORT) and TINYINT (BYTE) parse to the narrower
// storage of DOUBLE and INT and print back as Spark names them; a FLOAT value from JSON is the
// nearest float32, an infinity beyond its range; SMALLINT and TINYINT refuse values beyond theirs.
func TestNarrowTypesDDL(t *testing.T) {
	t.Parallel()
	s, err := ParseDDL("a FLOAT, b real, c SMALLINT, d short, e TINYINT, f byte")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.DDL(), "a FLOAT, b FLOAT, c SMALLINT, d SMALLINT, e TINYINT, f TINYINT"; got != want {
		t.Errorf("DDL %s, want %s", got, want)
	}
	if got, want := s.SparkJSON(), `"type":"float"`; !strings.Contains(got, want) {
		t.Errorf("schemaString %s lacks %s", got, want)
	}
	fl, sh, by := s.Fields[0].Type, s.Fields[2].Type, s.Fields[4].Type
	for _, tc := range []struct {
		typ  Type
		in   any
		want any
		err  string
	}{
		{fl, json.Number("0.1"), float64(float32(0.1)), ""},
		{fl, "2.5", 2.5, ""},
		{fl, json.Number("3.5e39"), math.Inf(1), ""},
		{sh, json.Number("-32768"), int32(-32768), ""},
		{sh, json.Number("32768"), nil, "32768 does not fit SMALLINT"},
		{by, "127", int32(127), ""},
		{by, json.Number("-129"), nil, "-129 does not fit TINYINT"},
	} {
		got, err := FromJSON(tc.typ, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %v: %v, error %v; want %q", tc.typ.DDL(), tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %v, error %v; want %v", tc.typ.DDL(), tc.in, got, err, tc.want)
		}
	}
}
