package update

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/spec"
)

// TestDevSyntheticEvents: Dev runs everything first, then re-runs only what changed, fed with
// synthetic change events: an edited dataset and its downstream, new input and its downstream;
// an invalid edit is reported with file:line:column and Dev keeps going with the previous spec;
// an edit that needs a full refresh says to stop dev before running it.
func TestDevSyntheticEvents(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	changes := make(chan []string)
	stop := make(chan struct{})
	type ran struct {
		only []string
		err  error
	}
	runs := make(chan ran, 10)
	log := &lockedBuffer{}
	done := make(chan error)
	go func() {
		done <- Dev(context.Background(), p, DevOptions{Options: Options{Settle: -1}, Changes: changes, Stop: stop, Log: log,
			Ran: func(only []string, res *Result, err error) { runs <- ran{only, err} }})
	}()
	next := func(what string) ran {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-time.After(20 * time.Second):
			t.Fatalf("no update after %s:\n%s", what, log)
		}
		return ran{}
	}
	if r := next("the start"); r.only != nil || r.err != nil {
		t.Fatalf("first update: %+v", r)
	}
	edit := func(text string) {
		t.Helper()
		if err := os.WriteFile(p.File, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		changes <- []string{p.File}
	}

	// An edit of items (a comment) re-runs items only.
	edit(strings.Replace(failSpec, "  - name: items\n", "  - name: items\n    comment: edited\n", 1))
	if r := next("an edit of items"); !slices.Equal(r.only, []string{"items"}) || r.err != nil {
		t.Errorf("after editing items: ran %v (err %v), want [items]", r.only, r.err)
	}

	// An invalid edit is reported where it is, and nothing runs.
	edit(strings.Replace(failSpec, "sequence_by: seq", "sequence_by: nope", 1))
	want := regexp.MustCompile(`pipeline\.yaml:\d+:\d+: .*nope`)
	deadline := time.Now().Add(20 * time.Second)
	for !want.MatchString(log.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the invalid edit was not reported with file:line:column:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Fixing the spec back to the version in force runs nothing, and says that the spec is valid.
	edit(strings.Replace(failSpec, "  - name: items\n", "  - name: items\n    comment: edited\n", 1))
	eventuallyLogged(t, log, "the spec is valid again, with the definitions in force: nothing to re-run")
	edit(strings.Replace(failSpec, "sequence_by: seq", "sequence_by: nope", 1))
	eventuallyLogged(t, log, "nope")

	// New input re-runs its dataset and the downstream one (the previous valid spec is in force).
	f := filepath.Join(filepath.Dir(p.File), "landing", "2.json")
	if err := os.WriteFile(f, []byte(`{"op": "I", "id": 2, "seq": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes <- []string{f}
	if r := next("new input"); !slices.Equal(r.only, []string{"changes", "items"}) || r.err != nil {
		t.Errorf("after new input: ran %v (err %v), want [changes items]", r.only, r.err)
	}

	// Events that change nothing (the runner's own writes) run nothing; fixing the spec re-runs
	// items (its definition differs from the last valid one).
	changes <- []string{filepath.Join(p.Storage, "tables", "items", "x")}
	edit(failSpec)
	if r := next("the fix"); !slices.Equal(r.only, []string{"items"}) {
		t.Errorf("after the fix: ran %v, want [items]", r.only)
	}

	// A change that needs a full refresh says to stop dev first: dev holds the storage.
	edit(strings.Replace(failSpec, "      sequence_by: seq\n", "      sequence_by: seq\n      stored_as_scd_type: 2\n", 1))
	if r := next("a change of SCD type"); r.err == nil || !strings.Contains(r.err.Error(), "--full-refresh items") {
		t.Errorf("after changing the SCD type: err %v, want one asking for a full refresh of items", r.err)
	}
	if !strings.Contains(log.String(), "stop `pipeline dev` (Ctrl-C) before running the full refresh above") {
		t.Errorf("dev did not say to stop it before the full refresh:\n%s", log)
	}
	if strings.Count(log.String(), "the update failed") != 1 {
		t.Errorf("dev's failure line says \"the update failed\" other than once:\n%s", log)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// eventuallyLogged waits until log holds want.
func eventuallyLogged(t *testing.T, log *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("dev did not log %q:\n%s", want, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDevSettle: a file that an update of dev mode left for later (modified within the settle
// time: still being written, perhaps) is read by an update of its datasets once it has had the
// time, with no other change to wake dev, even when an update of other datasets ran meanwhile.
func TestDevSettle(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n") // landed just now
	changes := make(chan []string)
	stop := make(chan struct{})
	runs := make(chan []string, 10)
	done := make(chan error)
	go func() {
		done <- Dev(context.Background(), p, DevOptions{Options: Options{Settle: 2 * time.Second}, Changes: changes, Stop: stop,
			Ran: func(only []string, res *Result, err error) { runs <- only }})
	}()
	first := <-runs
	// An edit of another dataset runs before the file settles: the file still waits.
	if err := os.WriteFile(p.File, []byte(strings.Replace(failSpec, "  - name: items\n", "  - name: items\n    comment: edited\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	changes <- []string{p.File}
	second := <-runs
	stopWhenRows(t, p, "items", 1, stop, done)
	if n := tableRows(t, p, "items"); n != 1 {
		t.Fatalf("items has %d rows, want 1: the file left unsettled was never read", n)
	}
	close(runs)
	ran := [][]string{first, second}
	for only := range runs {
		ran = append(ran, only)
	}
	if len(ran) != 3 || ran[0] != nil || !slices.Equal(ran[1], []string{"items"}) || !slices.Equal(ran[2], []string{"changes", "items"}) {
		t.Fatalf("updates ran %v, want every dataset, [items] for the edit, then [changes items] once the file settled", ran)
	}
}

// TestDevFailureLine: dev mode's line for a failed update says "the update failed" once, for a
// flow's failure (whose error says it already) as for another error.
func TestDevFailureLine(t *testing.T) {
	t.Parallel()
	p := &spec.Pipeline{Name: "shop"}
	flowErr := &FlowError{Failed: map[string]error{"orders": errors.New("boom")}}
	for err, want := range map[error]string{
		flowErr:                      "pipeline shop: the update failed:\n  flow orders: boom",
		errors.New("storage locked"): "pipeline shop: the update failed: storage locked",
	} {
		if got := failureLine(p, err); got != want {
			t.Errorf("failureLine(%v) = %q, want %q", err, got, want)
		}
	}
}

// devRun is one update of a dev session that settledDev started: the datasets it ran, its result.
type devRun struct {
	only []string
	res  *Result
}

// settledDev starts Dev, with a settle time of one second, on a pipeline whose first input file
// is old enough to be read at once, and waits for its first update. It returns the pipeline, its
// landing folder, the channel of changes, the channel of the updates after the first (next
// waits for one), and stop, which stops dev and checks that it ended cleanly.
func settledDev(t *testing.T) (p *spec.Pipeline, landing string, changes chan []string, next func(what string) devRun, stop func()) {
	t.Helper()
	p = setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	landing = filepath.Join(filepath.Dir(p.File), "landing")
	changes, next, stop = startDev(t, p, time.Second)
	return p, landing, changes, next, stop
}

// startDev makes the files of p's landing folder a minute old, starts Dev on p with the settle
// time settle, and waits for its first update. It returns the channel of changes, next, which
// waits for the next update, and stop, which stops dev, checks that it ended cleanly and that
// no update ran that next did not take.
func startDev(t *testing.T, p *spec.Pipeline, settle time.Duration) (changes chan []string, next func(what string) devRun, stop func()) {
	t.Helper()
	landing := filepath.Join(filepath.Dir(p.File), "landing")
	old := time.Now().Add(-time.Minute)
	entries, err := os.ReadDir(landing)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Chtimes(filepath.Join(landing, e.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
	changes = make(chan []string)
	stopped := make(chan struct{})
	runs := make(chan devRun, 10)
	done := make(chan error)
	go func() {
		done <- Dev(context.Background(), p, DevOptions{Options: Options{Settle: settle}, Changes: changes, Stop: stopped,
			Ran: func(only []string, res *Result, err error) { runs <- devRun{only, res} }})
	}()
	next = func(what string) devRun {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-time.After(20 * time.Second):
			t.Fatalf("no update after %s", what)
		}
		return devRun{}
	}
	next("the start")
	stop = func() {
		t.Helper()
		close(stopped)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		close(runs)
		for extra := range runs {
			t.Errorf("one more update ran: %v", extra.only)
		}
	}
	return changes, next, stop
}

// TestDevWaitsForNewInput: a new input file, modified within the settle time when dev hears of
// it, is read by one update of its datasets once it has settled, not by an update at once that
// would leave it for later and read nothing.
func TestDevWaitsForNewInput(t *testing.T) {
	t.Parallel()
	p, landing, changes, next, stop := settledDev(t)
	f := filepath.Join(landing, "2.json")
	if err := os.WriteFile(f, []byte(`{"op": "I", "id": 2, "seq": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes <- []string{f}
	r := next("the new file")
	if !slices.Equal(r.only, []string{"changes", "items"}) {
		t.Fatalf("the update after the new file ran %v, want [changes items]", r.only)
	}
	if n := r.res.Flows["changes"].Metrics.Unsettled; n != 0 {
		t.Errorf("the update after the new file left %d file(s) for later, want it to wait until the file settled", n)
	}
	if n := tableRows(t, p, "items"); n != 2 {
		t.Errorf("items has %d rows after the update, want 2", n)
	}
	stop()
}

// TestDevEditAndNewInput: a spec edit and a new input file in one batch of changes run the edited
// dataset at once (started by a spec change) and the new file's datasets once it has settled:
// no update reads nothing of the file first.
func TestDevEditAndNewInput(t *testing.T) {
	t.Parallel()
	p, landing, changes, next, stop := settledDev(t)
	f := filepath.Join(landing, "2.json")
	if err := os.WriteFile(f, []byte(`{"op": "I", "id": 2, "seq": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.File, []byte(strings.Replace(failSpec, "  - name: items\n", "  - name: items\n    comment: edited\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	changes <- []string{p.File, f}
	if first := next("the edit"); !slices.Equal(first.only, []string{"items"}) {
		t.Errorf("the update after the edit ran %v, want [items]", first.only)
	}
	second := next("the new file")
	if !slices.Equal(second.only, []string{"changes", "items"}) || second.res.Flows["changes"].Metrics.Unsettled != 0 {
		t.Errorf("the update for the new file ran %v (%d file(s) left for later), want [changes items] reading it", second.only, second.res.Flows["changes"].Metrics.Unsettled)
	}
	if n := tableRows(t, p, "items"); n != 2 {
		t.Errorf("items has %d rows, want 2", n)
	}
	stop()
}

// TestDevSetupFailureWaits: an update that fails at its set-up (an APPLY CHANGES flow whose key
// its inferred source lacks) is not run again on the settle timer, where it would fail the same
// way every second, but with the next edit or input; the edit that fixes the spec then runs the
// datasets the failed updates did not, so the files they left are read.
func TestDevSetupFailureWaits(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	inferred := strings.Replace(strings.Replace(failSpec, "      schema: \"op STRING, id BIGINT, seq BIGINT\"\n", "", 1), "keys: [id]", "keys: [idd]", 1)
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(p.File, inferred)
	p, err := spec.Load(p.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	changes, next, stop := startDev(t, p, 500*time.Millisecond) // the first update fails at set-up: idd
	f := filepath.Join(filepath.Dir(p.File), "landing", "2.json")
	write(f, `{"op": "I", "id": 2, "seq": 2}`+"\n")
	changes <- []string{f}
	next("the new file") // waits for it to settle, then fails at set-up again
	time.Sleep(3 * time.Second)
	write(p.File, strings.Replace(inferred, "keys: [idd]", "keys: [id]", 1))
	changes <- []string{p.File}
	// An update run again with no change (the failure every second) would be taken here.
	r := next("the fix")
	if fr := r.res.Flows["items"]; !slices.Equal(r.only, []string{"changes", "items"}) || fr == nil || fr.State != FlowCompleted {
		t.Fatalf("the update after the fix ran %v, items %+v; want [changes items] completed", r.only, fr)
	}
	if n := tableRows(t, p, "items"); n != 2 {
		t.Errorf("items has %d rows, want 2", n)
	}
	stop()
}
