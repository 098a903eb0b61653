package flows

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"tributary/schema"
)

// Spark's JSON reader parses with Jackson's JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS on (its
// allowNonNumericNumbers option, true by default), under which Jackson (ReaderBasedJsonParser
// and UTF8StreamJsonParser, _handleOddValue and _handleInvalidNumberStart) reads six unquoted
// tokens where a value may stand as floating-point numbers: NaN, Infinity, +Infinity,
// -Infinity, +INF and -INF, spelt so and followed by no letter or digit. Anything else (nan,
// Inf, INF, -NaN, NaNx) it refuses, and the line is malformed. RFC 8259 has none of them, so
// encoding/json refuses them too: the functions here read the lines that hold one.

// nonNumericTokens are the tokens Jackson reads as numbers under ALLOW_NON_NUMERIC_NUMBERS.
var nonNumericTokens = [...]string{"NaN", "Infinity", "+Infinity", "-Infinity", "+INF", "-INF"}

// nonNumericEnd returns the index after the non-numeric number token at s[i:] (nonNumericTokens),
// or -1 when there is none. What follows the token is for the caller to check: a letter or digit
// there makes the line malformed, as it is for Jackson, since no JSON value may follow a value.
func nonNumericEnd(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case 'N', 'I', '+', '-':
		for _, tok := range nonNumericTokens {
			if strings.HasPrefix(s[i:], tok) {
				return i + len(tok)
			}
		}
	}
	return -1
}

// nonNumericValue converts the non-numeric number token tok to type t as Spark's JSON reader
// does (JacksonParser.makeConverter; the token is a VALUE_NUMBER_FLOAT): a DOUBLE or FLOAT
// column takes NaN or the infinity (getDoubleValue, getFloatValue), a STRING column the token as
// written, and every other type refuses it (a value that does not fit: BIGINT, INT, SMALLINT,
// TINYINT and TIMESTAMP take VALUE_NUMBER_INT only, DECIMAL's getDecimalValue fails on it).
func nonNumericValue(t *schema.Type, tok string, slab *boxSlab) (any, error) {
	if t.Kind == schema.Double || t.Kind == schema.String && !t.IsBinary() {
		return numberValue(t, tok, false, slab)
	}
	return schema.FromJSONReader(*t, json.Number(tok))
}

// maxDecodeDepth is the nesting encoding/json allows, which decodeLoose allows too.
const maxDecodeDepth = 10000

// decodeJSONText decodes s, one JSON value with nothing but white space around it, as
// encoding/json (with UseNumber) decodes it into an any, but also reads a non-numeric number
// token (nonNumericTokens), as a json.Number of its text. ok is false when s is not such a value
// (or holds a string that is not valid UTF-8, which the callers have refused before). It is the
// slow way, for the lines encoding/json refuses.
func decodeJSONText(s string) (v any, ok bool) {
	v, end := decodeLoose(s, skipSpace(s, 0), 1, nil)
	if end < 0 || skipSpace(s, end) != len(s) {
		return nil, false
	}
	return v, true
}

// looseValueText is schema.JSONValueText for raw, the text of an object or array that holds a
// non-numeric number token: its compact text, members in their order, strings as
// schema.JSONValueText writes them, numbers and those tokens as written.
func looseValueText(raw string) (string, bool) {
	var b strings.Builder
	b.Grow(len(raw))
	_, end := decodeLoose(raw, skipSpace(raw, 0), 1, &b)
	if end < 0 || skipSpace(raw, end) != len(raw) {
		return "", false
	}
	return b.String(), true
}

// decodeLoose reads the value at s[i:] (decodeJSONText) at nesting depth depth and returns it
// and the index after it, or -1; with text it also writes the value's compact text there
// (looseValueText).
func decodeLoose(s string, i, depth int, text *strings.Builder) (v any, end int) {
	if i >= len(s) {
		return nil, -1
	}
	switch c := s[i]; {
	case c == '"':
		str, end, ok := scanString(s, i)
		if !ok {
			return nil, -1
		}
		if text != nil {
			quoted, ok := schema.JSONValueText(s[i:end])
			if !ok {
				return nil, -1
			}
			text.WriteString(quoted)
		}
		return str, end
	case c == '-' || c >= '0' && c <= '9' || c == 'N' || c == 'I' || c == '+':
		end, _ := scanNumber(s, i)
		if end < 0 {
			end = nonNumericEnd(s, i)
		}
		if end < 0 {
			return nil, -1
		}
		if text != nil {
			text.WriteString(s[i:end])
		}
		return json.Number(s[i:end]), end
	case c == 't' || c == 'f' || c == 'n':
		lit := "null"
		switch c {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		}
		end := literalEnd(s, i, lit)
		if end < 0 {
			return nil, -1
		}
		if text != nil {
			text.WriteString(lit)
		}
		switch c {
		case 't':
			return true, end
		case 'f':
			return false, end
		}
		return nil, end
	case c == '{' || c == '[':
		if depth > maxDecodeDepth {
			return nil, -1
		}
		if text != nil {
			text.WriteByte(c)
		}
		closing := byte('}')
		var obj map[string]any
		var arr []any
		if c == '[' {
			closing = ']'
			arr = []any{}
		} else {
			obj = map[string]any{}
		}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == closing {
			if text != nil {
				text.WriteByte(closing)
			}
			if c == '[' {
				return arr, i + 1
			}
			return obj, i + 1
		}
		for n := 0; ; n++ {
			if n > 0 && text != nil {
				text.WriteByte(',')
			}
			var key string
			if c == '{' {
				if i >= len(s) || s[i] != '"' {
					return nil, -1
				}
				var x any
				if x, i = decodeLoose(s, i, depth+1, text); i < 0 {
					return nil, -1
				}
				key = x.(string)
				if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
					return nil, -1
				}
				if text != nil {
					text.WriteByte(':')
				}
				i = skipSpace(s, i+1)
			}
			var x any
			if x, i = decodeLoose(s, i, depth+1, text); i < 0 {
				return nil, -1
			}
			if c == '{' {
				obj[key] = x // the last of a key given twice, as encoding/json keeps it
			} else {
				arr = append(arr, x)
			}
			if i = skipSpace(s, i); i >= len(s) {
				return nil, -1
			}
			if s[i] == closing {
				if text != nil {
					text.WriteByte(closing)
				}
				if c == '[' {
					return arr, i + 1
				}
				return obj, i + 1
			}
			if s[i] != ',' {
				return nil, -1
			}
			i = skipSpace(s, i+1)
		}
	}
	return nil, -1
}

// looseRawFields returns the text of each field's value of line, a JSON object that
// decodeJSONText reads (the last of a field given twice), for the STRING columns given an
// object or array (schema.JSONValueText); nil when line is not such an object.
func looseRawFields(line string) map[string]string {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil
	}
	fields := map[string]string{}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return fields
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return nil
		}
		key, end, ok := scanString(line, i)
		if !ok {
			return nil
		}
		if i = skipSpace(line, end); i >= len(line) || line[i] != ':' {
			return nil
		}
		i = skipSpace(line, i+1)
		end = skipValue(line, i, 2)
		if end < 0 {
			return nil
		}
		fields[key] = line[i:end]
		if i = skipSpace(line, end); i >= len(line) {
			return nil
		}
		if line[i] == '}' {
			return fields
		}
		if line[i] != ',' {
			return nil
		}
		i = skipSpace(line, i+1)
	}
}

// quoteNonNumeric returns v, a value decodeJSONText decoded, with each non-numeric number token
// made a JSON string of its text, which encoding/json can write (it refuses such a json.Number):
// the rescued data column holds a value so, as Tributary writes NaN and the infinities in JSON
// output as strings.
func quoteNonNumeric(v any) any {
	switch x := v.(type) {
	case json.Number:
		if nonNumericEnd(string(x), 0) == len(x) {
			return string(x)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = quoteNonNumeric(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for k, e := range x {
			out[k] = quoteNonNumeric(e)
		}
		return out
	}
	return v
}

// validLoose reports whether line is one JSON value as decodeJSONText reads one.
func validLoose(line string) bool {
	_, ok := decodeJSONText(line)
	return ok
}

// looseArray returns the elements' text of line, a JSON array with nothing but white space
// after it whose values skipValue accepts (a non-numeric number token among them).
func looseArray(line string) (elems []json.RawMessage, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '[' {
		return nil, false
	}
	end := skipValue(line, i, 1)
	if end < 0 || skipSpace(line, end) != len(line) {
		return nil, false
	}
	for i = skipSpace(line, i+1); line[i] != ']'; {
		e := skipValue(line, i, 2)
		elems = append(elems, json.RawMessage(line[i:e]))
		if i = skipSpace(line, e); line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	return elems, true
}

// cutLoose is cutJSON for a line that may hold non-numeric number tokens: each one where a
// value starts is read as 0, and the line ends where a token is cut (`{"d": -Infin`).
func cutLoose(line string) bool {
	b := make([]byte, 0, len(line))
	inString := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inString:
			b = append(b, c)
			if c == '\\' && i+1 < len(line) {
				i++
				b = append(b, line[i])
			} else if c == '"' {
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case (c == 'N' || c == 'I' || c == '+' || c == '-') && valueStart(b):
			if end := nonNumericEnd(line, i); end > 0 {
				b = append(b, '0')
				i = end - 1
				continue
			}
			for _, tok := range nonNumericTokens {
				if len(line)-i < len(tok) && strings.HasPrefix(tok, line[i:]) {
					var v json.RawMessage
					return json.NewDecoder(bytes.NewReader(b)).Decode(&v) == io.ErrUnexpectedEOF
				}
			}
		}
		b = append(b, c)
	}
	var v json.RawMessage
	return json.NewDecoder(bytes.NewReader(b)).Decode(&v) == io.ErrUnexpectedEOF
}

// valueStart reports whether a value may start after b, text outside a string: b is white space
// or ends in ':', '[' or ',' and white space.
func valueStart(b []byte) bool {
	b = bytes.TrimRight(b, " \t\r\n")
	return len(b) == 0 || b[len(b)-1] == ':' || b[len(b)-1] == '[' || b[len(b)-1] == ','
}
