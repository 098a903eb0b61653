package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// updateProgress is one update_progress event as `pipeline events --format jsonl` prints it.
type updateProgress struct {
	update, level, message, errText string
	details                         map[string]any // details.update_progress
}

// updateProgressEvents returns the update_progress events of the log of specPath, in order.
func updateProgressEvents(t *testing.T, specPath string, args ...string) []updateProgress {
	t.Helper()
	var out []updateProgress
	for _, row := range readJSONL(t, mustRun(t, append([]string{"events", specPath, "--type", "update_progress", "--format", "jsonl"}, args...)...)) {
		origin, _ := row["origin"].(map[string]any)
		var details map[string]map[string]any
		if s, _ := row["details"].(string); json.Unmarshal([]byte(s), &details) != nil {
			t.Fatalf("details of %v: not a JSON object", row)
		}
		e := updateProgress{details: details["update_progress"]}
		e.update, _ = origin["update_id"].(string)
		e.level, _ = row["level"].(string)
		e.message, _ = row["message"].(string)
		e.errText, _ = row["error"].(string)
		out = append(out, e)
	}
	return out
}

// states maps each update of evs to its update_progress states, in order.
func states(evs []updateProgress) map[string][]string {
	out := map[string][]string{}
	for _, e := range evs {
		out[e.update] = append(out[e.update], e.details["state"].(string))
	}
	return out
}

// TestKilledUpdateEnds: an update killed with SIGKILL while RUNNING leaves no end state in the
// event log; the next update records one for it (FAILED, level ERROR, under the killed update's
// id, with a message saying what happened and details naming its last state and the update that
// recorded it) and completes. `events --update latest` is still the new update, and a third run
// adds nothing for the killed one; updates that ended get nothing.
func TestKilledUpdateEnds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	mustRun(t, "init", dir)
	specPath := filepath.Join(dir, "pipeline.yaml")
	if r := pipeline(t, []string{"TRIBUTARY_FAULT=ingest.after-commit"}, "run", specPath); r.code != -1 {
		t.Fatalf("the run with TRIBUTARY_FAULT=ingest.after-commit exited %d, want it killed by SIGKILL\n%s%s", r.code, r.stdout, r.stderr)
	}
	evs := updateProgressEvents(t, specPath)
	killed := evs[0].update
	if st := states(evs)[killed]; st[len(st)-1] != "RUNNING" {
		t.Fatalf("the killed update's states: %v; want them to end RUNNING", st)
	}

	second := mustRun(t, "run", specPath)
	evs = updateProgressEvents(t, specPath)
	byUpdate := states(evs)
	if len(byUpdate) != 2 {
		t.Fatalf("updates %v; want the killed one and the second", byUpdate)
	}
	var next string
	for id := range byUpdate {
		if id != killed {
			next = id
		}
	}
	if !strings.Contains(second, "update "+next) {
		t.Fatalf("the second run's output does not name update %s:\n%s", next, second)
	}
	if st := byUpdate[next]; st[len(st)-1] != "COMPLETED" {
		t.Fatalf("the second update's states: %v; want COMPLETED last", st)
	}
	var ended []updateProgress
	for _, e := range evs {
		if e.update == killed && e.details["state"] == "FAILED" {
			ended = append(ended, e)
		}
	}
	if len(ended) != 1 {
		t.Fatalf("the killed update has %d FAILED events after the second run, want 1: %v", len(ended), byUpdate[killed])
	}
	e := ended[0]
	wantMsg := "Update " + killed[:8] + " is FAILED: it ended without finishing, as its process stopped (killed, or the machine went down) while it was RUNNING; the batches its flows committed stay, and update " + next[:8] + " goes on from them."
	if e.level != "ERROR" || e.message != wantMsg || e.errText == "" {
		t.Errorf("the killed update's end: level %s, message %q, error %q; want ERROR, %q and an error", e.level, e.message, e.errText, wantMsg)
	}
	if e.details["last_state"] != "RUNNING" || e.details["recorded_by_update"] != next {
		t.Errorf("the killed update's end: details.update_progress %v; want last_state RUNNING and recorded_by_update %s", e.details, next)
	}
	if latest := states(updateProgressEvents(t, specPath, "--update", "latest")); len(latest) != 1 || latest[next] == nil {
		t.Errorf("--update latest shows %v; want update %s only", latest, next)
	}

	mustRun(t, "run", specPath)
	evs = updateProgressEvents(t, specPath)
	byUpdate = states(evs)
	if len(byUpdate) != 3 {
		t.Fatalf("updates %v; want three", byUpdate)
	}
	if st := byUpdate[killed]; st[len(st)-1] != "FAILED" || strings.Count(strings.Join(st, " "), "FAILED") != 1 {
		t.Errorf("after the third run the killed update's states are %v; want one FAILED, last", st)
	}
	for id, st := range byUpdate {
		if id != killed && strings.Join(st, " ") != "CREATED INITIALIZING SETTING_UP_TABLES RUNNING COMPLETED" {
			t.Errorf("update %s: states %v; want only its own, ending COMPLETED", id, st)
		}
	}
}
