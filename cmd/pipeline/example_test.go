package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const exampleSpec = "../../examples/pipelines/orders_cdc/pipeline.yaml"

var exampleFiles = []string{"batch-0001.json", "batch-0002.json", "batch-0003.json", "batch-0004.json"}

// exampleArgs points the example at a fresh landing folder and storage.
func exampleArgs(landing, storage string) []string {
	return []string{"--conf", "landing=" + landing, "--conf", "storage=" + storage}
}

// afterBatch is the orders table after each batch of the example (semantics.md APPLY CHANGES;
// the shared case 00-seed-orders-cdc): batch 1 reduces 1001 to its seq-3 update; batch 2 ships
// 1001, deletes 1002 and pays 1003; batch 3 replays batch 2 and batch 4 brings stale events, so
// neither changes anything.
var afterBatch = [][]string{
	{`{"order_id": 1001, "status": "paid", "amount": 25.50, "seq": 3}`,
		`{"order_id": 1002, "status": "placed", "amount": 12.00, "seq": 2}`,
		`{"order_id": 1003, "status": "placed", "amount": 60.00, "seq": 4}`},
	{`{"order_id": 1001, "status": "shipped", "amount": 25.50, "seq": 5}`,
		`{"order_id": 1003, "status": "paid", "amount": 60.00, "seq": 7}`},
	{`{"order_id": 1001, "status": "shipped", "amount": 25.50, "seq": 5}`,
		`{"order_id": 1003, "status": "paid", "amount": 60.00, "seq": 7}`},
	{`{"order_id": 1001, "status": "shipped", "amount": 25.50, "seq": 5}`,
		`{"order_id": 1003, "status": "paid", "amount": 60.00, "seq": 7}`},
}

// TestExampleBatchByBatch lands the example's four files one at a time and checks the table after
// each update, the change data feed, and the event log's metrics.
func TestExampleBatchByBatch(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := exampleArgs(landing, storage)
	for i, f := range exampleFiles {
		copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", f), filepath.Join(landing, f))
		mustRun(t, append([]string{"run", exampleSpec}, conf...)...)
		got := readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders", "--format", "jsonl"}, conf...)...))
		assertRows(t, "orders after batch "+itoa(i+1), got, rowsOf(t, afterBatch[i]...))
	}

	// The exact jsonl text: DECIMAL with its scale, keys in column order.
	out := mustRun(t, append([]string{"show", exampleSpec, "orders", "--format", "jsonl"}, conf...)...)
	if !strings.Contains(out, `{"order_id": 1001, "status": "shipped", "amount": 25.50, "seq": 5}`) {
		t.Errorf("show --format jsonl must print DECIMAL(10,2) as 25.50 with keys in column order; got:\n%s", out)
	}

	// The change data feed: version 0 creates the table; 1 inserts; 2 updates and deletes;
	// 3 (the replay) and 4 (stale events) change nothing.
	cdf := readJSONL(t, mustRun(t, append([]string{"changes", exampleSpec, "orders", "--from-version", "0", "--format", "jsonl"}, conf...)...))
	for _, r := range cdf {
		if _, ok := r["_commit_timestamp"].(string); !ok {
			t.Errorf("change row without a _commit_timestamp: %v", r)
		}
		delete(r, "_commit_timestamp")
	}
	assertRows(t, "change data feed", cdf, rowsOf(t,
		`{"order_id": 1001, "status": "paid", "amount": 25.50, "seq": 3, "_change_type": "insert", "_commit_version": 1}`,
		`{"order_id": 1002, "status": "placed", "amount": 12.00, "seq": 2, "_change_type": "insert", "_commit_version": 1}`,
		`{"order_id": 1003, "status": "placed", "amount": 60.00, "seq": 4, "_change_type": "insert", "_commit_version": 1}`,
		`{"order_id": 1001, "status": "paid", "amount": 25.50, "seq": 3, "_change_type": "update_preimage", "_commit_version": 2}`,
		`{"order_id": 1001, "status": "shipped", "amount": 25.50, "seq": 5, "_change_type": "update_postimage", "_commit_version": 2}`,
		`{"order_id": 1002, "status": "placed", "amount": 12.00, "seq": 2, "_change_type": "delete", "_commit_version": 2}`,
		`{"order_id": 1003, "status": "placed", "amount": 60.00, "seq": 4, "_change_type": "update_preimage", "_commit_version": 2}`,
		`{"order_id": 1003, "status": "paid", "amount": 60.00, "seq": 7, "_change_type": "update_postimage", "_commit_version": 2}`,
	))

	// The event log: one COMPLETED flow_progress per flow and update, with the metrics of
	// semantics.md "Event log".
	evs := readJSONL(t, mustRun(t, append([]string{"events", exampleSpec, "--type", "flow_progress", "--format", "jsonl"}, conf...)...))
	type metrics struct{ out, upserted, deleted int64 }
	got := map[string][]metrics{}
	var quality []any
	for _, e := range evs {
		var d struct {
			FlowProgress struct {
				Status  string `json:"status"`
				Metrics struct {
					Out      int64 `json:"num_output_rows"`
					Upserted int64 `json:"num_upserted_rows"`
					Deleted  int64 `json:"num_deleted_rows"`
				} `json:"metrics"`
				DataQuality map[string]any `json:"data_quality"`
			} `json:"flow_progress"`
		}
		if err := json.Unmarshal([]byte(e["details"].(string)), &d); err != nil {
			t.Fatal(err)
		}
		if d.FlowProgress.Status != "COMPLETED" {
			continue
		}
		flow := e["origin"].(map[string]any)["flow_name"].(string)
		fp := d.FlowProgress
		got[flow] = append(got[flow], metrics{fp.Metrics.Out, fp.Metrics.Upserted, fp.Metrics.Deleted})
		if flow == "orders_changes" && quality == nil {
			quality = fp.DataQuality["expectations"].([]any)
		}
	}
	wantOrders := []metrics{{3, 3, 0}, {3, 2, 1}, {0, 0, 0}, {0, 0, 0}}
	wantBronze := []metrics{{4, 0, 0}, {3, 0, 0}, {3, 0, 0}, {2, 0, 0}}
	if !equalMetrics(got["orders"], wantOrders) {
		t.Errorf("orders flow metrics = %v, want %v", got["orders"], wantOrders)
	}
	if !equalMetrics(got["orders_changes"], wantBronze) {
		t.Errorf("orders_changes flow metrics = %v, want %v", got["orders_changes"], wantBronze)
	}
	if len(quality) != 1 {
		t.Fatalf("data_quality.expectations = %v, want one entry for valid_op", quality)
	}
	q := quality[0].(map[string]any)
	if q["name"] != "valid_op" || q["dataset"] != "orders_changes" || q["passed_records"] != 4.0 || q["failed_records"] != 0.0 {
		t.Errorf("valid_op quality of batch 1 = %v, want 4 passed, 0 failed", q)
	}

	if dc := os.Getenv("DELTACHECK"); dc != "" {
		out, err := exec.Command(dc, "rows", filepath.Join(storage, "tables", "orders")).Output()
		if err != nil {
			t.Fatalf("deltacheck rows: %v", err)
		}
		assertRows(t, "independent read", readJSONL(t, string(out)), rowsOf(t, afterBatch[3]...))
	}
}

func equalMetrics[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
