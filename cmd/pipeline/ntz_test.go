package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
)

// untarPrefix extracts the regular files of the .tar.gz archive under prefix into dir, keeping
// their paths below prefix.
func untarPrefix(t *testing.T, archive, prefix, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rel, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		target := filepath.Join(dir, filepath.Clean("/"+rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("%s has no file under %s", archive, prefix)
	}
}

// checkNTZProtocol fails the test unless the table at dir has reader version 3 / writer
// version 7 with the timestampNtz feature in both lists and the column col of type
// TIMESTAMP_NTZ (Delta PROTOCOL.md, "Timestamp without timezone (TimestampNtz)").
func checkNTZProtocol(t *testing.T, dir, col string) {
	t.Helper()
	snap, err := delta.New(dir).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Protocol != (delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7}) || !slices.Contains(snap.ReaderFeatures, "timestampNtz") || !slices.Contains(snap.WriterFeatures, "timestampNtz") {
		t.Errorf("%s: protocol %+v, reader features %v, writer features %v; want (3,7) with timestampNtz in both", dir, snap.Protocol, snap.ReaderFeatures, snap.WriterFeatures)
	}
	i := snap.Metadata.Schema.Index(col)
	if i < 0 || !snap.Metadata.Schema.Fields[i].Type.IsNTZ() {
		t.Errorf("%s: schema %s, want %s TIMESTAMP_NTZ", dir, snap.Metadata.Schema.DDL(), col)
	}
}

// TestDeltaSourceTimestampNTZ reads the Delta Acceptance Tests table timestamp_ntz (written by
// Spark 3.5 / Delta 3.1, a TIMESTAMP_NTZ column) with a `format: delta` source into a streaming
// table, and a SQL materialized view over it. `pipeline show` and `changes` print the wall
// clock Spark wrote, without zone; the MV keeps TIMESTAMP_NTZ through max() and an interval;
// both tables this pipeline writes have the timestampNtz feature, and the independent reader
// reads the same wall clocks (DuckDB's TIMESTAMP, no offset) from their files.
func TestDeltaSourceTimestampNTZ(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	untarPrefix(t, filepath.Join(deltaTestdata, "dat-v0.0.3.tar.gz"), "out/reader_tests/generated/timestamp_ntz/delta/", src)
	spec := fmt.Sprintf(`name: ntz
storage: ${storage}
datasets:
  - name: events
    source: {format: delta, path: %q}
  - name: latest
    type: materialized_view
    query: |
      SELECT letter, max(timestampNTZ) AS last_seen, max(timestampNTZ) + INTERVAL 1 HOUR AS next_hour, count(*) AS n
      FROM LIVE.events GROUP BY letter
`, src)
	file := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(tmp, "storage")
	conf := []string{"--conf", "storage=" + storage}
	mustRun(t, append([]string{"run", file}, conf...)...)

	const wall = "2024-04-02T20:58:52.292957"
	var want []map[string]any
	for _, r := range []struct {
		letter, date string
		n            int
	}{{"a", "2017-05-01", 25}, {"a", "1997-01-01", 604}, {"a", "2017-09-01", 692}, {"a", "1983-04-01", 95}, {"b", "1978-12-01", 228}} {
		want = append(want, map[string]any{"letter": r.letter, "int": json.Number(fmt.Sprint(r.n)), "date": r.date, "timestampNTZ": wall})
	}
	assertRows(t, "show events", readJSONL(t, mustRun(t, append([]string{"show", file, "events", "--format", "jsonl"}, conf...)...)), want)
	assertRows(t, "show latest", readJSONL(t, mustRun(t, append([]string{"show", file, "latest", "--format", "jsonl"}, conf...)...)), []map[string]any{
		{"letter": "a", "last_seen": wall, "next_hour": "2024-04-02T21:58:52.292957", "n": json.Number("4")},
		{"letter": "b", "last_seen": wall, "next_hour": "2024-04-02T21:58:52.292957", "n": json.Number("1")},
	})
	changes := readJSONL(t, mustRun(t, append([]string{"changes", file, "events", "--from-version", "0", "--format", "jsonl"}, conf...)...))
	if len(changes) != 5 {
		t.Fatalf("changes: %d rows, want 5", len(changes))
	}
	for _, c := range changes {
		if c["timestampNTZ"] != wall || c["_change_type"] != "insert" {
			t.Errorf("changes row %v, want timestampNTZ %s and an insert", c, wall)
		}
	}
	if out := mustRun(t, append([]string{"show", file, "events"}, conf...)...); !strings.Contains(out, wall) || strings.Contains(out, wall+"Z") {
		t.Errorf("show (table) prints\n%s\nwant %s without zone", out, wall)
	}
	for _, ds := range []struct{ name, col string }{{"events", "timestampNTZ"}, {"latest", "last_seen"}} {
		dir := filepath.Join(storage, "tables", ds.name)
		checkNTZProtocol(t, dir, ds.col)
		if os.Getenv("DELTACHECK") == "" {
			continue
		}
		rows := deltacheckRows(t, dir)
		if len(rows) == 0 {
			t.Errorf("deltacheck %s: no rows", ds.name)
		}
		for _, r := range rows {
			// DuckDB prints a TIMESTAMP (without time zone) as "2024-04-02 20:58:52.292957".
			if got, want := r[ds.col], strings.Replace(wall, "T", " ", 1); got != want {
				t.Errorf("deltacheck %s: %s = %v, want %q", ds.name, ds.col, got, want)
			}
		}
	}
}

// TestJSONSourceTimestampNTZ reads JSON lines through a declared schema with a TIMESTAMP_NTZ
// column: text without zone is the wall clock as written; text with Z or an offset, or a number,
// does not fit (Spark's JSON reader refuses a zone for TIMESTAMP_NTZ) and goes to the rescued
// data column, the value NULL. The table has the timestampNtz feature.
func TestJSONSourceTimestampNTZ(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing := filepath.Join(tmp, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := `{"id": 1, "at": "2024-01-31T10:00:00.5"}
{"id": 2, "at": "2024-01-31 23:59:59"}
{"id": 3, "at": "2024-01-31T10:00:00+02:00"}
{"id": 4, "at": 1706695200}
{"id": 5, "at": null}
`
	if err := os.WriteFile(filepath.Join(landing, "a.json"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`name: ntzjson
storage: ${storage}
datasets:
  - name: raw
    source: {path: %q, format: json, schema: "id BIGINT, at TIMESTAMP_NTZ", rescued_data_column: _rescued}
`, landing)
	file := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(tmp, "storage")
	conf := []string{"--conf", "storage=" + storage}
	mustRun(t, append([]string{"run", file}, conf...)...)
	rows := readJSONL(t, mustRun(t, append([]string{"show", file, "raw", "--format", "jsonl"}, conf...)...))
	got := map[string]string{}
	for _, r := range rows {
		at, _ := r["at"].(string)
		resc, _ := r["_rescued"].(string)
		got[fmt.Sprint(r["id"])] = at + " | " + resc
	}
	for id, want := range map[string][]string{
		"1": {"2024-01-31T10:00:00.500000 | "},
		"2": {"2024-01-31T23:59:59.000000 | "},
		"3": {" | ", `"at":"2024-01-31T10:00:00+02:00"`},
		"4": {" | ", `"at":1706695200`},
		"5": {" | "},
	} {
		if !strings.HasPrefix(got[id], want[0]) || (len(want) > 1 && !strings.Contains(got[id], want[1])) || (len(want) == 1 && got[id] != want[0]) {
			t.Errorf("id %s: at | _rescued = %q, want %q", id, got[id], strings.Join(want, "..."))
		}
	}
	checkNTZProtocol(t, filepath.Join(storage, "tables", "raw"), "at")
	if os.Getenv("DELTACHECK") != "" {
		for _, r := range deltacheckRows(t, filepath.Join(storage, "tables", "raw")) {
			if fmt.Sprint(r["id"]) == "1" && r["at"] != "2024-01-31 10:00:00.5" {
				t.Errorf("deltacheck: at = %v, want 2024-01-31 10:00:00.5", r["at"])
			}
		}
	}
}
