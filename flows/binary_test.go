package flows

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tributary/schema"
)

// TestJSONBinary: a JSON string fills a BINARY column with its base64-decoded bytes, as Spark's
// JSON reader does ("AQL/" is 01 02 FF); a string that is not base64 (no padding, other
// characters) or a value that is no string does not fit: NULL, its text rescued, a WARN naming
// file, line and column.
func TestJSONBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, payload BINARY"
      rescued_data_column: _rescued
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "payload": "AQL/"}
{"id": 2, "payload": ""}
{"id": 3, "payload": null}
{"id": 4, "payload": "aGVsbG8="}
{"id": 5, "payload": "AQI"}
{"id": 6, "payload": 12}
{"id": 7, "payload": "AQL/\u0041Q=="}
`))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	snap, rows := readTable(t, p, "raw")
	if got := snap.Metadata.Schema.DDL(); got != "id BIGINT, payload BINARY, _rescued STRING" {
		t.Errorf("table schema %s", got)
	}
	want := []struct {
		payload any
		rescued string
	}{
		{"\x01\x02\xff", ""}, {"", ""}, {nil, ""}, {"hello", ""},
		{nil, `"payload":"AQI"`}, {nil, `"payload":12`}, {"\x01\x02\xff\x01", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if rows[i][1] != w.payload {
			t.Errorf("id %d: payload %q, want %q", i+1, rows[i][1], w.payload)
		}
		r, _ := rows[i][2].(string)
		if (w.rescued == "") != (rows[i][2] == nil) || !strings.Contains(r, w.rescued) {
			t.Errorf("id %d: rescued %q, want it to hold %q", i+1, r, w.rescued)
		}
	}
	events := rec.all()
	for _, w := range []string{`a.json:5: column payload: "AQI" is not base64 for BINARY`, "a.json:6: column payload: a number is not a base64 string for BINARY"} {
		if !strings.Contains(events, w) {
			t.Errorf("events lack %q:\n%s", w, events)
		}
	}
	if m.BadRecords != 2 {
		t.Errorf("bad records %d, want 2", m.BadRecords)
	}
}

// TestCSVBinary: a CSV field fills a BINARY column with the UTF-8 bytes of its text, as Spark's
// CSV reader does (the decoded text's getBytes), not base64-decoded: each byte that is not UTF-8
// is U+FFFD's bytes, as the text of a STRING column has it; an empty field, quoted or not, is
// NULL, as for the other types that are not STRING.
func TestCSVBinary(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, payload BINARY", "      options:\n        header: true\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("id,payload\n1,AQL/\n2,héllo\n3,\n4,\"\"\n5,\"a,b\"\n6,x\xff\xfey\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	_, rows := readTable(t, p, "raw")
	want := [][]any{{int32(1), "AQL/"}, {int32(2), "h\xc3\xa9llo"}, {int32(3), nil}, {int32(4), nil}, {int32(5), "a,b"}, {int32(6), "x\uFFFD\uFFFDy"}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if m.BadRecords != 0 {
		t.Errorf("bad records %d; events:\n%s", m.BadRecords, rec.all())
	}
}

// TestParquetBinary: a Parquet BYTE_ARRAY column without logical type (DuckDB's BLOB, written
// by DuckDB) fills a BINARY column with its bytes; so does a STRING (UTF8) column, the same
// physical type, as Spark's Parquet reader allows.
func TestParquetBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT, payload BINARY, name BINARY"
`)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := filepath.Join(dir, "landing", "a.parquet")
	q := fmt.Sprintf(`COPY (SELECT * FROM (VALUES (1::BIGINT, '\x01\x02\xFF'::BLOB, 'hé'), (2, ''::BLOB, ''), (3, NULL, NULL)) v(id, payload, name)) TO %s (FORMAT parquet)`, quoteSQL(out))
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	var typ string
	if err := db.QueryRow(fmt.Sprintf(`SELECT type || '/' || coalesce(logical_type, '') FROM parquet_schema(%s) WHERE name = 'payload'`, quoteSQL(out))).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "BYTE_ARRAY/" {
		t.Fatalf("DuckDB wrote payload as %s, want a BYTE_ARRAY without logical type", typ)
	}
	if _, rec, err := ingest(t, p); err != nil {
		t.Fatal(err)
	} else if strings.Contains(rec.all(), "WARN") {
		t.Errorf("events:\n%s", rec.all())
	}
	_, rows := readTable(t, p, "raw")
	want := [][]any{{int64(1), "\x01\x02\xff", "h\xc3\xa9"}, {int64(2), "", ""}, {int64(3), nil, nil}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
}

// TestPGTextBinary: a BINARY column takes PostgreSQL's text of a bytea, in the hex format (the
// default, which the source sets) and in the escape format (PostgreSQL documentation, "Binary
// Data Types"); text of neither format is an error.
func TestPGTextBinary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`\x0102ff`, "\x01\x02\xff"},
		{`\x0102FF`, "\x01\x02\xff"},
		{`\x`, ""},
		{`\001\002\377`, "\x01\x02\xff"},
		{`a\\b\000`, "a\\b\x00"},
		{`abc`, "abc"},
	} {
		if v, err := pgText(schema.Binary, c.in); err != nil || v != c.want {
			t.Errorf("pgText(BINARY, %q) = %q, %v; want %q", c.in, v, err, c.want)
		}
	}
	for _, in := range []string{`\x0g`, `\x012`, `a\b`, `\400`, `\12`} {
		if v, err := pgText(schema.Binary, in); err == nil {
			t.Errorf("pgText(BINARY, %q) = %q, want an error", in, v)
		}
	}
}
