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
)

// TestSCD2ManyKeys applies two batches of thousands of keys, more than a slab of rows
// (slabRows) holds, and checks the table against the history semantics.md defines, computed
// here from all the events: with every upsert changing the tracked column,
// each upsert is a version from its sequence to the key's next event (NULL for the last), and a
// delete only ends the version before it. The events come in two batches; a tenth of those of
// the first half of the sequence arrive late, in the second batch, after newer events of their
// key. The first batch's change data feed holds each of its versions once, as an insert.
func TestSCD2ManyKeys(t *testing.T) {
	t.Parallel()
	const keys, events = 6000, 24_000
	r := rand.New(rand.NewPCG(7, 8))
	type ev struct {
		op       string
		id, seq  int64
		name     string
		lateness int // 0: in its batch, 1: late, in the next batch
	}
	var all []ev
	for i := range events {
		seq := int64(i + 1)
		e := ev{op: "U", id: int64(r.IntN(keys)), seq: seq}
		if r.IntN(10) == 0 {
			e.op = "D"
		} else {
			e.name = fmt.Sprintf("n%d", seq)
		}
		if i < events/2 && r.IntN(10) == 0 {
			e.lateness = 1
		}
		all = append(all, e)
	}
	var first, second [][]any
	for i, e := range all {
		row := ch(e.op, e.id, e.name, e.seq)
		if i < events/2 && e.lateness == 0 {
			first = append(first, row)
		} else {
			second = append(second, row)
		}
	}
	// The expected versions: per key, its events in sequence order.
	byKey := map[int64][]ev{}
	for _, e := range all {
		byKey[e.id] = append(byKey[e.id], e)
	}
	var want []string
	for id, es := range byKey {
		slices.SortFunc(es, func(a, b ev) int { return int(a.seq - b.seq) })
		for i, e := range es {
			if e.op == "D" {
				continue
			}
			end := "<nil>"
			if i+1 < len(es) {
				end = fmt.Sprint(es[i+1].seq)
			}
			want = append(want, fmt.Sprintf("%d %s %d %s", id, e.name, e.seq, end))
		}
	}
	slices.Sort(want)

	p := loadPipeline(t, t.TempDir(), strings.Replace(scd2Spec, "except_column_list: [op, seq]", "except_column_list: [op]", 1))
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
	var versions []int64
	for _, batch := range [][][]any{first, second} {
		appendEvents(t, p, batch)
		m, err := ApplyChanges(context.Background(), env, p.Dataset("items"))
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, m.Version)
	}
	_, rows := readTable(t, p, "items")
	var got []string
	for _, r := range rows { // id, name, seq, __START_AT, __END_AT
		if r[2] != r[3] {
			t.Fatalf("row %v: seq and __START_AT differ", r)
		}
		got = append(got, fmt.Sprintf("%v %v %v %v", r[0], r[1], r[3], r[4]))
	}
	slices.Sort(got)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: %s, want %s", i, got[i], want[i])
		}
	}
	// The first batch's change data: one insert per version it made.
	_, cdf, err := delta.New(TableDir(p.Storage, "items")).Changes(versions[0], versions[0])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range cdf {
		if r[5] != "insert" {
			t.Fatalf("first batch: change %v, want inserts only", r)
		}
		k := fmt.Sprintf("%v %v", r[0], r[3])
		if seen[k] {
			t.Fatalf("first batch: version %s twice in the change data", k)
		}
		seen[k] = true
	}
	var upserts int
	for _, r := range first {
		if r[0] == "U" {
			upserts++
		}
	}
	if len(cdf) != upserts {
		t.Fatalf("first batch: %d changes, want one insert per upsert, %d", len(cdf), upserts)
	}
}

// TestSCD2KeyRowsStayInOneFile: a batch whose versions fill more than one data file (over
// targetFileRows, or two files of parallelFileRows written at once) cuts its files between keys,
// so that each key's versions are in the one file the state names, and a later change to a key
// rewrites all of them: the keys on each side of a cut still have exactly their versions after
// they change again.
func TestSCD2KeyRowsStayInOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("applies a batch of a million events")
	}
	t.Parallel()
	p := loadPipeline(t, t.TempDir(), scd2Spec)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
	// Key 0 has three versions, every other key two, so that cuts made every so many rows
	// regardless of keys would split keys.
	keys := int64(targetFileRows/2 + 1)
	var evs [][]any
	seq := int64(0)
	for k := range keys {
		seq++
		evs = append(evs, ch("I", k, "a", seq))
	}
	for k := range keys {
		seq++
		evs = append(evs, ch("U", k, "b", seq))
	}
	seq++
	evs = append(evs, ch("U", 0, "c", seq))
	appendEvents(t, p, evs)
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
		t.Fatal(err)
	}
	// Each key's rows are in one file; the keys on each side of the cuts change next.
	tb := delta.New(TableDir(p.Storage, "items"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) < 2 {
		t.Fatalf("%d data files, want at least 2", len(snap.Files))
	}
	fileOf := map[int64]string{}
	var edges []int64
	for _, f := range snap.Files {
		rows, err := tb.ReadFile(f.Path, snap.Metadata.Schema)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := int64(keys), int64(-1)
		for _, r := range rows {
			k := r[0].(int64)
			if other, ok := fileOf[k]; ok && other != f.Path {
				t.Fatalf("key %d has rows in %s and %s", k, other, f.Path)
			}
			fileOf[k] = f.Path
			lo, hi = min(lo, k), max(hi, k)
		}
		edges = append(edges, lo, hi)
	}
	var change [][]any
	for _, k := range edges {
		if k != 0 && k != keys-1 { // the ends of the key range are no cut
			seq++
			change = append(change, ch("U", k, "d", seq))
		}
	}
	if len(change) == 0 {
		t.Fatalf("no key at a cut between %d files", len(snap.Files))
	}
	appendEvents(t, p, change)
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
		t.Fatal(err)
	}
	_, rows := readTable(t, p, "items")
	got := map[int64][]string{}
	for _, r := range rows {
		got[r[0].(int64)] = append(got[r[0].(int64)], fmt.Sprint(r[1:]))
	}
	for _, c := range change {
		k, dSeq := c[1].(int64), c[3].(int64)
		vs := got[k]
		slices.Sort(vs)
		want := []string{
			fmt.Sprintf("[a %d %d]", k+1, k+1+keys),
			fmt.Sprintf("[b %d %d]", k+1+keys, dSeq),
			fmt.Sprintf("[d %d <nil>]", dSeq),
		}
		if strings.Join(vs, "|") != strings.Join(want, "|") {
			t.Errorf("key %d: versions %q, want %q", k, vs, want)
		}
	}
	if want := 2*int(keys) + 1 + len(change); len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
}
