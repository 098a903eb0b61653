package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventsLevel: `pipeline events SPEC --level WARN` prints the WARN events only (the level in
// any case); an unknown level is a usage error (exit 2) naming the levels. The command the run
// summary gives for a flow's warnings is such a command, and lists them.
func TestEventsLevel(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	mustRun(t, "init", dir)
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(filepath.Join(dir, "landing", "late.json"), []byte(`{"op": "I", "order_id": 9, "Amount": 3, "seq": 99}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := summaryOf(mustRun(t, "run", spec))
	if !strings.Contains(summary, "  orders_changes           COMPLETED  13 rows from 5 files, 1 warning\n") {
		t.Fatalf("summary:\n%s\nwant orders_changes with 1 warning", summary)
	}
	_, hint, ok := strings.Cut(summary, "  to see the warnings: `")
	hint, _, _ = strings.Cut(hint, "`\n")
	args := strings.Fields(hint)
	if !ok || len(args) < 2 || args[0] != "pipeline" || args[1] != "events" {
		t.Fatalf("summary:\n%s\nwant a line giving the pipeline events command that lists the warnings", summary)
	}
	want := "landing/late.json: the file spells fields in another case than the schema (Amount for amount)" // relative to the pipeline's folder
	for _, c := range [][]string{args[1:], {"events", spec, "--level", "warn", "--format", "jsonl"}} {
		out := mustRun(t, c...)
		if !strings.Contains(out, want) {
			t.Errorf("pipeline %s:\n%s\nwant the WARN %q", strings.Join(c, " "), out, want)
		}
		for _, row := range readJSONLOrTable(t, out) {
			if row != "WARN" {
				t.Errorf("pipeline %s printed an event of level %s", strings.Join(c, " "), row)
			}
		}
	}
	r := pipeline(t, nil, "events", spec, "--level", "loud")
	if r.code != 2 || !strings.Contains(r.stderr, "--level LOUD: not an event level; use one of INFO, WARN, ERROR, METRICS") {
		t.Errorf("--level loud: exit %d, stderr %q; want exit 2 naming the levels", r.code, r.stderr)
	}
	r = pipeline(t, nil, "events", spec, "--type", "flow_progres")
	if r.code != 2 || !strings.Contains(r.stderr, "--type flow_progres: not an event type (did you mean flow_progress?); use one of create_update, update_progress, dataset_definition, flow_definition, flow_progress, planning_information, user_action, maintenance_progress") {
		t.Errorf("--type flow_progres: exit %d, stderr %q; want exit 2 with the closest type and all of them", r.code, r.stderr)
	}
}

// readJSONLOrTable returns the level of each event events printed, in jsonl or as a table.
func readJSONLOrTable(t *testing.T, out string) []string {
	t.Helper()
	var levels []string
	if strings.HasPrefix(out, "{") {
		for _, m := range readJSONL(t, out) {
			levels = append(levels, m["level"].(string))
		}
		return levels
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines[2 : len(lines)-1] { // after the header and its rule, before the count
		levels = append(levels, strings.TrimSpace(strings.Split(l, " | ")[1]))
	}
	return levels
}
