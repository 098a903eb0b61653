package flows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestHistStatePrefetch: a batch into a target kept as per-key histories loads the target's CDC
// state while it reads the batch (changeBatch.histPre), the state of the target's last commit;
// applyHistory folds onto it, and a batch that is not applied (its read failed, or the update
// stopped) waits for the load and caches the state it loaded, so the next batch folds onto the
// same state (semantics.md "APPLY CHANGES": a failed batch changes nothing).
func TestHistStatePrefetch(t *testing.T) {
	p := loadPipeline(t, t.TempDir(), scd2Spec)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
	d := p.Dataset("items")
	dir := StateDir(p.Storage, "items")
	apply := func(ctx context.Context) error {
		_, err := ApplyChanges(ctx, env, d)
		return err
	}
	appendEvents(t, p, [][]any{ch("I", 1, "a", 10), ch("I", 2, "x", 50)})
	if err := apply(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The next batch's read starts the load; the loaded state is the first batch's: two keys.
	appendEvents(t, p, [][]any{ch("U", 1, "c", 30)})
	histCache.Delete(dir) // loaded from the state's files, not the process's cache
	var m Metrics
	b, err := readChangeBatch(context.Background(), env, d, &m, true, nil)
	if err != nil || b == nil {
		t.Fatalf("readChangeBatch: %v, %v", b, err)
	}
	pre := b.histPre
	if pre == nil {
		t.Fatal("an SCD type 2 batch was read without loading its target's state beside it")
	}
	<-pre.done
	if pre.err != nil || pre.state == nil {
		t.Fatalf("prefetched state: %v, err %v", pre.state, pre.err)
	}
	if len(pre.state.keys) != 2 || pre.state.id != b.stateID {
		t.Fatalf("prefetched state: %d keys, id %q; want 2 keys of the state %q", len(pre.state.keys), pre.state.id, b.stateID)
	}
	// Not applied: the state goes to the cache, as a load would have left it.
	b.dropHistPrefetch()
	if v, ok := histCache.Load(dir); !ok || v.(*histState) != pre.state {
		t.Fatalf("a dropped prefetch's state is not cached (cached: %v)", ok)
	}

	// versions lists the target's rows as "id name start end", sorted.
	versions := func() string {
		_, rows := readTable(t, p, "items")
		var out []string
		for _, r := range rows {
			out = append(out, strings.TrimSuffix(fmt.Sprintln(r...), "\n"))
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	}
	const first = "1 a 10 <nil>; 2 x 50 <nil>"
	if got := versions(); got != first {
		t.Fatalf("after the first batch: %s, want %s", got, first)
	}

	// A stopped update: nothing is applied, and the batch applies in full on the next run, onto
	// the cached state.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if err := apply(stopped); err == nil {
		t.Fatal("a stopped update applied its batch")
	}
	if got := versions(); got != first {
		t.Fatalf("after a stopped update: %s, want %s", got, first)
	}
	if err := apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The update at 30 closes a's version there and opens c's.
	const second = "1 a 10 30; 1 c 30 <nil>; 2 x 50 <nil>"
	if got := versions(); got != second {
		t.Fatalf("after the second batch: %s, want %s", got, second)
	}

	// A batch whose read fails (a NULL key) after the load started changes nothing.
	appendEvents(t, p, [][]any{ch("U", 2, "y", 60), {"U", nil, "z", int64(35)}})
	if err := apply(context.Background()); err == nil || !strings.Contains(err.Error(), "NULL") {
		t.Fatalf("a NULL key: got %v, want the batch to fail naming the NULL", err)
	}
	if got := versions(); got != second {
		t.Fatalf("after a failed batch: %s, want %s", got, second)
	}
}
