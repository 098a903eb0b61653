package update

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/flows"
	"tributary/schema"
	"tributary/spec"
)

// TestContinuousPolling: without file notifications, a continuous update polls every interval:
// the first batch runs every flow, a new file runs its flow and the downstream one, polls that
// find nothing new run nothing, and closing Stop ends the update CANCELED with no error.
func TestContinuousPolling(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	stop := make(chan struct{})
	batches := make(chan []string, 100)
	done := make(chan error)
	var res *Result
	go func() {
		var err error
		res, err = Continuous(context.Background(), p, ContinuousOptions{Options: Options{Settle: -1}, Stop: stop, Interval: 20 * time.Millisecond,
			Batch: func(ran []string) { batches <- ran }})
		done <- err
	}()
	next := func() []string {
		t.Helper()
		select {
		case b := <-batches:
			return b
		case <-time.After(20 * time.Second):
			t.Fatal("no batch")
		}
		return nil
	}
	if b := next(); !slices.Equal(b, []string{"changes", "items"}) {
		t.Errorf("first batch %v", b)
	}
	time.Sleep(100 * time.Millisecond) // several polls with nothing new
	select {
	case b := <-batches:
		t.Fatalf("a batch %v ran without new input", b)
	default:
	}
	landWhole(t, p, "2.json", `{"op": "I", "id": 2, "seq": 2}`)
	if b := next(); !slices.Equal(b, []string{"changes", "items"}) {
		t.Errorf("batch after a new file %v", b)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.State != StateCanceled || res.Flows["items"].Metrics.NumUpsertedRows != 1 {
		t.Errorf("state %s, items %+v", res.State, res.Flows["items"])
	}
}

// TestContinuousHardStop: cancelling the context (the second signal) stops a flow in flight: it
// is STOPPED, commits nothing, and the update is CANCELED.
func TestContinuousHardStop(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	inFlight := make(chan struct{})
	var out strings.Builder
	o := ContinuousOptions{Options: Options{Out: &out}, Stop: make(chan struct{}), Interval: time.Hour}
	o.runFlow = func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error) {
		close(inFlight)
		<-ctx.Done()
		return flows.Metrics{Version: -1}, ctx.Err()
	}
	done := make(chan error)
	var res *Result
	go func() {
		var err error
		res, err = Continuous(ctx, p, o)
		done <- err
	}()
	<-inFlight
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.State != StateCanceled || res.Flows["changes"].State != FlowStopped || res.Flows["items"].State != FlowSkipped {
		t.Errorf("state %s, changes %s, items %s; want CANCELED, STOPPED, SKIPPED", res.State, res.Flows["changes"].State, res.Flows["items"].State)
	}
	if !regexp.MustCompile(`(?m)^  changes +STOPPED +canceled: its batch in flight committed nothing$`).MatchString(out.String()) {
		t.Errorf("summary %q: want the STOPPED flow's line to say its batch committed nothing", out.String())
	}
	snap, err := delta.New(flows.TableDir(p.Storage, "changes")).Snapshot(-1)
	if err != nil || snap.Version != 0 {
		t.Errorf("changes is at version %v (%v), want 0: nothing committed", snap, err)
	}
}

// TestContinuousSettle: a file still being written when a continuous update polls is left for a
// later batch until it has not changed for the settle time, then read whole: every line a slow
// writer appends lands (read too early, the file's rest would be lost: it changed after it was
// read).
func TestContinuousSettle(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := Continuous(context.Background(), p, ContinuousOptions{Options: Options{Settle: time.Second}, Stop: stop, Interval: 20 * time.Millisecond})
		done <- err
	}()
	f, err := os.Create(filepath.Join(filepath.Dir(p.File), "landing", "2.json"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	for i := range n {
		fmt.Fprintf(f, `{"op": "I", "id": %d, "seq": %d}`+"\n", i+2, i+2)
		time.Sleep(20 * time.Millisecond)
	}
	f.Close()
	stopWhenRows(t, p, "items", n+1, stop, done)
	if got, bronze := tableRows(t, p, "items"), tableRows(t, p, "changes"); got != n+1 || bronze != n+1 {
		t.Fatalf("items has %d rows and changes %d, want %d each: the file was read before it was whole", got, bronze, n+1)
	}
}

// TestContinuousSettleTimer: a file left unsettled is read once it has had the settle time, not
// at the next poll, which may be far off (here an hour).
func TestContinuousSettleTimer(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n") // landed just now: unsettled at first
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := Continuous(context.Background(), p, ContinuousOptions{Options: Options{Settle: 200 * time.Millisecond}, Stop: stop, Interval: time.Hour})
		done <- err
	}()
	stopWhenRows(t, p, "items", 1, stop, done)
	if n := tableRows(t, p, "items"); n != 1 {
		t.Fatalf("items has %d rows 20 s after the file landed, want 1: the settled file waited for the hourly poll", n)
	}
}

// stopWhenRows waits (up to 20 s) until dataset's table has n rows or more, then closes stop and
// waits for the update's error on done, failing the test on one.
func stopWhenRows(t *testing.T, p *spec.Pipeline, dataset string, n int64, stop chan struct{}, done chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for tableRows(t, p, dataset) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestContinuousSettleAcrossBatches: a file left to settle is read even when a batch of another
// dataset runs meanwhile (which records the fingerprints of every input anew).
func TestContinuousSettleAcrossBatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"in_a", "in_b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := spec.Parse(filepath.Join(dir, "p.yaml"), []byte(`name: two
storage: ./storage
datasets:
  - name: a
    source: {path: ./in_a, format: json, schema: "id BIGINT"}
  - name: b
    source: {path: ./in_b, format: json, schema: "id BIGINT"}
`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error)
	batches := make(chan []string, 100)
	go func() {
		_, err := Continuous(context.Background(), p, ContinuousOptions{Options: Options{Settle: 2 * time.Second}, Stop: stop, Interval: 20 * time.Millisecond,
			Batch: func(ran []string) {
				select {
				case batches <- ran:
				default: // the test no longer reads them
				}
			}})
		done <- err
	}()
	<-batches // the first batch, with nothing to read
	if err := os.WriteFile(filepath.Join(dir, "in_a", "1.json"), []byte(`{"id": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for b := range batches { // a's batch, which leaves the file to settle
		if slices.Contains(b, "a") {
			break
		}
	}
	old := time.Now().Add(-time.Hour)
	f := filepath.Join(dir, "in_b", "1.json")
	if err := os.WriteFile(f, []byte(`{"id": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	stopWhenRows(t, p, "a", 1, stop, done)
	if a, b := tableRows(t, p, "a"), tableRows(t, p, "b"); a != 1 || b != 1 {
		t.Fatalf("a has %d rows and b %d, want 1 each", a, b)
	}
}

// TestContinuousNoticesOnce: the notices of the update's start (here: a table the pipeline
// wrote that no dataset writes any more) are in the first batch's summary only, not repeated by
// every batch of a continuous update.
func TestContinuousNoticesOnce(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	old := delta.New(flows.TableDir(p.Storage, "old_items"))
	tx := old.Begin(nil)
	tx.SetMetadata(delta.Metadata{Schema: schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true}}}})
	tx.SetAppTxn(flows.AppID(p, "old_items"), 1)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	batches := make(chan []string, 100)
	done := make(chan error)
	var out lockedBuffer
	go func() {
		_, err := Continuous(context.Background(), p, ContinuousOptions{Options: Options{Settle: -1, Out: &out}, Stop: stop, Interval: 20 * time.Millisecond,
			Batch: func(ran []string) { batches <- ran }})
		done <- err
	}()
	<-batches
	landWhole(t, p, "2.json", `{"op": "I", "id": 2, "seq": 2}`)
	select {
	case <-batches:
	case <-time.After(20 * time.Second):
		t.Fatal("no second batch")
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "no dataset of its spec writes any more (renamed or removed): old_items"); n != 1 {
		t.Errorf("the orphan table is named %d times, want once:\n%s", n, out.String())
	}
}

// landWhole lands a file of one line in p's landing folder whole: written under a hidden name
// (not listed), then renamed in, so that a poll with no settle time never finds it created but
// not yet written.
func landWhole(t *testing.T, p *spec.Pipeline, name, line string) {
	t.Helper()
	f := filepath.Join(filepath.Dir(p.File), "landing", name)
	tmp := filepath.Join(filepath.Dir(f), "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f); err != nil {
		t.Fatal(err)
	}
}
