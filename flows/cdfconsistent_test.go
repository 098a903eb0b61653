package flows

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
)

// cdfSpec has three targets kept as per-key histories over one change feed: SCD type 2, SCD type
// 2 with tracked columns and ignore_null_updates, and SCD type 1 with ignore_null_updates and
// truncates (the SCD type 2 targets drop the truncates, which they do not take).
var cdfSpec = historyMORSpec("")

// cdfRowText renders a row of schema s as text, without the columns in skip.
func cdfRowText(s schema.Schema, r []any, skip map[string]bool) string {
	var b []string
	for i, f := range s.Fields {
		if !skip[f.Name] {
			b = append(b, string(schema.AppendJSON(nil, f.Type, r[i])))
		}
	}
	return strings.Join(b, " ")
}

// tableText returns the rows of table tb at version v (-1: the latest) as text; none when the
// table has no snapshot yet.
func tableText(t *testing.T, tb *delta.Table, v int64) []string {
	t.Helper()
	snap, err := tb.Snapshot(v)
	if err != nil {
		if v < 0 {
			return nil
		}
		t.Fatal(err)
	}
	rows, err := tb.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = cdfRowText(snap.Metadata.Schema, r, nil)
	}
	return out
}

// randomChanges returns n random change events of the cdfSpec feed over keys 0..nkeys-1, with
// sequences from *seq on (advanced): deletes, inserts, updates, a quarter of them late (any
// sequence before), names "a", "b", "c" and "", and truncates when truncates is set.
func randomChanges(rng *rand.Rand, nkeys, n int, truncates bool, seq *int64) [][]any {
	var evs [][]any
	for range n {
		k := int64(rng.Intn(nkeys))
		s := *seq + int64(rng.Intn(10))
		if rng.Intn(4) == 0 {
			s = int64(rng.Intn(int(*seq))) // late
		}
		*seq += 3
		var op string
		switch x := rng.Intn(20); {
		case x < 5:
			op = "D"
		case x < 6 && truncates:
			op = "T"
		case x < 12:
			op = "I"
		default:
			op = "U"
		}
		if op == "T" {
			evs = append(evs, []any{"T", nil, nil, s})
			continue
		}
		evs = append(evs, ch(op, k, []string{"a", "b", "", "c"}[rng.Intn(4)], s))
	}
	return evs
}

// checkCDFTurns checks that the change data feed of version v of tb turns before (the table's
// rows before it, as tableText renders them) into the table at v: inserts and post-images added,
// deletes and pre-images removed. It returns the numbers of pre-images and post-images; what
// names the case in errors.
func checkCDFTurns(t *testing.T, what string, tb *delta.Table, before []string, v int64) (pre, post int) {
	t.Helper()
	skip := map[string]bool{"_commit_timestamp": true, "_commit_version": true, "_change_type": true}
	cs, crows, err := tb.Changes(v, v)
	if err != nil {
		t.Fatal(err)
	}
	ct := cs.Index("_change_type")
	count := map[string]int{}
	for _, r := range before {
		count[r]++
	}
	for _, r := range crows {
		row := cdfRowText(cs, r, skip)
		switch r[ct].(string) {
		case delta.ChangeInsert:
			count[row]++
		case delta.ChangeUpdatePostimage:
			count[row]++
			post++
		case delta.ChangeUpdatePreimage:
			count[row]--
			pre++
		case delta.ChangeDelete:
			count[row]--
		}
	}
	for _, r := range tableText(t, tb, v) {
		count[r]--
	}
	for r, c := range count {
		if c != 0 {
			t.Errorf("%s version %d: row %s is %+d off after applying the change data feed", what, v, r, c)
		}
	}
	return pre, post
}

// TestCDFTurnsTableBeforeIntoAfter: each APPLY CHANGES commit's change data feed turns the table
// before it into the table after it (Delta PROTOCOL.md "Change Data Files": inserts and
// post-images added, deletes and pre-images removed; a commit without change data files gives
// the rows of its added files as inserts), with as many pre-images as post-images. Random
// batches mix new keys, re-inserts after deletes, keys whose history is only deletes, late
// events, NULL names and truncates, on the targets kept as per-key histories, their keys
// folded in ranges of two keys on several goroutines. Not parallel: it sets minKeysPerWorker
// and GOMAXPROCS for the process.
func TestCDFTurnsTableBeforeIntoAfter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer minKeysPerWorker.Store(minKeysPerWorker.Swap(2))
	for seed := int64(0); seed < 25; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := loadPipeline(t, t.TempDir(), cdfSpec)
		env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
		seq := int64(1000)
		nkeys := 3 + rng.Intn(60)
		for batch := 0; batch < 8; batch++ {
			evs := randomChanges(rng, nkeys, 1+rng.Intn(80), batch > 2, &seq)
			appendEvents(t, p, evs)
			for _, ds := range []string{"s2", "s2n", "s1n"} {
				tb := delta.New(TableDir(p.Storage, ds))
				before := tableText(t, tb, -1)
				m, err := ApplyChanges(context.Background(), env, p.Dataset(ds))
				if err != nil {
					t.Fatalf("seed %d batch %d %s: %v", seed, batch, ds, err)
				}
				if m.Version < 0 {
					continue
				}
				pre, post := checkCDFTurns(t, fmt.Sprintf("seed %d batch %d %s", seed, batch, ds), tb, before, m.Version)
				if pre != post {
					t.Errorf("seed %d batch %d %s: %d pre-images, %d post-images", seed, batch, ds, pre, post)
				}
			}
		}
	}
}
