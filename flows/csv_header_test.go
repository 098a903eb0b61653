package flows

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCSVHeaderNamesNoColumn: a CSV file whose header names none of the schema's columns (here
// read with the wrong delimiter) is read as before, a row of NULLs a record, and a WARN event
// names the file, the header as read, the schema's columns, and the delimiter the header holds;
// a file whose header names a column gets none. The WARN names the file relative to the
// pipeline's folder, as every WARN about a file does. The WARNs are bounded as other WARNs are.
func TestCSVHeaderNamesNoColumn(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id BIGINT, name STRING, amt INT", "      options: {header: true, delimiter: \";\"}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("id,name,amt\n20,commas,1\n"))
	write(t, filepath.Join(landing, "b.csv"), []byte("id;name;amt\n30;semicolons;2\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "null null null", `30 "semicolons" 2`)
	want := "WARN landing/a.csv" + `:1: the CSV header names none of the schema's columns (id, name, amt): with delimiter ";" it reads as 1 field, "id,name,amt"; every row of the file is read with NULL in those columns. The header holds ",": if that is the file's delimiter, set options: {delimiter: ","}`
	if events := rec.all(); !strings.Contains(events, want) || strings.Contains(events, "b.csv") || m.Files != 2 {
		t.Errorf("files %d, events:\n%s\nwant:\n%s", m.Files, events, want)
	}

	p, landing = newCSV(t, "id BIGINT, name STRING", "      options: {header: true}\n")
	for i := range maxWarnEvents + 2 {
		write(t, filepath.Join(landing, fmt.Sprintf("f%02d.csv", i)), []byte("ID\tNAME\n1\tx\n"))
	}
	_, rec, err = ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	events := rec.all()
	if n := strings.Count(events, "the CSV header names none of the schema's columns"); n != maxWarnEvents {
		t.Errorf("%d header WARNs, want %d:\n%s", n, maxWarnEvents, events)
	}
	for _, w := range []string{`with delimiter "," it reads as 1 field, "ID\tNAME"`, `The header holds "\t": if that is the file's delimiter, set options: {delimiter: "\t"}`, "2 more files of this batch have a warning like the 20 above"} {
		if !strings.Contains(events, w) {
			t.Errorf("events lack %q:\n%s", w, events)
		}
	}
}

// TestCSVHeaderCaseVariant: a CSV header that spells a column in another case (`ID` for `id`)
// fills that column, as Spark's CSV reader compares header names with the schema's without regard
// to case under its default spark.sql.caseSensitive=false (CSVHeaderChecker), and no WARN is
// given; a name spelt as the column wins over one in another case. With a rescued-data column the
// value is rescued under the header's spelling instead, as Auto Loader's default
// readerCaseSensitive rescues it (semantics.md "Ingestion"), again without a WARN.
func TestCSVHeaderCaseVariant(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id BIGINT, name STRING", "      options: {header: true}\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("ID,NAME\n1,x\n"))
	write(t, filepath.Join(landing, "b.csv"), []byte("id,name\n2,y\n"))
	write(t, filepath.Join(landing, "c.csv"), []byte("Name,name,iD\n3,z,4\n"))
	_, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 "x"`, `2 "y"`, `4 "z"`)
	if events := rec.all(); strings.Contains(events, "WARN") {
		t.Errorf("a WARN though every value was read:\n%s", events)
	}

	p, landing = newCSV(t, "id BIGINT, name STRING", "      options: {header: true}\n      rescued_data_column: _rescued_data\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("ID,name\n1,x\n"))
	_, rec, err = ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `null "x" "{\"ID\":\"1\",\"_file_path\":\"`+filepath.Join(landing, "a.csv")+`\"}"`)
	if events := rec.all(); strings.Contains(events, "another case") {
		t.Errorf("a WARN though the values are rescued:\n%s", events)
	}
}
