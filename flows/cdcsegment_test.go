package flows

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

func TestValueEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		vals []any
	}{
		{"empty", nil},
		{"null", []any{nil}},
		{"integers", []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), int32(-7), int32(math.MaxInt32)}},
		{"strings", []any{"", "a", strings.Repeat("é", 300)}},
		{"doubles", []any{0.0, math.Copysign(0, -1), math.Inf(-1), 1.5}},
		{"booleans", []any{true, false}},
		{"logical types", []any{schema.Decimal(-12345), schema.Date(-3), schema.Timestamp(1_700_000_000_000_000)}},
		{"struct", []any{[]any{int64(1), nil, []any{"x"}}, []any{}}},
		{"map", []any{schema.Map{{Key: "a", Value: int64(1)}, {Key: "b", Value: nil}}, schema.Map{}, schema.Map{{Key: int32(3), Value: []any{"x"}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := appendValues(nil, c.vals)
			got, err := decodeValues(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.vals) || (len(got) > 0 && !reflect.DeepEqual(got, c.vals)) {
				t.Fatalf("decoded %#v, want %#v", got, c.vals)
			}
			for cut := 1; cut < len(b); cut++ {
				if got, err := decodeValues(b[:cut]); err == nil && reflect.DeepEqual(got, c.vals) {
					t.Fatalf("a prefix of %d bytes decoded to the whole list", cut)
				}
			}
		})
	}
	// Canonical: equal lists encode equal, different ones differ (a double by its bits).
	distinct := [][]any{{int64(1)}, {int32(1)}, {schema.Decimal(1)}, {schema.Timestamp(1)}, {"1"}, {nil}, {0.0}, {math.Copysign(0, -1)}, {int64(1), nil}, {[]any{int64(1)}}, {schema.Map{{Key: int64(1), Value: nil}}}, {schema.Map{}}, {[]any{}}}
	seen := map[string]int{}
	for i, v := range distinct {
		k := string(appendValues(nil, v))
		if j, ok := seen[k]; ok {
			t.Errorf("%#v and %#v encode the same", distinct[j], v)
		}
		seen[k] = i
	}
}

// writeKeyed1 writes the slots of st as a segment of the keyed-1 layout (segmentFormatKeyed, the
// form before the bucketed one) and returns its bytes.
func writeKeyed1(t *testing.T, st *cdcState) []byte {
	t.Helper()
	local := map[int32]uint64{0: 0}
	var paths []string
	for i := range st.slots {
		if id := st.slots[i].file; local[id] == 0 && id != 0 {
			paths = append(paths, st.files[id])
			local[id] = uint64(len(paths))
		}
	}
	sw, err := createSegment(st.dir, keyedSegmentMagic, ".keyed", paths, len(st.slots))
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for i := range st.slots {
		sl := &st.slots[i]
		kb, sb := st.keyBytes(i), st.seqBytes(i)
		buf = binary.AppendUvarint(buf[:0], uint64(len(kb)))
		buf = append(buf, kb...)
		buf = binary.AppendUvarint(buf, uint64(len(sb)))
		buf = append(buf, sb...)
		del := byte(0)
		if sl.deleted {
			del = 1
		}
		buf = append(buf, del)
		buf = binary.AppendUvarint(buf, zigzag(sl.deletedAt))
		buf = binary.AppendUvarint(buf, local[sl.file])
		sw.write(buf)
	}
	if err := sw.finish(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(st.dir, sw.name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKeyedSegmentDamaged: a keyed-1 segment (the form before the bucketed one, still read) reads
// back; with a flipped byte or cut short it is refused.
func TestKeyedSegmentDamaged(t *testing.T) {
	t.Parallel()
	keySch := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}}}}
	st := newCDCState(t.TempDir(), keySch, keySch, 0)
	for i := range 100 {
		j := st.put(appendValues(nil, []any{int64(i)}), appendValues(nil, []any{int64(i * 2)}), false)
		st.slots[j].file = st.fileID(fmt.Sprintf("part-%d.parquet", i%3))
		st.slots[j].deleted = i%7 == 0
	}
	b := writeKeyed1(t, st)
	back := newCDCState(st.dir, keySch, keySch, 0)
	if err := back.decodeSegment(b); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		e := back.entry(string(appendValues(nil, []any{int64(i)})))
		if e == nil || e.seq[0] != int64(i*2) || e.deleted != (i%7 == 0) || e.file != fmt.Sprintf("part-%d.parquet", i%3) {
			t.Fatalf("key %d read back as %+v", i, e)
		}
	}
	for _, at := range []int{0, len(keyedSegmentMagic) + 3, len(b) / 2, len(b) - 1} {
		bad := append([]byte(nil), b...)
		bad[at] ^= 0x40
		if err := newCDCState(st.dir, keySch, keySch, 0).decodeSegment(bad); !errors.Is(err, errSegmentCorrupt) {
			t.Errorf("byte %d flipped: err = %v, want errSegmentCorrupt", at, err)
		}
	}
	if err := newCDCState(st.dir, keySch, keySch, 0).decodeSegment(b[:len(b)-5]); !errors.Is(err, errSegmentCorrupt) {
		t.Errorf("cut short: err = %v, want errSegmentCorrupt", err)
	}
}

// TestBucketedSegment: a bucketed segment reads back whole and by buckets (only the wanted keys,
// with their row positions and images), and a flipped byte or a cut is refused. 70,000 keys are
// enough for writeSegment to encode the second half of the buckets on another goroutine.
func TestBucketedSegment(t *testing.T) {
	t.Parallel()
	for _, n := range []int{5000, 70_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			testBucketedSegment(t, n)
		})
	}
}

func testBucketedSegment(t *testing.T, n int) {
	keySch := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}}}}
	st := newCDCState(t.TempDir(), keySch, keySch, 0)
	img := func(i int) []byte {
		if i%5 == 0 {
			return nil // no image recorded
		}
		return appendValues(nil, []any{int64(i), fmt.Sprintf("name %d", i), schema.Map{{Key: "k", Value: int32(i)}}})
	}
	for i := range n {
		j := st.put(appendValues(nil, []any{int64(i)}), appendValues(nil, []any{int64(i * 2)}), false)
		st.slots[j].deleted, st.slots[j].deletedAt = i%7 == 0, int64(i)
		st.setRow(j, st.fileID(fmt.Sprintf("part-%d.parquet", i%3)), int64(i/3)-1, img(i))
	}
	all := make([]int, len(st.slots))
	for i := range all {
		all[i] = i
	}
	sg, err := st.writeSegment(st.dir, all)
	if err != nil {
		t.Fatal(err)
	}
	if sg.Format != segmentFormatBucketed || sg.Rows != int64(n) {
		t.Fatalf("segment %+v", sg)
	}
	name := filepath.Join(st.dir, sg.Name)
	check := func(back *cdcState, i int) {
		t.Helper()
		j := back.find(appendValues(nil, []any{int64(i)}))
		if j < 0 {
			t.Fatalf("key %d not read back", i)
		}
		e := back.entryAt(j)
		sl := back.slots[j]
		if e.seq[0] != int64(i*2) || e.deleted != (i%7 == 0) || sl.deletedAt != int64(i) || e.file != fmt.Sprintf("part-%d.parquet", i%3) ||
			int64(sl.pos1)-1 != int64(i/3)-1 || string(back.imgBytes(j)) != string(img(i)) {
			t.Fatalf("key %d read back as %+v, pos1 %d, image %q", i, e, sl.pos1, back.imgBytes(j))
		}
	}
	whole := newCDCState(st.dir, keySch, keySch, 0)
	if err := whole.readBucketed(name, 0); err != nil {
		t.Fatal(err)
	}
	if len(whole.slots) != n {
		t.Fatalf("%d keys read back, want %d", len(whole.slots), n)
	}
	for i := range n {
		check(whole, i)
	}
	wantKeys := []int{0, 1, 17, n / 2, n - 1}
	for _, below := range []int64{0, 1 << 30} { // by buckets, and whole
		part := newCDCState(st.dir, keySch, keySch, 0)
		part.want = map[string]int{}
		for _, i := range wantKeys {
			part.want[string(appendValues(nil, []any{int64(i)}))] = 0
		}
		part.grow(len(wantKeys))
		if err := part.readBucketed(name, below); err != nil {
			t.Fatal(err)
		}
		if len(part.slots) != len(wantKeys) {
			t.Fatalf("read below %d: %d keys, want %d", below, len(part.slots), len(wantKeys))
		}
		for _, i := range wantKeys {
			check(part, i)
		}
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, len(bucketedSegmentMagic) + 3, len(b) / 2, len(b) - 13 - 8, len(b) - 30, len(b) - 1} {
		bad := append([]byte(nil), b...)
		bad[at] ^= 0x40
		if err := os.WriteFile(name, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := newCDCState(st.dir, keySch, keySch, 0).readBucketed(name, 0); !errors.Is(err, errSegmentCorrupt) {
			t.Errorf("byte %d of %d flipped: err = %v, want errSegmentCorrupt", at, len(b), err)
		}
	}
	if err := os.WriteFile(name, b[:len(b)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := newCDCState(st.dir, keySch, keySch, 0).readBucketed(name, 0); !errors.Is(err, errSegmentCorrupt) {
		t.Errorf("cut short: err = %v, want errSegmentCorrupt", err)
	}
}

// TestParquetStateStillRead: a target whose CDC state was written as Parquet segments (the form
// before the keyed one) goes on from that state exactly as a target whose state is keyed.
func TestParquetStateStillRead(t *testing.T) {
	t.Parallel()
	for _, scd := range []int{1, 2} {
		t.Run(fmt.Sprintf("scd%d", scd), func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(benchSpec, "except_column_list: [op]", fmt.Sprintf("except_column_list: [op]\n      stored_as_scd_type: %d", scd), 1)
			keyed, parquet := loadPipeline(t, t.TempDir(), text), loadPipeline(t, t.TempDir(), text)
			r := rand.New(rand.NewPCG(5, 6))
			var seq int64
			for batch := range 4 {
				evs := changeEvents(r, 500, 200, &seq)
				if batch == 3 {
					for i := range evs[:100] { // late events
						evs[i][4] = evs[i][4].(int64) - 900
					}
				}
				for _, p := range []*spec.Pipeline{keyed, parquet} {
					if batch == 2 && p == parquet {
						rewriteStateAsParquet(t, p, scd)
					}
					appendEvents(t, p, evs)
					stateCache.Delete(StateDir(p.Storage, "target"))
					loadedStates.Delete(StateDir(p.Storage, "target"))
					histCache.Delete(StateDir(p.Storage, "target"))
					if _, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target")); err != nil {
						t.Fatalf("batch %d: %v", batch, err)
					}
				}
			}
			_, want := readTable(t, keyed, "target")
			_, got := readTable(t, parquet, "target")
			if a, b := rowSet(want), rowSet(got); a != b {
				t.Fatalf("from a Parquet state:\n%s\nfrom a keyed state:\n%s", b, a)
			}
		})
	}
}

func rowSet(rows [][]any) string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// rewriteStateAsParquet replaces the CDC state that the target's last commit names by the same
// state written as one Parquet segment, as states were written before the keyed form.
func rewriteStateAsParquet(t *testing.T, p *spec.Pipeline, scd int) {
	t.Helper()
	d := p.Dataset("target")
	tb := delta.New(TableDir(p.Storage, "target"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _, err := lastApply(tb, snap)
	if err != nil {
		t.Fatal(err)
	}
	dir := StateDir(p.Storage, "target")
	src := p.Dataset(d.ApplyChanges.Source).Schema
	keySch, _, _ := src.Select(d.ApplyChanges.Keys)
	seqSch, _, _ := src.Select(d.ApplyChanges.SequenceBy)
	var sch schema.Schema
	var rows [][]any
	var renames map[string]string
	decode := func(b []byte) []any {
		v, err := decodeValues(b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if scd == 1 {
		stateCache.Delete(dir)
		st, err := loadState(dir, tb, snap, id, keySch, seqSch, 0, -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		sch, renames = st.segmentSchema(), st.renames
		for i, sl := range st.slots {
			var file any
			if f := st.files[sl.file]; f != "" {
				file = f
			}
			r := append(decode(st.keyBytes(i)), decode(st.seqBytes(i))...)
			rows = append(rows, append(r, sl.deleted, sl.deletedAt, file))
		}
	} else {
		histCache.Delete(dir)
		st, err := loadHistState(dir, tb, snap, id, keySch, seqSch, dataSchema(d), 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		sch, renames = st.segmentSchema(), st.renames
		for k, hk := range st.keys {
			var file any
			if hk.file != "" {
				file = hk.file
			}
			for _, e := range st.eventsOf(hk) {
				r := append(decode([]byte(k)), e.seq...)
				r = append(r, e.delete)
				if e.delete {
					r = append(r, make([]any, len(st.dataSch.Fields))...)
				} else {
					r = append(r, e.row...)
				}
				rows = append(rows, append(r, file, hk.deletedAt))
			}
		}
	}
	sg, err := parquetSegment(sch, rows)(filepath.Join(dir, "segments"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := (&stateLog{dir: dir}).readManifest(tb, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(manifest{Segments: []segment{sg}, Renames: renames, Truncate: old.Truncate})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", id+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPartialStateLoads: batches that each run as a new process would (the state loaded for the
// batch's keys only) give the table that one long-running process gives, also when the state must
// be written whole (compaction after maxSegments segments) or the table was compacted by
// OPTIMIZE under the state.
func TestPartialStateLoads(t *testing.T) {
	t.Parallel()
	fresh, cached := loadPipeline(t, t.TempDir(), benchSpec), loadPipeline(t, t.TempDir(), benchSpec)
	r := rand.New(rand.NewPCG(9, 10))
	var seq int64
	for batch := range 2*maxSegments + 4 {
		evs := changeEvents(r, 40, 300, &seq)
		if batch%5 == 4 {
			for i := range evs[:10] { // late events
				evs[i][4] = evs[i][4].(int64) - 100
			}
		}
		for _, p := range []*spec.Pipeline{fresh, cached} {
			appendEvents(t, p, evs)
			if p == fresh {
				stateCache.Delete(StateDir(p.Storage, "target"))
				loadedStates.Delete(StateDir(p.Storage, "target"))
			}
			if _, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target")); err != nil {
				t.Fatalf("batch %d: %v", batch, err)
			}
			if batch == maxSegments/2 {
				if _, err := delta.New(TableDir(p.Storage, "target")).Optimize(delta.OptimizeOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_, want := readTable(t, cached, "target")
	_, got := readTable(t, fresh, "target")
	if a, b := rowSet(want), rowSet(got); a != b {
		t.Fatalf("batch by batch in new processes:\n%s\nin one process:\n%s", b, a)
	}
	tb := delta.New(TableDir(fresh.Storage, "target"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _, err := lastApply(tb, snap)
	if err != nil {
		t.Fatal(err)
	}
	m, err := (&stateLog{dir: StateDir(fresh.Storage, "target")}).readManifest(tb, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) > maxSegments {
		t.Fatalf("%d state segments, want at most %d", len(m.Segments), maxSegments)
	}
}
