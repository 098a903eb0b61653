package eventlog

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
// table below AutoOptimizeMinFiles files, and every event reads back once, in sequence order.
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
	if c := snap.Metadata.Configuration; c[delta.ConfigAutoOptimizeMinFiles] != "20" || c[delta.ConfigCheckpointInterval] != "100" ||
		c[delta.ConfigDeletedFileRetention] != "interval 1 days" || c[delta.ConfigLogRetention] != "interval 7 days" {
		t.Errorf("configuration %v", c)
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

// logFiles lists the commit and checkpoint files of the table at dir by version, and counts its
// Parquet data files.
func logFiles(t *testing.T, dir string) (commits, checkpoints []int64, data int) {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		v, err := strconv.ParseInt(strings.SplitN(e.Name(), ".", 2)[0], 10, 64)
		switch {
		case err != nil:
		case strings.HasSuffix(e.Name(), ".json"):
			commits = append(commits, v)
		case strings.HasSuffix(e.Name(), ".checkpoint.parquet"):
			checkpoints = append(checkpoints, v)
		}
	}
	ds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ds {
		if strings.HasSuffix(e.Name(), ".parquet") {
			data++
		}
	}
	return commits, checkpoints, data
}

// TestEventLogHousekeeping: the event log stays bounded however many updates run. Flushes (and
// their compactions) past a checkpoint, with the clock eight days on, vacuum the files removed
// more than a day ago (Housekeeping: delta.deletedFileRetentionDuration) and delete the commits
// and checkpoints older than 7 days (delta.logRetentionDuration) before the newest checkpoint:
// the folder then holds the live files only and the log starts at that checkpoint, and every
// event still reads back once, in sequence order. An event log made before Housekeeping gets its
// properties when opened.
func TestEventLogHousekeeping(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "events")
	// An event log as it was made before: no housekeeping properties.
	tbl := delta.New(dir)
	tx := tbl.Begin(nil)
	tx.SetMetadata(delta.Metadata{Name: "events", Schema: Schema, Configuration: map[string]string{delta.ConfigAutoOptimizeMinFiles: "20"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, "shop", "u1")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range Housekeeping {
		if got := snap.Metadata.Configuration[k]; got != v {
			t.Fatalf("opened event log: %s = %q, want %q", k, got, v)
		}
	}
	flushes := 0
	flush := func() {
		t.Helper()
		l.Emit(Info, FlowProgress, "f", "d", "event", nil, "")
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		flushes++
	}
	for {
		flush()
		if v, _ := tbl.LatestVersion(); v >= 150 {
			break
		}
	}
	commits, checkpoints, data := logFiles(t, dir)
	if commits[0] != 0 || len(checkpoints) != 1 || checkpoints[0] != 100 {
		t.Fatalf("before the clock moves: commits from %d, checkpoints %v; want commits from 0 and the checkpoint at 100", commits[0], checkpoints)
	}
	if data <= AutoOptimizeMinFiles {
		t.Fatalf("%d data files before the clock moves; want the compacted ones too", data)
	}

	// Eight days on: the next checkpoint's flush cleans up.
	l.now = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
	for {
		flush()
		if v, _ := tbl.LatestVersion(); v >= 200 {
			break
		}
	}
	latest, _ := tbl.LatestVersion()
	commits, checkpoints, data = logFiles(t, dir)
	if len(checkpoints) != 1 || checkpoints[0] != 200 || commits[0] != 200 || commits[len(commits)-1] != latest {
		t.Fatalf("after housekeeping: commits %d..%d, checkpoints %v; want commits 200..%d and the checkpoint at 200", commits[0], commits[len(commits)-1], checkpoints, latest)
	}
	snap, err = delta.New(dir).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	// Every removed file was removed more than a day before the moved clock.
	if data != len(snap.Files) {
		t.Fatalf("%d data files after housekeeping, want the %d live ones", data, len(snap.Files))
	}
	evs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != flushes {
		t.Fatalf("read %d events, want %d", len(evs), flushes)
	}
	for i, e := range evs {
		if e.Sequence != int64(i+1) {
			t.Fatalf("event %d has sequence %d", i, e.Sequence)
		}
	}
}
