package flows

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONTimestampsAsSpark: a TIMESTAMP in a JSON-lines file, at the top level and in a STRUCT
// field, an ARRAY element and a MAP value, is read as Spark's JSON reader reads it without a
// timestampFormat (DateTimeUtils.stringToTimestamp in the session time zone UTC): offsets without
// colon or minutes, one-digit fields, nanoseconds truncated, a date alone, hours alone, a region
// zone (Paris skips 02:00 to 03:00 on 2024-03-31: 02:30 is taken at +1), GMT with an offset. The
// scanner and the encoding/json path (a line with a field twice) read the same. Text Spark
// refuses (a zone after the minutes, lower-case t and z) and a time without a date (today's, in
// Spark) are NULL and rescued, with a WARN, as before.
func TestJSONTimestampsAsSpark(t *testing.T) {
	t.Parallel()
	lines := strings.Join([]string{
		`{"id": 1, "at": "2024-01-01T10:00:00+0100"}`,
		`{"id": 2, "at": "2024-1-1 9:05:00"}`,
		`{"id": 3, "at": "2024-01-01T10:00:00.123456789"}`,
		`{"id": 4, "at": "2024-01-01T10:00:00+01"}`,
		`{"id": 5, "ev": {"at": "2024-03-31T02:30:00 Europe/Paris"}, "ats": ["2024-01-01", "2024-01-01T10"], "m": {"k": "2024-01-01 10:00:00 GMT+1"}}`,
		`{"id": 6, "id": 6, "at": "2024-1-1 9:05:00.5 UTC", "ats": ["2024-01-01T10:00:00-05:30"]}`,
		`{"id": 7, "at": "2024-01-01T10:00Z"}`,
		`{"id": 8, "at": "10:00:00"}`,
		`{"id": 9, "ats": ["2024-01-01T10:00:00Z", "2024-01-31t10:00:00z"]}`,
		`{"id": 10, "id": 10, "ev": {"at": "T10:00:00"}}`,
	}, "\n") + "\n"
	want := []struct {
		cols    string
		rescued string // a text the rescued data column holds ("": NULL)
	}{
		{`1 "2024-01-01T09:00:00.000000Z" null null null`, ""},
		{`2 "2024-01-01T09:05:00.000000Z" null null null`, ""},
		{`3 "2024-01-01T10:00:00.123456Z" null null null`, ""},
		{`4 "2024-01-01T09:00:00.000000Z" null null null`, ""},
		{`5 null {"at":"2024-03-31T01:30:00.000000Z"} ["2024-01-01T00:00:00.000000Z","2024-01-01T10:00:00.000000Z"] {"k":"2024-01-01T09:00:00.000000Z"}`, ""},
		{`6 "2024-01-01T09:05:00.500000Z" null ["2024-01-01T15:30:00.000000Z"] null`, ""},
		{`7 null null null null`, "2024-01-01T10:00Z"},
		{`8 null null null null`, "10:00:00"},
		{`9 null null null null`, "2024-01-31t10:00:00z"},
		{`10 null null null null`, "T10:00:00"},
	}
	// Without a rescued data column the scanner reads the lines (but those with a field twice);
	// with one, a value that does not fit sends its line to the encoding/json path.
	for _, rescue := range []string{"", "_rescued_data"} {
		name := "without rescued data column"
		if rescue != "" {
			name = "with rescued data column"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			opts := ""
			if rescue != "" {
				opts = "      rescued_data_column: " + rescue + "\n"
			}
			p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n"+
				"      schema: \"id INT, at TIMESTAMP, ev STRUCT<at: TIMESTAMP>, ats ARRAY<TIMESTAMP>, m MAP<STRING, TIMESTAMP>\"\n"+opts)
			write(t, filepath.Join(dir, "landing", "a.json"), []byte(lines))
			m, rec, err := ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			rows := rawRows(t, p)
			if len(rows) != len(want) {
				t.Fatalf("rows:\n%s\nwant %d", strings.Join(rows, "\n"), len(want))
			}
			for i, w := range want {
				if rescue == "" || w.rescued == "" {
					wantRow := w.cols
					if rescue != "" {
						wantRow += " null"
					}
					if rows[i] != wantRow {
						t.Errorf("row %d: %s\nwant %s", i+1, rows[i], wantRow)
					}
					continue
				}
				// The rescued data column is the last: a JSON string of the values that did not fit.
				rest, ok := strings.CutPrefix(rows[i], w.cols+" ")
				var text string
				if !ok || json.Unmarshal([]byte(rest), &text) != nil || !strings.Contains(text, w.rescued) {
					t.Errorf("row %d: %s\nwant %s and a rescued data column holding %q", i+1, rows[i], w.cols, w.rescued)
				}
			}
			if m.BadRecords != 4 {
				t.Errorf("metrics = %+v, want the 4 lines with a refused timestamp counted; events:\n%s", m, rec.all())
			}
			events := rec.all()
			for _, w := range []string{`a.json:7: column at: "2024-01-01T10:00Z" is not a timestamp`, `a.json:8: column at: "10:00:00" is a time of day without a date`} {
				if !strings.Contains(events, w) {
					t.Errorf("events lack %q:\n%s", w, events)
				}
			}
		})
	}
}

// TestCSVTimestampsAsSpark: a TIMESTAMP field is read as Spark's CSV reader reads it without a
// timestampFormat (DateTimeUtils.stringToTimestamp in the session time zone UTC, then with "GMT"
// removed); text Spark refuses, and a time without a date, is NULL with a WARN.
func TestCSVTimestampsAsSpark(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, at TIMESTAMP", "")
	write(t, filepath.Join(landing, "a.csv"), []byte(strings.Join([]string{
		"1,2024-01-01T10:00:00+0100",
		"2,2024-1-1 9:05:00",
		"3,2024-01-01T10:00:00.123456789",
		"4,2024-01-01",
		"5,2024-01-31T10:00:00 Europe/Paris",
		"6,2024-01-01 10:00:00GMT+01:00",
		"7, 2024-01-01T10:00:00Z ",
		"8,2024-01-01T10:00Z",
		"9,T10:00:00",
		"10,2024-02-30T10:00:00Z",
	}, "\n")+"\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`1 "2024-01-01T09:00:00.000000Z"`,
		`2 "2024-01-01T09:05:00.000000Z"`,
		`3 "2024-01-01T10:00:00.123456Z"`,
		`4 "2024-01-01T00:00:00.000000Z"`,
		`5 "2024-01-31T09:00:00.000000Z"`,
		`6 "2024-01-01T09:00:00.000000Z"`,
		`7 "2024-01-01T10:00:00.000000Z"`,
		`8 null`,
		`9 null`,
		`10 null`)
	if m.BadRecords != 3 {
		t.Errorf("metrics = %+v, want the 3 refused timestamps counted; events:\n%s", m, rec.all())
	}
	if events := rec.all(); !strings.Contains(events, `"T10:00:00" is a time of day without a date`) {
		t.Errorf("events lack the WARN of a time without a date:\n%s", events)
	}
}
