package flows

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
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

// TestIngestCompressedWithoutExtension: a compressed file whose name does not say so (a gzip file
// named .json, as downloads with a gzip content encoding are saved) is not read as text, which
// gives a row of garbage per "line": it is one malformed record whose WARN names the compression
// and the extension that has it decompressed; a format that is not read (bzip2) says so. Text
// that merely starts with such letters ("BZh9,...") is read as usual.
func TestIngestCompressedWithoutExtension(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: csv
      schema: "id STRING, name STRING"
`)
	var zst bytes.Buffer
	zw, err := zstd.NewWriter(&zst)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write([]byte("3,c\n"))
	zw.Close()
	write(t, filepath.Join(dir, "landing", "a.csv"), gzipped(t, "1,a\n2,b\n"))
	write(t, filepath.Join(dir, "landing", "b.csv"), zst.Bytes())
	write(t, filepath.Join(dir, "landing", "c.csv.bz2"), []byte("BZh9\x17\x72\x45\x38\x50\x90\x00\x00\x00\x00"))
	write(t, filepath.Join(dir, "landing", "d.csv"), []byte("BZh9,x\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `null null`, `null null`, `null null`, `"BZh9" "x"`)
	for _, want := range []string{
		"a.csv:1: the file is gzip-compressed, though its name does not end in .gz (files are decompressed by extension); rename it so that it does, or land it decompressed",
		"b.csv:1: the file is Zstandard-compressed, though its name does not end in .zst",
		"c.csv.bz2:1: the file is bzip2-compressed, which is not read (only .gz and .zst files are decompressed); decompress it, or compress it with gzip or zstd",
	} {
		if !strings.Contains(rec.all(), want) {
			t.Errorf("events do not say %q:\n%s", want, rec.all())
		}
	}
	if m.BadRecords != 3 {
		t.Errorf("bad records %d, want 3", m.BadRecords)
	}
}
