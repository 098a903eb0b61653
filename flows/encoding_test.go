package flows

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// utf16LE returns text as UTF-16LE with its byte-order mark, as spreadsheet programs export
// "Unicode text".
func utf16LE(text string) []byte {
	out := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(text)) {
		out = binary.LittleEndian.AppendUint16(out, u)
	}
	return out
}

// TestIngestUTF16File: a file that starts with a UTF-16 (or UTF-32) byte-order mark is not read
// as UTF-8, which would give rows of garbage (for CSV, a header that names no column and a row
// of NULLs per line): it is one malformed record whose WARN names the encoding and the fix, the
// other files are read, and schema inference takes no columns from it. Compressed, the same.
func TestIngestUTF16File(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: csv
      schema: "id BIGINT, name STRING"
      options: {header: true}
`)
	write(t, filepath.Join(dir, "landing", "a.csv"), []byte("id,name\n1,a\n"))
	write(t, filepath.Join(dir, "landing", "b.csv"), utf16LE("id,name\r\n2,b\r\n3,c\r\n"))
	write(t, filepath.Join(dir, "landing", "c.csv.gz"), gzipped(t, string(utf16LE("id,name\r\n4,d\r\n"))))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 "a"`, `null null`, `null null`)
	if m.BadRecords != 2 || !strings.Contains(rec.all(), "b.csv:1: the file is UTF-16LE text (it starts with a UTF-16LE byte-order mark), which the csv reader does not read; convert it to UTF-8") ||
		!strings.Contains(rec.all(), "c.csv.gz:1: the file is UTF-16LE text") || strings.Contains(rec.all(), "header names none") {
		t.Errorf("bad %d, events:\n%s", m.BadRecords, rec.all())
	}

	q, _ := inferPipeline(t, "      format: json\n", map[string]string{
		"a.json": `{"id": 1}` + "\n",
		"b.json": string(utf16LE(`{"name": "x"}` + "\n")),
	})
	if got := q.Dataset("raw").Schema.DDL(); got != "id BIGINT, _rescued_data STRING" {
		t.Fatalf("inferred schema %s", got)
	}
}
