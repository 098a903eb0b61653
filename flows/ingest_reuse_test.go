package flows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

// TestIngestReuseAcrossFilesAndBatches: the memory of JSON-lines blocks is reused once their rows
// are written, across the files of a batch and the batches of an update (max_files_per_trigger),
// with every holder of row values a source can have at once: a rescued-data column (unknown
// fields, values that do not fit, malformed lines), include_metadata, a table partitioned by a
// column read from the lines, warn, drop and quarantine expectations. Every row comes back with
// its own values, every file's name bounds are those of its own rows, and every WARN event
// names its own line. It is not parallel: it changes chunkRows and jsonBlockSize.
func TestIngestReuseAcrossFilesAndBatches(t *testing.T) {
	setChunking(t, 97, 700)
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    partition_by: [region]
    expectations:
      - {name: short_name, expect: "name == nil or len(name) < 12", on_violation: warn}
      - {name: no_three, expect: "id == nil or id % 10 != 3", on_violation: drop}
      - {name: small, expect: "amount == nil or amount < 3000.0", on_violation: quarantine}
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING, region STRING, amount DECIMAL(10,2), at TIMESTAMP"
      rescued_data_column: _rescued
      include_metadata: true
      max_files_per_trigger: 2
`)
	landing := filepath.Join(dir, "landing")
	sizes := []int{1200, 37, 2100, 1, 650} // lines per file: a.json, b.json, ...
	type line struct {
		text string
		row  string // the row as rawRows renders it, without the metadata columns
		warn string // the WARN event's "file:line: column" prefix (the file relative to the pipeline's folder), when the line has a bad value
	}
	var want, wantQ []string
	var warns []string
	i := 0
	for fi, n := range sizes {
		path := filepath.Join(landing, string(rune('a'+fi))+".json")
		var text strings.Builder
		var lines []line
		for ln := 1; ln <= n; ln, i = ln+1, i+1 {
			id, name, region := int64(i), fmt.Sprintf("n-%d-%x", i, i*7919%4096), fmt.Sprintf("r%d", (i/400)%5)
			amount, at := schema.Decimal(int64(i)*100+int64(i%100)), schema.Timestamp(1_704_067_200_000_000+int64(i)*1_000_000)
			rescued := ""
			var l line
			switch {
			case i%17 == 5:
				l.text = fmt.Sprintf("{bad %d", i)
				r, _ := json.Marshal(map[string]any{"_corrupt_record": l.text, "_file_path": path})
				rescued = string(r)
				l.warn = fmt.Sprintf("landing/%s:%d: the line is not valid JSON", filepath.Base(path), ln) // relative to the pipeline
				l.row = fmt.Sprintf("null null null null null %q", rescued)
			case i%13 == 4:
				l.text = fmt.Sprintf(`{"id": "x%d", "name": %q, "region": %q, "amount": %s, "at": %q}`, i, name, region, schema.FormatDecimal(amount, 2), schema.FormatTimestamp(at))
				r, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("x%d", i), "_file_path": path})
				rescued = string(r)
				l.warn = fmt.Sprintf("landing/%s:%d: column id: \"x%d\" is not a whole number", filepath.Base(path), ln, i)
				id = -1
			case i%11 == 2:
				l.text = fmt.Sprintf(`{"id": %d, "extra": "e-%d", "name": %q, "region": %q, "amount": %s, "at": %q}`, i, i, name, region, schema.FormatDecimal(amount, 2), schema.FormatTimestamp(at))
				r, _ := json.Marshal(map[string]any{"extra": fmt.Sprintf("e-%d", i), "_file_path": path})
				rescued = string(r)
			case i%5 == 0: // an escape: the parser builds the string instead of slicing the line
				l.text = fmt.Sprintf(`{"id": %d, "name": "%s\u00e9", "region": %q, "amount": %s, "at": %q}`, i, name, region, schema.FormatDecimal(amount, 2), schema.FormatTimestamp(at))
				name += "é"
			default:
				l.text = fmt.Sprintf(`{"id": %d, "name": %q, "region": %q, "amount": %s, "at": %q}`, i, name, region, schema.FormatDecimal(amount, 2), schema.FormatTimestamp(at))
			}
			if l.row == "" {
				idText := fmt.Sprint(id)
				if id < 0 {
					idText = "null"
				}
				resc := "null"
				if rescued != "" {
					resc = fmt.Sprintf("%q", rescued)
				}
				l.row = fmt.Sprintf("%s %q %q %s %q %s", idText, name, region, schema.FormatDecimal(amount, 2), schema.FormatTimestamp(at)+"", resc)
			}
			text.WriteString(l.text + "\n")
			lines = append(lines, l)
		}
		write(t, path, []byte(text.String()))
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		meta := fmt.Sprintf(" %q %q", path, schema.FormatTimestamp(schema.Timestamp(st.ModTime().UnixMilli()*1000)))
		for ln, l := range lines {
			k := i - len(lines) + ln
			if l.warn != "" {
				warns = append(warns, l.warn)
			}
			switch {
			case k%17 != 5 && k%13 != 4 && k%10 == 3:
				continue // dropped
			case k%17 != 5 && k >= 3000:
				wantQ = append(wantQ, l.row+meta)
				continue
			}
			want = append(want, l.row+meta)
		}
	}
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != len(sizes) {
		t.Errorf("%d files read, want %d", m.Files, len(sizes))
	}
	norm := func(rows []string) []string {
		rows = slices.Clone(rows)
		slices.Sort(rows)
		return rows
	}
	got := norm(rawRows(t, p))
	if !slices.Equal(got, norm(want)) {
		t.Errorf("%d rows, want %d; first differences:\n%s", len(got), len(want), firstDiffs(got, want))
	}
	var gotQ []string
	for _, r := range namedRows(t, p.Storage, "raw_quarantine") {
		gotQ = append(gotQ, strings.TrimSuffix(r, ` "[\"small\"]"`))
	}
	if gotQ = norm(gotQ); !slices.Equal(gotQ, norm(wantQ)) {
		t.Errorf("%d quarantined rows, want %d; first differences:\n%s", len(gotQ), len(wantQ), firstDiffs(gotQ, wantQ))
	}
	// Every file's bounds of name are those of its own rows.
	table := delta.New(TableDir(p.Storage, "raw"))
	snap, err := table.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	ni := snap.Metadata.Schema.Index("name")
	for _, a := range snap.Files {
		rows, err := table.FileRows(snap.Metadata, a)
		if err != nil {
			t.Fatal(err)
		}
		var lo, hi string
		for k, r := range rows {
			if r[ni] == nil {
				continue
			}
			s := r[ni].(string)
			if k == 0 || lo == "" || s < lo {
				lo = s
			}
			if s > hi {
				hi = s
			}
		}
		st, err := delta.ParseStats(a.Stats, snap.Metadata.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if hi == "" { // only malformed lines: no name, NULL region
			if st.NumRecords != int64(len(rows)) || st.Min["name"] != nil || a.PartitionValues["region"] != "" {
				t.Errorf("file %s of NULL names: %d rows, names from %v, region %q", a.Path, st.NumRecords, st.Min["name"], a.PartitionValues["region"])
			}
			continue
		}
		if st.NumRecords != int64(len(rows)) || st.Min["name"] != lo || st.Max["name"] != hi {
			t.Errorf("file %s: %d rows, names %v to %v; its rows: %d, %q to %q", a.Path, st.NumRecords, st.Min["name"], st.Max["name"], len(rows), lo, hi)
		}
		if r := a.PartitionValues["region"]; len(rows) > 0 && !strings.HasPrefix(r, "r") {
			t.Errorf("file %s: partition value %q", a.Path, r)
		}
	}
	// Every WARN event of a line names that line and its own value.
	matched := 0
	for _, e := range strings.Split(rec.all(), "\n") {
		if !strings.Contains(e, ".json:") || !strings.Contains(e, "; the ") {
			continue
		}
		ok := false
		for _, w := range warns {
			if strings.HasPrefix(e, "WARN "+w) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("WARN event of no bad line: %s", e)
		}
		matched++
	}
	if matched < 10 {
		t.Errorf("%d WARN events of bad lines, want at least 10 (of %d bad lines)", matched, len(warns))
	}
}

// TestIngestExpectationMapOverFilter: an expectation that names a column only in the mapper of
// map(filter(...)) (which expr's optimizer folds into the filter) sees that column's value: the
// rows it passes are kept, the others dropped and counted.
func TestIngestExpectationMapOverFilter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    expectations:
      - {name: paid_a, expect: 'any(map(filter(tags, # != ""), # + "-" + status), # == "a-paid")', on_violation: drop}
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, status STRING, tags ARRAY<STRING>"
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "status": "paid", "tags": ["", "a"]}
{"id": 2, "status": "open", "tags": ["a"]}
{"id": 3, "status": "paid", "tags": ["b", ""]}
{"id": 4, "status": "paid", "tags": ["a"]}
`))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	got := rawRows(t, p)
	slices.Sort(got)
	want := []string{`1 "paid" ["","a"]`, `4 "paid" ["a"]`}
	if !slices.Equal(got, want) || m.Quality.DroppedRecords != 2 {
		t.Errorf("rows %q with %d dropped, want %q with 2 dropped", got, m.Quality.DroppedRecords, want)
	}
}
