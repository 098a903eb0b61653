package main

import (
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
