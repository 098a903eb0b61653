package flows

import (
	"math"
	"strings"
	"testing"

	"tributary/schema"
)

// TestJSONStringIntoNumberOrBoolean: a JSON string does not fill a number or BOOLEAN column, as
// Spark's JSON reader (JacksonParser) takes only a number token for LongType, IntegerType,
// ShortType and ByteType, only true or false for BooleanType, and for DoubleType and FloatType a
// number or one of the strings "NaN", "Infinity", "+Infinity", "+INF", "-Infinity", "-INF"
// (allowNonNumericNumbers): the column is NULL, the value is rescued, and the WARN names it. A
// string still fills DECIMAL, DATE and TIMESTAMP columns, which Spark parses from text, but not a
// DECIMAL one with white space around the number, which java.math.BigDecimal refuses. Both the
// scanner and the encoding/json path (a line with a field twice) give the same.
func TestJSONStringIntoNumberOrBoolean(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id BIGINT, n INT, sh SMALLINT, f DOUBLE, fl FLOAT, b BOOLEAN, d DECIMAL(10,2), day DATE, at TIMESTAMP, st STRUCT<x: BIGINT>, arr ARRAY<INT>, m MAP<STRING, BOOLEAN>, k MAP<INT, STRING>")
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, f := range s.Fields {
		col[f.Name] = i
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name, fields string
		want         map[string]any // values of the columns named (the others NULL)
		bad          []string       // columns that do not fit, rescued under their names
	}{
		{"BIGINT from a string", `"id":"12"`, nil, []string{"id"}},
		{"INT from a string", `"n":"7"`, nil, []string{"n"}},
		{"SMALLINT from a string", `"sh":"-3"`, nil, []string{"sh"}},
		{"BOOLEAN from a string", `"b":"true"`, nil, []string{"b"}},
		{"BOOLEAN from upper case", `"b":"FALSE"`, nil, []string{"b"}},
		{"DOUBLE from a string", `"f":"1.5"`, nil, []string{"f"}},
		{"FLOAT from a string", `"fl":"2"`, nil, []string{"fl"}},
		{"empty string", `"id":"","f":""`, nil, []string{"f", "id"}},
		{"not a number either", `"id":"abc"`, nil, []string{"id"}},
		{"numbers and booleans as tokens", `"id":12,"n":7,"f":1.5,"b":true`,
			map[string]any{"id": int64(12), "n": int32(7), "f": 1.5, "b": true}, nil},
		{"NaN and infinities", `"f":"NaN","fl":"-Infinity"`, map[string]any{"f": nan, "fl": math.Inf(-1)}, nil},
		{"Infinity", `"f":"Infinity","fl":"+INF"`, map[string]any{"f": inf, "fl": inf}, nil},
		{"+Infinity and -INF", `"f":"+Infinity","fl":"-INF"`, map[string]any{"f": inf, "fl": math.Inf(-1)}, nil},
		{"NaN in another case", `"f":"nan"`, nil, []string{"f"}},
		{"inf as Go spells it", `"f":"inf"`, nil, []string{"f"}},
		{"NaN with spaces", `"f":" NaN"`, nil, []string{"f"}},
		{"DECIMAL, DATE and TIMESTAMP from strings", `"d":"12.50","day":"2024-01-31","at":"2024-01-31T10:00:00Z"`,
			map[string]any{"d": schema.Decimal(1250), "day": schema.Date(19753), "at": schema.Timestamp(1706695200000000)}, nil},
		{"DATE as Spark's readers read one: a timestamp's date", `"day":"2024-01-31T10:00:00Z"`, map[string]any{"day": schema.Date(19753)}, nil},
		{"DATE of one-digit month and day", `"day":"2024-1-5"`, map[string]any{"day": schema.Date(19727)}, nil},
		{"DATE of a year and month", `"day":"2024-03"`, map[string]any{"day": schema.Date(19783)}, nil},
		{"DATE that does not exist", `"day":"2024-02-30"`, nil, []string{"day"}},
		{"DECIMAL from a string with grouping commas", `"d":"1,234.50"`, map[string]any{"d": schema.Decimal(123450)}, nil},
		{"DECIMAL from a string with white space", `"d":" 12.50"`, nil, []string{"d"}},
		{"DECIMAL from a string with white space after", `"d":"12.50\t"`, nil, []string{"d"}},
		{"a string in a STRUCT field", `"st":{"x":"5"}`, nil, []string{"st"}},
		{"a number in a STRUCT field", `"st":{"x":5}`, map[string]any{"st": []any{int64(5)}}, nil},
		{"a string in an ARRAY", `"arr":[1,"2"]`, nil, []string{"arr"}},
		{"a string as a MAP value", `"m":{"a":"true"}`, nil, []string{"m"}},
		{"a MAP's INT key is its text", `"k":{"7":"x"}`, map[string]any{"k": schema.Map{{Key: int32(7), Value: "x"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rescued := range []string{"", "_rescued_data"} {
				lr := newLineReader(s, rescued, "/in/f.json")
				line := "{" + tc.fields + "}"
				// The same object with a field given twice, which the scanner leaves to encoding/json.
				twice := "{" + tc.fields + `,"zz":0,"zz":1}`
				if rescued != "" {
					twice = "{" + tc.fields + "}" // an unknown field would be rescued too
				}
				for _, l := range []string{line, twice} {
					row, ok, bad := lr.parse([]byte(l), 3)
					decoded := make([]any, lr.width())
					decOK, decBad := lr.parseDecoded([]byte(l), 3, decoded)
					for path, got := range map[string]struct {
						row []any
						ok  bool
						bad []badValue
					}{"parse": {row, ok, bad}, "parseDecoded": {decoded, decOK, decBad}} {
						if !got.ok {
							t.Fatalf("%s %q: not read as an object", path, l)
						}
						for name, i := range col {
							want := tc.want[name]
							if v := got.row[i]; showValue(v) != showValue(want) {
								t.Errorf("%s %q (rescued %q): %s = %s, want %s", path, l, rescued, name, showValue(v), showValue(want))
							}
						}
						var badCols []string
						for _, b := range got.bad {
							badCols = append(badCols, b.Column)
						}
						if strings.Join(badCols, ",") != strings.Join(tc.bad, ",") {
							t.Errorf("%s %q: values that do not fit %v, want %v (%v)", path, l, badCols, tc.bad, got.bad)
						}
						if rescued == "" {
							continue
						}
						text, _ := got.row[len(s.Fields)].(string)
						for _, c := range tc.bad {
							if !strings.Contains(text, `"`+c+`":`) {
								t.Errorf("%s %q: rescued %q lacks %s", path, l, text, c)
							}
						}
						if len(tc.bad) == 0 && got.row[len(s.Fields)] != nil {
							t.Errorf("%s %q: rescued %q, want NULL", path, l, text)
						}
					}
				}
			}
		})
	}
}

// TestJSONStringIntoNumberMessage: the WARN reason of a number written as a JSON string says what
// Spark's JSON reader takes and how to fix the file or the schema.
func TestJSONStringIntoNumberMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ddl, value, want string
	}{
		{"BIGINT", "12", `"12" is a JSON string, and BIGINT takes a JSON number only, as Spark's JSON reader does: write 12 without quotes, or declare the column STRING`},
		{"BOOLEAN", " TRUE", `" TRUE" is a JSON string, and BOOLEAN takes true or false only, as Spark's JSON reader does: write true without quotes, or declare the column STRING`},
		{"DOUBLE", "1.5", `"1.5" is a JSON string, and DOUBLE takes a JSON number (or one of the strings "NaN", "Infinity", "+Infinity", "+INF", "-Infinity" and "-INF"), as Spark's JSON reader does: write 1.5 without quotes, or declare the column STRING`},
		{"INT", "x", `"x" is not a whole number for INT`},
		{"BOOLEAN", "yes", `"yes" is not true or false`},
		{"DECIMAL(10,2)", " 3 ", `" 3 " has white space around the number, which DECIMAL(10,2) does not take from a JSON string, as Spark's JSON reader does not (java.math.BigDecimal): write "3"`},
	} {
		s, err := schema.ParseDDL("c " + tc.ddl)
		if err != nil {
			t.Fatal(err)
		}
		_, err = schema.FromJSONReader(s.Fields[0].Type, tc.value)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s from %q: error %v, want %s", tc.ddl, tc.value, err, tc.want)
		}
		if _, err := schema.FromJSON(s.Fields[0].Type, "1"); tc.ddl != "BOOLEAN" && err != nil {
			t.Errorf("FromJSON(%s, \"1\"): %v; it reads text, for the values Tributary keeps as JSON itself", tc.ddl, err)
		}
	}
}
