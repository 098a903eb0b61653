package flows

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

var equivalenceIterations = flag.Int("equivalence.iterations", 12, "random change logs per variant in TestRandomizedEquivalence")
var equivalenceOptimize = flag.Bool("equivalence.optimize", false, "OPTIMIZE the target (small target sizes, so that a key's rows may be cut over files) at random points")

// refEvent is one change event of a generated log.
type refEvent struct {
	id     int64
	region string
	major  int64
	minor  int64
	op     string // "U", "D" or "T" (truncate)
	name   string // "" = NULL
	city   string // "" = NULL
}

func (e refEvent) row() []any {
	var id, region, name, city any = e.id, e.region, nil, nil
	if e.op == "U" {
		if e.name != "" {
			name = e.name
		}
		if e.city != "" {
			city = e.city
		}
	}
	if e.op == "T" {
		id, region = nil, nil
	}
	return []any{e.op, id, region, name, city, e.major, int32(e.minor)}
}

// less orders by sequence; at equal sequence a truncate comes last (it removes rows at or below
// its sequence).
func (e refEvent) less(o refEvent) bool {
	if e.major != o.major {
		return e.major < o.major
	}
	if e.minor != o.minor {
		return e.minor < o.minor
	}
	return e.op != "T" && o.op == "T"
}

// genOptions say which kinds of events a generated log has.
type genOptions struct {
	composite, nulls, truncates bool
}

// genLog makes a change log over a few keys: every key gets a few events with distinct
// sequences (so that no ties arise: the guiding rule has no exception to apply).
func genLog(r *rand.Rand, o genOptions) []refEvent {
	composite := o.composite
	var log []refEvent
	nkeys := 1 + r.IntN(6)
	for k := 0; k < nkeys; k++ {
		id := int64(r.IntN(4))
		region := []string{"eu", "us"}[r.IntN(2)]
		if !composite {
			region = "eu"
		}
		seqs := r.Perm(12)[:1+r.IntN(8)]
		for _, s := range seqs {
			e := refEvent{id: id, region: region, major: int64(s / 3), minor: int64(s % 3), op: "U",
				name: []string{"a", "b", "c"}[r.IntN(3)], city: []string{"x", "y"}[r.IntN(2)]}
			if r.IntN(4) == 0 {
				e.op = "D"
			}
			if o.nulls && r.IntN(3) == 0 {
				e.name = ""
			}
			if o.nulls && r.IntN(3) == 0 {
				e.city = ""
			}
			log = append(log, e)
		}
	}
	// Drop events that collide on (key, sequence) with an earlier one: no ties.
	seen := map[string]bool{}
	out := log[:0]
	for _, e := range log {
		k := fmt.Sprint(e.id, e.region, e.major, e.minor)
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	if o.truncates && r.IntN(2) == 0 {
		s := r.IntN(12)
		out = append(out, refEvent{op: "T", major: int64(s / 3), minor: int64(s % 3)})
	}
	return out
}

// applyRef folds a key's events in sequence order into its current row (SCD type 1): a delete or
// a truncate removes it, a re-insert starts from nothing, and with ignoreNulls a NULL keeps the
// current value.
func applyRef(cur *refEvent, e refEvent, ignoreNulls bool) *refEvent {
	switch {
	case e.op != "U":
		return nil
	case cur == nil || !ignoreNulls:
		c := e
		return &c
	}
	c := *cur
	if e.name != "" {
		c.name = e.name
	}
	if e.city != "" {
		c.city = e.city
	}
	c.major, c.minor = e.major, e.minor
	return &c
}

// deliver shuffles the log, duplicates some events and splits it into random batches (with
// oneByOne, one event a batch: enough batches to make the CDC state compact its segments).
func deliver(r *rand.Rand, log []refEvent, oneByOne bool) [][]refEvent {
	var all []refEvent
	for _, e := range log {
		all = append(all, e)
		if r.IntN(5) == 0 {
			all = append(all, e)
		}
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var batches [][]refEvent
	for len(all) > 0 {
		n := 1 + r.IntN(len(all))
		if oneByOne {
			n = 1
		}
		batches = append(batches, all[:n])
		all = all[n:]
		if r.IntN(4) == 0 && len(batches) > 0 {
			batches = append(batches, batches[r.IntN(len(batches))]) // a replayed batch
		}
	}
	return batches
}

// refSCD1 is the reference model: apply the log in sequence order, one row per key; a truncate
// removes every row.
func refSCD1(log []refEvent, composite, ignoreNulls bool) []string {
	sorted := append([]refEvent(nil), log...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].less(sorted[j]) })
	rows := map[string]*refEvent{}
	for _, e := range sorted {
		if e.op == "T" {
			rows = map[string]*refEvent{}
			continue
		}
		k := refKey(e, composite)
		rows[k] = applyRef(rows[k], e, ignoreNulls)
	}
	var out []string
	for _, e := range rows {
		if e != nil {
			out = append(out, fmt.Sprintf("%d|%s|%s|%s", e.id, regionOf(*e, composite), nullText(e.name), nullText(e.city)))
		}
	}
	sort.Strings(out)
	return out
}

func nullText(s string) string {
	if s == "" {
		return "NULL"
	}
	return s
}

// refSCD2 is the reference model for SCD type 2 tracking `name` only: in sequence order, an
// upsert opens a version when there is none or name changed, otherwise rewrites the open one; a
// delete closes the open version.
func refSCD2(log []refEvent, composite, ignoreNulls bool) []string {
	sorted := append([]refEvent(nil), log...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].less(sorted[j]) })
	type ver struct {
		e          refEvent
		start, end string
	}
	var out []string
	open := map[string]*ver{}
	var all []*ver
	for _, e := range sorted {
		k := refKey(e, composite)
		seq := fmt.Sprintf("%d.%d", e.major, e.minor)
		v := open[k]
		switch {
		case e.op == "D":
			if v != nil {
				v.end = seq
				delete(open, k)
			}
		case v == nil:
			nv := &ver{e: e, start: seq, end: "null"}
			open[k] = nv
			all = append(all, nv)
		default:
			next := *applyRef(&v.e, e, ignoreNulls)
			if next.name == v.e.name {
				v.e = next // an untracked change rewrites the open version in place
				continue
			}
			v.end = seq
			nv := &ver{e: next, start: seq, end: "null"}
			open[k] = nv
			all = append(all, nv)
		}
	}
	for _, v := range all {
		out = append(out, fmt.Sprintf("%d|%s|%s|%s|%s|%s", v.e.id, regionOf(v.e, composite), nullText(v.e.name), nullText(v.e.city), v.start, v.end))
	}
	sort.Strings(out)
	return out
}

func refKey(e refEvent, composite bool) string {
	if composite {
		return fmt.Sprint(e.id, "/", e.region)
	}
	return fmt.Sprint(e.id)
}

func regionOf(e refEvent, composite bool) string {
	if composite {
		return e.region
	}
	return "*"
}

const equivalenceSpec = `name: eq
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, region STRING, name STRING, city STRING, major BIGINT, minor INT"
  - name: target
    apply_changes:
      source: changes
      keys: %s
      sequence_by: [major, minor]
      apply_as_deletes: op == "D"
      column_list: [id, region, name, city]
      stored_as_scd_type: %d
%s`

// TestRandomizedEquivalence is the property of semantics.md's guiding rule: whatever the order,
// duplication, replay and batching of a change log, the target equals applying the log in
// sequence order in one batch, computed by the reference models above. Run more iterations with
// -equivalence.iterations=N.
func TestRandomizedEquivalence(t *testing.T) {
	for _, variant := range []eqVariant{
		{"scd1", 1, false, false, false, false}, {"scd1-composite-key", 1, true, false, false, false}, {"scd1-ignore-null-updates", 1, true, true, false, false},
		{"scd2", 2, false, false, false, false}, {"scd2-composite-key", 2, true, false, false, false}, {"scd2-ignore-null-updates", 2, false, true, false, false},
		{"scd1-one-event-a-batch", 1, true, false, true, false}, {"scd2-one-event-a-batch", 2, true, false, true, false},
		{"scd1-merge-on-read", 1, false, false, false, true}, {"scd1-merge-on-read-composite-key", 1, true, false, false, true},
		{"scd1-merge-on-read-one-event-a-batch", 1, true, false, true, true},
		{"scd2-merge-on-read", 2, false, false, false, true}, {"scd2-merge-on-read-composite-key", 2, true, false, false, true},
		{"scd2-merge-on-read-ignore-null-updates", 2, false, true, false, true}, {"scd1-ignore-null-updates-merge-on-read", 1, true, true, false, true},
		{"scd2-merge-on-read-one-event-a-batch", 2, true, false, true, true},
	} {
		variant := variant
		t.Run(variant.name, func(t *testing.T) {
			t.Parallel()
			compacted := 0
			defer func() {
				if variant.oneByOne && compacted == 0 {
					t.Errorf("no iteration had more than %d batches: the compaction of the state was not exercised", maxSegments+1)
				}
			}()
			for it := 0; it < *equivalenceIterations; it++ {
				if runEquivalence(t, variant, it) {
					compacted++
				}
			}
		})
	}
}

// TestHistoryKeyWorkersEquivalence is TestRandomizedEquivalence for the targets kept as per-key
// histories (SCD type 2, SCD type 1 with ignore_null_updates) with their keys folded in ranges
// of two keys or more on several goroutines (keyRanges), as batches of 8,192 keys or more are:
// the target must be the same. Not parallel: it lowers minKeysPerWorker for the whole process.
func TestHistoryKeyWorkersEquivalence(t *testing.T) {
	defer minKeysPerWorker.Store(minKeysPerWorker.Swap(2))
	for _, variant := range []eqVariant{
		{"scd2", 2, false, false, false, false}, {"scd2-composite-key", 2, true, false, false, false},
		{"scd2-ignore-null-updates", 2, false, true, false, false}, {"scd1-ignore-null-updates", 1, true, true, false, false},
		{"scd2-merge-on-read", 2, false, false, false, true}, {"scd1-ignore-null-updates-merge-on-read", 1, true, true, false, true},
	} {
		t.Run(variant.name, func(t *testing.T) {
			for it := 0; it < *equivalenceIterations; it++ {
				runEquivalence(t, variant, it)
			}
		})
	}
}

// eqVariant is a kind of target TestRandomizedEquivalence builds.
type eqVariant struct {
	name      string
	scd       int
	composite bool
	nulls     bool // ignore_null_updates, with partial updates in the log
	oneByOne  bool // one event a batch
	mor       bool // merge-on-read: the target has delta.enableDeletionVectors
}

// runEquivalence builds the variant's target from its it-th random log, delivered in random
// batches, and compares it with the reference model; it reports whether the state was compacted.
func runEquivalence(t *testing.T, variant eqVariant, it int) (compacted bool) {
	t.Helper()
	seed := uint64(it)*7919 + uint64(variant.scd)*31
	if variant.composite {
		seed++
	}
	if variant.nulls {
		seed += 2
	}
	if variant.oneByOne {
		seed += 3
	}
	if variant.mor {
		seed += 5
	}
	r := rand.New(rand.NewPCG(seed, 42))
	ro := rand.New(rand.NewPCG(seed, 43)) // OPTIMIZE points (-equivalence.optimize), apart so that r's draws stay the same
	log := genLog(r, genOptions{composite: variant.composite, nulls: variant.nulls, truncates: variant.scd == 1})
	batches := deliver(r, log, variant.oneByOne)
	keys := "[id]"
	if variant.composite {
		keys = "[id, region]"
	}
	extra := ""
	if variant.scd == 2 {
		extra = "      track_history_column_list: [name]\n"
	} else {
		extra = "      apply_as_truncates: op == \"T\"\n"
	}
	if variant.nulls {
		extra += "      ignore_null_updates: true\n"
	}
	if variant.mor {
		extra += "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
	}
	p := loadPipeline(t, t.TempDir(), fmt.Sprintf(equivalenceSpec, keys, variant.scd, extra))
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	for _, b := range batches {
		rows := make([][]any, len(b))
		for i, e := range b {
			rows[i] = e.row()
		}
		appendEvents(t, p, rows)
		if r.IntN(2) == 0 {
			// As a new process would: read the CDC state from its segments.
			stateCache.Delete(StateDir(p.Storage, "target"))
			loadedStates.Delete(StateDir(p.Storage, "target"))
			histCache.Delete(StateDir(p.Storage, "target"))
		}
		if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if *equivalenceOptimize && ro.IntN(4) == 0 {
			if _, err := delta.New(TableDir(p.Storage, "target")).Optimize(delta.OptimizeOptions{TargetSize: int64(300 + ro.IntN(3000))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(batches) > maxSegments+1 {
		compacted = true
		tb := delta.New(TableDir(p.Storage, "target"))
		snap, _ := tb.Snapshot(-1)
		id, _, _, err := lastApply(tb, snap)
		if err != nil {
			t.Fatal(err)
		}
		l := &stateLog{dir: StateDir(p.Storage, "target")}
		m, err := l.readManifest(tb, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Segments) > maxSegments {
			t.Fatalf("seed %d: %d batches left %d state segments, want at most %d", seed, len(batches), len(m.Segments), maxSegments)
		}
	}
	got := targetRows(t, p, variant.composite)
	var want []string
	if variant.scd == 1 {
		want = refSCD1(log, variant.composite, variant.nulls)
	} else {
		want = refSCD2(log, variant.composite, variant.nulls)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("seed %d: %d batches of %d events\n got:\n  %s\nwant:\n  %s", seed, len(batches), len(log), strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	return compacted
}

func targetRows(t *testing.T, p *spec.Pipeline, composite bool) []string {
	t.Helper()
	_, rows := readTable(t, p, "target")
	seq := func(v any) string {
		if v == nil {
			return "null"
		}
		s := v.([]any)
		return fmt.Sprintf("%d.%d", s[0].(int64), s[1].(int32))
	}
	var out []string
	for _, r := range rows {
		region := r[1].(string)
		if !composite {
			region = "*"
		}
		line := fmt.Sprintf("%d|%s|%s|%s", r[0].(int64), region, schema.Text(schema.Type{Kind: schema.String}, r[2]), schema.Text(schema.Type{Kind: schema.String}, r[3]))
		if len(r) > 4 {
			line += "|" + seq(r[4]) + "|" + seq(r[5])
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}
