package update

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
