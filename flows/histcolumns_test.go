package flows

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// histColumnsSpec is an SCD type 2 target of typedFoldFor's shape (one BIGINT key, one BIGINT
// sequence, primitive columns of every kind the columns hold), %s its history setting.
const histColumnsSpec = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), score DOUBLE, n INT, ok BOOLEAN, day DATE, at TIMESTAMP, seq BIGINT"
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
      stored_as_scd_type: 2
%s`

// longName is a value that makes an event's encoded row longer than 127 bytes, so that its length
// takes two bytes (histBatch.appendHistory moves such a row up).
var longName = strings.Repeat("a long name ", 12)

// randomHistEvents makes n change events over keys keys (spread apart: key i is i*spread) with
// sequences from 0 to seqs: repeated sequences of a key (ties, and identical duplicates),
// deletes, NULLs in every data column, doubles that are equal but differ in bits (0 and -0), and
// values that repeat, so that versions open, close, and stay open across untracked changes.
func randomHistEvents(r *rand.Rand, n, keys, seqs int, spread int64) [][]any {
	pick := func(vals ...any) any {
		if r.IntN(10) == 0 {
			return nil
		}
		return vals[r.IntN(len(vals))]
	}
	values := func() []any {
		// Strings of 16 and 17 bytes: the longest a histColumns record holds inline, and the
		// shortest it puts in its arena.
		return []any{pick("a", "b", "", "ccc-long-name", "sixteen-bytes-16", "seventeen-bytes17", longName),
			pick(schema.Decimal(100), schema.Decimal(-250)), pick(0.0, math.Copysign(0, -1), 1.5),
			pick(int32(7), int32(-7)), pick(true, false), pick(schema.Date(19000), schema.Date(-3)),
			pick(schema.Timestamp(1_700_000_000_000_000), schema.Timestamp(0))}
	}
	last := map[int64][]any{} // each key's last values
	var out [][]any
	for range n {
		op := "U"
		if r.IntN(6) == 0 {
			op = "D"
		}
		id := (int64(r.IntN(keys)) - int64(keys/3)) * spread
		vals, ok := last[id]
		if !ok || r.IntN(3) == 0 {
			vals = values()
		} else {
			// The key's last values but one column (or none): versions that differ in a single
			// column, of each kind.
			vals = slices.Clone(vals)
			if c := r.IntN(len(vals) + 1); c < len(vals) {
				vals[c] = values()[c]
			}
		}
		last[id] = vals
		row := append(append([]any{op, id}, vals...), int64(r.IntN(seqs)))
		out = append(out, row)
		if r.IntN(8) == 0 { // an identical duplicate: no tie
			out = append(out, slices.Clone(row))
		}
	}
	return out
}

// histOutcome is what a batch did to the target, as comparable text: the table's rows and the
// whole change data feed (sorted), the metrics and the WARNs, and, where a test compares it, the
// CDC state.
type histOutcome struct {
	rows, changes, metrics, warns string
	state                         string
}

// runHistBatches applies each batch to a new pipeline with the columnar first batch on or off,
// and returns the outcome after each batch, and how many batches were folded in columns.
func runHistBatches(t *testing.T, spec string, batches [][][]any, columns bool) ([]histOutcome, int64) {
	t.Helper()
	histColumnsOff.Store(!columns)
	defer histColumnsOff.Store(false)
	before := histColumnFolds.Load()
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
		// A state whose histories are still the batch's columns (histKey.fresh) is not kept in
		// memory: the next batch reads it back from its segments. Any other is kept.
		if _, kept := histCache.Load(StateDir(p.Storage, "items")); kept == (columns && i == 0) {
			t.Fatalf("batch %d (columns %v): the state kept in memory: %v", i+1, columns, kept)
		}
		o, _ := readOutcome(t, p, m, rec)
		out = append(out, o)
	}
	return out, histColumnFolds.Load() - before
}

// readOutcome is what the batch just applied to the target items of p did (m its metrics, rec
// the events of the run so far), without the CDC state, and how many data files the table has.
func readOutcome(t *testing.T, p *spec.Pipeline, m Metrics, rec *recorder) (histOutcome, int) {
	t.Helper()
	tb := delta.New(TableDir(p.Storage, "items"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tb.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	cs, changes, err := tb.Changes(1, -1)
	if err != nil {
		t.Fatal(err)
	}
	return histOutcome{
		rows:    histRowsText(snap.Metadata.Schema, rows, ""),
		changes: histRowsText(cs, changes, "_commit_timestamp"),
		metrics: fmt.Sprintf("upserted %d deleted %d output %d ties %d", m.NumUpsertedRows, m.NumDeletedRows, m.NumOutputRows, m.Ties),
		warns:   dataFileName.ReplaceAllString(rec.all(), "part-*"),
	}, len(snap.Files)
}

// dataFileName matches the name of a data file (its uuid differs between two runs).
var dataFileName = regexp.MustCompile(`part-[0-9]+-[0-9a-f-]+`)

// histRowsText writes rows as JSON values, a line each, sorted, leaving out the column skip.
func histRowsText(s schema.Schema, rows [][]any, skip string) string {
	var lines []string
	for _, r := range rows {
		var b []string
		for i, f := range s.Fields {
			if f.Name != skip {
				b = append(b, string(schema.AppendJSON(nil, f.Type, r[i])))
			}
		}
		lines = append(lines, strings.Join(b, " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestHistColumnsEquivalence: the first batch of an SCD type 2 target folded in columns
// (histColumns) gives exactly what the general fold gives (semantics.md "APPLY CHANGES": SCD type
// 2, ties, late events, deletes): the same table rows, change data feed, metrics and WARNs, and
// a CDC state from which a second and a third batch (late events, new keys, deletes, taken by
// the general fold) give the same again. Random change logs, with every column tracked and with
// only one.
func TestHistColumnsEquivalence(t *testing.T) {
	for _, v := range []struct {
		history, except string
		seqSecond       bool // seq right after id, so that the 9th data column (at) has NULLs
	}{
		{"", "[op]", false}, {"      track_history_column_list: [name]\n", "[op]", false},
		// 8 data columns: an event's NULL bits are gathered into a byte (histBatch.nulls8).
		{"", "[op, score]", false},
		// 9, the last one NULL at times: its bit needs a word.
		{"", "[op]", true},
	} {
		history := fmt.Sprintf("%s%s seq second %v", v.history, v.except, v.seqSecond)
		spec := strings.Replace(fmt.Sprintf(histColumnsSpec, v.history), "except_column_list: [op]", "except_column_list: "+v.except, 1)
		if v.seqSecond {
			spec = strings.Replace(spec, "op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), score DOUBLE, n INT, ok BOOLEAN, day DATE, at TIMESTAMP, seq BIGINT",
				"op STRING, id BIGINT, seq BIGINT, name STRING, amount DECIMAL(10,2), score DOUBLE, n INT, ok BOOLEAN, day DATE, at TIMESTAMP", 1)
		}
		seeds := uint64(8)
		if underRace {
			seeds = 3 // the large batch, keys over 32 bits, and a small batch
		}
		for seed := range seeds {
			r := rand.New(rand.NewPCG(seed, 99))
			keys, seqs := 2+r.IntN(60), 5+r.IntN(100)
			n := 1 + r.IntN(400)
			if seed == 0 {
				n, keys, seqs = 40_000, 3_000, 5_000 // more than one fold goroutine's worth
			}
			// Odd seeds spread the keys over more than 32 bits (histColumns.order sorts them
			// unpacked then).
			spread := int64(1)
			if seed%2 == 1 {
				spread = 1<<40 + 3
			}
			// The third batch starts from the state the second kept in memory.
			batches := [][][]any{randomHistEvents(r, n, keys, seqs, spread), randomHistEvents(r, 1+r.IntN(200), keys+5, seqs, spread),
				randomHistEvents(r, 1+r.IntN(200), keys+7, seqs, spread)}
			if v.seqSecond {
				for _, b := range batches {
					for i, row := range b {
						b[i] = append([]any{row[0], row[1], row[len(row)-1]}, row[2:len(row)-1]...)
					}
				}
			}
			general, off := runHistBatches(t, spec, batches, false)
			cols, on := runHistBatches(t, spec, batches, true)
			if off != 0 || on != 1 {
				t.Fatalf("history %q seed %d: %d batches folded in columns with them off, %d with them on; want 0 and 1", history, seed, off, on)
			}
			for i := range batches {
				g, c := general[i], cols[i]
				for _, d := range []struct{ what, g, c string }{
					{"rows", g.rows, c.rows}, {"change data feed", g.changes, c.changes},
					{"metrics", g.metrics, c.metrics}, {"events", g.warns, c.warns},
				} {
					if d.g != d.c {
						t.Fatalf("history %q seed %d batch %d: %s differ\n general:\n%s\n columns:\n%s", history, seed, i+1, d.what, d.g, d.c)
					}
				}
			}
			if !strings.Contains(general[0].warns, "tie") && seed == 0 {
				t.Fatalf("seed 0 met no tie:\n%s", general[0].warns)
			}
		}
	}
}

// TestAppendWordMatchesAppendValue: the columns encode a value for the CDC state exactly as
// appendValue encodes the boxed value, for every kind they hold.
func TestAppendWordMatchesAppendValue(t *testing.T) {
	for _, c := range []struct {
		kind schema.Kind
		v    any
	}{
		{schema.Long, int64(math.MinInt64)}, {schema.Long, int64(300)}, {schema.Integer, int32(-70000)},
		{schema.DecimalKind, schema.Decimal(-12345)}, {schema.DateKind, schema.Date(-1)},
		{schema.TimestampKind, schema.Timestamp(1 << 50)}, {schema.Double, math.Copysign(0, -1)},
		{schema.Double, math.Inf(1)}, {schema.Boolean, true}, {schema.Boolean, false},
	} {
		got, want := appendWord(nil, c.kind, word(c.kind, c.v)), appendValue(nil, c.v)
		if string(got) != string(want) {
			t.Errorf("%v %v: appendWord %x, appendValue %x", c.kind, c.v, got, want)
		}
	}
}

// histDDL is the schema of ddl (schema.ParseDDL's text), for the histColumns tests; a bad ddl
// fails tb.
func histDDL(tb testing.TB, ddl string) schema.Schema {
	tb.Helper()
	s, err := schema.ParseDDL(ddl)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// histColumnsOf returns the histColumns of a batch keyed by id BIGINT, sequenced by seq BIGINT,
// with the data columns of dataDDL (which holds id and seq), or fails tb when that is not of its
// shape.
func histColumnsOf(tb testing.TB, dataDDL string) *histColumns {
	tb.Helper()
	data := histDDL(tb, dataDDL)
	c := histColumnsFor(histDDL(tb, "id BIGINT"), histDDL(tb, "seq BIGINT"), data, data.Index("id"), data.Index("seq"))
	if c == nil {
		tb.Fatalf("no histColumns for a BIGINT key and sequence and the columns %s", dataDDL)
	}
	return c
}

// TestHistColumnsEncodeHistories sorts and gathers a batch of more than one chunk of events
// (records and keys span chunks, and the sort runs on more than one goroutine where there is
// more than one core) and checks each key's history, as
// histBatch.appendHistory encodes it for the state, byte for byte against encodeHistEvents of
// the same events in sequence order: deletes, keys whose events arrived out of sequence order,
// and rows whose encoding is 126 to 129 bytes and 16,382 to 16,386 bytes long (the lengths at
// which a row's length prefix takes a second and a third byte).
func TestHistColumnsEncodeHistories(t *testing.T) {
	t.Parallel()
	c := histColumnsOf(t, "id BIGINT, name STRING, seq BIGINT")
	// A row is its id and sequence (2 or 3 bytes each) and its name (1 + the name's length
	// prefix + its bytes): names of 115 to 126 and of 16,365 to 16,380 bytes give rows of every
	// length about the two boundaries.
	var lengths []int
	for n := 115; n <= 126; n++ {
		lengths = append(lengths, n)
	}
	var longer []int
	for n := 16365; n <= 16380; n++ {
		longer = append(longer, n)
	}
	const keys, perKey = 40, 1700 // 68,000 events: more than a chunk (1<<chunkBits)
	want := map[int64][]histEvent{}
	evs := make([]event, 0, keys*perKey)
	for i := range keys * perKey {
		id := int64(1 + i%keys)
		seq := int64(i / keys)
		if id%3 == 0 {
			seq = perKey - 1 - seq // this key's events arrive in reverse sequence order
		}
		ev := event{key: []any{id}, seq: []any{seq}, arrival: i, delete: i%7 == 3}
		he := histEvent{seq: []any{seq}, delete: ev.delete}
		if !ev.delete {
			n := lengths[i%len(lengths)]
			if i%29 == 0 {
				n = longer[i/29%len(longer)]
			}
			name := strings.Repeat("n", n)
			ev.row = []any{id, name, seq}
			he.row = ev.row
		}
		evs = append(evs, ev)
		want[id] = append(want[id], he)
	}
	c.addAll(evs)
	ord, sorted := c.order()
	b := c.gather(ord, sorted)
	got := 0
	var red []int32
	for a := 0; a < len(ord); {
		end := a + 1
		for end < len(ord) && b.keys[end] == b.keys[a] {
			end++
		}
		id := b.keys[a]
		hist := slices.Clone(want[id])
		slices.SortStableFunc(hist, func(x, y histEvent) int { return cmp.Compare(x.seq[0].(int64), y.seq[0].(int64)) })
		red = b.reduce(red[:0], int32(a), int32(end), nil)
		if enc, exp := b.appendHistory(nil, red), encodeHistEvents(nil, hist); !bytes.Equal(enc, exp) {
			t.Fatalf("key %d: the history encodes to %d bytes, want %d (encodeHistEvents)", id, len(enc), len(exp))
		}
		got++
		a = end
	}
	if got != keys {
		t.Fatalf("%d keys gathered, want %d", got, keys)
	}
}

// TestHistColumnsEvents: a batch folded into columns gives back, for the general fold
// (histColumns.events, when its target turns out to hold history), every event in arrival order
// with its key, sequence, kind and data columns, each of its type (NULLs, strings inline and in
// the arena): a batch of one chunk with 4 data columns, and one of more than one chunk with 10
// (an event's NULL bits then take a word).
func TestHistColumnsEvents(t *testing.T) {
	const narrow = "id BIGINT, name STRING, amount DECIMAL(10,2), seq BIGINT"
	for _, c := range []struct {
		ddl    string
		events int
	}{{narrow, 3000}, {narrow + ", score DOUBLE, n INT, ok BOOLEAN, day DATE, at TIMESTAMP, note STRING", 70_000}} {
		fields := histDDL(t, c.ddl).Fields
		hc := histColumnsOf(t, c.ddl)
		r := rand.New(rand.NewPCG(7, uint64(len(fields))))
		maybe := func(v any) any {
			if r.IntN(5) == 0 {
				return nil
			}
			return v
		}
		var evs []event
		for i := range c.events {
			id, seq := int64(r.IntN(500))-250, int64(r.IntN(1000))
			ev := event{key: []any{id}, seq: []any{seq}, arrival: i, delete: r.IntN(7) == 0}
			ev.row = []any{id, maybe(strings.Repeat("n", r.IntN(40))), maybe(schema.Decimal(r.IntN(100000) - 50000)), seq}
			if len(fields) > 4 {
				ev.row = append(ev.row, maybe(r.Float64()), maybe(int32(r.IntN(100))), maybe(r.IntN(2) == 0),
					maybe(schema.Date(r.IntN(20000))), maybe(schema.Timestamp(r.Int64N(1<<50))), maybe(strings.Repeat("x", r.IntN(20))))
			}
			evs = append(evs, ev)
		}
		hc.addAll(evs)
		got := hc.events()
		if len(got) != len(evs) {
			t.Fatalf("%d columns: %d events, want %d", len(fields), len(got), len(evs))
		}
		for i, g := range got {
			w := evs[i]
			if g.arrival != i || g.key[0] != w.key[0] || g.seq[0] != w.seq[0] || g.delete != w.delete {
				t.Fatalf("%d columns: event %d is %v %v %v arrival %d, want %v %v %v", len(fields), i, g.key, g.seq, g.delete, g.arrival, w.key, w.seq, w.delete)
			}
			if w.delete {
				continue // a delete keeps no values
			}
			for col := range w.row {
				if !reflect.DeepEqual(g.row[col], w.row[col]) {
					t.Fatalf("%d columns: event %d, column %s is %#v, want %#v", len(fields), i, fields[col].Name, g.row[col], w.row[col])
				}
			}
		}
	}
}
