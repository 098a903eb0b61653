package flows

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

// cancelOnTie cancels an update's context when the flow reports a tie: the WARN is emitted while
// the batch is folded, after it was read and before its files are written and committed.
type cancelOnTie struct {
	cancel context.CancelFunc
	seen   bool
}

func (c *cancelOnTie) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
	if strings.Contains(message, "tie") {
		c.seen = true
		c.cancel()
	}
}

// TestApplyChangesStoppedCommitsNothing: an update stopped (its context canceled, as the stop
// signal that stops running flows cancels it) while an APPLY CHANGES batch is folded commits
// nothing of the batch, however far its files have come, for SCD type 1 and 2 and for a view
// over files and a bronze table: the flow returns the context's error, the target keeps its
// versions, and the next update applies the whole batch (README "Run modes": STOPPED flows
// commit nothing of their batch in flight).
func TestApplyChangesStoppedCommitsNothing(t *testing.T) {
	t.Parallel()
	// Two events of key 1 at sequence 2 with other values: a tie, which the later arrival wins.
	events := `{"op": "I", "id": 1, "name": "a", "amount": 1.00, "seq": 1}
{"op": "U", "id": 1, "name": "b", "amount": 2.00, "seq": 2}
{"op": "U", "id": 1, "name": "c", "amount": 3.00, "seq": 2}
{"op": "I", "id": 2, "name": "x", "amount": 5.00, "seq": 1}
`
	// semantics.md: the later arrival wins the tie at seq 2; SCD type 2 closes key 1's first
	// version at 2.
	scd1 := []string{"1 c 3.00 2", "2 x 5.00 1"}
	scd2 := []string{"1 a 1.00 1 1 2", "1 c 3.00 2 2 NULL", "2 x 5.00 1 1 NULL"}
	for _, c := range []struct {
		name, bronze, apply string
		want                []string // id name amount seq [__START_AT __END_AT], sorted
	}{
		{"scd1 view", "view", "", scd1},
		{"scd2 view", "view", "      stored_as_scd_type: 2\n", scd2},
		{"scd1 bronze", "streaming_table", "", scd1},
		{"scd2 bronze", "streaming_table", "      stored_as_scd_type: 2\n", scd2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, viewSpec(c.bronze, "", c.apply))
			if err := os.WriteFile(filepath.Join(dir, "landing", "a.json"), []byte(events), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.bronze != "view" {
				if _, err := Ingest(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("changes")); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := &cancelOnTie{cancel: cancel}
			_, err := ApplyChanges(ctx, &Env{Pipeline: p, Events: stop}, p.Dataset("target"))
			if !stop.seen || !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped while folding (tie reported: %v): err %v, want context.Canceled", stop.seen, err)
			}
			target := delta.New(TableDir(p.Storage, "target"))
			if v, err := target.LatestVersion(); err != nil || v > 0 {
				t.Fatalf("the target's latest version is %d (%v) after the stopped batch: want none, or its creation only", v, err)
			}
			m, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target"))
			if err != nil {
				t.Fatal(err)
			}
			if m.Idle || m.NumUpsertedRows == 0 {
				t.Fatalf("the next update applied nothing: %+v", m)
			}
			snap, rows := readTable(t, p, "target")
			var got []string
			for _, r := range rows {
				var f []string
				for i, v := range r {
					f = append(f, schema.Text(snap.Metadata.Schema.Fields[i].Type, v))
				}
				got = append(got, strings.Join(f, " "))
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("rows after the next update:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestKeyWorkerStops: a key worker whose stop is closed (the update's stop signal) folds no
// further key: the stop is looked at before the first key of its range and every stopEvery keys
// after, so that a second signal stops an SCD type 2 fold of millions of keys at once rather than
// after it (the batch then commits nothing: TestApplyChangesStoppedCommitsNothing). The worker
// here has no groups at all: folding a key would panic, which run keeps in panicked.
func TestKeyWorkerStops(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	close(stop)
	w := &keyWorker{stop: stop}
	w.run(0, 3*stopEvery)
	if w.panicked != nil || len(w.changedList) != 0 {
		t.Fatalf("a stopped worker folded: panicked %v, changed %v", w.panicked, w.changedList)
	}
	w = &keyWorker{}
	w.run(0, 1)
	if w.panicked == nil {
		t.Fatal("a worker without groups folded a key without panicking: this test cannot tell a stopped worker from one that folds")
	}
}
