package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/spec"
)

// scd1StateText is the CDC state of the target items of p as of its last commit, read back from
// its segments, as comparable text: per key (sorted), its sequence, whether it is a tombstone
// and since when, and, for a live key, whether the data file the state names holds its row.
func scd1StateText(t *testing.T, p *spec.Pipeline) string {
	t.Helper()
	tb := delta.New(TableDir(p.Storage, "items"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _, err := lastApply(tb, snap)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Dataset("items")
	keySch, _, err := d.Schema.Select(d.ApplyChanges.Keys)
	if err != nil {
		t.Fatal(err)
	}
	seqSch, _, err := d.Schema.Select(d.ApplyChanges.SequenceBy)
	if err != nil {
		t.Fatal(err)
	}
	// Read from the segments, not the state this process keeps (put back after).
	dir := StateDir(p.Storage, "items")
	if kept, ok := stateCache.LoadAndDelete(dir); ok {
		defer stateCache.Store(dir, kept)
	}
	st, err := loadState(dir, tb, snap, id, keySch, seqSch, 1_750_000_000_000, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	keyIdx := []int{d.Schema.Index(d.ApplyChanges.Keys[0])}
	held := map[string]map[string]bool{} // file path -> the keys its rows hold
	for _, f := range snap.Files {
		rows, _, err := tb.ReadLiveFile(f, d.Schema)
		if err != nil {
			t.Fatal(err)
		}
		held[f.Path] = map[string]bool{}
		for _, r := range rows {
			held[f.Path][string(appendPicked(nil, r, keyIdx))] = true
		}
	}
	var lines []string
	for i := range st.slots {
		sl := &st.slots[i]
		if sl.gone {
			continue
		}
		kb := string(st.keyBytes(i))
		line := fmt.Sprintf("%x seq %x deleted %v at %d", kb, st.seqBytes(i), sl.deleted, sl.deletedAt)
		if !sl.deleted {
			line += fmt.Sprintf(" in its file %v", held[st.files[sl.file]][kb])
		} else if sl.file != 0 {
			line += " names a file"
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// runSCD1Batches applies each batch to a new SCD type 1 pipeline with applySCD1Fresh on or off
// and returns the outcome after each batch, and how many batches it applied. cached false drops
// the CDC state this process keeps in memory after each batch, so that the next reads it back
// from its segments.
func runSCD1Batches(t *testing.T, spec string, batches [][][]any, fresh, cached bool) ([]histOutcome, int64) {
	t.Helper()
	scd1FreshOff.Store(!fresh)
	defer scd1FreshOff.Store(false)
	before := scd1FreshBatches.Load()
	p := loadPipeline(t, t.TempDir(), spec)
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec, Now: func() time.Time { return time.UnixMilli(1_750_000_000_000) }}
	var out []histOutcome
	for i, b := range batches {
		appendEvents(t, p, b)
		m, err := ApplyChanges(context.Background(), env, p.Dataset("items"))
		if err != nil {
			t.Fatal(err)
		}
		if !cached {
			stateCache.Delete(StateDir(p.Storage, "items"))
		} else if v, ok := stateCache.Load(StateDir(p.Storage, "items")); ok {
			// The state kept for the next batch finds each of its keys, and its table holds
			// each key once.
			st, used := v.(*cdcState), 0
			for _, b := range st.table {
				if b != 0 {
					used++
				}
			}
			if used != len(st.slots) {
				t.Fatalf("batch %d: the state's table holds %d keys, its slots %d", i+1, used, len(st.slots))
			}
			for j := range st.slots {
				if got := st.find(st.keyBytes(j)); got != j {
					t.Fatalf("batch %d: slot %d's key found at slot %d", i+1, j, got)
				}
			}
		} else {
			t.Fatalf("batch %d: no state kept in memory", i+1)
		}
		o, files := readOutcome(t, p, m, rec)
		o.metrics += fmt.Sprintf(" files %d", files)
		o.state = scd1StateText(t, p)
		out = append(out, o)
	}
	return out, scd1FreshBatches.Load() - before
}

// TestSCD1FreshEquivalence: the first batch of an SCD type 1 target applied from its typedFold
// (applySCD1Fresh) gives exactly what the general path gives (semantics.md "APPLY CHANGES": SCD
// type 1, ties, deletes, tombstones): the same table rows, change data feed, metrics and WARNs,
// and a CDC state (kept in memory, or read back from its segments) from which a second and a
// third batch (updates, deletes, late events below a tombstone, new keys; the general path)
// give the same again. With small data files, so that the first batch writes several and the
// state must name the right one for each key.
func TestSCD1FreshEquivalence(t *testing.T) {
	defer func(a, b int) { targetFileRows, parallelFileRows = a, b }(targetFileRows, parallelFileRows)
	targetFileRows, parallelFileRows = 700, 300
	spec := strings.Replace(fmt.Sprintf(histColumnsSpec, ""), "stored_as_scd_type: 2", "stored_as_scd_type: 1", 1)
	for seed := range uint64(7) {
		r := rand.New(rand.NewPCG(seed, 7))
		keys, seqs := 2+r.IntN(60), 5+r.IntN(100)
		n := 1 + r.IntN(400)
		if seed == 0 {
			n, keys, seqs = 40_000, 3_000, 5_000 // several files of upserts, ties
		}
		spread := int64(1)
		if seed%2 == 1 {
			spread = 1<<40 + 3
		}
		first := randomHistEvents(r, n, keys, seqs, spread)
		if seed == 6 {
			// Only deletes: tombstones and no data file, then upserts below and above them.
			for _, row := range first {
				row[0] = "D"
			}
		}
		batches := [][][]any{first, randomHistEvents(r, 1+r.IntN(300), keys+5, seqs, spread),
			randomHistEvents(r, 1+r.IntN(300), keys+7, seqs, spread)}
		general, off := runSCD1Batches(t, spec, batches, false, true)
		for _, cached := range []bool{true, false} {
			got, on := runSCD1Batches(t, spec, batches, true, cached)
			if off != 0 || on != 1 {
				t.Fatalf("seed %d: %d batches applied fresh with it off, %d with it on; want 0 and 1", seed, off, on)
			}
			for i := range batches {
				g, c := general[i], got[i]
				for _, d := range []struct{ what, g, c string }{
					{"rows", g.rows, c.rows}, {"change data feed", g.changes, c.changes},
					{"metrics", g.metrics, c.metrics}, {"events", g.warns, c.warns}, {"CDC state", g.state, c.state},
				} {
					if d.g != d.c {
						t.Fatalf("seed %d batch %d (state cached %v): %s differ\n general:\n%s\n fresh:\n%s", seed, i+1, cached, d.what, d.g, d.c)
					}
				}
			}
		}
		if seed == 6 && !strings.HasPrefix(general[0].metrics, "upserted 0 ") {
			t.Fatalf("seed 6: %s; want no upserts", general[0].metrics)
		}
		if seed == 0 {
			if !strings.Contains(general[0].warns, "tie") {
				t.Fatalf("seed 0 met no tie:\n%s", general[0].warns)
			}
			var files int
			fmt.Sscanf(general[0].metrics[strings.Index(general[0].metrics, "files"):], "files %d", &files)
			if files < 3 {
				t.Fatalf("seed 0: %s; want the first batch in 3 files or more", general[0].metrics)
			}
			t.Logf("seed 0: %s", general[0].metrics)
		}
	}
}
