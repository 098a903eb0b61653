package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
)

// accountsSpec is a bronze table partitioned by region feeding an SCD type 1 and an SCD type 2
// target; props go into every dataset's table_properties.
func accountsSpec(props map[string]string) string {
	var p strings.Builder
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p.WriteString("    table_properties:\n")
	for _, k := range keys {
		fmt.Fprintf(&p, "      %s: %q\n", k, props[k])
	}
	return `name: accounts
storage: ${storage}
datasets:
  - name: raw
    partition_by: [region]
    source:
      path: ${landing}
      format: json
      schema: "id BIGINT, region STRING, op STRING, balance DECIMAL(12,2), seq BIGINT, at TIMESTAMP"
` + p.String() + `  - name: accounts
    apply_changes: {source: raw, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op]}
` + p.String() + `  - name: accounts_history
    apply_changes: {source: raw, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op], stored_as_scd_type: 2}
` + p.String()
}

// accountEvent is one input line of batch b: ids cycle through 1..7, every fourth batch deletes
// its first id, the sequence grows with the batch.
type accountEvent struct {
	ID      int64  `json:"id"`
	Region  string `json:"region"`
	Op      string `json:"op"`
	Balance string `json:"balance"`
	Seq     int64  `json:"seq"`
	At      string `json:"at"`
}

func accountBatch(b int) []accountEvent {
	var out []accountEvent
	for i := 0; i < 4; i++ {
		id := int64((b*3+i)%7 + 1)
		op := "U"
		if i == 0 && b%4 == 0 {
			op = "D"
		}
		seq := int64(b*10 + i)
		out = append(out, accountEvent{
			ID: id, Region: []string{"eu", "us", "apac"}[id%3], Op: op, Balance: fmt.Sprintf("%d.25", b*100+i), Seq: seq,
			At: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Minute).Format(time.RFC3339),
		})
	}
	return out
}

// landBatch writes batch b as one JSON-lines file.
func landBatch(t *testing.T, landing string, b int) {
	t.Helper()
	var sb strings.Builder
	for _, e := range accountBatch(b) {
		j, _ := json.Marshal(e)
		sb.Write(j)
		sb.WriteByte('\n')
	}
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(landing, fmt.Sprintf("batch-%04d.json", b)), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectedRaw is every event of batches 1..n as the bronze table's jsonl rows.
func expectedRaw(n int) []string {
	var out []string
	for b := 1; b <= n; b++ {
		for _, e := range accountBatch(b) {
			out = append(out, fmt.Sprintf(`{"id": %d, "region": %q, "op": %q, "balance": %s, "seq": %d, "at": %q}`,
				e.ID, e.Region, e.Op, e.Balance, e.Seq, strings.TrimSuffix(e.At, "Z")+".000000Z"))
		}
	}
	return out
}

// expectedAccounts is the SCD type 1 target after batches 1..n by semantics.md: per id the
// event with the highest seq wins; a delete leaves no row.
func expectedAccounts(n int) []string {
	last := map[int64]accountEvent{}
	for b := 1; b <= n; b++ {
		for _, e := range accountBatch(b) {
			if old, ok := last[e.ID]; !ok || e.Seq > old.Seq {
				last[e.ID] = e
			}
		}
	}
	var out []string
	for _, e := range last {
		if e.Op != "D" {
			out = append(out, fmt.Sprintf(`{"id": %d, "region": %q, "balance": %s, "seq": %d, "at": %q}`,
				e.ID, e.Region, e.Balance, e.Seq, strings.TrimSuffix(e.At, "Z")+".000000Z"))
		}
	}
	return out
}

// deltacheckRows reads a table with the independent reader and returns its rows in the jsonl
// form of spec.md §2 (DuckDB prints timestamps as "2024-01-01 00:10:00+00").
func deltacheckRows(t *testing.T, dir string, timestampCols ...string) []map[string]any {
	t.Helper()
	out, err := exec.Command(os.Getenv("DELTACHECK"), "rows", dir).Output()
	if err != nil {
		t.Fatalf("deltacheck rows %s: %v", dir, err)
	}
	rows := readJSONL(t, string(out))
	for _, r := range rows {
		for _, c := range timestampCols {
			if s, ok := r[c].(string); ok {
				for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00"} {
					if ts, err := time.Parse(layout, s); err == nil {
						r[c] = ts.UTC().Format("2006-01-02T15:04:05.000000Z")
					}
				}
			}
		}
	}
	return rows
}

// TestMaintenanceEndToEnd runs 12 updates (checkpoints every 5 commits), OPTIMIZE, one more
// update (the SCD type 1 target finds its rows in the compacted files), VACUUM with a zero
// retention, and checks that the runner and deltacheck read the rows the input gives, that the
// SCD type 2 target compacted by OPTIMIZE still equals a clean run's history after more batches,
// that a version whose files were vacuumed is refused rather than read wrong, and that every
// commit reads with the strict decoder.
func TestMaintenanceEndToEnd(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	props := map[string]string{
		"delta.checkpointInterval":           "5",
		"delta.deletedFileRetentionDuration": "interval 0 seconds",
		"pipelines.autoOptimize.managed":     "false",
	}
	if err := os.WriteFile(specFile, []byte(accountsSpec(props)), 0o644); err != nil {
		t.Fatal(err)
	}
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	conf := []string{"--conf", "landing=" + landing, "--conf", "storage=" + storage}
	run := func(args ...string) string { return mustRun(t, append(args, conf...)...) }
	for b := 1; b <= 12; b++ {
		landBatch(t, landing, b)
		run("run", specFile)
	}
	raw := filepath.Join(storage, "tables", "raw")
	for _, name := range []string{"00000000000000000005.checkpoint.parquet", "00000000000000000010.checkpoint.parquet", "_last_checkpoint"} {
		if _, err := os.Stat(filepath.Join(raw, "_delta_log", name)); err != nil {
			t.Errorf("raw: %v", err)
		}
	}
	out := run("optimize", specFile)
	// Every batch wrote one file per region; the event log compacts itself (its line says
	// "compacted" or "nothing to compact").
	for _, want := range []string{"raw: compacted 36 files", "accounts: compacted", "accounts_history: compacted", "event log: "} {
		if !strings.Contains(out, want) {
			t.Errorf("optimize output lacks %q:\n%s", want, out)
		}
	}
	snap, err := delta.New(raw).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 3 { // one file per region
		t.Errorf("raw has %d files after optimize, want 3 (one per region)", len(snap.Files))
	}

	landBatch(t, landing, 13)
	run("run", specFile)
	assertRows(t, "raw", readJSONL(t, run("show", specFile, "raw", "--format", "jsonl")), rowsOf(t, expectedRaw(13)...))
	assertRows(t, "accounts", readJSONL(t, run("show", specFile, "accounts", "--format", "jsonl")), rowsOf(t, expectedAccounts(13)...))
	h := readJSONL(t, run("history", specFile, "accounts", "--format", "jsonl"))
	ops := map[string]int{}
	for _, e := range h {
		ops[e["operation"].(string)]++
	}
	if ops["OPTIMIZE"] != 1 || ops["CREATE TABLE"] != 1 || ops["MERGE"] != 13 {
		t.Errorf("accounts history operations %v, want 1 CREATE TABLE, 13 MERGE, 1 OPTIMIZE", ops)
	}

	time.Sleep(20 * time.Millisecond) // the replaced files are now older than a zero retention
	for _, ds := range []string{"raw", "accounts"} {
		out := run("vacuum", specFile, ds, "--retain", "0s")
		if !strings.Contains(out, ds+": deleted ") || strings.Contains(out, "deleted 0 files") {
			t.Errorf("vacuum %s: %s", ds, out)
		}
	}
	assertRows(t, "raw after vacuum", readJSONL(t, run("show", specFile, "raw", "--format", "jsonl")), rowsOf(t, expectedRaw(13)...))
	assertRows(t, "accounts after vacuum", readJSONL(t, run("show", specFile, "accounts", "--format", "jsonl")), rowsOf(t, expectedAccounts(13)...))
	if r := pipeline(t, nil, append([]string{"show", specFile, "accounts", "--version", "1"}, conf...)...); r.code != 1 || !strings.Contains(r.stderr, "no such file") ||
		!strings.Contains(r.stderr, "version 1 of accounts needs a data file that is gone (VACUUM deletes the files that only versions older than the retention need") {
		t.Errorf("show --version 1 after vacuum: exit %d, %s; want exit 1 naming the missing file and why it is gone", r.code, r.stderr)
	}
	if os.Getenv("DELTACHECK") != "" {
		assertRows(t, "raw by deltacheck", deltacheckRows(t, raw, "at"), rowsOf(t, expectedRaw(13)...))
		assertRows(t, "accounts by deltacheck", deltacheckRows(t, filepath.Join(storage, "tables", "accounts"), "at"), rowsOf(t, expectedAccounts(13)...))
		ours := readJSONL(t, run("events", specFile, "--format", "jsonl"))
		if theirs := deltacheckRows(t, filepath.Join(storage, "system", "events")); len(theirs) != len(ours) {
			t.Errorf("event log: deltacheck reads %d events, the runner %d", len(theirs), len(ours))
		}
	}
	for _, table := range []string{"tables/raw", "tables/accounts", "tables/accounts_history", "system/events"} {
		assertValidLog(t, filepath.Join(storage, table))
	}
	// The SCD type 2 history after OPTIMIZE (its state rebuilt its key-to-file index) and more
	// batches equals the history of one clean run over the same input.
	assertRows(t, "accounts_history after optimize", readJSONL(t, run("show", specFile, "accounts_history", "--format", "jsonl")), cleanHistory(t, specFile, landing))
}

// cleanHistory runs the spec once over every file of landing in a fresh storage, without
// maintenance, and returns the accounts_history rows: by the guiding rule they do not depend on
// batching.
func cleanHistory(t *testing.T, specFile, landing string) []map[string]any {
	t.Helper()
	storage := filepath.Join(t.TempDir(), "clean")
	conf := []string{"--conf", "landing=" + landing, "--conf", "storage=" + storage}
	mustRun(t, append([]string{"run", specFile}, conf...)...)
	return readJSONL(t, mustRun(t, append([]string{"show", specFile, "accounts_history", "--format", "jsonl"}, conf...)...))
}

// TestAutoOptimize: with pipelines.autoOptimize.minNumFiles 3, the bronze table and the SCD type
// 1 target are compacted as the updates go (a maintenance_progress event each time) and keep the
// rows the input gives; the SCD type 2 target keeps the history a clean run gives; setting pipelines.autoOptimize.managed to
// "false" in the spec turns it off for the next updates; the event log stays below its own
// threshold of small files.
func TestAutoOptimize(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	write := func(props map[string]string) {
		if err := os.WriteFile(specFile, []byte(accountsSpec(props)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(map[string]string{"pipelines.autoOptimize.minNumFiles": "3"})
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	conf := []string{"--conf", "landing=" + landing, "--conf", "storage=" + storage}
	run := func(args ...string) string { return mustRun(t, append(args, conf...)...) }
	files := func(table string) int {
		snap, err := delta.New(filepath.Join(storage, table)).Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		return len(snap.Files)
	}
	for b := 1; b <= 8; b++ {
		landBatch(t, landing, b)
		run("run", specFile)
	}
	// raw gets one file per region per batch and is compacted once a region has 3.
	if n := files("tables/raw"); n > 6 {
		t.Errorf("raw has %d files after 8 batches with auto optimize", n)
	}
	evs := readJSONL(t, run("events", specFile, "--type", "maintenance_progress", "--format", "jsonl"))
	by := map[string]int{}
	for _, e := range evs {
		origin := e["origin"].(map[string]any)
		by[origin["dataset_name"].(string)]++
		if !strings.Contains(e["details"].(string), `"operation":"OPTIMIZE"`) {
			t.Errorf("event %v", e)
		}
	}
	if by["raw"] == 0 || by["accounts"] == 0 {
		t.Errorf("automatic OPTIMIZE events per dataset %v: want raw and accounts", by)
	}
	if n := files("system/events"); n >= 20 {
		t.Errorf("the event log has %d files; it is compacted at 20", n)
	}
	assertRows(t, "accounts", readJSONL(t, run("show", specFile, "accounts", "--format", "jsonl")), rowsOf(t, expectedAccounts(8)...))

	write(map[string]string{"pipelines.autoOptimize.minNumFiles": "3", "pipelines.autoOptimize.managed": "false"})
	before := files("tables/raw")
	for b := 9; b <= 12; b++ {
		landBatch(t, landing, b)
		run("run", specFile)
	}
	if n := files("tables/raw"); n <= before {
		t.Errorf("raw has %d files after 4 more batches with auto optimize off (had %d)", n, before)
	}
	assertRows(t, "raw", readJSONL(t, run("show", specFile, "raw", "--format", "jsonl")), rowsOf(t, expectedRaw(12)...))
	assertRows(t, "accounts", readJSONL(t, run("show", specFile, "accounts", "--format", "jsonl")), rowsOf(t, expectedAccounts(12)...))
	assertRows(t, "accounts_history", readJSONL(t, run("show", specFile, "accounts_history", "--format", "jsonl")), cleanHistory(t, specFile, landing))
	h := readJSONL(t, run("history", specFile, "raw", "--format", "jsonl", "--limit", "30"))
	found := false
	for _, e := range h {
		if e["operation"] == "SET TBLPROPERTIES" {
			found = strings.Contains(fmt.Sprint(e["operationParameters"]), "pipelines.autoOptimize.managed")
		}
	}
	if !found {
		t.Errorf("raw's history has no SET TBLPROPERTIES of pipelines.autoOptimize.managed: %v", h)
	}
}
