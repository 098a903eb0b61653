package update

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestScheduleSkipsOverlappingTick: with a schedule of every second and a first update held
// running, the next tick is skipped (a WARN event in the running update says so) rather than
// starting a second update; later ticks run updates again; closing Stop ends the scheduler
// after the update in flight.
func TestScheduleSkipsOverlappingTick(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	release := make(chan struct{})
	var once sync.Once
	log := &lockedBuffer{}
	stop := make(chan struct{})
	var mu sync.Mutex
	var results []*Result
	ran := make(chan struct{}, 10)
	o := ScheduleOptions{Stop: stop, Log: log,
		Ran: func(res *Result, err error) {
			if err != nil {
				t.Errorf("scheduled update: %v", err)
			}
			mu.Lock()
			results = append(results, res)
			mu.Unlock()
			ran <- struct{}{}
		}}
	first := true
	o.runFlow = func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error) {
		if d.Name == "changes" {
			mu.Lock()
			block := first
			first = false
			mu.Unlock()
			if block {
				<-release // the first update runs until a tick was skipped
			}
		}
		return flows.Run(ctx, env, d)
	}
	done := make(chan error)
	go func() { done <- Schedule(context.Background(), p, "@every 1s", o) }()

	deadline := time.After(20 * time.Second)
	for !strings.Contains(log.String(), "is skipped") {
		select {
		case <-deadline:
			t.Fatalf("no tick was skipped:\n%s", log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	once.Do(func() { close(release) })
	for i := 0; i < 2; i++ {
		select {
		case <-ran:
		case <-deadline:
			t.Fatalf("%d scheduled updates ran, want 2:\n%s", i, log)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "next update at") {
		t.Errorf("the scheduler did not print the next run time:\n%s", log)
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, e := range evs {
		if e.Level == eventlog.Warn && e.Details["schedule"] != nil {
			skipped++
			if e.Origin.UpdateID != results[0].UpdateID {
				t.Errorf("the skipped tick is recorded in update %s, want the running one %s", e.Origin.UpdateID, results[0].UpdateID)
			}
		}
	}
	if skipped == 0 {
		t.Error("no WARN event records the skipped tick")
	}
	if results[0].UpdateID == results[1].UpdateID || results[1].State != StateCompleted {
		t.Errorf("updates %+v", results)
	}
}

// TestScheduleAnnouncesAfterSummary: the next run time computed while an update runs is printed
// after that update's summary, not in the middle of its output.
func TestScheduleAnnouncesAfterSummary(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	log := &lockedBuffer{}
	stop := make(chan struct{})
	ran := make(chan *Result, 10)
	o := ScheduleOptions{Options: Options{Out: log}, Stop: stop, Log: log,
		Ran: func(res *Result, err error) {
			if err != nil {
				t.Errorf("scheduled update: %v", err)
			}
			ran <- res
		}}
	done := make(chan error)
	go func() { done <- Schedule(context.Background(), p, "@every 1s", o) }()
	var first *Result
	select {
	case first = <-ran:
	case <-time.After(20 * time.Second):
		t.Fatalf("no scheduled update ran:\n%s", log)
	}
	out := log.String()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	summary := strings.Index(out, "pipeline "+p.Name+": update "+first.UpdateID)
	if summary < 0 {
		t.Fatalf("no summary of update %s:\n%s", first.UpdateID, out)
	}
	before, after := out[:summary], out[summary:]
	if n := strings.Count(before, "next update at"); n != 1 {
		t.Errorf("%d next-update lines before the first update's summary, want 1 (the first tick's):\n%s", n, out)
	}
	if !strings.Contains(after, "next update at") {
		t.Errorf("no next-update line after the first update's summary:\n%s", out)
	}
}

// TestScheduleAnnouncesTheTickItWaitsFor: the next run time printed after an update that ran
// past its interval is the tick the scheduler waits for (counted from the tick before, as
// @every counts), not one counted from the update's end: the next update starts then.
func TestScheduleAnnouncesTheTickItWaitsFor(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	log := &lockedBuffer{}
	stop := make(chan struct{})
	var mu sync.Mutex
	var starts []time.Time
	ran := make(chan struct{}, 10)
	o := ScheduleOptions{Options: Options{Out: log}, Stop: stop, Log: log,
		Ran: func(res *Result, err error) { ran <- struct{}{} }}
	o.runFlow = func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error) {
		if d.Name == "changes" {
			mu.Lock()
			starts = append(starts, time.Now())
			first := len(starts) == 1
			mu.Unlock()
			if first {
				time.Sleep(1500 * time.Millisecond) // half of the interval past its tick
			}
		}
		return flows.Run(ctx, env, d)
	}
	done := make(chan error)
	go func() { done <- Schedule(context.Background(), p, "@every 3s", o) }()
	for i := 0; i < 2; i++ {
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d scheduled updates ran, want 2:\n%s", i, log)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := log.String()
	lines := strings.Split(out, "\n")
	var announced []time.Time
	for _, l := range lines {
		if _, at, ok := strings.Cut(l, "next update at "); ok {
			ts, err := time.Parse(time.RFC3339, strings.TrimSuffix(at, " (@every 3s)"))
			if err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			announced = append(announced, ts)
		}
	}
	if len(announced) < 2 {
		t.Fatalf("want two next-update lines:\n%s", out)
	}
	mu.Lock()
	second := starts[1]
	mu.Unlock()
	// RFC 3339 keeps whole seconds; the tick is on one.
	if d := second.Sub(announced[1]); d < -100*time.Millisecond || d > 1200*time.Millisecond {
		t.Errorf("the second update started at %s, %s after the announced %s:\n%s", second.Format(time.RFC3339Nano), d, announced[1].Format(time.RFC3339), out)
	}
}

// TestScheduleReportsFailedUpdate: a scheduled update that fails is reported once on the log,
// naming the flow and its error, and the schedule goes on to the next tick.
func TestScheduleReportsFailedUpdate(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "X", "id": 1, "seq": 1}`+"\n")
	log := &lockedBuffer{}
	stop := make(chan struct{})
	failed := make(chan struct{}, 10)
	o := ScheduleOptions{Stop: stop, Log: log, Ran: func(res *Result, err error) {
		if err != nil {
			failed <- struct{}{}
		}
	}}
	done := make(chan error)
	go func() { done <- Schedule(context.Background(), p, "@every 1s", o) }()
	for i := 0; i < 2; i++ {
		select {
		case <-failed:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d scheduled updates failed, want 2:\n%s", i, log)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, "pipeline t: the scheduled update failed:\n  flow changes: expectation \"known_op\"") || strings.Contains(out, "the update failed") {
		t.Errorf("the failed updates are not reported as \"the scheduled update failed:\" with the flow's error:\n%s", out)
	}
}

// TestScheduleRunsTheSpecAsEdited: each scheduled update loads the spec file again, so a
// dataset added to it while the scheduler runs is updated by the next tick; an invalid edit is
// reported and the last valid spec runs.
func TestScheduleRunsTheSpecAsEdited(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	log := &lockedBuffer{}
	stop := make(chan struct{})
	results := make(chan *Result, 100)
	o := ScheduleOptions{Stop: stop, Log: log, Ran: func(res *Result, err error) {
		if err != nil {
			t.Errorf("scheduled update: %v", err)
		}
		results <- res
	}}
	done := make(chan error)
	go func() { done <- Schedule(context.Background(), p, "@every 1s", o) }()
	next := func(what string) *Result {
		t.Helper()
		select {
		case res := <-results:
			return res
		case <-time.After(20 * time.Second):
			t.Fatalf("no scheduled update after %s:\n%s", what, log)
		}
		return nil
	}
	if res := next("the start"); res.Flows["more"] != nil {
		t.Fatalf("the first update ran a dataset the spec does not have yet")
	}
	edited := failSpec + "  - name: more\n    apply_changes: {source: changes, keys: [id], sequence_by: seq}\n"
	if err := os.WriteFile(p.File, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := func(name string) bool {
		for range 5 {
			if res := next("the edit"); res.Flows[name] != nil {
				return true
			}
		}
		return false
	}
	if !ran("more") {
		t.Fatalf("no scheduled update after the edit ran the dataset it added:\n%s", log)
	}
	if err := os.WriteFile(p.File, []byte(edited+"  - name: broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(log.String(), "the spec is invalid; this update runs its last valid version") {
		if res := next("the invalid edit"); res.Flows["more"] == nil {
			t.Fatalf("an update after the invalid edit did not run the last valid spec")
		}
	}
	if res := next("the invalid edit"); res.Flows["more"] == nil {
		t.Errorf("the update after the invalid edit did not run the last valid spec")
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
