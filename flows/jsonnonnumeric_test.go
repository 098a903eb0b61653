package flows

import (
	"math"
	"strings"
	"testing"

	"tributary/schema"
)

// TestJSONNonNumericNumbers: the unquoted tokens NaN, Infinity, +Infinity, -Infinity, +INF and
// -INF are read where a value may stand, as Spark's JSON reader reads them: its allowNonNumericNumbers
// option (true by default) enables Jackson's JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS, under
// which jackson-core's ReaderBasedJsonParser and UTF8StreamJsonParser (_handleOddValue for
// 'N', 'I' and '+', _handleInvalidNumberStart after a sign, then resetAsNaN) make each of them a
// VALUE_NUMBER_FLOAT of NumberType DOUBLE. Spark's JacksonParser.makeConverter then gives a
// DoubleType or FloatType column the value (getDoubleValue, getFloatValue); LongType,
// IntegerType, ShortType, ByteType and TimestampType take VALUE_NUMBER_INT only, and DecimalType's
// getDecimalValue fails on the token, so those columns refuse it (a value that does not fit:
// NULL, rescued, WARN), at any depth; a StringType column keeps the token's text. Any other
// spelling (nan, Inf, INF, -NaN, a token followed by a letter or digit) Jackson refuses
// (_matchToken, _reportUnexpectedNumberChar), and the line is malformed. The scanner and the
// encoding/json path (a line with a field twice) give the same.
func TestJSONNonNumericNumbers(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id INT, d DOUBLE, fl FLOAT, s STRING, big BIGINT, dec DECIMAL(10,2), at TIMESTAMP, st STRUCT<x: DOUBLE>, arr ARRAY<DOUBLE>, sn STRUCT<n: BIGINT>, js STRING, m MAP<STRING, FLOAT>")
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, f := range s.Fields {
		col[f.Name] = i
	}
	nan, inf, ninf := math.NaN(), math.Inf(1), math.Inf(-1)
	for _, tc := range []struct {
		name, fields string
		want         map[string]any // values of the columns named (the others NULL)
		bad          []string       // columns that do not fit, rescued under their names
	}{
		{"NaN", `"id":2,"d":NaN,"s":"a"`, map[string]any{"id": int32(2), "d": nan, "s": "a"}, nil},
		{"-Infinity", `"id":3,"d":-Infinity,"s":"b"`, map[string]any{"id": int32(3), "d": ninf, "s": "b"}, nil},
		{"Infinity", `"id":4,"d":Infinity,"s":"c"`, map[string]any{"id": int32(4), "d": inf, "s": "c"}, nil},
		{"+Infinity", `"id":5,"d":+Infinity,"s":"e"`, map[string]any{"id": int32(5), "d": inf, "s": "e"}, nil},
		{"+INF and -INF", `"d":+INF,"fl":-INF`, map[string]any{"d": inf, "fl": ninf}, nil},
		{"FLOAT", `"fl":NaN,"d":Infinity`, map[string]any{"fl": float64(float32(nan)), "d": inf}, nil},
		{"white space around", `"d" : -Infinity , "id" : 1`, map[string]any{"d": ninf, "id": int32(1)}, nil},
		{"STRING keeps the token", `"s":-INF`, map[string]any{"s": "-INF"}, nil},
		{"STRING keeps NaN", `"s":NaN`, map[string]any{"s": "NaN"}, nil},
		{"INT refuses it", `"id":NaN,"d":1`, map[string]any{"d": 1.0}, []string{"id"}},
		{"BIGINT refuses it", `"big":Infinity`, nil, []string{"big"}},
		{"DECIMAL refuses it", `"dec":-Infinity`, nil, []string{"dec"}},
		{"TIMESTAMP refuses it", `"at":+INF`, nil, []string{"at"}},
		{"in a STRUCT", `"st":{"x":NaN}`, map[string]any{"st": []any{nan}}, nil},
		{"in an ARRAY", `"arr":[1,-Infinity,NaN,+INF]`, map[string]any{"arr": []any{1.0, ninf, nan, inf}}, nil},
		{"as a MAP value", `"m":{"a":-INF}`, map[string]any{"m": schema.Map{{Key: "a", Value: ninf}}}, nil},
		{"a STRUCT's BIGINT refuses it", `"sn":{"n":NaN},"d":NaN`, map[string]any{"d": nan}, []string{"sn"}},
		{"an object in a STRING column", `"js":{"a":NaN, "b":[Infinity,-INF]}`, map[string]any{"js": `{"a":NaN,"b":[Infinity,-INF]}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rescued := range []string{"", "_rescued_data"} {
				lr := newLineReader(s, rescued, "/in/f.json")
				lines := []string{"{" + tc.fields + "}"}
				if rescued == "" {
					// A field given twice, which the scanner leaves to parseDecoded, and a field
					// not in the schema holding a token.
					lines = append(lines, "{"+tc.fields+`,"zz":0,"zz":NaN}`)
				}
				for _, l := range lines {
					row, ok, bad := lr.parse([]byte(l), 3)
					decoded := make([]any, lr.width())
					decOK, decBad := lr.parseDecoded([]byte(l), 3, decoded)
					for path, got := range map[string]struct {
						row []any
						ok  bool
						bad []badValue
					}{"parse": {row, ok, bad}, "parseDecoded": {decoded, decOK, decBad}} {
						if !got.ok {
							t.Fatalf("%s %q: not read as an object (%v)", path, l, got.bad)
						}
						for name, i := range col {
							if v, want := got.row[i], tc.want[name]; showValue(v) != showValue(want) {
								t.Errorf("%s %q (rescued %q): %s = %s, want %s", path, l, rescued, name, showValue(v), showValue(want))
							}
						}
						var badCols []string
						for _, b := range got.bad {
							badCols = append(badCols, b.Column)
							if !strings.Contains(b.Reason, "DOUBLE and FLOAT columns only") {
								t.Errorf("%s %q: reason %q does not say which columns take the token", path, l, b.Reason)
							}
						}
						if strings.Join(badCols, ",") != strings.Join(tc.bad, ",") {
							t.Errorf("%s %q: values that do not fit %v, want %v (%v)", path, l, badCols, tc.bad, got.bad)
						}
						if rescued == "" {
							continue
						}
						text, _ := got.row[len(s.Fields)].(string)
						if len(tc.bad) == 0 && got.row[len(s.Fields)] != nil {
							t.Errorf("%s %q: rescued %q, want NULL", path, l, text)
						}
						for _, c := range tc.bad {
							if !strings.Contains(text, `"`+c+`":`) {
								t.Errorf("%s %q: rescued %q lacks %s", path, l, text, c)
							}
						}
					}
				}
			}
		})
	}
}

// TestJSONNonNumericRescued: a token rescued (a field not in the schema, or a value that does
// not fit) is kept in the rescued data column as a JSON string of its text, which JSON can hold,
// as Tributary writes NaN and the infinities in JSON output.
func TestJSONNonNumericRescued(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id BIGINT, d DOUBLE")
	if err != nil {
		t.Fatal(err)
	}
	lr := newLineReader(s, "_rescued_data", "/in/f.json")
	row, ok, bad := lr.parse([]byte(`{"id":NaN,"d":-INF,"x":[+Infinity,{"y":NaN}]}`), 1)
	if !ok || len(bad) != 1 || bad[0].Column != "id" {
		t.Fatalf("ok %v, bad %v", ok, bad)
	}
	if row[1] != math.Inf(-1) {
		t.Errorf("d = %v, want -Inf", row[1])
	}
	want := `{"_file_path":"/in/f.json","id":"NaN","x":["+Infinity",{"y":"NaN"}]}`
	if row[2] != want {
		t.Errorf("rescued %v, want %s", row[2], want)
	}
}

// TestJSONNonNumericMalformed: spellings Jackson does not accept under ALLOW_NON_NUMERIC_NUMBERS
// (its _handleOddValue matches "NaN" and "Infinity" exactly after 'N' and 'I'; after a sign
// _handleInvalidNumberStart takes "INF" or "Infinity" only, and no "NaN"; _matchToken refuses a
// token followed by a letter or digit) make the line malformed, as Spark's JSON reader makes it
// a corrupt record, in a column of any type, nested or not, and in a field not in the schema.
func TestJSONNonNumericMalformed(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id INT, d DOUBLE, s STRING, st STRUCT<x: DOUBLE>")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"nan", "NAN", "NaNx", "NaN1", "NaN.5", "Inf", "INF", "inf", "infinity", "-NaN", "+NaN", "-inf", "-Inf",
		"+Inf", "Infinityy", "+INFinity", "-Infinity1", "Infinit", "++Infinity", "- Infinity", "+1", "N", "+", "-"} {
		for _, line := range []string{
			`{"id":1,"d":` + tok + `}`,
			`{"id":1,"s":` + tok + `}`,
			`{"d":` + tok + `,"id":1}`,
			`{"id":1,"st":{"x":` + tok + `}}`,
			`{"id":1,"other":[` + tok + `]}`,
			`{"id":1,"d":1,"d":` + tok + `}`,
		} {
			for _, rescued := range []string{"", "_rescued_data"} {
				lr := newLineReader(s, rescued, "/in/f.json")
				row, ok, bad := lr.parse([]byte(line), 1)
				if ok || len(bad) != 1 || bad[0].Column != "" {
					t.Errorf("%q: ok %v, bad %v; want a malformed line", line, ok, bad)
					continue
				}
				if rescued != "" && !strings.Contains(row[len(s.Fields)].(string), "_corrupt_record") {
					t.Errorf("%q: rescued %v, want the corrupt record", line, row[len(s.Fields)])
				}
			}
		}
	}
}

// TestInferJSONNonNumeric: schema inference takes a column holding a non-numeric number token
// as DOUBLE, as Spark's JsonInferSchema infers a VALUE_NUMBER_FLOAT of NumberType DOUBLE (which
// Jackson makes of NaN and the infinities), widening an integer column to DOUBLE.
func TestInferJSONNonNumeric(t *testing.T) {
	t.Parallel()
	p, _ := inferPipeline(t, "      format: json\n", map[string]string{
		"a.json": `{"id": 1, "d": NaN, "n": 2, "st": {"x": -Infinity}}` + "\n" + `{"id": 2, "d": 1, "n": +INF}` + "\n",
	})
	if got := p.Dataset("raw").Schema.DDL(); got != "d DOUBLE, id BIGINT, n DOUBLE, st STRUCT<x: DOUBLE>, _rescued_data STRING" {
		t.Fatalf("schema %s", got)
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `"NaN" 1 2 {"x":"-Infinity"} null`, `1 2 "Infinity" null null`)
}

// TestJSONNonNumericInArrayLine: a line holding an array of objects, each a row (as Spark's JSON
// reader reads one), may hold the tokens too.
func TestJSONNonNumericInArrayLine(t *testing.T) {
	t.Parallel()
	elems, ok := arrayElements(`[{"d":NaN}, {"d":-Infinity,"a":[+INF]}]`)
	if !ok || len(elems) != 2 || string(elems[0]) != `{"d":NaN}` || string(elems[1]) != `{"d":-Infinity,"a":[+INF]}` {
		t.Fatalf("elements %q, ok %v", elems, ok)
	}
	for _, line := range []string{`[{"d":nan}]`, `[{"d":NaN}] x`, `[{"d":NaN},]`, `[NaN]`} {
		if elems, ok := arrayElements(line); ok {
			t.Errorf("%s: elements %q, want none", line, elems)
		}
	}
}

// TestJSONNonNumericCut: a last line without its line end that stops inside a value (a line
// being written) is told from a malformed one when it holds the tokens too, or stops inside one.
func TestJSONNonNumericCut(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]bool{
		`{"d":NaN,"e":`:        true,
		`{"d":NaN`:             true,
		`{"d":-Infin`:          true,
		`{"d":+I`:              true,
		`{"d":N`:               true,
		`{"s":"NaN \" Inf`:     true,
		`{"d":[Infinity, -INF`: true,
		`{"d":NaN}`:            false,
		`{"d":nan`:             false,
		`{"d":NaNx`:            false,
		`{"d":-NaN`:            false,
		`{"d":NaN "e":1`:       false,
		`{"d":1.5,"e":`:        true,
		`{"d":1.5} x`:          false,
	} {
		if got := cutJSON(line); got != want {
			t.Errorf("cutJSON(%s) = %v, want %v", line, got, want)
		}
	}
}
