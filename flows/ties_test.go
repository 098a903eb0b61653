package flows

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"tributary/delta"
	"tributary/spec"
)

// tieRecorder keeps the WARN events about ties that flows emit, with their details.
type tieRecorder struct {
	mu      sync.Mutex
	msgs    []string
	details []map[string]any
}

func (r *tieRecorder) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
	if !strings.Contains(message, "tied on key") {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, level+" "+message)
	r.details = append(r.details, details)
}

// take returns the events kept so far and forgets them.
func (r *tieRecorder) take() ([]string, []map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, d := r.msgs, r.details
	r.msgs, r.details = nil, nil
	return m, d
}

// wantTie is what the WARN about a batch's ties must say of its first tie.
type wantTie struct {
	ties     int64
	key, seq string // as the WARN writes them: id=8, seq=4
	file     string // relative to the pipeline's folder
	line     int64
	with     string // the other event's place, or "what the table held"
	rule     string
}

// checkTieWarn checks that msgs is one WARN about ties that says w, and details carry it.
func checkTieWarn(t *testing.T, what string, msgs []string, details []map[string]any, w wantTie) {
	t.Helper()
	if len(msgs) != 1 {
		t.Errorf("%s: %d WARNs about ties, want 1: %q", what, len(msgs), msgs)
		return
	}
	where := w.file + ":" + strconv.FormatInt(w.line, 10)
	text := "WARN " + strconv.FormatInt(w.ties, 10) + " change event(s) tied on key and sequence with a different event; the first: " +
		w.key + " at " + w.seq + " in " + where + ", tied with " + w.with + ": " + w.rule + "."
	if !strings.HasPrefix(msgs[0], text) {
		t.Errorf("%s: WARN\n  %s\nwant it to start with\n  %s", what, msgs[0], text)
	}
	d := details[0]
	for k, v := range map[string]any{"ties": w.ties, "key": w.key, "sequence": w.seq, "file": w.file, "line": w.line, "rule": w.rule} {
		if d[k] != v {
			t.Errorf("%s: details[%q] = %v (%T), want %v", what, k, d[k], d[k], v)
		}
	}
	if w.with != "what the table held" && d["tied_with"] != w.with {
		t.Errorf("%s: details[tied_with] = %v, want %s", what, d["tied_with"], w.with)
	}
}

// tieBatches are the input files of TestTieWarnNamesFirstTie, batch after batch, and what the
// WARN of each batch says of its first tie (the tie whose counted event, the later of its two,
// arrived first). Arrivals count the lines kept (the view's or bronze's valid_op drops op X).
var tieBatches = []struct {
	files map[string]string
	want  wantTie
}{{
	// Batch 1: key 8 ties at 4 between two upserts (arrival 9: b1-b line 2, with b1-a line 9);
	// key 1, the first key of the batch, later ties at 1 between an insert and a delete
	// (arrival 10). Ten keys: the SCD type 2 keys go to four workers, 8 to a later one than 1.
	files: map[string]string{
		"b1-a.json": `{"op": "I", "id": 1, "name": "a", "amount": 1.00, "seq": 1}
{"op": "I", "id": 2, "name": "b", "amount": 1.00, "seq": 1}
{"op": "I", "id": 3, "name": "c", "amount": 1.00, "seq": 1}
{"op": "I", "id": 4, "name": "d", "amount": 1.00, "seq": 1}
{"op": "X", "id": 5, "name": "bad", "seq": 1}
{"op": "I", "id": 5, "name": "e", "amount": 1.00, "seq": 1}
{"op": "I", "id": 6, "name": "f", "amount": 1.00, "seq": 1}
{"op": "I", "id": 7, "name": "g", "amount": 1.00, "seq": 1}
{"op": "I", "id": 8, "name": "h", "amount": 1.00, "seq": 4}
`,
		"b1-b.json": `{"op": "I", "id": 9, "name": "i", "amount": 1.00, "seq": 1}
{"op": "U", "id": 8, "name": "h2", "amount": 1.00, "seq": 4}
{"op": "D", "id": 1, "seq": 1}
{"op": "I", "id": 10, "name": "j", "amount": 1.00, "seq": 1}
`,
	},
	want: wantTie{ties: 2, key: "id=8", seq: "seq=4", file: "landing/b1-b.json", line: 2, with: "landing/b1-a.json:9", rule: "between upserts of this batch the later arrival won"},
}, {
	// Batch 2: key 7 (the first key) ties between two upserts at 5 (arrival 4); key 2's upsert
	// at its stored sequence 1 with another name is a no-op (arrival 2, line 4 after a blank
	// line); key 4's delete at its stored 1 wins (arrival 3); key 3's identical re-delivery is no
	// tie.
	files: map[string]string{
		"b2-a.json": `{"op": "U", "id": 7, "name": "g2", "amount": 2.00, "seq": 5}
{"op": "U", "id": 3, "name": "c", "amount": 1.00, "seq": 1}

{"op": "U", "id": 2, "name": "b-other", "amount": 1.00, "seq": 1}
{"op": "D", "id": 4, "seq": 1}
{"op": "U", "id": 7, "name": "g3", "amount": 2.00, "seq": 5}
`,
	},
	want: wantTie{ties: 3, key: "id=2", seq: "seq=1", file: "landing/b2-a.json", line: 4, with: "what the table held", rule: "an upsert equal in sequence to what the table held already changed nothing"},
}, {
	// Batch 3, two files: key 5's delete at its stored 1 wins (arrival 1, b3-a line 3 after a
	// dropped line); key 6's other upsert at its stored 1 is a no-op (arrival 2); key 9 ties
	// between two upserts at 7 (arrival 4); key 1's upsert at its tombstone's 1 loses (arrival 5).
	files: map[string]string{
		"b3-a.json": `{"op": "U", "id": 9, "name": "i3", "amount": 1.00, "seq": 7}
{"op": "X", "id": 9, "name": "bad", "seq": 7}
{"op": "D", "id": 5, "seq": 1}
{"op": "U", "id": 6, "name": "f-other", "amount": 1.00, "seq": 1}
`,
		"b3-b.json": `{"op": "U", "id": 3, "name": "c3", "amount": 1.00, "seq": 8}
{"op": "U", "id": 9, "name": "i4", "amount": 1.00, "seq": 7}
{"op": "U", "id": 1, "name": "a-again", "amount": 1.00, "seq": 1}
`,
	},
	want: wantTie{ties: 4, key: "id=5", seq: "seq=1", file: "landing/b3-a.json", line: 3, with: "what the table held", rule: "a delete beat an upsert"},
}, {
	// Batch 4: key 10's delete at 8 beats its upsert at 8 (arrival 1); key 2 ties between two
	// upserts at 9 (arrival 3).
	files: map[string]string{
		"b4-a.json": `{"op": "U", "id": 10, "name": "j4", "amount": 1.00, "seq": 8}
{"op": "D", "id": 10, "seq": 8}
{"op": "U", "id": 2, "name": "b5", "amount": 1.00, "seq": 9}
{"op": "U", "id": 2, "name": "b6", "amount": 1.00, "seq": 9}
`,
	},
	want: wantTie{ties: 2, key: "id=10", seq: "seq=8", file: "landing/b4-a.json", line: 2, with: "landing/b4-a.json:1", rule: "a delete beat an upsert"},
}}

// TestTieWarnNamesFirstTie: the WARN about a batch's ties names its first tie (the one whose
// event arrived first), with its key, sequence, file and line, the other event's place and the
// rule that decided it, in the text and the details, for each rule, SCD type 1 and 2, change
// events read through a view over files and through a bronze streaming table, the SCD type 2
// keys folded by several workers. Not parallel: it sets minKeysPerWorker and GOMAXPROCS.
func TestTieWarnNamesFirstTie(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer minKeysPerWorker.Store(minKeysPerWorker.Swap(2))
	for _, c := range []struct{ name, bronze, apply string }{
		{"scd1 view", "view", ""},
		{"scd1 bronze", "streaming_table", ""},
		{"scd2 view", "view", "      stored_as_scd_type: 2\n"},
		{"scd2 bronze", "streaming_table", "      stored_as_scd_type: 2\n"},
		{"scd1 ignore_null_updates view", "view", "      ignore_null_updates: true\n"},
		// A fail expectation on the target: the batch is checked whole, then reduced.
		{"scd1 bronze fail rule", "streaming_table", "    expectations:\n      - {name: has_seq, expect: 'seq != nil', on_violation: fail}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := loadPipeline(t, dir, viewSpec(c.bronze, "", c.apply))
			rec := &tieRecorder{}
			for i, b := range tieBatches {
				for name, text := range b.files {
					if err := os.WriteFile(filepath.Join(dir, "landing", name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				ms := runFlows(t, p, rec)
				if m := ms[len(ms)-1]; m.Ties != b.want.ties {
					t.Errorf("batch %d: %d ties, want %d", i+1, m.Ties, b.want.ties)
				}
				msgs, details := rec.take()
				checkTieWarn(t, "batch "+strconv.Itoa(i+1), msgs, details, b.want)
			}
		})
	}
}

// sourceDataFiles returns the data files that the commits of the source table changes added,
// in commit order, as paths relative to the pipeline's folder.
func sourceDataFiles(t *testing.T, p *spec.Pipeline) []string {
	t.Helper()
	tbl := delta.New(TableDir(p.Storage, "changes"))
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for v := int64(0); v <= snap.Version; v++ {
		c, err := tbl.ReadCommit(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range c.Adds {
			if a.DataChange {
				out = append(out, "storage/tables/changes/"+a.Path)
			}
		}
	}
	return out
}

// checkTieWarnRows is checkTieWarn for events of a table that no ingest flow of the pipeline
// wrote: their place is the source table's data file and the row in it.
func checkTieWarnRows(t *testing.T, what string, msgs []string, details []map[string]any, w wantTie) {
	t.Helper()
	if len(msgs) != 1 {
		t.Errorf("%s: %d WARNs about ties, want 1: %q", what, len(msgs), msgs)
		return
	}
	text := "WARN " + strconv.FormatInt(w.ties, 10) + " change event(s) tied on key and sequence with a different event; the first: " +
		w.key + " at " + w.seq + " in " + w.file + " row " + strconv.FormatInt(w.line, 10) + ", tied with " + w.with + ": " + w.rule + "."
	if !strings.HasPrefix(msgs[0], text) {
		t.Errorf("%s: WARN\n  %s\nwant it to start with\n  %s", what, msgs[0], text)
	}
	for k, v := range map[string]any{"ties": w.ties, "key": w.key, "sequence": w.seq, "file": w.file, "row": w.line, "rule": w.rule} {
		if d := details[0]; d[k] != v {
			t.Errorf("%s: details[%q] = %v (%T), want %v", what, k, d[k], d[k], v)
		}
	}
}

// TestArrivalSpans: the origin of each arrival is the one recorded, row by row, across groups
// and versions, where rows skip, and, once maxArrivalSpans spans are made, only the version past
// a span's first event.
func TestArrivalSpans(t *testing.T) {
	carried := func(os ...origin) [][]any {
		rows := make([][]any, len(os))
		for i := range os {
			rows[i] = []any{"x", &os[i]}
		}
		return rows
	}
	var s arrivalSpans
	s.addRun(0, origin{version: 3, row: 0}, 4)                                        // arrivals 0-3: v3 rows 0-3
	s.addRun(4, origin{version: 3, row: 4}, 2)                                        // 4-5: v3 rows 4-5, the same span
	s.addRows(6, carried(origin{5, 7}, origin{5, 8}, origin{5, 10}, origin{6, 1}), 1) // 6-9
	if len(s.spans) != 4 {
		t.Errorf("%d spans, want 4 (v3 0-5, v5 7-8, v5 10, v6 1): %+v", len(s.spans), s.spans)
	}
	for a, want := range []origin{{3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}, {3, 5}, {5, 7}, {5, 8}, {5, 10}, {6, 1}} {
		if got, exact, ok := s.origin(a); !ok || !exact || got != want {
			t.Errorf("arrival %d: %+v (exact %v, ok %v), want %+v", a, got, exact, ok, want)
		}
	}
	if _, _, ok := s.origin(-1); ok {
		t.Error("arrival -1 has an origin")
	}

	defer func(n int) { maxArrivalSpans = n }(maxArrivalSpans)
	maxArrivalSpans = 2
	var c arrivalSpans
	c.addRows(0, carried(origin{0, 1}, origin{0, 3}, origin{0, 5}, origin{1, 2}, origin{1, 3}), 1)
	for a, want := range []struct {
		at    origin
		exact bool
	}{{origin{0, 1}, true}, {origin{0, 3}, true}, {origin{0, 3}, false}, {origin{1, 2}, true}, {origin{1, 3}, true}} {
		if got, exact, ok := c.origin(a); !ok || exact != want.exact || (exact && got != want.at) || got.version != want.at.version {
			t.Errorf("capped, arrival %d: %+v (exact %v), want %+v (exact %v)", a, got, exact, want.at, want.exact)
		}
	}
}
