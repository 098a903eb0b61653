package flows

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"tributary/schema"
	"tributary/spec"
)

// newCSV loads a pipeline whose dataset raw reads csv files with the given schema and source
// lines (options, mode, ...), each already indented under `source:`.
func newCSV(t *testing.T, ddl, extra string) (*spec.Pipeline, string) {
	t.Helper()
	dir := t.TempDir()
	text := "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: csv\n      schema: \"" + ddl + "\"\n" + extra
	return loadPipeline(t, dir, text), filepath.Join(dir, "landing")
}

func wantRows(t *testing.T, p *spec.Pipeline, want ...string) {
	t.Helper()
	if got := rawRows(t, p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCSVSpreadsheetQuirks is shared case 18 in small: a UTF-8 byte-order mark before the header,
// CRLF record ends, a quoted LF kept as is, a quoted delimiter, doubled quotes, an unquoted
// empty field (NULL), a quoted empty field (the empty string, Spark's emptyValue default), an
// empty DECIMAL (NULL) and a blank last line, with `header: true` written as a YAML boolean.
func TestCSVSpreadsheetQuirks(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, name STRING, note STRING, amount DECIMAL(10,2)", "      options:\n        header: true\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("\xEF\xBB\xBFid,name,note,amount\r\n"+
		"1,Alpha,\"line one\nline two\",10.50\r\n"+
		"2,\"Beta, Inc.\",\"said \"\"hi\"\"\",\r\n"+
		"3,Gamma,\"\",0\r\n"+
		"4,,plain,7\r\n"+
		"\r\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`1 "Alpha" "line one\nline two" 10.50`,
		`2 "Beta, Inc." "said \"hi\"" null`,
		`3 "Gamma" "" 0.00`,
		`4 null "plain" 7.00`)
	if m.NumOutputRows != 4 || m.BadRecords != 0 {
		t.Errorf("metrics = %+v, want 4 rows and no bad records; events:\n%s", m, rec.all())
	}
}

// TestCSVOptions: delimiter, quote, escape, null_value, empty_value and comment, given as YAML
// strings; without a header the fields go to the columns by position.
func TestCSVOptions(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id BIGINT, a STRING, b STRING", `      options:
        header: "false"
        delimiter: ";"
        quote: "'"
        escape: "\\"
        null_value: NA
        empty_value: EMPTY
        comment: "#"
`)
	write(t, filepath.Join(landing, "a.csv"), []byte(
		"# a comment line\n"+
			"1;'x;y';NA\n"+
			"2;'it\\'s';''\n"+
			"3;;'don''t'\n"+
			"4;a\"b\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`1 "x;y" null`,
		`2 "it's" "EMPTY"`,
		`3 null "don't"`,
		`4 "a\"b" null`)
}

// TestCSVHeaderByName: with a header, fields go to columns by name in any order; a column the
// file lacks is NULL; a header name that is no column, extra fields, and values that do not fit
// are kept in the rescued-data column (with _file_path) and the bad value is reported.
func TestCSVHeaderByName(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, flag BOOLEAN, at DATE", "      options: {header: true}\n      rescued_data_column: _rescued\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("flag,extra,id\ntrue,e1,7\nmaybe,,8,overflow\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(landing, "a.csv")
	wantRows(t, p,
		`7 true null "{\"_file_path\":\"`+path+`\",\"extra\":\"e1\"}"`,
		`8 null null "{\"_c3\":\"overflow\",\"_file_path\":\"`+path+`\",\"flag\":\"maybe\"}"`)
	if m.BadRecords != 1 || !strings.Contains(rec.all(), "a.csv:3: column flag:") {
		t.Errorf("bad records %d, events:\n%s", m.BadRecords, rec.all())
	}
}

// TestCSVEmptyHeaderNameRescued: a field under an empty header name (a header line that ends
// with the delimiter, as spreadsheets export a blank column) is rescued as _c<position>, the name
// inference gives such a column (as Spark does), not under the key "".
func TestCSVEmptyHeaderNameRescued(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, name STRING", "      options: {header: true}\n      rescued_data_column: _rescued\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("id,name,\n1,a,\n2,b,extra\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(landing, "a.csv")
	wantRows(t, p, `1 "a" null`, `2 "b" "{\"_c2\":\"extra\",\"_file_path\":\"`+path+`\"}"`)
}

// TestCSVMalformedAndModes: a quoted field not closed before the end of the file is a malformed
// record: a row of NULLs under permissive, dropped under dropmalformed, and failfast names the
// file and the line the record starts on. Compressed csv is read by extension.
func TestCSVMalformedAndModes(t *testing.T) {
	t.Parallel()
	input := []byte("id,s\n1,ok\n2,\"open\nmore\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(input)
	zw.Close()
	for _, tc := range []struct {
		mode string
		want []string
		err  string
	}{
		{"permissive", []string{`1 "ok"`, `null null`}, ""},
		{"dropmalformed", []string{`1 "ok"`}, ""},
		{"failfast", nil, "a.csv.gz:3: a quoted field is not closed"},
	} {
		p, landing := newCSV(t, "id INT, s STRING", "      options: {header: \"TRUE\"}\n      mode: "+tc.mode+"\n")
		write(t, filepath.Join(landing, "a.csv.gz"), gz.Bytes())
		_, _, err := ingest(t, p)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: error = %v, want %q", tc.mode, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		wantRows(t, p, tc.want...)
	}
}

// TestCSVLatin1: encoding iso-8859-1 decodes each byte to its code point; a header-only file
// gives no rows.
func TestCSVLatin1(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "name STRING", "      options: {header: true, encoding: ISO-8859-1}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("name\nJos\xE9\nM\xFCller\n"))
	write(t, filepath.Join(landing, "b.csv"), []byte("name\r\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `"José"`, `"Müller"`)
}

// TestCSVWhiteLinesSkipped: a line that holds only white space (spaces, tabs: an export's
// padding, a spreadsheet's empty last row) is blank, skipped as Spark's CSV reader skips every
// line whose trim is empty, also before the header and with a tab delimiter; white space inside
// a record, or inside a quoted field over several lines, is kept.
func TestCSVWhiteLinesSkipped(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "a STRING, b INT", "      options: {header: true}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("  \na,b\n x ,1\n   \n\t\r\n\"q\n  \n\",2\n \t "))
	write(t, filepath.Join(landing, "b.csv"), []byte("a\tb\n\t\ny\t3\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	// b.csv is read with the wrong delimiter (one field "a\tb"), so it has no column: NULLs.
	wantRows(t, p, `" x " 1`, `"q\n  \n" 2`, "null null")
}

// TestCSVUnclosedQuoteNamesLines: a quote opened and never closed takes every line after it
// into one malformed record, so the rows of those lines are not read; the error says which
// lines the record took and where the stray quote is, not only the line it starts on.
func TestCSVUnclosedQuoteNamesLines(t *testing.T) {
	t.Parallel()
	for _, input := range []string{"id,s\n1,ok\n2,\"5 inch\n3,c\n4,d\n", "id,s\n1,ok\n2,\"5 inch\n3,c\n4,d"} {
		p, landing := newCSV(t, "id INT, s STRING", "      options: {header: true}\n      mode: failfast\n")
		write(t, filepath.Join(landing, "a.csv"), []byte(input))
		_, _, err := ingest(t, p)
		want := "a.csv:3: a quoted field is not closed before the end of the file: the record runs from line 3 to the end of the file (line 5), so lines 3 to 5 are one malformed record, not rows of their own; a stray quote on line 3 is the likely cause"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error = %v, want %q", input, err, want)
		}
	}
}

// TestCSVMalformedRecordText: the rescued text of a malformed record (a quoted field not closed
// before the end of the file) is the record as the file writes it, quotes, doubled quotes and
// escapes included, without its last line end, as Spark's CSV reader gives it to
// _corrupt_record (UnivocityParser: the parser's current parsed content, stripLineEnd), not
// its fields' values joined by the delimiter.
func TestCSVMalformedRecordText(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id STRING, s STRING, t STRING")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, input, want string
		options           map[string]string
	}{
		{"unclosed quote over lines", "1,ok,x\n2,\"open\nmore\n", "2,\"open\nmore", nil},
		{"CRLF line ends", "2,\"open\r\nmore\r\n", "2,\"open\r\nmore", nil},
		{"no line end at the end", "2,\"open", "2,\"open", nil},
		{"quoted fields before", "\"1\",\"a,b\",\"open\n", "\"1\",\"a,b\",\"open", nil},
		{"doubled quotes and escapes", "\"3\"\"x\",plain,\"say \\\"hi\\\" and \"\"bye\"\"\nnext line\n",
			"\"3\"\"x\",plain,\"say \\\"hi\\\" and \"\"bye\"\"\nnext line", nil},
		{"an escape not before a quote", "\"a\\b\",\"c\\\\d\",\"open", "\"a\\b\",\"c\\\\d\",\"open", nil},
		{"text after a closing quote", "\"a\"b,\"\"\"\"c,\"open", "\"a\"b,\"\"\"\"c,\"open", nil},
		{"invalid UTF-8", "\"\xff\"z,x\xfe,\"open", "\"\uFFFD\"z,x\uFFFD,\"open", nil},
		{"other delimiter and quote", "'a''b';'c'd;'open\n", "'a''b';'c'd;'open", map[string]string{"delimiter": ";", "quote": "'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &spec.Source{Format: spec.FormatCSV, Schema: s, RescuedDataColumn: "_rescued_data", Options: tc.options}
			var got []string
			err := eachCSVRow(src, "/in/a.csv", strings.NewReader(tc.input), func(row []any, parsed bool, bad []badValue, lineNo int64) error {
				if parsed {
					return nil
				}
				var m map[string]string
				if err := json.Unmarshal([]byte(row[3].(string)), &m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m["_corrupt_record"])
				return nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("rescued %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCSVInvalidUTF8: bytes that are not UTF-8 in a CSV field read as U+FFFD, as Spark's CSV
// reader, which decodes each line with Java's UTF-8 decoder (new String(bytes, UTF_8), malformed
// input replaced), reads them: one U+FFFD for each byte that starts no character, and one for a
// sequence that a byte breaks or the end of the field (a delimiter, a quote, the line end) cuts
// short, or that encodes a surrogate, not one for each of its bytes. A BINARY column holds the
// UTF-8 bytes of that text.
func TestCSVInvalidUTF8(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("s STRING, b BINARY")
	if err != nil {
		t.Fatal(err)
	}
	const r = "\uFFFD"
	for _, tc := range []struct{ name, field, want string }{
		{"a Latin-1 byte", "Jos\xe9", "Jos" + r},
		{"Latin-1 bytes around ASCII", "\xe9t\xe9", r + "t" + r},
		{"two bytes that start nothing", "\xff\xfe", r + r},
		{"a continuation byte alone", "a\x80b", "a" + r + "b"},
		{"three-byte sequence cut short by the end", "x\xe2\x82", "x" + r},
		{"three-byte sequence broken by ASCII", "\xe2\x82x", r + "x"},
		{"four-byte sequence cut short by the end", "\xf0\x9f\x98", r},
		{"four-byte sequence broken after two bytes", "\xf0\x9fz", r + "z"},
		{"an encoded surrogate", "\xed\xa0\x80!", r + "!"},
		{"overlong two bytes", "\xc0\xaf", r + r},
		{"overlong three bytes", "\xe0\x80\x80", r + r + r},
		{"beyond U+10FFFF", "\xf4\x90\x80\x80", r + r + r + r},
		{"F5 lead byte", "\xf5\x80\x80\x80", r + r + r + r},
		{"valid text kept", "é€😀\xff", "é€😀" + r},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, quoted := range []bool{false, true} {
				field := tc.field
				if quoted {
					field = `"` + field + `"`
				}
				src := &spec.Source{Format: spec.FormatCSV, Schema: s}
				var got []any
				err := eachCSVRow(src, "/in/a.csv", strings.NewReader(field+","+field+"\n"), func(row []any, parsed bool, bad []badValue, lineNo int64) error {
					got = row
					return nil
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2 || got[0] != tc.want || got[1] != tc.want {
					t.Errorf("field %q: row %q, want %q twice", field, got, tc.want)
				}
			}
		})
	}
}

// TestCSVDatesAsSpark: a DATE field is read as Spark's CSV reader reads it without a dateFormat
// (DateTimeUtils.stringToDate): one-digit months and days, a year and month, a timestamp's date;
// a day that does not exist is NULL, with a WARN.
func TestCSVDatesAsSpark(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, day DATE", "")
	write(t, filepath.Join(landing, "a.csv"), []byte("1,2024-1-5\n2,2024-03\n3,2024-01-31 10:00:00\n4,2024-02-30\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 "2024-01-05"`, `2 "2024-03-01"`, `3 "2024-01-31"`, `4 null`)
	if m.BadRecords != 1 {
		t.Errorf("metrics = %+v, want the one day that does not exist counted; events:\n%s", m, rec.all())
	}
}
