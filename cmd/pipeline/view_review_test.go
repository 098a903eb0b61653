package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// viewReviewSpec: a view over ./landing read by two APPLY CHANGES targets.
const viewReviewSpec = `name: vr
storage: ./storage
datasets:
  - name: changes
    type: view
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
  - name: target
    apply_changes: {source: changes, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op]}
  - name: target2
    apply_changes: {source: changes, keys: [id], sequence_by: seq, except_column_list: [op]}
`

func viewReviewDir(t *testing.T) (specPath, landing string) {
	t.Helper()
	dir := t.TempDir()
	specPath, landing = filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specPath, []byte(viewReviewSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return specPath, landing
}

// TestViewFullRefreshOfTheView: a view over files has nothing stored to rebuild, and which files
// were read is its readers' (README "Views over files"): `--full-refresh` or `--refresh` of the
// view alone would silently re-read nothing (or run nothing), so it is a usage error (exit 2)
// that names the readers and the command that reads every file again.
func TestViewFullRefreshOfTheView(t *testing.T) {
	specPath, landing := viewReviewDir(t)
	copyString(t, filepath.Join(landing, "a.json"), `{"op": "I", "id": 1, "name": "a", "seq": 1}`+"\n")
	mustRun(t, "run", specPath)
	for _, flag := range []string{"--full-refresh", "--refresh"} {
		r := pipeline(t, nil, "run", specPath, flag, "changes")
		if r.code != 2 || !strings.Contains(r.stderr, "changes is a view over files") || !strings.Contains(r.stderr, "--full-refresh target,target2") {
			t.Errorf("run %s changes: exit %d, stderr %q; want exit 2 naming the view and `--full-refresh target,target2`", flag, r.code, r.stderr)
		}
	}
	// A full refresh of every dataset includes the view: that is fine, its readers re-read.
	out := mustRun(t, "run", specPath, "--full-refresh-all")
	if !strings.Contains(out, "target                   COMPLETED  1 upserted") {
		t.Errorf("--full-refresh-all did not re-read the view's file:\n%s", out)
	}
}

// TestViewFullRefreshTarget: a full refresh of one reader reads every file of the view again;
// the other reader, which has read them, stays idle.
func TestViewFullRefreshTarget(t *testing.T) {
	specPath, landing := viewReviewDir(t)
	copyString(t, filepath.Join(landing, "a.json"), `{"op": "I", "id": 1, "name": "a", "seq": 1}`+"\n")
	mustRun(t, "run", specPath)
	copyString(t, filepath.Join(landing, "b.json"), `{"op": "I", "id": 2, "name": "b", "seq": 2}`+"\n")
	mustRun(t, "run", specPath)
	out := mustRun(t, "run", specPath, "--full-refresh", "target")
	if !strings.Contains(out, "target                   COMPLETED  2 upserted") || !strings.Contains(out, "target2                  IDLE") {
		t.Errorf("--full-refresh target:\n%s", out)
	}
	rows := mustRun(t, "show", specPath, "target", "--format", "jsonl")
	if n := strings.Count(rows, "\n"); n != 2 {
		t.Errorf("after its full refresh target holds %d rows, want 2:\n%s", n, rows)
	}
}

// TestViewTableCommands: every command that works on a dataset's table (show, history, changes,
// optimize, vacuum) refuses a view over files with exit 2, saying it is not stored and naming
// its readers, in words that fit the command (not "show" for a vacuum).
func TestViewTableCommands(t *testing.T) {
	specPath, landing := viewReviewDir(t)
	copyString(t, filepath.Join(landing, "a.json"), `{"op": "I", "id": 1, "name": "a", "seq": 1}`+"\n")
	mustRun(t, "run", specPath)
	for _, args := range [][]string{{"show"}, {"history"}, {"changes", "--from-version", "0"}, {"optimize"}, {"vacuum"}} {
		full := append([]string{args[0], specPath, "changes"}, args[1:]...)
		r := pipeline(t, nil, full...)
		if r.code != 2 || !strings.Contains(r.stderr, "changes is a view over files") || !strings.Contains(r.stderr, "target, target2") {
			t.Errorf("%s of the view: exit %d, stderr %q", args[0], r.code, r.stderr)
		}
		if args[0] != "show" && strings.Contains(r.stderr, "to show") {
			t.Errorf("%s of the view speaks of showing: %q", args[0], r.stderr)
		}
	}
}

// TestViewFullRefreshAllEvents: --full-refresh-all resets every table; a view over files has none,
// so the event log records a full refresh of its readers only, not a removed table of the view.
func TestViewFullRefreshAllEvents(t *testing.T) {
	specPath, landing := viewReviewDir(t)
	copyString(t, filepath.Join(landing, "a.json"), `{"op": "I", "id": 1, "name": "a", "seq": 1}`+"\n")
	mustRun(t, "run", specPath)
	mustRun(t, "run", specPath, "--full-refresh-all")
	out := mustRun(t, "events", specPath, "--update", "latest", "--type", "user_action", "--format", "jsonl")
	var refreshed []string
	for _, e := range readJSONL(t, out) {
		if o, ok := e["origin"].(map[string]any); ok && strings.Contains(e["message"].(string), "fully refreshed") {
			refreshed = append(refreshed, o["dataset_name"].(string))
		}
	}
	if strings.Join(refreshed, ",") != "target,target2" {
		t.Errorf("--full-refresh-all logged full refreshes of %v, want target and target2", refreshed)
	}
}

// TestQueryViewTableCommands: a SQL view (`type: view` with a query) is not stored either: show,
// history, changes, optimize and vacuum of it are usage errors (exit 2) that say so and how to
// keep its rows, not advice to run the pipeline first (a run never makes it a table).
func TestQueryViewTableCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "pipeline.yaml")
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyString(t, filepath.Join(dir, "landing", "a.json"), `{"id": 1, "v": 5}`+"\n")
	copyString(t, specPath, `name: qv
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, v BIGINT"}
  - name: positive
    type: view
    query: SELECT id FROM raw WHERE v > 0
  - name: counts
    type: materialized_view
    query: SELECT count(*) AS n FROM positive
`)
	mustRun(t, "run", specPath)
	for _, args := range [][]string{{"show"}, {"history"}, {"changes", "--from-version", "0"}, {"optimize"}, {"vacuum"}} {
		r := pipeline(t, nil, append([]string{args[0], specPath, "positive"}, args[1:]...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "dataset positive is a view: it is not stored, so it has no table") || strings.Contains(r.stderr, "run `pipeline run") {
			t.Errorf("%s of the view: exit %d, stderr %q", args[0], r.code, r.stderr)
		}
	}
}
