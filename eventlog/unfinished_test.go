package eventlog

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"tributary/delta"
)

// update writes the events of one update of pipeline to the log at dir: its create_update, then
// an update_progress event for each of states, in one flush. With check it first asks for
// the unfinished updates and records an end for each, as an update does when it starts.
func update(t *testing.T, dir, pipeline, id string, check bool, states ...string) []Unfinished {
	t.Helper()
	l, err := Open(dir, pipeline, id)
	if err != nil {
		t.Fatal(err)
	}
	var found []Unfinished
	if check {
		if found, err = l.Unfinished(); err != nil {
			t.Fatal(err)
		}
		for _, u := range found {
			l.EmitFor(u.UpdateID, Error, UpdateProgress, "ended", map[string]any{"update_progress": map[string]any{"state": "FAILED", "recorded_by_update": id}}, "stopped")
		}
	}
	l.Emit(Info, CreateUpdate, "", "", "started", map[string]any{"create_update": map[string]any{"cause": "USER_ACTION"}}, "")
	for _, st := range states {
		l.Emit(Info, UpdateProgress, "", "", "Update is "+st+".", map[string]any{"update_progress": map[string]any{"state": st}}, "")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestUnfinished: the updates of a pipeline whose events hold no end state (COMPLETED, FAILED,
// CANCELED) are found, in the order they began, with their last state; ended ones, those of
// another pipeline and those an end was recorded for are not. Once an update that checked has
// ended, the next one reads only the data files of the events after it: the older files are
// not read (one is removed here, and nothing fails).
func TestUnfinished(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "events")
	update(t, dir, "shop", "u1", false, "CREATED", "RUNNING", "COMPLETED")
	update(t, dir, "shop", "u2", false, "CREATED", "RUNNING", "FAILED")
	update(t, dir, "shop", "u3", false, "CREATED", "RUNNING", "CANCELED")
	update(t, dir, "shop", "u4", false, "CREATED", "SETTING_UP_TABLES")
	update(t, dir, "other", "o1", false, "CREATED", "RUNNING")
	update(t, dir, "shop", "u5", false, "CREATED", "RUNNING")
	got := update(t, dir, "shop", "u6", true, "CREATED", "RUNNING", "COMPLETED")
	want := []Unfinished{{UpdateID: "u4", State: "SETTING_UP_TABLES"}, {UpdateID: "u5", State: "RUNNING"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("u6 found %+v, want %+v", got, want)
	}
	evs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.New(dir).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := snap.AppTxn(endedAppID("shop")); !ok || v != evs[len(evs)-1].Sequence+1 {
		t.Fatalf("after u6 ended: txn %d, %v; want the sequence after its last event, %d", v, ok, evs[len(evs)-1].Sequence+1)
	}
	if _, ok := snap.AppTxn(endedAppID("other")); ok {
		t.Fatal("u6 recorded that the updates of another pipeline ended")
	}

	// A file written before u6 ended is not read again.
	if err := os.Remove(filepath.Join(dir, snap.Files[0].Path)); err != nil {
		t.Fatal(err)
	}
	// u7 checks and is killed while running; u8 finds it, and u9 finds nothing.
	if got := update(t, dir, "shop", "u7", true, "CREATED", "RUNNING"); len(got) != 0 {
		t.Fatalf("u7 found %+v, want none", got)
	}
	got = update(t, dir, "shop", "u8", true, "CREATED", "RUNNING", "COMPLETED")
	if want := []Unfinished{{UpdateID: "u7", State: "RUNNING"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("u8 found %+v, want %+v", got, want)
	}
	if got := update(t, dir, "shop", "u9", true, "CREATED", "RUNNING", "COMPLETED"); len(got) != 0 {
		t.Fatalf("u9 found %+v, want none", got)
	}
}

// TestUnfinishedOfNewLog: a log that does not exist yet has no unfinished update, and the first
// update's end records that every update so far has ended.
func TestUnfinishedOfNewLog(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "events")
	if got := update(t, dir, "shop", "u1", true, "CREATED", "RUNNING", "COMPLETED"); len(got) != 0 {
		t.Fatalf("found %+v in a new log", got)
	}
	snap, err := delta.New(dir).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := snap.AppTxn(endedAppID("shop")); !ok || v != 5 {
		t.Fatalf("txn %d, %v; want 5, after the 4 events", v, ok)
	}
}

// TestUnfinishedUnreadable: a data file of the log that cannot be read is an error, and the
// update's end then records nothing, so that the next update looks again.
func TestUnfinishedUnreadable(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "events")
	update(t, dir, "shop", "u1", false, "CREATED", "RUNNING")
	snap, err := delta.New(dir).Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, snap.Files[0].Path)); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, "shop", "u2")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.Unfinished(); err == nil {
		t.Fatalf("found %+v in a log whose data file is gone, want an error", got)
	}
	if got, err := l.Unfinished(); err != nil || len(got) != 0 {
		t.Fatalf("second call: %+v, %v; want nothing", got, err)
	}
	l.Emit(Info, UpdateProgress, "", "", "Update is COMPLETED.", map[string]any{"update_progress": map[string]any{"state": "COMPLETED"}}, "")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if snap, err = delta.New(dir).Snapshot(-1); err != nil {
		t.Fatal(err)
	}
	if v, ok := snap.AppTxn(endedAppID("shop")); ok {
		t.Fatalf("txn %d recorded after an unread log", v)
	}
}

// BenchmarkUnfinished measures what finding the unfinished updates adds to the start of an
// update, on a log of 2,000 updates of 20 events each: "recorded", the last update recorded
// that every update so far had ended (only newer data files are read); "whole", a log written
// before that record existed (read whole, as once after an upgrade).
func BenchmarkUnfinished(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "events")
	for batch := 0; batch < 100; batch++ {
		l, err := Open(dir, "shop", "writer")
		if err != nil {
			b.Fatal(err)
		}
		for u := 0; u < 20; u++ {
			id := "u" + strconv.Itoa(batch*20+u)
			l.EmitFor(id, Info, CreateUpdate, "started", map[string]any{"create_update": map[string]any{"cause": "USER_ACTION"}}, "")
			for i := 0; i < 18; i++ {
				l.EmitFor(id, Metrics, FlowProgress, "Flow orders is COMPLETED.", map[string]any{"flow_progress": map[string]any{"status": "COMPLETED"}}, "")
			}
			l.EmitFor(id, Info, UpdateProgress, "Update is COMPLETED.", map[string]any{"update_progress": map[string]any{"state": "COMPLETED"}}, "")
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	run := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			l, err := Open(dir, "shop", "next")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Unfinished(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("whole", run)
	l, err := Open(dir, "shop", "last")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Unfinished(); err != nil {
		b.Fatal(err)
	}
	l.Emit(Info, UpdateProgress, "", "", "Update is COMPLETED.", map[string]any{"update_progress": map[string]any{"state": "COMPLETED"}}, "")
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	b.Run("recorded", run)
}
