package flows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"tributary/schema"
)

// TestJSONInvalidUTF8: JSON input is UTF-8 (RFC 8259), and Spark's JSON reader decodes it so
// (Jackson's UTF-8 parser), failing the record at a byte that is not UTF-8 (a Latin-1 "é" in a
// file said to be UTF-8) rather than replacing it by U+FFFD: in JSON lines the line is a
// malformed record (NULLs, its text rescued under _corrupt_record, the reason naming the byte,
// its column and the fix) and the lines around it are read; in a multiline file the rest of the
// file from that byte's line is, as for a syntax error. A U+FFFD written in the file is text.
func TestJSONInvalidUTF8(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id BIGINT, name STRING")
	if err != nil {
		t.Fatal(err)
	}
	lineText := "{\"id\": 1, \"name\": \"Jos\xe9\"}\n{\"id\": 2, \"name\": \"\ufffd ok\"}\n{\"id\": 3, \"n\xe9\": 1}\n{\"id\": 4, \"x\": [\"\xff\"]}\n{\"id\": 5}\n"
	wantLines := []string{
		`1: null null malformed: byte 0xE9 at column 23 is not valid UTF-8`,
		"2: 2 \"\ufffd ok\"",
		`3: null null malformed: byte 0xE9 at column 13 is not valid UTF-8`,
		`4: null null malformed: byte 0xFF at column 18 is not valid UTF-8`,
		`5: 5 null`,
	}
	multiText := "[\n{\"id\": 1, \"name\": \"a\"},\n{\"id\": 2,\n \"name\": \"Jos\xe9\"},\n{\"id\": 3}\n]\n"
	wantMulti := []string{`2: 1 "a"`, `4: null null malformed, the rest of the file: byte 0xE9 is not valid UTF-8`}
	for _, tc := range []struct {
		name, text string
		want       []string
		read       func(lr *lineReader, text string, fn rowFunc) error
	}{
		{"JSON lines", lineText, wantLines, func(lr *lineReader, text string, fn rowFunc) error {
			return eachJSONLine(lr, strings.NewReader(text), nil, fn)
		}},
		{"multiline", multiText, wantMulti, func(lr *lineReader, text string, fn rowFunc) error {
			return eachJSONValue(lr, strings.NewReader(text), fn, nil)
		}},
	} {
		for _, rescued := range []string{"", "_rescued_data"} {
			lr := newLineReader(s, rescued, "/in/f.json")
			var got []string
			err := tc.read(lr, tc.text, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
				out := fmt.Sprintf("%d: %s %s", lineNo, asJSON(row[0]), asJSON(row[1]))
				if !parsed {
					out += " malformed"
					if bad[0].RestOfFile {
						out += ", the rest of the file"
					}
					reason, _, _ := strings.Cut(bad[0].Reason, ", and JSON input is read as UTF-8")
					out += ": " + reason
					const fix = "is read as UTF-8, as Spark's JSON reader reads it: the record is malformed; convert the file to UTF-8"
					if !strings.Contains(bad[0].Reason, fix) {
						t.Errorf("%s: reason %q does not say %q", tc.name, bad[0].Reason, fix)
					}
					if rescued != "" {
						var m map[string]string
						if err := json.Unmarshal([]byte(row[2].(string)), &m); err != nil || m["_corrupt_record"] == "" {
							t.Errorf("%s: rescued %v, want the record's text under _corrupt_record", tc.name, row[2])
						}
					}
				} else if rescued != "" && row[0] == int64(4) {
					t.Errorf("%s: line 4 read", tc.name)
				}
				got = append(got, out)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%s (rescued %q): rows\n%s\nwant\n%s", tc.name, rescued, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		}
	}
}

// asJSON prints a row value as JSON.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
