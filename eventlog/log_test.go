package eventlog

import (
	"os"
	"path/filepath"
	"testing"

	"tributary/delta"
)

func TestWriteAndRead(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "events")
	l, err := Open(dir, "shop", "u1")
	if err != nil {
		t.Fatal(err)
	}
	l.Emit(Info, CreateUpdate, "", "", "started", map[string]any{"create_update": map[string]any{"cause": "USER_ACTION"}}, "")
	l.Emit(Metrics, FlowProgress, "orders", "orders", "done", map[string]any{"flow_progress": map[string]any{"status": "COMPLETED"}}, "")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// A second update continues the sequence.
	l2, err := Open(dir, "shop", "u2")
	if err != nil {
		t.Fatal(err)
	}
	l2.Emit(Error, UpdateProgress, "", "", "failed", map[string]any{"update_progress": map[string]any{"state": "FAILED"}}, "boom")
	if err := l2.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("read %d events, want 3", len(evs))
	}
	for i, e := range evs {
		if e.Sequence != int64(i+1) {
			t.Errorf("event %d has sequence %d, want %d", i, e.Sequence, i+1)
		}
	}
	e := evs[1]
	if e.EventType != FlowProgress || e.Level != Metrics || e.Origin != (Origin{PipelineName: "shop", UpdateID: "u1", FlowName: "orders", DatasetName: "orders"}) {
		t.Errorf("event 2 = %+v", e)
	}
	if fp, _ := e.Details["flow_progress"].(map[string]any); fp["status"] != "COMPLETED" {
		t.Errorf("details = %v", e.Details)
	}
	if evs[2].Error != "boom" || evs[2].Origin.UpdateID != "u2" || evs[2].Origin.FlowName != "" {
		t.Errorf("event 3 = %+v", evs[2])
	}
}

func TestReadMissingLog(t *testing.T) {
	t.Parallel()
	evs, err := Read(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(evs) != 0 {
		t.Fatalf("Read of a missing log = %v, %v; want no events and no error", evs, err)
	}
}

// TestEventLogStaysCompact flushes 45 times (one small file each): automatic OPTIMIZE keeps the
// table below AutoOptimizeMinFiles files, checkpoints are written every 10 commits, and every
// event reads back once, in sequence order.
func TestEventLogStaysCompact(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "events")
	l, err := Open(dir, "shop", "u1")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 45; i++ {
		l.Emit(Info, FlowProgress, "f", "d", "event", nil, "")
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	tbl := delta.New(dir)
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) >= AutoOptimizeMinFiles {
		t.Errorf("%d files after 45 flushes", len(snap.Files))
	}
	if snap.Metadata.Configuration[delta.ConfigAutoOptimizeMinFiles] != "20" {
		t.Errorf("configuration %v", snap.Metadata.Configuration)
	}
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000010.checkpoint.parquet")); err != nil {
		t.Errorf("no checkpoint at version 10: %v", err)
	}
	evs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 45 {
		t.Fatalf("read %d events, want 45", len(evs))
	}
	for i, e := range evs {
		if e.Sequence != int64(i+1) {
			t.Errorf("event %d has sequence %d", i, e.Sequence)
		}
	}
}
