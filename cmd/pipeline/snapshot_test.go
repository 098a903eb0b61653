package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The APPLY CHANGES FROM SNAPSHOT example (examples/pipelines/snapshot_cdc): customers applies
// each export file as a full snapshot (SCD type 1); customers_history keeps every version of
// customers (SCD type 2, sequence = the version of customers).
const snapshotSpec = "../../examples/pipelines/snapshot_cdc/pipeline.yaml"

var snapshotFiles = []string{"customers-2024-03-01.json", "customers-2024-03-02.json", "customers-2024-03-03.json"}

func snapshotArgs(snapshots, storage string) []string {
	return []string{"--conf", "snapshots=" + snapshots, "--conf", "storage=" + storage}
}

// customersAfter is the customers table after each export: the export itself.
var customersAfter = [][]string{
	{`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "gold"}`,
		`{"customer_id": 2, "name": "Ben", "city": "Paris", "tier": "silver"}`,
		`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver"}`},
	{`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "gold"}`,
		`{"customer_id": 2, "name": "Ben", "city": "Lyon", "tier": "silver"}`,
		`{"customer_id": 4, "name": "Dee", "city": "Oslo", "tier": "bronze"}`},
	{`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "platinum"}`,
		`{"customer_id": 2, "name": "Ben", "city": "Lyon", "tier": "silver"}`,
		`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver"}`,
		`{"customer_id": 4, "name": "Dee", "city": "Oslo", "tier": "bronze"}`},
}

// historyAfterAll is customers_history after the three exports: __START_AT / __END_AT are the
// versions 1, 2, 3 of customers (one per export).
var historyAfterAll = []string{
	`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "gold", "__START_AT": 1, "__END_AT": 3}`,
	`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "platinum", "__START_AT": 3, "__END_AT": null}`,
	`{"customer_id": 2, "name": "Ben", "city": "Paris", "tier": "silver", "__START_AT": 1, "__END_AT": 2}`,
	`{"customer_id": 2, "name": "Ben", "city": "Lyon", "tier": "silver", "__START_AT": 2, "__END_AT": null}`,
	`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver", "__START_AT": 1, "__END_AT": 2}`,
	`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver", "__START_AT": 3, "__END_AT": null}`,
	`{"customer_id": 4, "name": "Dee", "city": "Oslo", "tier": "bronze", "__START_AT": 2, "__END_AT": null}`,
}

// customersFeed is the change data feed of customers: one commit per export, nothing for
// customers that did not change.
var customersFeed = []string{
	`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "gold", "_change_type": "insert", "_commit_version": 1}`,
	`{"customer_id": 2, "name": "Ben", "city": "Paris", "tier": "silver", "_change_type": "insert", "_commit_version": 1}`,
	`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver", "_change_type": "insert", "_commit_version": 1}`,
	`{"customer_id": 2, "name": "Ben", "city": "Paris", "tier": "silver", "_change_type": "update_preimage", "_commit_version": 2}`,
	`{"customer_id": 2, "name": "Ben", "city": "Lyon", "tier": "silver", "_change_type": "update_postimage", "_commit_version": 2}`,
	`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver", "_change_type": "delete", "_commit_version": 2}`,
	`{"customer_id": 4, "name": "Dee", "city": "Oslo", "tier": "bronze", "_change_type": "insert", "_commit_version": 2}`,
	`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "gold", "_change_type": "update_preimage", "_commit_version": 3}`,
	`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "platinum", "_change_type": "update_postimage", "_commit_version": 3}`,
	`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver", "_change_type": "insert", "_commit_version": 3}`,
}

// showJSONL runs `pipeline show` (or changes, with extra args) and returns the rows without
// _commit_timestamp.
func showJSONL(t *testing.T, conf []string, args ...string) []map[string]any {
	t.Helper()
	rows := readJSONL(t, mustRun(t, append(append(args, "--format", "jsonl"), conf...)...))
	for _, r := range rows {
		delete(r, "_commit_timestamp")
	}
	return rows
}

// TestSnapshotExampleFileByFile lands the example's exports one at a time: customers equals each
// export after its run, a re-run is idle, and at the end customers_history and the change data
// feed hold each change once.
func TestSnapshotExampleFileByFile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	snaps, storage := filepath.Join(tmp, "snapshots"), filepath.Join(tmp, "storage")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := snapshotArgs(snaps, storage)
	for i, f := range snapshotFiles {
		copyFile(t, filepath.Join(filepath.Dir(snapshotSpec), "snapshots", f), filepath.Join(snaps, f))
		out := mustRun(t, append([]string{"run", snapshotSpec}, conf...)...)
		if !strings.Contains(out, "COMPLETED") {
			t.Errorf("run after %s:\n%s", f, out)
		}
		assertRows(t, "customers after "+f, showJSONL(t, conf, "show", snapshotSpec, "customers"), rowsOf(t, customersAfter[i]...))
		// A second run finds nothing new: each file is applied once.
		out = mustRun(t, append([]string{"run", snapshotSpec}, conf...)...)
		if strings.Count(summaryOf(out), "IDLE") != 2 {
			t.Errorf("a re-run after %s must leave both flows IDLE:\n%s", f, out)
		}
	}
	assertRows(t, "customers_history", showJSONL(t, conf, "show", snapshotSpec, "customers_history"), rowsOf(t, historyAfterAll...))
	assertRows(t, "customers change data feed", showJSONL(t, conf, "changes", snapshotSpec, "customers", "--from-version", "0"), rowsOf(t, customersFeed...))

	// The event log: the flow type, and per run the rows each flow upserted and deleted.
	evs := readJSONL(t, mustRun(t, append([]string{"events", snapshotSpec, "--type", "flow_progress", "--format", "jsonl"}, conf...)...))
	type counts struct{ upserted, deleted int64 }
	got := map[string][]counts{}
	for _, e := range evs {
		var d struct {
			FlowProgress struct {
				Status  string `json:"status"`
				Metrics struct {
					Upserted int64 `json:"num_upserted_rows"`
					Deleted  int64 `json:"num_deleted_rows"`
				} `json:"metrics"`
			} `json:"flow_progress"`
		}
		if err := json.Unmarshal([]byte(e["details"].(string)), &d); err != nil {
			t.Fatal(err)
		}
		if d.FlowProgress.Status == "COMPLETED" {
			flow := e["origin"].(map[string]any)["flow_name"].(string)
			got[flow] = append(got[flow], counts{d.FlowProgress.Metrics.Upserted, d.FlowProgress.Metrics.Deleted})
		}
	}
	if want := []counts{{3, 0}, {2, 1}, {2, 0}}; !equalMetrics(got["customers"], want) {
		t.Errorf("customers metrics = %v, want %v", got["customers"], want)
	}
	defs := mustRun(t, append([]string{"events", snapshotSpec, "--type", "flow_definition", "--format", "jsonl"}, conf...)...)
	if !strings.Contains(defs, "APPLY_CHANGES_FROM_SNAPSHOT") {
		t.Errorf("flow_definition events do not name the flow type APPLY_CHANGES_FROM_SNAPSHOT:\n%s", defs)
	}
}

// TestSnapshotOlderFileRefreshHint: an export landed after a newer one was applied is refused,
// and the full refresh the error suggests rebuilds customers and customers_history, which reads
// it (a rebuilt customers is a re-created source to it), in one run: both exports applied in name
// order, as if they had landed in that order.
func TestSnapshotOlderFileRefreshHint(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	snaps, storage := filepath.Join(tmp, "snapshots"), filepath.Join(tmp, "storage")
	conf := snapshotArgs(snaps, storage)
	dir := filepath.Join(filepath.Dir(snapshotSpec), "snapshots")
	copyFile(t, filepath.Join(dir, snapshotFiles[1]), filepath.Join(snaps, snapshotFiles[1]))
	mustRun(t, append([]string{"run", snapshotSpec}, conf...)...)
	copyFile(t, filepath.Join(dir, snapshotFiles[0]), filepath.Join(snaps, snapshotFiles[0]))
	r := pipeline(t, nil, append([]string{"run", snapshotSpec}, conf...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "sorts before "+snapshotFiles[1]) {
		t.Fatalf("an older export must fail the update (exit 1): exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "--full-refresh customers,customers_history ") {
		t.Fatalf("the error must suggest the full refresh of customers and of its reader customers_history:\n%s", r.stderr)
	}
	mustRun(t, append([]string{"run", snapshotSpec, "--full-refresh", "customers,customers_history"}, conf...)...)
	assertRows(t, "customers", showJSONL(t, conf, "show", snapshotSpec, "customers"), rowsOf(t, customersAfter[1]...))
	assertRows(t, "customers_history", showJSONL(t, conf, "show", snapshotSpec, "customers_history"), rowsOf(t,
		`{"customer_id": 1, "name": "Ada", "city": "London", "tier": "gold", "__START_AT": 1, "__END_AT": null}`,
		`{"customer_id": 2, "name": "Ben", "city": "Paris", "tier": "silver", "__START_AT": 1, "__END_AT": 2}`,
		`{"customer_id": 2, "name": "Ben", "city": "Lyon", "tier": "silver", "__START_AT": 2, "__END_AT": null}`,
		`{"customer_id": 3, "name": "Cy", "city": "Rome", "tier": "silver", "__START_AT": 1, "__END_AT": 2}`,
		`{"customer_id": 4, "name": "Dee", "city": "Oslo", "tier": "bronze", "__START_AT": 2, "__END_AT": null}`))
}

// TestSnapshotExampleAllAtOnce: three exports found by one run are applied in name order, one
// commit each, and give the same tables as one run per export.
func TestSnapshotExampleAllAtOnce(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	snaps, storage := filepath.Join(tmp, "snapshots"), filepath.Join(tmp, "storage")
	for _, f := range snapshotFiles {
		copyFile(t, filepath.Join(filepath.Dir(snapshotSpec), "snapshots", f), filepath.Join(snaps, f))
	}
	conf := snapshotArgs(snaps, storage)
	mustRun(t, append([]string{"run", snapshotSpec}, conf...)...)
	assertRows(t, "customers", showJSONL(t, conf, "show", snapshotSpec, "customers"), rowsOf(t, customersAfter[2]...))
	assertRows(t, "customers_history", showJSONL(t, conf, "show", snapshotSpec, "customers_history"), rowsOf(t, historyAfterAll...))
	assertRows(t, "customers change data feed", showJSONL(t, conf, "changes", snapshotSpec, "customers", "--from-version", "0"), rowsOf(t, customersFeed...))
	// Time travel: version 2 of customers is the second export.
	assertRows(t, "customers version 2", showJSONL(t, conf, "show", snapshotSpec, "customers", "--version", "2"), rowsOf(t, customersAfter[1]...))
	if dc := os.Getenv("DELTACHECK"); dc != "" {
		out, err := exec.Command(dc, "rows", filepath.Join(storage, "tables", "customers_history")).Output()
		if err != nil {
			t.Fatalf("deltacheck rows: %v", err)
		}
		assertRows(t, "independent read of customers_history", readJSONL(t, string(out)), rowsOf(t, historyAfterAll...))
	}
}

// TestSnapshotCrashRecovery kills the process with SIGKILL while it applies the second export
// (after its data files are written but before the commit; right after the commit), runs again,
// and checks that the tables equal a clean run's and the change data feed holds each change once.
func TestSnapshotCrashRecovery(t *testing.T) {
	for _, point := range []string{"apply.after-data-files", "apply.after-commit"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			snaps, storage := filepath.Join(tmp, "snapshots"), filepath.Join(tmp, "storage")
			conf := snapshotArgs(snaps, storage)
			for i, f := range snapshotFiles {
				copyFile(t, filepath.Join(filepath.Dir(snapshotSpec), "snapshots", f), filepath.Join(snaps, f))
				if i == 1 {
					r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, append([]string{"run", snapshotSpec}, conf...)...)
					if r.code != -1 {
						t.Fatalf("the run with TRIBUTARY_FAULT=%s exited %d, want it killed by SIGKILL\n%s%s", point, r.code, r.stdout, r.stderr)
					}
				}
				mustRun(t, append([]string{"run", snapshotSpec}, conf...)...)
			}
			assertRows(t, "customers after recovery", showJSONL(t, conf, "show", snapshotSpec, "customers"), rowsOf(t, customersAfter[2]...))
			assertRows(t, "customers_history after recovery", showJSONL(t, conf, "show", snapshotSpec, "customers_history"), rowsOf(t, historyAfterAll...))
			assertRows(t, "customers change data feed after recovery", showJSONL(t, conf, "changes", snapshotSpec, "customers", "--from-version", "0"), rowsOf(t, customersFeed...))
		})
	}
}
