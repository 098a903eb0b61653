package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVacuumKeepsUnreadVersions: VACUUM with a zero retention keeps the files of the versions
// that the pipeline's stream readers of a table have not read yet (a `source: {table: x, read:
// change_feed}` dataset and a query's STREAM(x)), as it does for APPLY CHANGES flows, so the next
// update reads every change instead of failing on a vacuumed change data file.
func TestVacuumKeepsUnreadVersions(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	landing := filepath.Join(tmp, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := `name: vacuum_readers
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "op STRING, id BIGINT, v STRING, seq BIGINT"}
  - name: cur
    apply_changes: {source: raw, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op]}
    table_properties: {delta.deletedFileRetentionDuration: "interval 0 seconds"}
  - name: feed
    source: {table: cur, read: change_feed}
  - name: appended
    type: streaming_table
    query: SELECT id, v FROM STREAM(cur)
    skip_change_commits: true
`
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	land := func(name, line string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(landing, name), []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	land("1.json", `{"op": "I", "id": 1, "v": "a", "seq": 1}`)
	mustRun(t, "run", specFile)
	// Two versions of cur that feed and appended do not read yet: an update and an insert.
	land("2.json", `{"op": "U", "id": 1, "v": "b", "seq": 2}`)
	mustRun(t, "run", specFile, "--refresh", "raw,cur")
	land("3.json", `{"op": "I", "id": 2, "v": "c", "seq": 3}`)
	mustRun(t, "run", specFile, "--refresh", "raw,cur")
	time.Sleep(20 * time.Millisecond) // older than a zero retention
	out := mustRun(t, "vacuum", specFile, "cur", "--retain", "0s")
	if !strings.Contains(out, "cur: deleted ") {
		t.Fatalf("vacuum: %s", out)
	}
	mustRun(t, "run", specFile)
	// feed read version 1 as the table then was (an insert); versions 2 and 3 from the feed.
	feed := readJSONL(t, mustRun(t, "show", specFile, "feed", "--format", "jsonl"))
	for _, r := range feed {
		delete(r, "_commit_timestamp")
	}
	assertRows(t, "feed", feed, rowsOf(t,
		`{"id": 1, "v": "a", "seq": 1, "_change_type": "insert", "_commit_version": 1}`,
		`{"id": 1, "v": "b", "seq": 2, "_change_type": "update_postimage", "_commit_version": 2}`,
		`{"id": 2, "v": "c", "seq": 3, "_change_type": "insert", "_commit_version": 3}`))
	// appended skips version 2 (an update) and reads the insert of version 3.
	assertRows(t, "appended", readJSONL(t, mustRun(t, "show", specFile, "appended", "--format", "jsonl")), rowsOf(t,
		`{"id": 1, "v": "a"}`, `{"id": 2, "v": "c"}`))
}

// TestVacuumKeepsUnreadSnapshot: an APPLY CHANGES FROM SNAPSHOT flow reads each unread version
// of its source whole, files added before it included; VACUUM with a zero retention after an
// OPTIMIZE of the source keeps them, and the next update applies every version. Once read, they
// may go: a full refresh of the reader alone then fails naming the tables to rebuild.
func TestVacuumKeepsUnreadSnapshot(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	snapshots := filepath.Join(tmp, "snapshots")
	if err := os.MkdirAll(snapshots, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := `name: vacuum_snapshot
storage: ./storage
datasets:
  - name: cur
    apply_changes_from_snapshot:
      source: {path: ./snapshots, format: json, schema: "id BIGINT, v STRING"}
      keys: [id]
    table_properties: {delta.deletedFileRetentionDuration: "interval 0 seconds"}
  - name: hist
    apply_changes_from_snapshot: {source: cur, keys: [id], stored_as_scd_type: 2}
`
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	land := func(name string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(snapshots, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	land("1.json", `{"id": 1, "v": "a"}`, `{"id": 2, "v": "b"}`)
	mustRun(t, "run", specFile)
	// Versions 2 and 3 of cur, which hist has not read: both still read the file of version 1.
	land("2.json", `{"id": 1, "v": "a"}`, `{"id": 2, "v": "b"}`, `{"id": 3, "v": "c"}`)
	mustRun(t, "run", specFile, "--refresh", "cur")
	land("3.json", `{"id": 1, "v": "a"}`, `{"id": 2, "v": "b"}`, `{"id": 3, "v": "C"}`)
	mustRun(t, "run", specFile, "--refresh", "cur")
	mustRun(t, "optimize", specFile, "cur")
	time.Sleep(20 * time.Millisecond) // older than a zero retention
	mustRun(t, "vacuum", specFile, "cur", "--retain", "0s")
	mustRun(t, "run", specFile)
	assertRows(t, "hist", readJSONL(t, mustRun(t, "show", specFile, "hist", "--format", "jsonl")), rowsOf(t,
		`{"id": 1, "v": "a", "__START_AT": 1, "__END_AT": null}`,
		`{"id": 2, "v": "b", "__START_AT": 1, "__END_AT": null}`,
		`{"id": 3, "v": "c", "__START_AT": 2, "__END_AT": 3}`,
		`{"id": 3, "v": "C", "__START_AT": 3, "__END_AT": null}`))

	// hist has read every version: VACUUM may now delete the files of the older ones, and a full
	// refresh of hist alone, which applies every version of cur again, says what to rebuild.
	time.Sleep(20 * time.Millisecond)
	mustRun(t, "vacuum", specFile, "cur", "--retain", "0s")
	r := pipeline(t, nil, "run", specFile, "--full-refresh", "hist")
	if r.code != 1 || !strings.Contains(r.stderr, "version 2 of source table cur needs a data file that is gone (VACUUM deletes") ||
		!strings.Contains(r.stderr, "--full-refresh cur,hist`") {
		t.Fatalf("full refresh of hist after VACUUM: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustRun(t, "run", specFile, "--full-refresh", "cur,hist")
	assertRows(t, "hist rebuilt", readJSONL(t, mustRun(t, "show", specFile, "hist", "--format", "jsonl")), rowsOf(t,
		`{"id": 1, "v": "a", "__START_AT": 1, "__END_AT": null}`,
		`{"id": 2, "v": "b", "__START_AT": 1, "__END_AT": null}`,
		`{"id": 3, "v": "c", "__START_AT": 2, "__END_AT": 3}`,
		`{"id": 3, "v": "C", "__START_AT": 3, "__END_AT": null}`))
}

// TestReaderBehindVacuumOfAnotherPipeline: a dataset reading the Delta table of another
// pipeline (`format: delta`) that VACUUM left behind fails naming the full refresh (with its
// readers) that reads the table again from its latest snapshot; that full refresh then reads
// every row the table holds.
func TestReaderBehindVacuumOfAnotherPipeline(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a", "pipeline.yaml"), filepath.Join(tmp, "b", "pipeline.yaml")
	copyFileText(t, a, `name: a
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
    table_properties: {delta.deletedFileRetentionDuration: "interval 0 seconds"}
`)
	copyFileText(t, b, `name: b
storage: ./storage
datasets:
  - name: app
    source: {format: delta, path: ../a/storage/tables/raw}
  - name: latest
    apply_changes: {source: app, keys: [id], sequence_by: id}
`)
	land := func(i int) {
		t.Helper()
		copyFileText(t, filepath.Join(tmp, "a", "landing", fmt.Sprintf("%d.json", i)), fmt.Sprintf("{\"id\": %d}\n", i))
		mustRun(t, "run", a)
	}
	land(1)
	mustRun(t, "run", b)
	land(2)
	land(3)
	mustRun(t, "optimize", a, "raw")
	mustRun(t, "vacuum", a, "raw", "--retain", "0s")
	r := pipeline(t, nil, "run", b)
	if r.code != 1 || !strings.Contains(r.stderr, "app fell behind its source") || !strings.Contains(r.stderr, "--full-refresh app,latest`") {
		t.Fatalf("run behind the source's VACUUM: exit %d\n%s\nwant exit 1 naming the full refresh of app and latest", r.code, r.stderr)
	}
	mustRun(t, "run", b, "--full-refresh", "app,latest")
	want := rowsOf(t, `{"id": 1}`, `{"id": 2}`, `{"id": 3}`)
	for _, ds := range []string{"app", "latest"} {
		assertRows(t, ds, readJSONL(t, mustRun(t, "show", b, ds, "--format", "jsonl")), want)
	}
}

// TestVacuumKeepsWhatStreamsHaveNotRead: a table read incrementally by a query over STREAM(x)
// and by `source: {table: x}` (append and change feed) keeps, through OPTIMIZE and VACUUM with
// a zero retention, the files of the versions those flows have not read yet, so that their
// next update reads every row appended since exactly once.
func TestVacuumKeepsWhatStreamsHaveNotRead(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	landing := filepath.Join(tmp, "landing")
	if err := os.WriteFile(specFile, []byte(`name: behind
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, v BIGINT"}
    table_properties: {delta.deletedFileRetentionDuration: "interval 0 seconds"}
  - name: copy
    type: streaming_table
    query: SELECT id, v FROM STREAM(raw)
  - name: mirror
    source: {table: raw}
  - name: feed
    source: {table: raw, read: change_feed}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	land := func(b int) {
		t.Helper()
		line := fmt.Sprintf("{\"id\": %d, \"v\": %d}\n", b, b*10)
		copyFileText(t, filepath.Join(landing, fmt.Sprintf("b%d.json", b)), line)
	}
	land(1)
	mustRun(t, "run", specFile)
	// raw takes two more versions that the other flows do not read yet; OPTIMIZE then removes
	// the files those versions added, and VACUUM may delete removed files at once.
	land(2)
	mustRun(t, "run", specFile, "--refresh", "raw")
	land(3)
	mustRun(t, "run", specFile, "--refresh", "raw")
	mustRun(t, "optimize", specFile, "raw")
	mustRun(t, "vacuum", specFile, "raw", "--retain", "0s")
	mustRun(t, "run", specFile)

	want := rowsOf(t, `{"id": 1, "v": 10}`, `{"id": 2, "v": 20}`, `{"id": 3, "v": 30}`)
	for _, ds := range []string{"copy", "mirror"} {
		assertRows(t, ds, readJSONL(t, mustRun(t, "show", specFile, ds, "--format", "jsonl")), want)
	}
	var feed []map[string]any
	for _, r := range readJSONL(t, mustRun(t, "show", specFile, "feed", "--format", "jsonl")) {
		feed = append(feed, map[string]any{"id": r["id"], "v": r["v"], "_change_type": r["_change_type"], "_commit_version": r["_commit_version"]})
	}
	// raw's versions: 0 creates the table, 1, 2 and 3 append one batch each.
	assertRows(t, "feed", feed, rowsOf(t,
		`{"id": 1, "v": 10, "_change_type": "insert", "_commit_version": 1}`,
		`{"id": 2, "v": 20, "_change_type": "insert", "_commit_version": 2}`,
		`{"id": 3, "v": 30, "_change_type": "insert", "_commit_version": 3}`))

	// Once read, those files go with the next VACUUM.
	before := len(parquetFiles(t, filepath.Join(tmp, "storage", "tables", "raw")))
	mustRun(t, "vacuum", specFile, "raw", "--retain", "0s")
	if after := len(parquetFiles(t, filepath.Join(tmp, "storage", "tables", "raw"))); after != 1 || before <= after {
		t.Errorf("raw holds %d data files before the last VACUUM and %d after; want the compacted file only after", before, after)
	}
}

// copyFileText writes text to path, making its folder.
func copyFileText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parquetFiles lists the data files directly in a table's folder.
func parquetFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFullRefreshAfterVacuumOfSource: once OPTIMIZE and VACUUM removed the files of a source
// table's early versions, a full refresh of an APPLY CHANGES target and of a query over
// STREAM(x) rebuilds them from the source's latest snapshot, which holds every row those
// versions appended, rather than failing on a deleted file.
func TestFullRefreshAfterVacuumOfSource(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	landing := filepath.Join(tmp, "landing")
	if err := os.WriteFile(specFile, []byte(`name: refresh_after_vacuum
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "op STRING, id BIGINT, v BIGINT, seq BIGINT"}
    table_properties: {delta.deletedFileRetentionDuration: "interval 0 seconds"}
  - name: copy
    type: streaming_table
    query: SELECT id, v FROM STREAM(raw)
  - name: current
    apply_changes: {source: raw, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	batches := []string{
		`{"op": "U", "id": 1, "v": 10, "seq": 1}` + "\n" + `{"op": "U", "id": 2, "v": 20, "seq": 2}` + "\n",
		`{"op": "U", "id": 1, "v": 11, "seq": 3}` + "\n" + `{"op": "D", "id": 2, "seq": 4}` + "\n",
		`{"op": "U", "id": 3, "v": 30, "seq": 5}` + "\n" + `{"op": "U", "id": 1, "v": 9, "seq": 0}` + "\n",
	}
	for i, b := range batches {
		copyFileText(t, filepath.Join(landing, fmt.Sprintf("b%d.json", i)), b)
		mustRun(t, "run", specFile)
	}
	mustRun(t, "optimize", specFile, "raw")
	// The readers read past the OPTIMIZE (with new input), so that VACUUM keeps nothing for them.
	copyFileText(t, filepath.Join(landing, "b3.json"), `{"op": "U", "id": 4, "v": 40, "seq": 6}`+"\n")
	mustRun(t, "run", specFile)
	mustRun(t, "vacuum", specFile, "raw", "--retain", "0s")
	if n := len(parquetFiles(t, filepath.Join(tmp, "storage", "tables", "raw"))); n != 2 {
		t.Fatalf("raw holds %d data files after OPTIMIZE and VACUUM; want 2 (the compacted one, b3's)", n)
	}
	mustRun(t, "run", specFile, "--full-refresh", "copy,current")

	// Per key the highest seq wins: 1 -> (11, seq 3) (seq 0 is late), 2 deleted at seq 4, 3 -> 30,
	// 4 -> 40.
	assertRows(t, "current", readJSONL(t, mustRun(t, "show", specFile, "current", "--format", "jsonl")),
		rowsOf(t, `{"id": 1, "v": 11, "seq": 3}`, `{"id": 3, "v": 30, "seq": 5}`, `{"id": 4, "v": 40, "seq": 6}`))
	assertRows(t, "copy", readJSONL(t, mustRun(t, "show", specFile, "copy", "--format", "jsonl")),
		rowsOf(t, `{"id": 1, "v": 10}`, `{"id": 2, "v": 20}`, `{"id": 1, "v": 11}`, `{"id": 2, "v": null}`,
			`{"id": 3, "v": 30}`, `{"id": 1, "v": 9}`, `{"id": 4, "v": 40}`))

	// Later input is read once, after the snapshot.
	copyFileText(t, filepath.Join(landing, "b4.json"), `{"op": "U", "id": 5, "v": 50, "seq": 7}`+"\n")
	mustRun(t, "run", specFile)
	assertRows(t, "current after more input", readJSONL(t, mustRun(t, "show", specFile, "current", "--format", "jsonl")),
		rowsOf(t, `{"id": 1, "v": 11, "seq": 3}`, `{"id": 3, "v": 30, "seq": 5}`, `{"id": 4, "v": 40, "seq": 6}`, `{"id": 5, "v": 50, "seq": 7}`))
	if got := len(readJSONL(t, mustRun(t, "show", specFile, "copy", "--format", "jsonl"))); got != 8 {
		t.Errorf("copy holds %d rows after more input; want 8", got)
	}
}
