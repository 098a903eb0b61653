package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
)

// workersSpec is the pipeline of the key-worker tests: a bronze table of change events and an
// APPLY CHANGES target kept as per-key histories (%d: the SCD type, %s: more settings).
const workersSpec = `name: kw
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, city STRING, seq BIGINT"
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: [seq]
      apply_as_deletes: op == "D"
      column_list: [id, name, city]
      stored_as_scd_type: %d
%s`

// workersMode is a kind of target kept as per-key histories.
type workersMode struct {
	name  string
	scd   int
	extra string
}

// workersModes are SCD type 2 with and without tracked columns and ignore_null_updates, and
// SCD type 1 with ignore_null_updates and truncates.
var workersModes = []workersMode{
	{"scd2", 2, "      track_history_column_list: [name]\n"},
	{"scd2-all", 2, ""},
	{"scd2-ignore-nulls", 2, "      track_history_column_list: [name]\n      ignore_null_updates: true\n"},
	{"scd1-ignore-nulls-trunc", 1, "      ignore_null_updates: true\n      apply_as_truncates: op == \"T\"\n"},
}

// workersBatches makes nBatches random batches of nEv change events over nKeys keys: sequences
// drawn from 0-1999 (late events and ties), 15% deletes, NULL names and cities, and with truncs
// about 1% truncates after the first batch.
func workersBatches(seed uint64, nBatches, nKeys, nEv int, truncs bool) [][][]any {
	r := rand.New(rand.NewPCG(seed, 7))
	var out [][][]any
	for b := 0; b < nBatches; b++ {
		rows := make([][]any, 0, nEv)
		for i := 0; i < nEv; i++ {
			id := int64(r.IntN(nKeys))
			seq := int64(r.IntN(2000)) // late events and ties
			op := "U"
			switch x := r.IntN(100); {
			case x < 15:
				op = "D"
			case x < 16 && truncs && b > 0:
				op = "T"
			}
			var name, city any = []string{"a", "b", "c"}[r.IntN(3)], []string{"x", "y", "z"}[r.IntN(3)]
			if r.IntN(4) == 0 {
				name = nil
			}
			if r.IntN(4) == 0 {
				city = nil
			}
			var idv any = id
			if op == "T" {
				idv = nil
			}
			rows = append(rows, []any{op, idv, name, city, seq})
		}
		out = append(out, rows)
	}
	return out
}

// workersResult is what a run of the key-worker tests compares: each batch's counts, the
// target's rows and its change data feed (sorted, or in the table's order).
type workersResult struct {
	metrics []string
	rows    []string
	cdf     []string
}

// runWorkers applies the batches to a new target, one update each, dropping the cached CDC state
// every third batch, running OPTIMIZE every optimizeEvery batches and a full refresh before batch
// refreshAt (-1: none).
func runWorkers(t *testing.T, m workersMode, batches [][][]any, optimizeEvery int, refreshAt int, cdfOrder bool) workersResult {
	t.Helper()
	dir := t.TempDir()
	p := loadPipeline(t, dir, fmt.Sprintf(workersSpec, m.scd, m.extra))
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	var res workersResult
	tdir := TableDir(p.Storage, "target")
	for i, b := range batches {
		appendEvents(t, p, b)
		if i%3 == 2 {
			stateCache.Delete(StateDir(p.Storage, "target"))
			loadedStates.Delete(StateDir(p.Storage, "target"))
			histCache.Delete(StateDir(p.Storage, "target"))
		}
		if i == refreshAt {
			if err := Reset(p, p.Dataset("target")); err != nil {
				t.Fatal(err)
			}
			histCache.Delete(StateDir(p.Storage, "target"))
			loadedStates.Delete(StateDir(p.Storage, "target"))
			if err := Setup(p, p.Dataset("target")); err != nil {
				t.Fatal(err)
			}
		}
		mt, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		res.metrics = append(res.metrics, fmt.Sprintf("b%d up=%d del=%d out=%d ties=%d", i, mt.NumUpsertedRows, mt.NumDeletedRows, mt.NumOutputRows, mt.Ties))
		if optimizeEvery > 0 && i%optimizeEvery == optimizeEvery-1 {
			if _, err := delta.New(tdir).Optimize(delta.OptimizeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, rows := readTable(t, p, "target")
	for _, r := range rows {
		res.rows = append(res.rows, fmt.Sprint(r))
	}
	sort.Strings(res.rows)
	tb := delta.New(tdir)
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	// The CDF from the first version of the (possibly refreshed) table.
	sch, ch, err := tb.Changes(0, snap.Version)
	if err != nil {
		t.Fatal(err)
	}
	drop := map[int]bool{}
	for j, f := range sch.Fields {
		if f.Name == "_commit_timestamp" {
			drop[j] = true
		}
	}
	for _, r := range ch {
		var parts []string
		for j, v := range r {
			if !drop[j] {
				parts = append(parts, schema.Text(sch.Fields[j].Type, v))
			}
		}
		res.cdf = append(res.cdf, strings.Join(parts, "|"))
	}
	if !cdfOrder {
		sort.Strings(res.cdf)
	}
	return res
}

// diffWorkers reports the lines that a (serial) and b (workers) do not share.
func diffWorkers(t *testing.T, what string, a, b []string) {
	t.Helper()
	if strings.Join(a, "\n") == strings.Join(b, "\n") {
		return
	}
	n := 0
	ma := map[string]int{}
	for _, x := range a {
		ma[x]++
	}
	for _, x := range b {
		ma[x]--
	}
	var d []string
	for k, v := range ma {
		if v != 0 {
			d = append(d, fmt.Sprintf("%+d %s", v, k))
			n++
		}
	}
	sort.Strings(d)
	if len(d) > 20 {
		d = d[:20]
	}
	t.Errorf("%s differ (serial %d, workers %d; %d distinct diffs):\n  %s", what, len(a), len(b), n, strings.Join(d, "\n  "))
}

// compareSerialWorkers runs the batches one key at a time, then in key ranges of at least
// workerMin keys, and compares the counts, rows and change data feeds.
func compareSerialWorkers(t *testing.T, m workersMode, batches [][][]any, optimizeEvery, refreshAt int, workerMin int64) {
	old := minKeysPerWorker.Load()
	defer minKeysPerWorker.Store(old)
	minKeysPerWorker.Store(1 << 40)
	serial := runWorkers(t, m, batches, optimizeEvery, refreshAt, false)
	minKeysPerWorker.Store(workerMin)
	par := runWorkers(t, m, batches, optimizeEvery, refreshAt, false)
	diffWorkers(t, "metrics", serial.metrics, par.metrics)
	diffWorkers(t, "rows", serial.rows, par.rows)
	diffWorkers(t, "cdf", serial.cdf, par.cdf)
}

// TestKeyWorkersSmallRanges: ranges of two keys or more (four on four cores), nine batches with
// OPTIMIZE and a full refresh, give the serial counts, rows and change data feed. Not parallel:
// it sets minKeysPerWorker and GOMAXPROCS for the process.
func TestKeyWorkersSmallRanges(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, m := range workersModes {
		t.Run(m.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				batches := workersBatches(seed, 9, 300, 700, m.scd == 1)
				compareSerialWorkers(t, m, batches, 3, 6, 2)
			}
		})
	}
}

// TestKeyWorkersLarge: batches of 20,000 keys, folded in ranges of the default 4,096 keys or
// more, give the serial results.
func TestKeyWorkersLarge(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, m := range workersModes {
		t.Run(m.name, func(t *testing.T) {
			batches := workersBatches(99, 4, 20000, 30000, m.scd == 1)
			compareSerialWorkers(t, m, batches, 2, -1, 4096)
		})
	}
}

// TestKeyWorkersCDFOrder: the change data feed, in the order the table holds it, is the serial
// one (two serial runs agree first).
func TestKeyWorkersCDFOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, m := range workersModes[:3] {
		t.Run(m.name, func(t *testing.T) {
			batches := workersBatches(5, 5, 300, 700, m.scd == 1)
			old := minKeysPerWorker.Load()
			defer minKeysPerWorker.Store(old)
			minKeysPerWorker.Store(1 << 40)
			s1 := runWorkers(t, m, batches, 0, -1, true)
			s2 := runWorkers(t, m, batches, 0, -1, true)
			if strings.Join(s1.cdf, "\n") != strings.Join(s2.cdf, "\n") {
				t.Fatal("two serial runs give the change data feed in different orders")
			}
			minKeysPerWorker.Store(2)
			p := runWorkers(t, m, batches, 0, -1, true)
			if strings.Join(s1.cdf, "\n") != strings.Join(p.cdf, "\n") {
				for i := range s1.cdf {
					if s1.cdf[i] != p.cdf[i] {
						t.Fatalf("CDF order differs at %d: serial %s, workers %s", i, s1.cdf[i], p.cdf[i])
					}
				}
			}
		})
	}
}

// TestKeyWorkersTruncateOnly: a batch that is only a truncate folds every key of the state, none
// of them with events of the batch (positions past g.nBatch).
func TestKeyWorkersTruncateOnly(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	m := workersModes[3]
	var b1, b2, b3 [][]any
	for i := 0; i < 600; i++ {
		b1 = append(b1, []any{"U", int64(i), "a", nil, int64(i)})
		b3 = append(b3, []any{"U", int64(i), nil, "c", int64(100 + i)})
	}
	b2 = [][]any{{"T", nil, nil, nil, int64(300)}}
	compareSerialWorkers(t, m, [][][]any{b1, b2, b3, b2}, 0, -1, 2)
	compareSerialWorkers(t, m, [][][]any{b1, b2, b3, {{"T", nil, nil, nil, int64(650)}}}, 0, -1, 2)
}
