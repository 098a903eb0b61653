package flows

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/spec"
)

// firstHistBatch applies rows as the first batch of the SCD type 2 target items of a new pipeline
// of spec, folded in columns or not, and returns the pipeline and the state its commit names.
func firstHistBatch(t *testing.T, spec string, rows [][]any, columns bool) (*spec.Pipeline, *histState, []segment) {
	t.Helper()
	histColumnsOff.Store(!columns)
	defer histColumnsOff.Store(false)
	p := loadPipeline(t, t.TempDir(), spec)
	appendEvents(t, p, rows)
	env := &Env{Pipeline: p, Events: &recorder{}, Now: func() time.Time { return time.UnixMilli(1_750_000_000_000) }}
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
		t.Fatal(err)
	}
	st, err := loadItemsState(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, st, st.segments
}

// loadItemsState reads the CDC state of the target items of p from its files (not the cache).
func loadItemsState(p *spec.Pipeline) (*histState, error) {
	d := p.Dataset("items")
	tb := delta.New(TableDir(p.Storage, "items"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		return nil, err
	}
	id, _, _, err := lastApply(tb, snap)
	if err != nil {
		return nil, err
	}
	dir := StateDir(p.Storage, "items")
	histCache.Delete(dir)
	src := p.Dataset(d.ApplyChanges.Source).Schema
	keySch, _, _ := src.Select(d.ApplyChanges.Keys)
	seqSch, _, _ := src.Select(d.ApplyChanges.SequenceBy)
	return loadHistState(dir, tb, snap, id, keySch, seqSch, dataSchema(d), 0, -1)
}

// sameHistories fails unless states a and b hold the same keys with the same events (as
// encodeHistEvents encodes them), last kind, tombstone time and whether they have a data file.
func sameHistories(t *testing.T, what string, a, b *histState) {
	t.Helper()
	if len(a.keys) != len(b.keys) {
		t.Fatalf("%s: %d keys against %d", what, len(a.keys), len(b.keys))
	}
	for k, ha := range a.keys {
		hb := b.keys[k]
		if hb == nil {
			t.Fatalf("%s: key %x missing", what, k)
		}
		ea, eb := encodeHistEvents(nil, a.eventsOf(ha)), encodeHistEvents(nil, b.eventsOf(hb))
		if !bytes.Equal(ea, eb) || ha.nEvents != hb.nEvents || ha.lastDelete != hb.lastDelete || ha.deletedAt != hb.deletedAt || (ha.file == "") != (hb.file == "") {
			t.Fatalf("%s: key %x differs: %d events (last delete %v at %d, file %q) against %d (%v at %d, file %q)",
				what, k, ha.nEvents, ha.lastDelete, ha.deletedAt, ha.file, hb.nEvents, hb.lastDelete, hb.deletedAt, hb.file)
		}
	}
}

// TestHistColumnsSegment: the state of an SCD type 2 first batch folded in columns is saved as a
// history-columns segment, which reads back as the same histories (events, one per sequence,
// ties resolved; last kind; tombstone time) as the keyed segment the general fold saves, for a
// batch gathered in several parts (each with an arena of its own) and with every kind of column;
// its fresh keys then write the same keyed segment as any other (a compaction).
func TestHistColumnsSegment(t *testing.T) {
	spec := fmt.Sprintf(histColumnsSpec, "")
	r := rand.New(rand.NewPCG(3, 4))
	rows := randomHistEvents(r, 60_000, 4_000, 9_000, 1)
	_, general, gsegs := firstHistBatch(t, spec, rows, false)
	p, cols, csegs := firstHistBatch(t, spec, rows, true)
	if len(gsegs) != 1 || gsegs[0].Format != segmentFormatHistory || len(csegs) != 1 || csegs[0].Format != segmentFormatHistoryColumns {
		t.Fatalf("segments %+v by the general fold, %+v in columns; want one %s and one %s", gsegs, csegs, segmentFormatHistory, segmentFormatHistoryColumns)
	}
	fresh := 0
	for _, hk := range cols.keys {
		if hk.fresh != nil {
			fresh++
		}
	}
	if fresh != len(cols.keys) {
		t.Fatalf("%d of %d keys read back in columns, want all", fresh, len(cols.keys))
	}
	sameHistories(t, "history-columns segment", general, cols)

	// On a big-endian machine the arrays are converted one by one: the same bytes are written,
	// and read back to the same histories.
	unread, err := loadItemsState(p) // every key still in the columns (sameHistories encoded them)
	if err != nil {
		t.Fatal(err)
	}
	var hks0 []*histKey
	for _, k := range slices.Sorted(maps.Keys(unread.keys)) {
		hks0 = append(hks0, unread.keys[k])
	}
	slices.SortFunc(hks0, func(a, b *histKey) int { return cmp.Compare(a.fresh.keys[a.from], b.fresh.keys[b.from]) })
	var written [2][]byte
	for i, le := range []bool{true, false} {
		littleEndian = le
		dir := t.TempDir()
		seg, err := unread.writeColumnsSegment(dir, hks0)
		if err == nil {
			written[i], err = os.ReadFile(filepath.Join(dir, seg.Name))
		}
		if err == nil {
			back := &histState{keySch: unread.keySch, seqSch: unread.seqSch, dataSch: unread.dataSch, keys: map[string]*histKey{}}
			if err = back.decodeColumnsSegment(written[i]); err == nil {
				sameHistories(t, fmt.Sprintf("written and read with littleEndian %v", le), general, back)
			}
		}
		littleEndian = true
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(written[0], written[1]) {
		t.Fatalf("the segment written as on a big-endian machine differs (%d bytes against %d)", len(written[1]), len(written[0]))
	}

	// Written again as a keyed segment (every key, as a compaction writes them) and read back.
	cols, err = loadItemsState(p)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var hks []*histKey
	var n int64
	for k, hk := range cols.keys {
		keys, hks, n = append(keys, k), append(hks, hk), n+int64(hk.nEvents)
	}
	dir := t.TempDir()
	seg, err := cols.writeSegment(dir, keys, hks, n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, seg.Name))
	if err != nil {
		t.Fatal(err)
	}
	again := &histState{keySch: cols.keySch, seqSch: cols.seqSch, dataSch: cols.dataSch, keys: map[string]*histKey{}}
	if err := again.decodeSegment(b); err != nil {
		t.Fatal(err)
	}
	sameHistories(t, "keyed segment of the fresh keys", general, again)
}

// TestHistColumnsSegmentDamaged: a history-columns segment that does not hold what its writer
// wrote is an error naming the state as damaged, never a state read from it: a byte changed (the
// checksum), a byte missing, and, with the checksum made to match, a delete flag that is neither
// 0 nor 1, a key's sequences out of order, a string beyond the arena, a key twice, and the
// key's column not the state's.
func TestHistColumnsSegmentDamaged(t *testing.T) {
	spec := strings.Replace(fmt.Sprintf(histColumnsSpec, ""),
		"op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), score DOUBLE, n INT, ok BOOLEAN, day DATE, at TIMESTAMP, seq BIGINT",
		"op STRING, id BIGINT, name STRING, seq BIGINT", 1)
	var rows [][]any
	for i := range 50 {
		rows = append(rows, []any{"U", int64(i % 5), fmt.Sprintf("name-%d", i), int64(i)})
	}
	p, _, segs := firstHistBatch(t, spec, rows, true)
	if len(segs) != 1 || segs[0].Format != segmentFormatHistoryColumns {
		t.Fatalf("segments %+v, want one %s", segs, segmentFormatHistoryColumns)
	}
	path := filepath.Join(StateDir(p.Storage, "items"), "segments", segs[0].Name)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// From the end: the checksum, the arena, the delete flags, the NULL bits (3 data columns:
	// a byte each), the names' lengths and offsets, the sequences.
	const n = 50
	arena := 0
	for _, r := range rows {
		arena += len(r[2].(string))
	}
	dels := len(orig) - 4 - arena - n
	offs := dels - n - 4*n - 8*n
	seqs := offs - 8*n
	// The first key's (id 0) events are rows 0, 5, 10, ...: in the columns in sequence order.
	if got := int64(binary.LittleEndian.Uint64(orig[seqs:])); got != 0 {
		t.Fatalf("the layout is not the one expected: first sequence %d", got)
	}
	resum := func(b []byte) []byte {
		return binary.LittleEndian.AppendUint32(b[:len(b)-4], crc32.Checksum(b[:len(b)-4], castagnoli))
	}
	// The header's key column (after the column count and kinds) and the first key record.
	sr, _, _, err := openSegment(orig, historyColumnsMagic)
	if err != nil {
		t.Fatal(err)
	}
	for range sr.uvarint() { // the column count, then a kind each
		sr.uvarint()
	}
	keyColAt := len(orig) - 4 - int(sr.left())
	sr.uvarint()             // keyCol
	sr.uvarint()             // seqCol
	sr.uvarint()             // events
	sr.uvarint()             // arena
	if orig[keyColAt] != 1 { // id is data column 0
		t.Fatalf("the layout is not the one expected: key column byte %d", orig[keyColAt])
	}
	firstKeyAt := len(orig) - 4 - int(sr.left())
	if orig[firstKeyAt] != 0 || orig[firstKeyAt+5] != 2 { // keys 0 and 1, zigzag, each record 5 bytes
		t.Fatalf("the layout is not the one expected: first keys %d and %d", orig[firstKeyAt], orig[firstKeyAt+5])
	}
	for _, c := range []struct {
		what string
		edit func(b []byte) []byte
	}{
		{"a byte changed", func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"a byte missing", func(b []byte) []byte { return resum(append(b[:dels], b[dels+1:]...)) }},
		{"a delete flag of 2", func(b []byte) []byte { b[dels+3] = 2; return resum(b) }},
		{"sequences out of order", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[seqs+8:], 0) // the key's second event at its first's sequence
			return resum(b)
		}},
		{"a string beyond the arena", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[offs+8*7:], uint64(arena-3))
			return resum(b)
		}},
		{"a key twice", func(b []byte) []byte { b[firstKeyAt+5] = 0; return resum(b) }},
		{"the key in another column", func(b []byte) []byte { b[keyColAt] = 2; return resum(b) }},
	} {
		if err := os.WriteFile(path, c.edit(bytes.Clone(orig)), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := loadItemsState(p)
		if !errors.Is(err, errSegmentCorrupt) {
			t.Fatalf("%s: got state %v, error %v; want %v", c.what, st != nil, err, errSegmentCorrupt)
		}
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadItemsState(p); err != nil {
		t.Fatalf("the segment as written: %v", err)
	}
}
