package flows

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"tributary/schema"
)

// The scanner reads the common JSON line, an object of primitive values whose fields are the
// schema's columns, in one pass over its text (JSON as in RFC 8259), without the map and the
// boxed values of encoding/json. Whatever it does not settle itself it leaves to
// lineReader.parseDecoded, which defines the results: a line that is not a JSON object or not
// valid JSON, a string that is not valid UTF-8 included (parseDecoded gives the reason), a field
// twice in one object (encoding/json keeps the last), a field to rescue (semantics.md
// "Ingestion"), or nesting deeper than maxScanDepth.

// maxScanDepth bounds the nesting of the values the scanner reads itself (the line's object is
// depth 1); a deeper line is left to parseDecoded (encoding/json allows 10000 levels).
const maxScanDepth = 100

// scan reads line, one JSON object in the common case, into row (r.width() NULLs): each field of
// the schema converted to its column's Go value as schema.FromJSONReader converts the value
// encoding/json decodes, and bad, the values that did not fit, sorted by column name. Strings
// without escapes share line's memory. done is false, with row partly filled, when the line is
// left to parseDecoded (see above); with a rescued-data column that is also the case for a
// field not in the schema and for a value that does not fit. Values are boxed in slab (nil:
// the ordinary way).
func (r *lineReader) scan(line string, lineNo int64, row []any, slab *boxSlab) (bad []badValue, done bool) {
	return r.scanTo(line, lineNo, row, nil, 0, slab)
}

// scanTo is scan putting the values into row or, when cols is not nil, straight into row at of
// cols (blockColumns.open; row is then unused): the same values, unboxed (blockColumns.put).
// With done false the columns' row at holds some of the line's values: the caller drops it.
func (r *lineReader) scanTo(line string, lineNo int64, row []any, cols *blockColumns, at int, slab *boxSlab) (bad []badValue, done bool) {
	s, fields := line, r.schema.Fields
	i := skipSpace(s, 0)
	if i == len(s) || s[i] != '{' {
		return nil, false
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return nil, skipSpace(s, i+1) == len(s)
	}
	var seen uint64     // columns 0..63 already read from this object
	var seenWide []bool // all columns, for a schema of more than 64
	next := 0           // the column after the previous field's: most lines list them in order
	for {
		if i == len(s) || s[i] != '"' {
			return nil, false
		}
		col := -1
		var key string
		if r.inOrder && next < len(fields) && r.keyMask[next] != 0 && len(s)-i >= 8 &&
			binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))&r.keyMask[next] == r.keyWord[next] {
			// The field that follows the previous one, its name written as is: one load.
			col = next
			i += bits.OnesCount64(r.keyMask[next]) / 8
		} else {
			var end int
			var ok bool
			if key, end, ok = scanString(s, i); !ok {
				return nil, false
			}
			i = end
			if r.inOrder && next < len(fields) && fields[next].Name == key {
				col = next
			} else if c, known := r.index[key]; known {
				col = c
			}
		}
		i = skipSpace(s, i)
		if i == len(s) || s[i] != ':' {
			return nil, false
		}
		i = skipSpace(s, i+1)
		if col < 0 {
			if r.rescued != "" {
				return nil, false
			}
			r.noteField(key)
			if i = skipValue(s, i, 2); i < 0 {
				return nil, false
			}
		} else {
			if col < 64 {
				if seen&(1<<col) != 0 {
					return nil, false
				}
				seen |= 1 << col
			} else {
				if seenWide == nil {
					seenWide = make([]bool, len(fields))
				}
				if seenWide[col] {
					return nil, false
				}
				seenWide[col] = true
			}
			next = col + 1
			var v, nested any
			var err error
			if cols != nil {
				i, nested, err = cols.put(col, &fields[col].Type, s, i, at, slab)
			} else {
				i, v, nested, err = scanValue(&fields[col].Type, s, i, slab)
			}
			if i < 0 {
				return nil, false
			}
			if nested != nil && r.nestedCols != nil && r.nestedCols[col] {
				r.noteNested(col, nested)
			}
			if err != nil {
				if r.rescued != "" {
					return nil, false
				}
				bad = append(bad, badValue{Line: lineNo, Column: fields[col].Name, Reason: err.Error()})
			} else if cols == nil {
				row[col] = v
			}
		}
		i = skipSpace(s, i)
		if i == len(s) {
			return nil, false
		}
		if s[i] == '}' {
			break
		}
		if s[i] != ',' {
			return nil, false
		}
		i = skipSpace(s, i+1)
	}
	if skipSpace(s, i+1) != len(s) {
		return nil, false
	}
	sortBad(bad)
	return bad, true
}

// scanValue reads the JSON value at s[i:] and converts it to type t as schema.FromJSONReader
// converts what encoding/json (with UseNumber) decodes from it. end is the index after the value,
// or -1 when s[i:] does not start with a valid value (or one nested deeper than maxScanDepth);
// err says why the value does not fit t, in schema.FromJSONReader's words. Primitive values are
// boxed in slab. decoded is what encoding/json decoded of an object or array (nil for other
// values), for lineReader.noteNested.
func scanValue(t *schema.Type, s string, i int, slab *boxSlab) (end int, v, decoded any, err error) {
	if i == len(s) {
		return -1, nil, nil, nil
	}
	switch c := s[i]; {
	case c == '"':
		str, end, ok := scanString(s, i)
		if !ok {
			return -1, nil, nil, nil
		}
		v, err = textValue(t, str, slab)
		return end, v, nil, err
	case c == '-' || c >= '0' && c <= '9':
		if t.Kind == schema.Long {
			if n, end, ok := scanSmallInt(s, i); ok {
				return end, slab.int64(n), nil, nil
			}
		}
		end, isInt := scanNumber(s, i)
		if end < 0 {
			return nonNumericScan(t, s, i, slab) // -Infinity, -INF
		}
		v, err = numberValue(t, s[i:end], isInt, slab)
		return end, v, nil, err
	case c == 'N' || c == 'I' || c == '+':
		return nonNumericScan(t, s, i, slab)
	case c == 't' || c == 'f':
		b := c == 't'
		lit := "false"
		if b {
			lit = "true"
		}
		if !strings.HasPrefix(s[i:], lit) {
			return -1, nil, nil, nil
		}
		v, err = boolValue(t, b)
		return i + len(lit), v, nil, err
	case c == 'n':
		if !strings.HasPrefix(s[i:], "null") {
			return -1, nil, nil, nil
		}
		v, err = schema.FromJSONReader(*t, nil)
		return i + 4, v, nil, err
	case c == '{' || c == '[':
		end := skipValue(s, i, 2)
		if end < 0 {
			return -1, nil, nil, nil
		}
		dec := json.NewDecoder(strings.NewReader(s[i:end]))
		dec.UseNumber()
		var x any
		loose := false
		if dec.Decode(&x) != nil {
			// A non-numeric number token inside (NaN, Infinity), which encoding/json refuses.
			var ok bool
			if x, ok = decodeJSONText(s[i:end]); !ok {
				return -1, nil, nil, nil // not expected once skipValue accepted it; parseDecoded says why
			}
			loose = true
		}
		if t.Kind == schema.String && !t.IsBinary() {
			// The value's own text, its members in their order (a map would sort them).
			valueText := schema.JSONValueText
			if loose {
				valueText = looseValueText
			}
			if text, ok := valueText(s[i:end]); ok {
				return end, text, x, nil
			}
		}
		v, err = schema.FromJSONReader(*t, x)
		return end, v, x, err
	}
	return -1, nil, nil, nil
}

// nonNumericScan is scanValue for a value at s[i:] that is no JSON number: a non-numeric number
// token (nonNumericTokens) converted by nonNumericValue, or end -1 when there is none.
func nonNumericScan(t *schema.Type, s string, i int, slab *boxSlab) (end int, v, decoded any, err error) {
	if end = nonNumericEnd(s, i); end < 0 {
		return -1, nil, nil, nil
	}
	v, err = nonNumericValue(t, s[i:end], slab)
	return end, v, nil, err
}

// textValue converts a JSON string, already unquoted, to type t as schema.FromJSONReader does.
func textValue(t *schema.Type, str string, slab *boxSlab) (any, error) {
	switch t.Kind {
	case schema.String:
		if t.IsBinary() {
			break // base64: schema.FromJSONReader decodes it
		}
		return slab.string(str), nil
	case schema.DecimalKind:
		if len(str) > 0 && (str[0] <= ' ' || str[len(str)-1] <= ' ' || str[0] >= utf8.RuneSelf || str[len(str)-1] >= utf8.RuneSelf) {
			break // white space around the number, maybe: schema.FromJSONReader decides
		}
		str = schema.DecimalText(str) // "1,000.50": as Spark's JSON reader parses a string
		// A wide one is boxed on its own, not in the slab's words.
		if t.WideDecimal() {
			d, err := schema.ParseDecimal128(str, *t)
			if err != nil {
				return nil, err
			}
			return d, nil
		}
		d, err := schema.ParseDecimal(str, *t)
		if err != nil {
			return nil, err
		}
		return slab.decimal(d), nil
	case schema.DateKind:
		d, err := schema.ParseReaderDate(str)
		if err != nil {
			return nil, err
		}
		return slab.date(d), nil
	case schema.TimestampKind:
		parse := schema.ParseReaderTimestamp
		if t.IsNTZ() {
			parse = schema.ParseTimestampNTZ
		}
		ts, err := parse(str)
		if err != nil {
			return nil, err
		}
		return slab.timestamp(ts), nil
	}
	return schema.FromJSONReader(*t, str)
}

// numberValue converts a JSON number, raw being its text (valid by RFC 8259 §6; isInt: without
// fraction or exponent), to type t as schema.FromJSONReader converts json.Number(raw). Values it
// does not convert itself, and every error, are schema.FromJSONReader's.
func numberValue(t *schema.Type, raw string, isInt bool, slab *boxSlab) (any, error) {
	switch t.Kind {
	case schema.Long:
		if n, ok := smallInt(raw, isInt); ok {
			return slab.int64(n), nil
		}
	case schema.Integer:
		if n, ok := smallInt(raw, isInt); ok && fitsInteger(t, n) {
			return slab.int32(int32(n)), nil
		}
	case schema.String:
		if t.IsBinary() {
			break // not a base64 string: schema.FromJSONReader says why
		}
		return slab.string(raw), nil
	case schema.Double:
		if f, err := t.ParseFloat(raw); err == nil {
			return slab.float64(t.Float(f)), nil
		}
	case schema.DecimalKind:
		if t.WideDecimal() { // boxed on its own: not in the slab's words
			d, err := schema.ParseDecimal128(raw, *t)
			if err != nil {
				return nil, err
			}
			return d, nil
		}
		d, err := schema.ParseDecimal(raw, *t)
		if err != nil {
			return nil, err
		}
		return slab.decimal(d), nil
	case schema.TimestampKind:
		if t.IsNTZ() {
			break // not a TIMESTAMP_NTZ: schema.FromJSONReader says why
		}
		ts, err := schema.EpochSeconds(raw)
		if err != nil {
			return nil, err
		}
		return slab.timestamp(ts), nil
	}
	return schema.FromJSONReader(*t, json.Number(raw))
}

// boolValue converts a JSON true or false to type t as schema.FromJSONReader does.
func boolValue(t *schema.Type, b bool) (any, error) {
	switch t.Kind {
	case schema.Boolean:
		return b, nil
	case schema.String:
		if t.IsBinary() {
			break // not a base64 string: schema.FromJSONReader says why
		}
		return strconv.FormatBool(b), nil
	}
	return schema.FromJSONReader(*t, b)
}

// smallInt reads a JSON integer of at most 18 digits (so it fits an int64 exactly); ok is false
// for anything else.
func smallInt(raw string, isInt bool) (n int64, ok bool) {
	if !isInt {
		return 0, false
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 18 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
	}
	if raw[0] == '-' {
		n = -n
	}
	return n, true
}

// fitsInteger reports whether n is in the range of an INT column (SMALLINT or TINYINT when the
// column's Storage says so), as schema.FromJSON checks it.
func fitsInteger(t *schema.Type, n int64) bool {
	lo, hi := t.IntRange()
	return lo <= n && n <= hi
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space
// (RFC 8259 §2: space, tab, line feed, carriage return), or len(s).
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// plainByte marks the bytes that stand for themselves inside a JSON string: ASCII other than
// the quote, the backslash and the control characters (RFC 8259 §7).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanStringEnd checks the JSON string that starts with the quote at s[i] (RFC 8259 §7) and
// returns the index after its closing quote, or -1 when it is not valid (an unknown escape, a
// control character, no closing quote). escaped: it holds an escape; other: it holds a byte
// outside ASCII.
func scanStringEnd(s string, i int) (end int, escaped, other bool) {
	j := i + 1
	for {
		for j < len(s) && plainByte[s[j]] {
			j++
		}
		if j == len(s) {
			return -1, false, false
		}
		switch c := s[j]; {
		case c == '"':
			return j + 1, escaped, other
		case c == '\\':
			escaped = true
			if j+1 == len(s) {
				return -1, false, false
			}
			switch s[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s) || hexValue(s[j+2:j+6]) < 0 {
					return -1, false, false
				}
				j += 6
			default:
				return -1, false, false
			}
		case c < 0x20:
			return -1, false, false
		default: // c >= 0x80
			other = true
			j++
		}
	}
}

// scanString reads the JSON string that starts with the quote at s[i]: its value, decoded as
// encoding/json decodes it (escapes resolved, a \u escape of half a surrogate pair replaced by
// U+FFFD), the index after it, and ok false when it is not valid, or not valid UTF-8 (a line
// that parseDecoded makes a malformed record, as Spark's JSON reader does). The value is a part
// of s when the string holds no escape.
func scanString(s string, i int) (str string, end int, ok bool) {
	end, escaped, other := scanStringEnd(s, i)
	if end < 0 {
		return "", -1, false
	}
	str = s[i+1 : end-1]
	if other && !utf8.ValidString(str) {
		return "", -1, false
	}
	if escaped {
		str = unquote(str)
	}
	return str, end, true
}

// skipString is scanStringEnd, with -1 also for a string that is not valid UTF-8 (scanString).
func skipString(s string, i int) int {
	end, _, other := scanStringEnd(s, i)
	if other && end >= 0 && !utf8.ValidString(s[i+1:end-1]) {
		return -1
	}
	return end
}

// unquote decodes the text between the quotes of a JSON string already checked by
// scanStringEnd, the way encoding/json's unquoteBytes does.
func unquote(s string) string {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch e := s[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hexValue(s[r+2 : r+6])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hexValue(s[r+2:r+6])); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRuneInString(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return string(b)
}

// hexValue is the value of four hex digits, or -1 when h is not four hex digits.
func hexValue(h string) rune {
	if len(h) != 4 {
		return -1
	}
	var v rune
	for i := 0; i < 4; i++ {
		c := h[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		v = v*16 + rune(c)
	}
	return v
}

// scanNumber checks the JSON number at s[i:] (RFC 8259 §6: a minus, an integer part without
// leading zeros, an optional fraction and exponent) and returns the index after it, or -1, and
// whether it is an integer (no fraction, no exponent).
func scanNumber(s string, i int) (end int, isInt bool) {
	j := i
	if s[j] == '-' {
		j++
	}
	switch {
	case j == len(s):
		return -1, false
	case s[j] == '0':
		j++
	case '1' <= s[j] && s[j] <= '9':
		j = skipDigits(s, j+1)
	default:
		return -1, false
	}
	isInt = true
	if j < len(s) && s[j] == '.' {
		isInt = false
		k := skipDigits(s, j+1)
		if k == j+1 {
			return -1, false
		}
		j = k
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		isInt = false
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := skipDigits(s, j)
		if k == j {
			return -1, false
		}
		j = k
	}
	return j, isInt
}

// scanSmallInt reads the JSON integer at s[i:] in one pass, when it is one scanNumber and
// smallInt take in two: -?(0|[1-9][0-9]*) of at most 18 digits, not followed by a fraction or an
// exponent. end is the index after it; ok is false for anything else (scanNumber decides then).
func scanSmallInt(s string, i int) (n int64, end int, ok bool) {
	j := i
	neg := s[j] == '-'
	if neg {
		j++
	}
	start := j
	for j < len(s) {
		d := s[j] - '0'
		if d > 9 {
			break
		}
		n = n*10 + int64(d)
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || (digits > 1 && s[start] == '0') {
		return 0, 0, false
	}
	if j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E') {
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	return n, j, true
}

func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// skipValue checks the JSON value at s[i:], at nesting depth depth, and returns the index after
// it, or -1 when it is not valid (a string that is not valid UTF-8 included) or nests deeper than
// maxScanDepth.
func skipValue(s string, i, depth int) int {
	if i == len(s) {
		return -1
	}
	switch c := s[i]; {
	case c == '"':
		return skipString(s, i)
	case c == '-' || c >= '0' && c <= '9':
		if end, _ := scanNumber(s, i); end >= 0 {
			return end
		}
		return nonNumericEnd(s, i) // -Infinity, -INF
	case c == 'N' || c == 'I' || c == '+':
		return nonNumericEnd(s, i)
	case c == 't':
		return literalEnd(s, i, "true")
	case c == 'f':
		return literalEnd(s, i, "false")
	case c == 'n':
		return literalEnd(s, i, "null")
	case c == '{' || c == '[':
		if depth > maxScanDepth {
			return -1
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == closing {
			return i + 1
		}
		for {
			if c == '{' {
				if i == len(s) || s[i] != '"' {
					return -1
				}
				if i = skipString(s, i); i < 0 {
					return -1
				}
				if i = skipSpace(s, i); i == len(s) || s[i] != ':' {
					return -1
				}
				i = skipSpace(s, i+1)
			}
			if i = skipValue(s, i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(s, i)
			if i == len(s) {
				return -1
			}
			if s[i] == closing {
				return i + 1
			}
			if s[i] != ',' {
				return -1
			}
			i = skipSpace(s, i+1)
		}
	}
	return -1
}

func literalEnd(s string, i int, lit string) int {
	if !strings.HasPrefix(s[i:], lit) {
		return -1
	}
	return i + len(lit)
}
