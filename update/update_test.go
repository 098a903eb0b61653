package update

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"tributary/delta"

	"tributary/eventlog"
	"tributary/spec"
)

const failSpec = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
    expectations:
      - {name: known_op, expect: 'op in ["I", "U", "D"]', on_violation: fail}
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
`

func setup(t *testing.T, lines string) *spec.Pipeline {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "1.json"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(failSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFailedFlowSkipsDownstream: an expectation with on_violation: fail fails the bronze flow,
// its downstream APPLY CHANGES flow is SKIPPED, the update is FAILED, and the event log says so.
func TestFailedFlowSkipsDownstream(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n"+`{"op": "X", "id": 2, "seq": 2}`+"\n")
	res, err := Run(context.Background(), p, Options{})
	var fe *FlowError
	if !errors.As(err, &fe) {
		t.Fatalf("Run error = %v, want a *FlowError", err)
	}
	if !strings.Contains(err.Error(), `expectation "known_op" on dataset "changes" failed`) || !strings.Contains(err.Error(), `"op": "X"`) {
		t.Errorf("error = %v; want the expectation, the dataset and the violating row", err)
	}
	if res.State != StateFailed || res.Flows["changes"].State != FlowFailed || res.Flows["items"].State != FlowSkipped {
		t.Fatalf("states: update %s, changes %s, items %s; want FAILED, FAILED, SKIPPED", res.State, res.Flows["changes"].State, res.Flows["items"].State)
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		switch e.EventType {
		case eventlog.FlowProgress:
			fp := e.Details["flow_progress"].(map[string]any)
			if s := fp["status"]; s == FlowFailed || s == FlowSkipped {
				got = append(got, fmt.Sprintf("%s %s", e.Origin.FlowName, s))
			}
		case eventlog.UpdateProgress:
			got = append(got, fmt.Sprint("update ", e.Details["update_progress"].(map[string]any)["state"]))
		}
	}
	want := "update CREATED,update INITIALIZING,update SETTING_UP_TABLES,update RUNNING,changes FAILED,items SKIPPED,update FAILED"
	if strings.Join(got, ",") != want {
		t.Errorf("events = %s\nwant     %s", strings.Join(got, ","), want)
	}
}

// TestSecondUpdateFailsFast: while one update holds the storage, another fails at once and names
// the holder (semantics.md "One update at a time per storage").
func TestSecondUpdateFailsFast(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	lk, err := acquire(p.Storage, "holder-update")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), p, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "holder-update") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("error = %v, want ErrLocked naming the holder", err)
	}
	lk.release()
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatalf("after the holder released the lock: %v", err)
	}
	if res.Flows["items"].Metrics.NumUpsertedRows != 1 {
		t.Errorf("items upserted %d rows, want 1", res.Flows["items"].Metrics.NumUpsertedRows)
	}
}

// TestStartCommits: an update commits its CREATED, INITIALIZING and SETTING_UP_TABLES states with
// RUNNING, in one event log commit before any flow's, each flow's end as it ends, and the last
// flow's end with the update's end state; a full refresh commits SETTING_UP_TABLES on its own,
// before it removes tables (its FULL_REFRESH action is in a later commit), so that a long
// removal shows in the log as it happens.
func TestStartCommits(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	dir := filepath.Join(p.Storage, "system", "events")
	// commitOf returns, for each update state of update id (and each user action), the event
	// log version that committed it.
	commitOf := func(id string) map[string]int64 {
		t.Helper()
		tbl := delta.New(dir)
		latest, err := tbl.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]int64{}
		for v := latest.Version; v >= 0; v-- {
			snap, err := tbl.Snapshot(v)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tbl.Rows(snap)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				e := eventlog.FromRow(r)
				if e.Origin.UpdateID != id {
					continue
				}
				switch e.EventType {
				case eventlog.UpdateProgress:
					at[fmt.Sprint(e.Details["update_progress"].(map[string]any)["state"])] = v
				case eventlog.UserAction:
					at[fmt.Sprint(e.Details["user_action"].(map[string]any)["action"])] = v
				case eventlog.FlowProgress:
					at[e.Origin.FlowName+" "+fmt.Sprint(e.Details["flow_progress"].(map[string]any)["status"])] = v
				}
			}
		}
		return at
	}
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := commitOf(res.UpdateID)
	for _, st := range []string{StateCreated, StateInitializing, StateSettingUpTables} {
		if at[st] != at[StateRunning] {
			t.Errorf("first update: %s committed at version %d, RUNNING at %d; want one commit", st, at[st], at[StateRunning])
		}
	}
	if at[StateRunning] != 0 || at[StateCompleted] <= at[StateRunning] {
		t.Errorf("first update: RUNNING at version %d, COMPLETED at %d; want 0 and later", at[StateRunning], at[StateCompleted])
	}
	// Each flow's end is committed as it ends, the last one's (items reads changes) with the
	// update's end state.
	if c, i := at["changes "+FlowCompleted], at["items "+FlowCompleted]; c <= at[StateRunning] || c >= i || i != at[StateCompleted] {
		t.Errorf("first update: changes COMPLETED at version %d, items COMPLETED at %d, update COMPLETED at %d; want changes on its own, items with the update", c, i, at[StateCompleted])
	}
	res, err = Run(context.Background(), p, Options{FullRefresh: []string{"items"}})
	if err != nil {
		t.Fatal(err)
	}
	at = commitOf(res.UpdateID)
	if at[StateSettingUpTables] >= at["FULL_REFRESH"] || at[StateInitializing] != at[StateSettingUpTables] || at["FULL_REFRESH"] > at[StateRunning] {
		t.Errorf("full refresh: INITIALIZING, SETTING_UP_TABLES, FULL_REFRESH, RUNNING at versions %d, %d, %d, %d; want SETTING_UP_TABLES with INITIALIZING, before FULL_REFRESH",
			at[StateInitializing], at[StateSettingUpTables], at["FULL_REFRESH"], at[StateRunning])
	}
}
