package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHistoryAndTimeTravel runs the example batch by batch and checks `pipeline history` (one
// entry per version, newest first: CREATE TABLE then one MERGE per batch with its metrics) and
// that `show --timestamp` with each listed time reads that version: the orders table after the
// batch the version committed (semantics.md, the afterBatch rows). A time before the table is an
// error with exit 1; --version with --timestamp is a usage error.
func TestHistoryAndTimeTravel(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	conf := exampleArgs(landing, storage)
	for _, f := range exampleFiles {
		copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", f), filepath.Join(landing, f))
		mustRun(t, append([]string{"run", exampleSpec}, conf...)...)
		time.Sleep(5 * time.Millisecond) // distinct commit times
	}
	h := readJSONL(t, mustRun(t, append([]string{"history", exampleSpec, "orders", "--format", "jsonl"}, conf...)...))
	if len(h) != 5 {
		t.Fatalf("%d history entries, want 5 (CREATE TABLE and one MERGE per batch): %v", len(h), h)
	}
	for i, e := range h {
		v := int64(4 - i)
		if e["version"] != json.Number(itoa(int(v))) {
			t.Errorf("entry %d: version %v, want %d (newest first)", i, e["version"], v)
		}
		op := "MERGE"
		if v == 0 {
			op = "CREATE TABLE"
		}
		if e["operation"] != op || e["engineInfo"] != "tributary" {
			t.Errorf("version %d: %v", v, e)
		}
		if v > 0 {
			metrics, ok := e["operationMetrics"].(map[string]any)
			if !ok || metrics["numSourceRows"] == nil || e["readVersion"] != json.Number(itoa(int(v-1))) {
				t.Errorf("version %d: metrics %v, readVersion %v", v, e["operationMetrics"], e["readVersion"])
			}
		}
		ts := e["timestamp"].(string)
		got := readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders", "--format", "jsonl", "--timestamp", ts}, conf...)...))
		if v == 0 {
			assertRows(t, "orders as of "+ts, got, nil)
		} else {
			assertRows(t, "orders as of "+ts, got, rowsOf(t, afterBatch[v-1]...))
		}
	}
	// Version 1 in the first batch: 4 change events, 3 inserted.
	if m := h[3]["operationMetrics"].(map[string]any); m["numSourceRows"] != "4" || m["numTargetRowsInserted"] != "3" {
		t.Errorf("version 1 metrics %v, want numSourceRows 4, numTargetRowsInserted 3", m)
	}
	if r := pipeline(t, nil, append([]string{"show", exampleSpec, "orders", "--timestamp", "2000-01-01T00:00:00Z"}, conf...)...); r.code != 1 || !strings.Contains(r.stderr, "before the oldest version") {
		t.Errorf("show --timestamp 2000: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, nil, append([]string{"show", exampleSpec, "orders", "--timestamp", "2000-01-01", "--version", "1"}, conf...)...); r.code != 2 {
		t.Errorf("--timestamp with --version: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, nil, append([]string{"history", exampleSpec, "nope"}, conf...)...); r.code != 2 || !strings.Contains(r.stderr, "has no dataset") {
		t.Errorf("history of an unknown dataset: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, nil, append([]string{"history", exampleSpec, "orders", "--limit", "-3"}, conf...)...); r.code != 2 || !strings.Contains(r.stderr, "--limit -3") {
		t.Errorf("history --limit -3: exit %d, %s; want exit 2 naming --limit", r.code, r.stderr)
	}
	// show --limit in a table says how many rows the table has: the row count alone would read
	// as the table's size. Without a cut, nothing is added.
	if out := mustRun(t, append([]string{"show", exampleSpec, "orders", "--limit", "1"}, conf...)...); !strings.HasSuffix(out, "(1 row(s))\n(--limit 1: the table has 2 rows)\n") {
		t.Errorf("show --limit 1 of 2 rows:\n%s", out)
	}
	if out := mustRun(t, append([]string{"show", exampleSpec, "orders", "--limit", "2"}, conf...)...); !strings.HasSuffix(out, "\n(2 row(s))\n") {
		t.Errorf("show --limit 2 of 2 rows:\n%s", out)
	}
}
