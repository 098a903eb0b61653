package flows

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"tributary/spec"
)

func newMultiline(t *testing.T, mode string) (*spec.Pipeline, string) {
	t.Helper()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING"
      options: {multiline: true}
      mode: `+mode+`
`)
	return p, filepath.Join(dir, "landing")
}

// TestJSONMultiline: with multiline, a file holding a top-level array of objects, or
// pretty-printed objects one after another, gives one row per object (nested values kept as
// JSON text in a STRING column); each row records the line its object starts on; an element
// that is not an object is a malformed record of NULLs.
func TestJSONMultiline(t *testing.T) {
	t.Parallel()
	p, landing := newMultiline(t, "permissive")
	write(t, filepath.Join(landing, "a.json"), []byte("\xEF\xBB\xBF[\n  {\"id\": 1,\n   \"name\": \"a\"},\n  {\"id\": 2, \"name\": {\"first\": \"b\"}},\n  7\n]\n"))
	write(t, filepath.Join(landing, "b.json"), []byte("{\n  \"id\": 3\n}\n\n{\n  \"id\": 4,\n  \"name\": \"line\\nbreak\"\n}\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 "a"`, `2 "{\"first\":\"b\"}"`, `null null`, `3 null`, `4 "line\nbreak"`)
	if m.BadRecords != 1 || !strings.Contains(rec.all(), "a.json:5: the line is a JSON number, not a JSON object") {
		t.Errorf("bad %d, events:\n%s", m.BadRecords, rec.all())
	}
	o, err := readOffsets(CheckpointDir(p.Storage, "raw"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(o.Files[0].Lines, o.Files[1].Lines); got != "[[2 1] [4 2]] [[1 1] [5 1]]" {
		t.Errorf("lines %v, want a.json 2, 4, 5 and b.json 1, 5", got)
	}
}

// TestJSONMultilineMalformed: a file that stops being valid JSON keeps the records before the
// failure and gives one malformed record (permissive), nothing more (dropmalformed), or fails
// the update naming the file (failfast).
func TestJSONMultilineMalformed(t *testing.T) {
	t.Parallel()
	input := []byte("[{\"id\": 1},\n {\"id\": 2,\n  \"name\": }]\n")
	// The WARN says the rest of the file is the malformed record, not a line, and how to read it.
	for _, tc := range []struct{ mode, want, err, warn string }{
		{"permissive", "1 null,null null", "", "a.json:3: the file is not valid JSON (invalid character '}' looking for beginning of value); the rows before this line are kept and the rest of the file becomes a row of NULLs (mode: permissive; the dataset's expectations still apply to it). A file is read once: to read the rest, land the complete (or corrected) file under a new name"},
		{"dropmalformed", "1 null", "", "a.json:3: the file is not valid JSON (invalid character '}' looking for beginning of value); the rows before this line are kept and the rest of the file is dropped (mode: dropmalformed)"},
		{"failfast", "", "a.json:3: the file is not valid JSON", ""},
	} {
		p, landing := newMultiline(t, tc.mode)
		write(t, filepath.Join(landing, "a.json"), input)
		_, rec, err := ingest(t, p)
		if !strings.Contains(rec.all(), tc.warn) {
			t.Errorf("%s: events\n%s\ndo not say %q", tc.mode, rec.all(), tc.warn)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: err %v, want %q", tc.mode, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rawRows(t, p), ","); got != tc.want {
			t.Errorf("%s: rows %s, want %s", tc.mode, got, tc.want)
		}
	}
}

// TestJSONMultilineTruncatedLine: a file that ends inside a value gives its malformed record at
// the line where that unfinished value starts, not at the line of the value before it, whether
// the values follow one another or are elements of an array.
func TestJSONMultilineTruncatedLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, input, warn string }{
		{"values", "{\"id\": 1}\n\n{\"id\": 2,\n \"name\": ", "a.json:3: the file is not valid JSON (unexpected EOF)"},
		{"array", "[{\"id\": 1}\n,\n  {\"id\": 2,\n \"name\": ", "a.json:3: the file is not valid JSON (unexpected EOF)"},
	} {
		p, landing := newMultiline(t, "permissive")
		write(t, filepath.Join(landing, "a.json"), []byte(tc.input))
		_, rec, err := ingest(t, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rec.all(), tc.warn) {
			t.Errorf("%s: events\n%s\ndo not say %q", tc.name, rec.all(), tc.warn)
		}
		if got := strings.Join(rawRows(t, p), ","); got != "1 null,null null" {
			t.Errorf("%s: rows %s, want 1 null,null null", tc.name, got)
		}
	}
}

// TestJSONMultilineCRLines: with multiline, lines ended by a bare CR (old Mac OS files) or CRLF
// count as lines, as the CSV and JSON-lines readers count them: each record is at the line it
// starts on, and so is a syntax error.
func TestJSONMultilineCRLines(t *testing.T) {
	t.Parallel()
	p, landing := newMultiline(t, "permissive")
	write(t, filepath.Join(landing, "a.json"), []byte("[\r  {\"id\": 1},\r\n  {\"id\": 2,\r   \"name\": \"b\"},\r\r  {\"id\": 3, \"name\": x}\r]\r"))
	_, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	o, err := readOffsets(CheckpointDir(p.Storage, "raw"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(o.Files[0].Lines); got != "[[2 2] [6 1]]" {
		t.Errorf("lines %v, want records at lines 2, 3 and the error at 6", got)
	}
	if !strings.Contains(rec.all(), "a.json:6: the file is not valid JSON") {
		t.Errorf("events:\n%s", rec.all())
	}
}
