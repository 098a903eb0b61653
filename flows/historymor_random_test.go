package flows

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
)

var historyMORSeeds = flag.Int("history-mor.seeds", 20, "seeds of TestHistoryMergeOnReadRandom")
var historyMORScale = flag.Int("history-mor.scale", 1, "TestHistoryMergeOnReadRandom: keys and events a batch times this")

// historyMORSpec is a change feed and three targets kept as per-key histories, each with props
// (a table_properties block, or "") after it: cdfSpec's.
func historyMORSpec(props string) string {
	return fmt.Sprintf(`name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
  - name: s2
    apply_changes: {source: changes, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op, seq], stored_as_scd_type: 2}
    expectations:
      - {name: no_t, expect: op != "T", on_violation: drop}
%[1]s  - name: s2n
    apply_changes: {source: changes, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op], stored_as_scd_type: 2, track_history_column_list: [name], ignore_null_updates: true}
    expectations:
      - {name: no_t, expect: op != "T", on_violation: drop}
%[1]s  - name: s1n
    apply_changes: {source: changes, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", apply_as_truncates: op == "T", except_column_list: [op], ignore_null_updates: true}
%[1]s`, props)
}

// TestHistoryMergeOnReadRandom: random batches (new keys, re-inserts, late events, NULLs,
// truncates) into targets kept as per-key histories, merge-on-read (delta.enableDeletionVectors
// turned on, and back off, at random points) with OPTIMIZE (random target sizes) at random
// points, the state dropped at random, keys folded in ranges of two on several goroutines,
// against copy-on-write targets fed the same batches: after each batch the rows must be the
// same, the change data feeds the same, and the merge-on-read commit's change data feed must
// turn the table before into after. Run more with -history-mor.seeds=N, larger batches with
// -history-mor.scale=N.
func TestHistoryMergeOnReadRandom(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer minKeysPerWorker.Store(minKeysPerWorker.Swap(2))
	skip := map[string]bool{"_commit_timestamp": true, "_commit_version": true, "_change_type": true}
	on := "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
	off := "    table_properties:\n      delta.enableDeletionVectors: \"false\"\n"
	seeds := *historyMORSeeds
	if underRace && seeds > 8 {
		seeds = 8 // the workers' goroutines meet in each; the flag can ask for more
	}
	for seed := int64(0); seed < int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		cowDir, morDir := t.TempDir(), t.TempDir()
		cow := loadPipeline(t, cowDir, historyMORSpec(""))
		morOn := rng.Intn(3) != 0
		mor := loadPipeline(t, morDir, historyMORSpec(map[bool]string{true: on, false: off}[morOn]))
		envC := &Env{Pipeline: cow, Events: nopEvents{}, Now: time.Now}
		seq := int64(1000)
		nkeys := 3 + rng.Intn(60**historyMORScale)
		var trail []string
		for batch := 0; batch < 12; batch++ {
			// Toggle the property at random. Turned off, the target is copy-on-write again
			// with its keys' rows spread over files by the merge-on-read batches before.
			if !morOn && rng.Intn(3) == 0 {
				morOn = true
				mor = loadPipeline(t, morDir, historyMORSpec(on))
				trail = append(trail, "on")
			} else if morOn && rng.Intn(5) == 0 {
				morOn = false
				mor = loadPipeline(t, morDir, historyMORSpec(off))
				trail = append(trail, "off")
			}
			envM := &Env{Pipeline: mor, Events: nopEvents{}, Now: time.Now}
			evs := randomChanges(rng, nkeys, 1+rng.Intn(80**historyMORScale), batch > 2, &seq)
			appendEvents(t, cow, evs)
			appendEvents(t, mor, evs)
			if rng.Intn(3) == 0 {
				for _, ds := range []string{"s2", "s2n", "s1n"} {
					histCache.Delete(StateDir(mor.Storage, ds))
				}
				trail = append(trail, "fresh")
			}
			trail = append(trail, fmt.Sprintf("b%d(%d)", batch, len(evs)))
			for _, ds := range []string{"s2", "s2n", "s1n"} {
				tbC := delta.New(TableDir(cow.Storage, ds))
				tbM := delta.New(TableDir(mor.Storage, ds))
				before := tableText(t, tbM, -1)
				mc, err := ApplyChanges(context.Background(), envC, cow.Dataset(ds))
				if err != nil {
					t.Fatalf("seed %d batch %d %s copy-on-write: %v", seed, batch, ds, err)
				}
				mm, err := ApplyChanges(context.Background(), envM, mor.Dataset(ds))
				if err != nil {
					t.Fatalf("seed %d batch %d %s merge-on-read (%v): %v", seed, batch, ds, trail, err)
				}
				if mc.NumUpsertedRows != mm.NumUpsertedRows || mc.NumDeletedRows != mm.NumDeletedRows {
					t.Fatalf("seed %d batch %d %s: metrics copy-on-write %+v merge-on-read %+v", seed, batch, ds, mc, mm)
				}
				rc, rm := sortedText(tableText(t, tbC, -1)), sortedText(tableText(t, tbM, -1))
				if rc != rm {
					t.Fatalf("seed %d batch %d %s (%v): rows differ\ncopy-on-write:\n%s\nmerge-on-read:\n%s", seed, batch, ds, trail, rc, rm)
				}
				if (mc.Version < 0) != (mm.Version < 0) {
					t.Fatalf("seed %d batch %d %s: versions %d / %d", seed, batch, ds, mc.Version, mm.Version)
				}
				if mm.Version < 0 {
					continue
				}
				cdfC := cdfText(t, tbC, mc.Version, skip)
				cdfM := cdfText(t, tbM, mm.Version, skip)
				if cdfC != cdfM {
					t.Fatalf("seed %d batch %d %s (%v): change data feeds differ\ncopy-on-write:\n%s\nmerge-on-read:\n%s", seed, batch, ds, trail, cdfC, cdfM)
				}
				checkCDFTurns(t, fmt.Sprintf("seed %d batch %d %s", seed, batch, ds), tbM, before, mm.Version)
				if t.Failed() {
					t.FailNow()
				}
			}
			if batch == 11 && testing.Verbose() {
				_, rows := readTable(t, mor, "s2")
				t.Logf("seed %d: s2 has %d rows after %v", seed, len(rows), trail)
			}
			// OPTIMIZE the merge-on-read targets at random, with small target sizes.
			if rng.Intn(4) == 0 {
				size := int64(500 + rng.Intn(3000))
				for _, ds := range []string{"s2", "s2n", "s1n"} {
					if rng.Intn(2) == 0 {
						if _, err := delta.New(TableDir(mor.Storage, ds)).Optimize(delta.OptimizeOptions{TargetSize: size}); err != nil {
							t.Fatal(err)
						}
						trail = append(trail, "optimize-"+ds)
					}
				}
			}
		}
	}
}

func sortedText(rows []string) string {
	rows = append([]string(nil), rows...)
	sort.Strings(rows)
	return strings.Join(rows, "\n")
}

func cdfText(t *testing.T, tb *delta.Table, v int64, skip map[string]bool) string {
	t.Helper()
	cs, crows, err := tb.Changes(v, v)
	if err != nil {
		t.Fatal(err)
	}
	ct := cs.Index("_change_type")
	var out []string
	for _, r := range crows {
		out = append(out, r[ct].(string)+" "+cdfRowText(cs, r, skip))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
