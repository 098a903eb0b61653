package flows

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"tributary/schema"
)

// scanSchema has a column of every kind the scanner converts itself, the narrower storages of
// INT, DOUBLE and STRING, and a STRUCT (left to schema.FromJSON).
func scanSchema(t testing.TB) schema.Schema {
	s, err := schema.ParseDDL("id BIGINT, n INT, s STRING, d DECIMAL(10,2), big DECIMAL(18,4), f DOUBLE, b BOOLEAN, day DATE, at TIMESTAMP, st STRUCT<x: INT, y: STRING>")
	if err != nil {
		t.Fatal(err)
	}
	s.Fields = append(s.Fields,
		schema.Field{Name: "sh", Type: schema.Type{Kind: schema.Integer, Storage: schema.StorageShort}, Nullable: true},
		schema.Field{Name: "ti", Type: schema.Type{Kind: schema.Integer, Storage: schema.StorageByte}, Nullable: true},
		schema.Field{Name: "fl", Type: schema.Type{Kind: schema.Double, Storage: schema.StorageFloat}, Nullable: true},
		schema.Field{Name: "bin", Type: schema.Type{Kind: schema.String, Storage: schema.StorageBinary}, Nullable: true},
	)
	return s
}

// showValue prints a row value with its Go type, floats by their bits (so -0 and NaN compare).
func showValue(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("float64(%#x)", math.Float64bits(x))
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = showValue(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%T(%#v)", v, v)
}

// parseResult prints what parsing one line gave.
func parseResult(row []any, ok bool, bad []badValue) string {
	parts := make([]string, len(row))
	for i, v := range row {
		parts[i] = showValue(v)
	}
	return fmt.Sprintf("ok=%v row=[%s] bad=%q", ok, strings.Join(parts, " "), fmt.Sprint(bad))
}

// checkParse requires lr.parse, and lr.parseInto with values boxed in a boxSlab, to give what
// parseDecoded gives for line, and reports whether the scanner read the line itself.
func checkParse(t *testing.T, lr *lineReader, line string) (scanned bool) {
	t.Helper()
	want := make([]any, lr.width())
	wantOK, wantBad := lr.parseDecoded([]byte(line), 7, want)
	row, ok, bad := lr.parse([]byte(line), 7)
	if got, want := parseResult(row, ok, bad), parseResult(want, wantOK, wantBad); got != want {
		t.Fatalf("line %q (rescued column %q):\n got %s\nwant %s", line, lr.rescued, got, want)
	}
	row = make([]any, lr.width())
	ok, bad = lr.parseInto(line, 7, row, newBoxSlab(1, 1))
	if got, want := parseResult(row, ok, bad), parseResult(want, wantOK, wantBad); got != want {
		t.Fatalf("line %q (rescued column %q), values in a boxSlab:\n got %s\nwant %s", line, lr.rescued, got, want)
	}
	_, scanned = lr.scan(line, 7, make([]any, lr.width()), nil)
	return scanned
}

// TestScanMatchesDecoded: for each line, the scanner's row, bad values, rescued data and
// malformed-line verdict are those of the encoding/json path, with and without a rescued-data
// column; fast says the scanner reads the line itself without a rescued-data column (without
// "fast" it may leave the line to parseDecoded).
func TestScanMatchesDecoded(t *testing.T) {
	t.Parallel()
	s := scanSchema(t)
	plain, rescuing := newLineReader(s, "", "/in/f.json"), newLineReader(s, "_rescued", "/in/f.json")
	for _, tc := range []struct {
		name, line string
		fast       bool
	}{
		{"all kinds", `{"id":1,"n":-2,"s":"x","d":1.5,"big":-12345678901234.5678,"f":2.5e-3,"b":true,"day":"2024-02-29","at":"2024-01-31T10:00:00.123456Z","st":{"x":1,"y":"a"},"sh":-32768,"ti":127,"fl":0.1,"bin":"AQL/"}`, true},
		{"empty object", `{}`, true},
		{"empty object with space", " { \t} ", true},
		{"nulls", `{"id":null,"s":null,"d":null,"st":null,"b":null}`, true},
		{"white space everywhere", " \t{ \"id\" \t:\r 1 ,\"s\"  :  \"x\"\t}\r\t ", true},
		{"fields out of order", `{"s":"x","at":0,"id":3,"n":4}`, true},
		{"escapes", `{"s":"q\"b\\s\/b\bf\fn\nr\rt\t"}`, true},
		{"unicode escapes", `{"s":"\u00e9\u4E2D\u0000"}`, true},
		{"surrogate pair", `{"s":"\ud83d\ude00 \uD83D\uDE00"}`, true},
		{"lone high surrogate", `{"s":"\ud83dx"}`, true},
		{"lone low surrogate", `{"s":"\ude00"}`, true},
		{"high surrogate twice", `{"s":"\ud83d\ud83d\ude00"}`, true},
		{"high surrogate then other escape", `{"s":"\ud83d\n"}`, true},
		{"high surrogate at the end", `{"s":"\ud83d"}`, true},
		{"raw UTF-8", `{"s":"é€😀"}`, true},
		{"invalid UTF-8", "{\"s\":\"a\xffb\"}", false},
		{"truncated UTF-8", "{\"s\":\"\xe2\x82\"}", false},
		{"UTF-8 surrogate", "{\"s\":\"\xed\xa0\x80\"}", false},
		{"overlong UTF-8", "{\"s\":\"\xc0\xaf\"}", false},
		{"invalid UTF-8 and escape", "{\"s\":\"\\n\xff\"}", false},
		{"invalid UTF-8 in a key", "{\"s\xff\":1}", false},
		{"escaped key", `{"\u0073":"x","i\u0064":5}`, true},
		{"keys that extend a column's name", `{"idx":1,"id":2,"nn":3,"n":4,"s\"":5,"s":"x"}`, true},
		{"key in order near the line's end", `{"id":1,"n":2}`, true},
		{"key in order, space before the colon", `{"id" :1,"n"	:2,"s" : "x"}`, true},
		{"empty key", `{"":1}`, true},
		{"exponent into BIGINT", `{"id":1e2}`, true},
		{"fraction into BIGINT", `{"id":1.0}`, true},
		{"minus zero", `{"id":-0,"f":-0,"d":-0.0}`, true},
		{"largest BIGINT", `{"id":9223372036854775807}`, true},
		{"smallest BIGINT", `{"id":-9223372036854775808}`, true},
		{"BIGINT overflow", `{"id":9223372036854775808}`, true},
		{"BIGINT of 18 digits", `{"id":-999999999999999999,"n":1}`, true},
		{"BIGINT of 19 digits", `{"id":1000000000000000000,"n":1}`, true},
		{"BIGINT zero then digits", `{"id":0123}`, false},
		{"BIGINT minus alone", `{"id":-,"n":1}`, false},
		{"BIGINT point without digits", `{"id":1.,"n":1}`, false},
		{"BIGINT exponent without digits", `{"id":12e,"n":1}`, false},
		{"BIGINT upper-case exponent", `{"id":12E1,"n":1}`, true},
		{"huge number", `{"id":123456789012345678901234567890,"s":123456789012345678901234567890,"f":123456789012345678901234567890}`, true},
		{"INT overflow", `{"n":2147483648}`, true},
		{"smallest INT", `{"n":-2147483648}`, true},
		{"SMALLINT overflow", `{"sh":32768}`, true},
		{"TINYINT overflow", `{"ti":-129}`, true},
		{"DOUBLE overflow", `{"f":1e400}`, true},
		{"TIMESTAMP epoch out of range", `{"at":10000000000000,"id":1}`, true},
		{"TIMESTAMP epoch far out of range", `{"at":-1e20,"id":2}`, true},
		{"TIMESTAMP lower case", `{"at":"2024-01-01t10:00:00z"}`, true},
		{"DOUBLE underflow", `{"f":1e-400}`, true},
		{"exponents", `{"f":1E+2,"fl":-2.5e-3,"d":1e2,"at":1.7e9}`, true},
		{"decimal rounding", `{"d":1.005,"big":0.00005}`, true},
		{"decimal overflow", `{"d":99999999.995}`, true},
		{"decimal from text", `{"d":"12.5","big":" 3 "}`, true},
		{"decimal not a number", `{"d":"x"}`, true},
		{"numbers as text", `{"id":" 42 ","n":"+7","f":"1e3","b":" TRUE "}`, true},
		{"text not a number", `{"id":"4x","n":"","f":"NaN"}`, true},
		{"booleans", `{"b":false,"s":true,"bin":false}`, true},
		{"BINARY base64", `{"bin":"AQI="}`, true},
		{"BINARY base64 with white space", `{"bin":" AQL/\nAQ=="}`, true},
		{"BINARY base64 escaped", `{"bin":"\u0041QL\/"}`, true},
		{"BINARY empty", `{"bin":""}`, true},
		{"BINARY without padding", `{"bin":"AQI","id":1}`, true},
		{"BINARY not base64", `{"bin":"raw text"}`, true},
		{"BINARY from an object", `{"bin":{"a":1}}`, true},
		{"boolean into a number", `{"id":true,"d":false,"at":true,"day":false}`, true},
		{"number into a boolean", `{"b":1}`, true},
		{"number into text", `{"s":1.50e3,"bin":-0}`, true},
		{"timestamps", `{"at":"2024-01-31T10:00:00+02:00"}`, true},
		{"timestamp without zone", `{"at":"2024-01-31 10:00:00"}`, true},
		{"timestamp as a date", `{"at":"2024-01-31"}`, true},
		{"timestamp not valid", `{"at":"nope"}`, true},
		{"epoch seconds", `{"at":1700000000.5}`, true},
		{"dates", `{"day":"2024-02-30"}`, true},
		{"date with spaces", `{"day":" 2024-01-01 "}`, true},
		{"date as a number", `{"day":20240101}`, true},
		{"object into text", `{"s":{"b":[1,2.50,"x"],"a":null}}`, true},
		{"array into BIGINT", `{"id":[1]}`, true},
		{"struct", `{"st":{"y":"b","x":7,"z":[]}}`, true},
		{"struct with a bad field", `{"st":{"x":"q"}}`, true},
		{"array into struct", `{"st":[1]}`, true},
		{"unknown nested field", `{"zz":{"a":[{"b":null},true,-1.5e3,"\u00e9"]},"id":1}`, true},
		{"unknown field", `{"id":1,"zz":2}`, true},
		{"case mismatch", `{"ID":1,"S":"x"}`, true},
		{"the rescued column as a field", `{"_rescued":"x"}`, true},
		{"duplicate key", `{"id":1,"id":2}`, false},
		{"duplicate key, first bad", `{"id":"x","id":2}`, false},
		{"duplicate key, last bad", `{"id":1,"id":"x"}`, false},
		{"duplicate unknown key", `{"zz":1,"zz":2,"id":3}`, true},
		{"deep nesting", `{"zz":` + strings.Repeat("[", 150) + strings.Repeat("]", 150) + `}`, false},
		{"leading zero", `{"id":007}`, false},
		{"number without digits", `{"id":-}`, false},
		{"fraction without digits", `{"f":1.}`, false},
		{"number from a point", `{"f":.5}`, false},
		{"exponent without digits", `{"f":1e}`, false},
		{"plus sign", `{"id":+1}`, false},
		{"truncated number", `{"id":1`, false},
		{"truncated string", `{"s":"abc`, false},
		{"truncated after comma", `{"id":1,`, false},
		{"open brace", `{`, false},
		{"key only", `{"s"`, false},
		{"key and colon", `{"s":`, false},
		{"trailing comma", `{"id":1,}`, false},
		{"missing colon", `{"id" 1}`, false},
		{"raw control character", "{\"s\":\"a\tb\"}", false},
		{"unknown escape", `{"s":"\x"}`, false},
		{"single-quote escape", `{"s":"\'"}`, false},
		{"short unicode escape", `{"s":"\u12"}`, false},
		{"bad hex", `{"s":"\u12g4"}`, false},
		{"broken literal", `{"b":tru}`, false},
		{"literal with a tail", `{"b":truex}`, false},
		{"broken null", `{"b":nul}`, false},
		{"unquoted key", `{id:1}`, false},
		{"BOM", "\xef\xbb\xbf{\"id\":1}", false},
		{"array line", `[1]`, false},
		{"number line", `1`, false},
		{"string line", `"x"`, false},
		{"null line", `null`, false},
		{"text after the object", `{"id":1} x`, false},
		{"brace after the object", `{"id":1}}`, false},
		{"bracket after the object", `{"id":1}] x`, false},
		{"two objects", `{"id":1} {"id":2}`, false},
		{"comma after the object", `{"id":1},`, false},
		{"not JSON", `not json`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if scanned := checkParse(t, plain, tc.line); tc.fast && !scanned {
				t.Errorf("line %q: the scanner left it to parseDecoded", tc.line)
			}
			checkParse(t, rescuing, tc.line)
		})
	}
}

// TestScanSharesLineMemory: a string without escapes is a part of the line, not a copy.
func TestScanSharesLineMemory(t *testing.T) {
	t.Parallel()
	lr := newLineReader(scanSchema(t), "", "f")
	line := `{"s":"shared","bin":"YQpi"}`
	row := make([]any, lr.width())
	if _, done := lr.scan(line, 1, row, nil); !done {
		t.Fatal("not scanned")
	}
	if got, want := row[2].(string), line[6:12]; got != want || unsafe.StringData(got) != unsafe.StringData(want) {
		t.Errorf("s = %q, want %q in the line's memory", got, want)
	}
	if got := row[len(row)-1]; got != "a\nb" { // base64 "YQpi" is the bytes of "a\nb"
		t.Errorf("bin = %q, want %q", got, "a\nb")
	}
}

// TestScanGenerated compares the scanner with parseDecoded on generated lines: valid objects of
// every kind of value, field and spacing, some mutated into invalid JSON. Every line generated
// valid, without a field twice, is read by the scanner itself when there is no rescued-data
// column.
func TestScanGenerated(t *testing.T) {
	t.Parallel()
	n := 60_000
	if testing.Short() {
		n = 5_000
	}
	s := scanSchema(t)
	plain, rescuing := newLineReader(s, "", "/in/f.json"), newLineReader(s, "_rescued", "/in/f.json")
	g := newLineGen(s, 1)
	scanned, fast := 0, 0
	for range n {
		line, clean := g.line()
		if checkParse(t, plain, line) {
			scanned++
		} else if clean {
			t.Fatalf("line %q: the scanner left it to parseDecoded", line)
		}
		if clean {
			fast++
		}
		checkParse(t, rescuing, line)
	}
	if fast < n/2 {
		t.Errorf("only %d of %d lines generated clean", fast, n)
	}
	t.Logf("%d lines: %d generated clean, %d read by the scanner", n, fast, scanned)
}

// lineGen generates JSON lines over a schema's columns.
type lineGen struct {
	r     *rand.Rand
	names []string
	b     strings.Builder
}

func newLineGen(s schema.Schema, seed uint64) *lineGen {
	names := s.Names()
	names = append(names, "ID", "S", "zz", "extra", "_rescued", "", "i\\u0064", "s\\u00e9")
	return &lineGen{r: rand.New(rand.NewPCG(seed, 9)), names: names}
}

// rare is true for one value in 60: the odds of an invalid token.
func (g *lineGen) rare() bool { return g.r.IntN(60) == 0 }

func (g *lineGen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *lineGen) space() {
	if g.r.IntN(3) == 0 {
		g.b.WriteString(g.pick(" ", "\t", "  ", "\r", " \t "))
	}
}

// line returns a line and whether it was generated as valid JSON with no field twice (the
// escaped "i\u0064" is "id").
func (g *lineGen) line() (string, bool) {
	g.b.Reset()
	clean := true
	g.space()
	g.b.WriteByte('{')
	seen := map[string]bool{}
	for i, k := 0, g.r.IntN(10); i < k; i++ {
		if i > 0 {
			g.b.WriteByte(',')
		}
		g.space()
		name := g.names[g.r.IntN(len(g.names))]
		if g.r.IntN(4) != 0 { // mostly the schema's columns, in order
			name = g.names[i%14]
		}
		key := strings.ReplaceAll(name, "i\\u0064", "id")
		if seen[key] {
			clean = false
		}
		seen[key] = true
		g.b.WriteString(`"` + name + `"`)
		g.space()
		g.b.WriteByte(':')
		g.space()
		if !g.value(0) {
			clean = false
		}
		g.space()
	}
	g.b.WriteByte('}')
	g.space()
	line := g.b.String()
	if g.r.IntN(8) == 0 { // a mutation
		clean = false
		p := g.r.IntN(len(line) + 1)
		switch g.r.IntN(5) {
		case 0:
			line = line[:p]
		case 1:
			line = line[:p] + string(rune(g.r.IntN(128))) + line[p:]
		case 2:
			if p < len(line) {
				line = line[:p] + line[p+1:]
			}
		case 3:
			line = "\xef\xbb\xbf" + line
		case 4:
			line += g.pick(" x", "}", "]", ",", " {}", "\x00")
		}
	}
	return line, clean
}

// value writes a value and reports whether it is valid JSON.
func (g *lineGen) value(depth int) bool {
	switch k := g.r.IntN(12); {
	case k < 4:
		return g.number()
	case k < 8:
		return g.str()
	case k == 8:
		if g.rare() {
			g.b.WriteString(g.pick("tru", "nul", "falsex", "True"))
			return false
		}
		g.b.WriteString(g.pick("true", "false", "null"))
		return true
	case depth > 3:
		g.b.WriteString("null")
		return true
	case k == 9:
		g.b.WriteByte('[')
		ok := true
		for i, m := 0, g.r.IntN(4); i < m; i++ {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.space()
			ok = g.value(depth+1) && ok
		}
		if g.rare() {
			g.b.WriteByte(',')
			ok = false
		}
		g.b.WriteByte(']')
		return ok
	default:
		g.b.WriteByte('{')
		ok := true
		for i, m := 0, g.r.IntN(4); i < m; i++ {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.b.WriteString(`"` + g.pick("x", "y", "z", "x") + `":`)
			ok = g.value(depth+1) && ok
		}
		g.b.WriteByte('}')
		return ok
	}
}

func (g *lineGen) number() bool {
	if g.rare() {
		g.b.WriteString(g.pick("007", "01", "1.", ".5", "-", "+1", "1e", "1e+", "--1", "0x10"))
		return false
	}
	switch g.r.IntN(10) {
	case 0, 1:
		g.b.WriteString(g.pick("0", "-0", "-0.0", "1e2", "1E+2", "-2.5e-3", "0.5", "1.005", "99999999.995", "1e400", "1e-400", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "123456789012345678901234", "2147483648", "32768", "-129", "1700000000.5"))
		return true
	case 2, 3:
		fmt.Fprintf(&g.b, "%d.%02d", g.r.IntN(100000)-50000, g.r.IntN(100))
	case 4:
		fmt.Fprintf(&g.b, "%g", g.r.NormFloat64()*math.Pow(10, float64(g.r.IntN(40)-20)))
	default:
		fmt.Fprintf(&g.b, "%d", g.r.Int64N(1<<uint(g.r.IntN(62)+1))-(1<<uint(g.r.IntN(8))))
	}
	return true
}

func (g *lineGen) str() bool {
	if g.r.IntN(3) == 0 { // a string of another kind's text
		g.b.WriteString(`"` + g.pick("42", " 7 ", "-3", "1.5", "1e3", "true", " FALSE ", "2024-01-31", "2024-02-30", "2024-01-31T10:00:00Z", "2024-01-31 10:00:00+01:00", "12.345", "NaN", "", "x") + `"`)
		return true
	}
	ok := true
	g.b.WriteByte('"')
	for i, m := 0, g.r.IntN(12); i < m; i++ {
		if g.rare() {
			g.b.WriteString(g.pick("\t", "\x01", `\x`, `\u12`, `\'`, "\n"))
			ok = false
			continue
		}
		switch k := g.r.IntN(18); {
		case k < 10:
			g.b.WriteByte(byte('a' + g.r.IntN(26)))
		case k < 12:
			g.b.WriteString(g.pick(` `, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `/`))
		case k < 14:
			g.b.WriteString(g.pick(`\u00e9`, `\u4E2D`, `\ud83d\ude00`, `\ud83d`, `\ude00`, `\ud83dx`, `\u0000`, `\u001f`, `\uFFFD`))
		case k < 16:
			g.b.WriteString(g.pick("é", "中", "😀", "\u2028", "\ufffd"))
		case g.r.IntN(6) != 0:
			g.b.WriteByte(0x7f)
		default: // not UTF-8: the line is malformed, which parseDecoded says
			g.b.WriteString(g.pick("\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"))
			ok = false
		}
	}
	g.b.WriteByte('"')
	return ok
}

// TestScanDuplicateKeys: a field given twice keeps its last value, as encoding/json decodes an
// object into a map, and only the last value can be bad.
func TestScanDuplicateKeys(t *testing.T) {
	t.Parallel()
	lr := newLineReader(scanSchema(t), "", "f")
	for line, want := range map[string]string{
		`{"id":1,"id":2}`:   "2 []",
		`{"id":"x","id":2}`: "2 []",
		`{"id":1,"id":"x"}`: `<nil> [{7 id "x" is not a whole number for BIGINT false}]`,
	} {
		row, ok, bad := lr.parse([]byte(line), 7)
		if got := fmt.Sprint(row[0], " ", bad); !ok || got != want {
			t.Errorf("%s: %v %s, want %s", line, ok, got, want)
		}
	}
}

// TestObjectIntoTextKeepsOrder: an object or array given to a STRING column is stored as its own
// compact text, members in their order, as Spark's JSON reader stores it; by the scanner and by
// the encoding/json path alike (a field to rescue or a key twice sends a line there).
func TestObjectIntoTextKeepsOrder(t *testing.T) {
	t.Parallel()
	s := scanSchema(t)
	plain, rescuing := newLineReader(s, "", "/in/f.json"), newLineReader(s, "_rescued", "/in/f.json")
	const want = `{"b":1,"a":[2,"<x>",{"z":null,"y":1.50}]}`
	for _, line := range []string{
		`{"s":{"b":1,"a":[2,"<x>",{"z":null,"y":1.50}]}}`,
		`{"s": { "b" : 1, "a" : [ 2, "<x>", {"z":null , "y":1.50} ] }, "unknown": 1}`,
		`{"id":1,"id":2,"s":{"b":1,"a":[2,"\u003cx>",{"z":null,"y":1.50}]}}`,
	} {
		for _, lr := range []*lineReader{plain, rescuing} {
			row, ok, bad := lr.parse([]byte(line), 1)
			if i := s.Index("s"); !ok || len(bad) != 0 || row[i] != want {
				t.Errorf("line %s (rescued column %q): s = %v (ok %v, bad %v), want %s", line, lr.rescued, row[i], ok, bad, want)
			}
		}
	}
}

// TestKeyWord: the word keyWord makes of a column name is the name's JSON text as a field name
// (quotes included) in its first bytes, little-endian, and its mask covers those bytes; a name
// whose text is longer than 8 bytes, or that JSON would escape, or that is not ASCII, gets none.
func TestKeyWord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		word, mask uint64
	}{
		{"id", uint64('"') | uint64('i')<<8 | uint64('d')<<16 | uint64('"')<<24, 0xffffffff},
		{"", uint64('"') | uint64('"')<<8, 0xffff},
		{"abcdef", uint64('"') | uint64('a')<<8 | uint64('b')<<16 | uint64('c')<<24 | uint64('d')<<32 | uint64('e')<<40 | uint64('f')<<48 | uint64('"')<<56, ^uint64(0)},
		{"abcdefg", 0, 0},
		{`a"b`, 0, 0},
		{`a\b`, 0, 0},
		{"a\tb", 0, 0},
		{"é", 0, 0},
	} {
		if w, m := keyWord(tc.name); w != tc.word || m != tc.mask {
			t.Errorf("keyWord(%q) = %#x, %#x; want %#x, %#x", tc.name, w, m, tc.word, tc.mask)
		}
	}
}
