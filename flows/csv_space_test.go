package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/schema"
)

// TestCSVWhiteSpaceAsSpark: white space around a CSV value is kept, as Spark's CSV reader keeps
// it by default (ignoreLeadingWhiteSpace and ignoreTrailingWhiteSpace are false when reading),
// and the value is converted as Spark converts it (UnivocityParser): Java's integer, BigDecimal
// and boolean parsers take no white space, so such an INT, BIGINT, DECIMAL or BOOLEAN value does
// not fit (NULL, and a WARN that says how to trim), while Double.parseDouble, stringToDate and
// stringToTimestamp trim it and a STRING keeps it. With ignore_leading_white_space and
// ignore_trailing_white_space the white space around unquoted values (header names included) is
// dropped first; a quoted value keeps what its quotes hold.
func TestCSVWhiteSpaceAsSpark(t *testing.T) {
	t.Parallel()
	const ddl = "i INT, l BIGINT, d DECIMAL(5,2), b BOOLEAN, f DOUBLE, dt DATE, ts TIMESTAMP, s STRING"
	data := []byte("i,l,d,b,f,dt,ts,s\n" +
		" 7 , 8 ,\t1.5 , true , 2.5 , 2024-01-02 , 2024-01-02T03:04:05Z , x \n" +
		"\" 9 \",10,1.25,false,1,2024-01-03,2024-01-03T00:00:00Z,\" y \"\n")

	p, landing := newCSV(t, ddl, "      options: {header: true}\n")
	write(t, filepath.Join(landing, "a.csv"), data)
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`null null null null 2.5 "2024-01-02" "2024-01-02T03:04:05.000000Z" " x "`,
		`null 10 1.25 false 1 "2024-01-03" "2024-01-03T00:00:00.000000Z" " y "`)
	if m.BadRecords != 5 {
		t.Errorf("%d bad values, want 5 (i, l, d and b of line 2, i of line 3)", m.BadRecords)
	}
	want := `WARN landing/a.csv:2: column i: " 7 " has white space around the value, which Spark's CSV reader does not read as INT; to drop such white space around unquoted values, set options: {ignore_leading_white_space: true, ignore_trailing_white_space: true}`
	quoted := `WARN landing/a.csv:3: column i: " 9 " has white space around the value, which Spark's CSV reader does not read as INT; the quotes keep it (as Spark's reader does, whatever its options)`
	if events := rec.all(); !strings.Contains(events, want) || !strings.Contains(events, `column b: " true " has white space around the value`) || !strings.Contains(events, quoted) {
		t.Errorf("events:\n%s\nwant among them:\n%s", events, want)
	}

	p, landing = newCSV(t, ddl, "      options: {header: true, ignore_leading_white_space: true, ignore_trailing_white_space: true}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte(strings.Replace(string(data), "i,l,d", " i , l ,d", 1)))
	if m, _, err = ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`7 8 1.50 true 2.5 "2024-01-02" "2024-01-02T03:04:05.000000Z" "x"`,
		`null 10 1.25 false 1 "2024-01-03" "2024-01-03T00:00:00.000000Z" " y "`)
	if m.BadRecords != 1 {
		t.Errorf("%d bad values with the white space dropped, want 1 (the quoted \" 9 \")", m.BadRecords)
	}
}

// TestCSVInferWhiteSpace: schema inference sees white space as Spark's CSV inference does
// (CSVInferSchema): " 7 " is no integer but a DOUBLE (Double.parseDouble trims it), " true " no
// BOOLEAN but a STRING; with ignore_leading_white_space and ignore_trailing_white_space they
// are an INT and a BOOLEAN.
func TestCSVInferWhiteSpace(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		options string
		want    string
	}{
		{"{header: true, infer_column_types: true}", "n DOUBLE, b STRING"},
		{"{header: true, infer_column_types: true, ignore_leading_white_space: true, ignore_trailing_white_space: true}", "n INT, b BOOLEAN"},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "landing", "a.csv"), []byte("n,b\n 7 , true \n8,false\n"))
		p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: csv\n      options: "+c.options+"\n")
		got, err := inferSchema(p.Dataset("raw").Source)
		if err != nil {
			t.Fatal(err)
		}
		want, err := schema.ParseDDL(c.want)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range want.Fields {
			if i >= len(got.Fields) || got.Fields[i].Name != f.Name || got.Fields[i].Type.DDL() != f.Type.DDL() {
				t.Errorf("options %s: inferred %s, want %s", c.options, got.DDL(), c.want)
				break
			}
		}
	}
}

// TestCSVPaddedHeaderWarns: a header name padded with white space names no column, as in Spark's
// reader, so that column is NULL in every row; a WARN names the header and the column it would
// fill, and the options that trim it, with which the column is read.
func TestCSVPaddedHeaderWarns(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, n INT, d STRING", "      options: {header: true}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("id, n ,d\n1,2,x\n"))
	_, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 null "x"`)
	want := `WARN landing/a.csv:1: the CSV header names " n " (column n) with white space around the name, so those columns are NULL in every row of the file; set options: {ignore_leading_white_space: true, ignore_trailing_white_space: true}`
	if events := rec.all(); !strings.Contains(events, want) {
		t.Errorf("events:\n%s\nwant:\n%s", events, want)
	}
	p, landing = newCSV(t, "id INT, n INT, d STRING", "      options: {header: true, ignore_leading_white_space: true, ignore_trailing_white_space: true}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("id, n ,d\n1,2,x\n"))
	if _, rec, err = ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 2 "x"`)
	if events := rec.all(); events != "" {
		t.Errorf("events with the options: %s; want none", events)
	}
}
