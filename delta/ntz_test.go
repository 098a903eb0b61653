package delta

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTimestampNTZDAT reads the Delta Acceptance Tests case timestamp_ntz (written by Spark 3.5
// / Delta 3.1): the column is TIMESTAMP_NTZ and holds the wall clock Spark wrote, shown without
// zone, and its stats bound (written without zone) parses to the same value.
func TestTimestampNTZDAT(t *testing.T) {
	t.Parallel()
	tbl := New(filepath.Join(datCases(t), "timestamp_ntz", "delta"))
	snap := mustSnapshot(t, tbl, -1)
	if got, want := snap.Metadata.Schema.DDL(), "letter STRING, int BIGINT, date DATE, timestampNTZ TIMESTAMP_NTZ"; got != want {
		t.Errorf("schema %s, want %s", got, want)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	got := canonical(snap.Metadata.Schema, rows)
	want := []string{
		`["a",25,"2017-05-01","2024-04-02T20:58:52.292957"]`,
		`["a",604,"1997-01-01","2024-04-02T20:58:52.292957"]`,
		`["a",692,"2017-09-01","2024-04-02T20:58:52.292957"]`,
		`["a",95,"1983-04-01","2024-04-02T20:58:52.292957"]`,
		`["b",228,"1978-12-01","2024-04-02T20:58:52.292957"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st, err := ParseStats(snap.Files[0].Stats, snap.Metadata.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Min["timestampNTZ"], ts("2024-04-02T20:58:52.292Z"); got != want {
		t.Errorf("stats min %v, want %v (the wall clock 2024-04-02 20:58:52.292 read as UTC)", got, want)
	}
}
