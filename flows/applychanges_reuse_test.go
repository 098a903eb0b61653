package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"tributary/delta"
)

const reuseSpec = `name: reuse
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
  - name: target
    expectations:
      - {name: not_bad, expect: 'name != "bad"', on_violation: drop}
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      apply_as_truncates: op == "T"
      except_column_list: [op]
%s`

// reuseEvent is one change event of TestApplyChangesAcrossRowGroups.
type reuseEvent struct {
	op, name string
	id, seq  int64
	arrival  int
}

// TestApplyChangesAcrossRowGroups: an SCD type 1 batch reads its events a source row group at a
// time and reuses the arrays of a group (rows, origins, events) once its events are folded, and
// folds a BIGINT key and a BIGINT sequence through the int64 fast path. Batches of several source
// files each (so several groups a batch), with deletes, truncates, late events, ties inside a
// batch (a delete beats an upsert, else the later arrival wins) and events a drop expectation
// removes, leave after every batch the target that applying every event in sequence order gives
// (semantics.md), and count each tie above the truncate with the key's winner so far once (as
// the fold always has: a tie below a higher sequence seen before it is not counted); copy-on-write
// and merge-on-read,
// with the state read again by a new process every other batch.
func TestApplyChangesAcrossRowGroups(t *testing.T) {
	t.Parallel()
	for _, mor := range []bool{false, true} {
		extra := ""
		if mor {
			extra = "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
		}
		p := loadPipeline(t, t.TempDir(), fmt.Sprintf(reuseSpec, extra))
		env := &Env{Pipeline: p, Events: nopEvents{}}
		r := rand.New(rand.NewPCG(3, uint64(len(extra))))
		seqs := r.Perm(100_000) // distinct sequences in random order: many events arrive late
		next, arrival := 0, 0
		var log []reuseEvent // every event delivered so far, but those dropped
		trunc := int64(-1)   // the highest truncate so far
		for batch := range 6 {
			var tieSeqs []int64
			top := map[int64]int64{} // each key's highest sequence in the batch so far
			for file := range 4 {
				var rows [][]any
				for range 100 + 60*file {
					e := reuseEvent{op: "U", id: int64(r.IntN(80)), seq: int64(seqs[next]), name: fmt.Sprintf("n%d", next)}
					next++
					switch x := r.IntN(40); {
					case x < 5:
						e.op = "D"
					case x < 7:
						e.name = "bad"
					case x == 7 && batch%2 == 1 && file >= 2:
						e.op = "T"
					}
					evs := []reuseEvent{e}
					// A tie: the same key and sequence again, later in the batch, with other content.
					if e.op == "U" && e.name != "bad" && r.IntN(10) == 0 {
						d := e
						d.name += "-tie"
						if r.IntN(3) == 0 {
							d.op = "D"
						}
						evs = append(evs, d)
					}
					for _, e := range evs {
						e.arrival = arrival
						arrival++
						var id any = e.id
						if e.op == "T" {
							id = nil // a truncate needs no key
							trunc = max(trunc, e.seq)
						}
						rows = append(rows, []any{e.op, id, e.name, e.seq})
						if e.name == "bad" {
							continue
						}
						if log = append(log, e); e.op == "T" {
							continue
						}
						// A tie is counted when it ties with the key's winner so far in the batch.
						if s, ok := top[e.id]; ok && s == e.seq {
							tieSeqs = append(tieSeqs, e.seq)
						}
						if s, ok := top[e.id]; !ok || e.seq > s {
							top[e.id] = e.seq
						}
					}
				}
				appendEvents(t, p, rows)
			}
			fresh := batch%2 == 1
			if fresh { // as a new process would: read the CDC state from its segments
				stateCache.Delete(StateDir(p.Storage, "target"))
				loadedStates.Delete(StateDir(p.Storage, "target"))
			}
			m, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
			if err != nil {
				t.Fatalf("merge-on-read %v, batch %d: %v", mor, batch, err)
			}
			wantTies := int64(0)
			for _, s := range tieSeqs {
				if s > trunc {
					wantTies++
				}
			}
			if m.Ties != wantTies {
				t.Errorf("merge-on-read %v, batch %d: %d ties, want %d", mor, batch, m.Ties, wantTies)
			}
			_, rows := readTable(t, p, "target")
			var got []string
			for _, row := range rows {
				got = append(got, fmt.Sprintf("%v|%v|%v", row...))
			}
			sort.Strings(got)
			if want := reuseReference(log); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("merge-on-read %v, batch %d: %d rows, want %d:\n%s", mor, batch, len(got), len(want), firstDiffs(got, want))
			}
		}
	}
}

// reuseReference applies log in sequence order (at one sequence: upserts in arrival order, then
// deletes, then a truncate, which removes every row): the target's rows as id|name|seq, sorted.
func reuseReference(log []reuseEvent) []string {
	rank := func(e reuseEvent) int {
		switch e.op {
		case "D":
			return 1
		case "T":
			return 2
		}
		return 0
	}
	sorted := append([]reuseEvent(nil), log...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.seq != b.seq {
			return a.seq < b.seq
		}
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return a.arrival < b.arrival
	})
	rows := map[int64]reuseEvent{}
	for _, e := range sorted {
		switch e.op {
		case "T":
			clear(rows)
		case "D":
			delete(rows, e.id)
		default:
			rows[e.id] = e
		}
	}
	var out []string
	for _, e := range rows {
		out = append(out, fmt.Sprintf("%d|%s|%d", e.id, e.name, e.seq))
	}
	sort.Strings(out)
	return out
}

// TestApplyChangesNullKeyAcrossRowGroups: a batch whose NULL key and NULL sequence come in later
// source row groups than its first events (their arrays reused group after group) still fails
// with the documented error: how many events, which column, the first offending input file and
// line; and nothing of the batch is applied.
func TestApplyChangesNullKeyAcrossRowGroups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: nulls
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
      max_files_per_trigger: 1
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
`)
	landing := filepath.Join(dir, "landing")
	var a strings.Builder
	for i := range 300 {
		fmt.Fprintf(&a, `{"op": "U", "id": %d, "name": "a%d", "seq": %d}`+"\n", i%40, i, i)
	}
	write(t, filepath.Join(landing, "a.json"), []byte(a.String()))
	write(t, filepath.Join(landing, "b.json"), []byte(`{"op": "U", "id": 1, "name": "b1", "seq": 1000}
{"op": "U", "id": 2, "name": "b2", "seq": 1001}
{"op": "U", "id": 3, "name": "b3"}
{"op": "D", "id": 4, "seq": 1003}
`))
	write(t, filepath.Join(landing, "c.json"), []byte(`{"op": "U", "id": 5, "name": "c1", "seq": 2000}
{"op": "U", "name": "c2", "seq": 2001}
{"op": "U", "id": 6, "name": "c3", "seq": 2002}
{"op": "D", "seq": 2003}
{"op": "U", "id": 7, "seq": null}
`))
	env := &Env{Pipeline: p, Events: nopEvents{}}
	m, err := Ingest(context.Background(), env, p.Dataset("changes"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 3 || m.Version != 3 {
		t.Fatalf("ingest: %d files up to version %d, want 3 files in versions 1 to 3", m.Files, m.Version)
	}
	_, err = ApplyChanges(context.Background(), env, p.Dataset("target"))
	if err == nil {
		t.Fatal("a batch with NULL keys and sequences was applied")
	}
	for _, want := range []string{
		"2 change event(s) have a NULL in the key column id (first at landing/c.json:2)", // relative to the pipeline
		"2 change event(s) have a NULL in the sequence_by column seq (first at landing/b.json:3)",
		"nothing of this batch was applied",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not say %q", err, want)
		}
	}
	if snap, rows := readTable(t, p, "target"); len(rows) != 0 || snap.Version != 0 {
		t.Errorf("target at version %d with %d rows, want nothing applied", snap.Version, len(rows))
	}
}

// TestApplyChangesNullKeyFromMalformedLine: when the first change event with a NULL key is a line
// that does not parse (a row of NULLs under mode: permissive), the error says so: through a view
// with the parse error and the mode that drops such lines, through a bronze table with what such
// a row is and where its WARN event is. The place is explained once, not once per column.
func TestApplyChangesNullKeyFromMalformedLine(t *testing.T) {
	t.Parallel()
	for _, view := range []bool{true, false} {
		dir := t.TempDir()
		kind := ""
		if view {
			kind = "\n    type: view"
		}
		p := loadPipeline(t, dir, `name: malformed
storage: ./storage
datasets:
  - name: changes`+kind+`
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      except_column_list: [op]
  - name: target2
    apply_changes: {source: changes, keys: [id], sequence_by: seq, except_column_list: [op]}
`)
		landing := filepath.Join(dir, "landing")
		write(t, filepath.Join(landing, "a.json"), []byte(`{"op": "U", "id": 1, "name": "a", "seq": 1}
{"op": "U", "id": 2, "name": "b", "se
{"op": "U", "id": 3, "name": "c", "seq": 3}
`))
		env := &Env{Pipeline: p, Events: nopEvents{}}
		if !view {
			if _, err := Ingest(context.Background(), env, p.Dataset("changes")); err != nil {
				t.Fatal(err)
			}
		}
		_, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
		if err == nil {
			t.Fatalf("view %v: a batch with a NULL key was applied", view)
		}
		place := "landing/a.json:2" // relative to the pipeline's folder
		wants := []string{
			"1 change event(s) have a NULL in the key column id (first at " + place + ", a row with every column NULL: a line of the input that does not parse becomes one, and a WARN event of changes names it)",
			"1 change event(s) have a NULL in the sequence_by column seq (first at " + place + ")",
			// every reader of changes: a full refresh of changes re-creates it for all of them
			"--full-refresh changes,target,target2",
		}
		if view {
			wants = []string{
				"1 change event(s) have a NULL in the key column id (first at " + place + ", a line that does not parse, read as a row of NULLs: the line is not valid JSON",
				"1 change event(s) have a NULL in the sequence_by column seq (first at " + place + ")",
				"mode: dropmalformed on changes drops the lines that do not parse",
			}
		}
		for _, want := range wants {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("view %v: error %q\ndoes not say %q", view, err, want)
			}
		}
	}
}

// TestApplyChangesNaNSequence: a DOUBLE sequence_by of NaN is above every other value (Spark's
// order), so the NaN event wins whether it arrives in the batch before the 2.5 event, after it,
// or with it, in SCD type 1 and 2 (NaN once compared equal to everything: the result followed
// the arrival order).
func TestApplyChangesNaNSequence(t *testing.T) {
	t.Parallel()
	nanLine, numLine := `{"id": 1, "v": "nan", "seq": "NaN"}`+"\n", `{"id": 1, "v": "b", "seq": 2.5}`+"\n"
	for _, scd := range []int{1, 2} {
		for name, files := range map[string][]string{
			"NaN first": {nanLine, numLine}, "NaN last": {numLine, nanLine}, "one batch": {nanLine + numLine},
		} {
			dir := t.TempDir()
			p := loadPipeline(t, dir, fmt.Sprintf(`name: nan
storage: ./storage
datasets:
  - name: changes
    type: view
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, v STRING, seq DOUBLE"
      max_files_per_trigger: 1
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      stored_as_scd_type: %d
`, scd))
			env := &Env{Pipeline: p, Events: nopEvents{}}
			for i, f := range files {
				write(t, filepath.Join(dir, "landing", fmt.Sprintf("%d.json", i)), []byte(f))
				if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
					t.Fatal(err)
				}
			}
			_, rows := readTable(t, p, "target")
			var open []string
			for _, r := range rows {
				if scd == 1 || r[len(r)-1] == nil { // SCD type 2: the open version
					open = append(open, fmt.Sprint(r[1]))
				}
			}
			if len(open) != 1 || open[0] != "nan" {
				t.Errorf("SCD type %d, %s: current rows %v (all %v), want the NaN event's v=nan", scd, name, open, rows)
			}
		}
	}
}

// TestApplyChangesDeleteExpressionErrors: an apply_as_deletes expression that cannot be evaluated
// on an event's values (a conversion of text that is no number) takes
// the event as an upsert, as before, and says so in a WARN naming the expression, how many
// events and the first one's file and line (it was once silent). A NULL input makes the
// expression false, with no WARN.
func TestApplyChangesDeleteExpressionErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: delexpr
storage: ./storage
datasets:
  - name: changes
    type: view
    source:
      path: ./landing
      format: json
      schema: "flag STRING, id BIGINT, seq BIGINT"
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: int(flag) == 1
`)
	landing := filepath.Join(dir, "landing")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"flag": "0", "id": 1, "seq": 1}
{"flag": null, "id": 2, "seq": 2}
{"flag": "abc", "id": 3, "seq": 3}
{"flag": "x", "id": 4, "seq": 4}
{"flag": "1", "id": 1, "seq": 5}
`))
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec}
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	want := "WARN apply_as_deletes `int(flag) == 1` could not be evaluated on 2 change event(s) (first at landing/a.json:3: "
	if !strings.Contains(rec.all(), want) || !strings.Contains(rec.all(), "they were taken as upserts") {
		t.Errorf("events:\n%s\nwant %q", rec.all(), want)
	}
	_, rows := readTable(t, p, "target")
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r[1].(int64))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{2, 3, 4}) {
		t.Errorf("target ids %v, want [2 3 4] (1 deleted; the NULL flag and the two that could not be evaluated upserts)", ids)
	}
}

// TestApplyChangesEmptyVersions: source versions that add no rows leave the target IDLE with no
// commit, until they are recordEmptyVersions: then a batch records the progress over them, so
// that every update does not read them again.
func TestApplyChangesEmptyVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: empty
storage: ./storage
datasets:
  - name: changes
    source: {path: ./landing, format: json, schema: "id BIGINT, seq BIGINT"}
  - name: target
    apply_changes: {source: changes, keys: [id], sequence_by: seq}
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "seq": 1}`+"\n"))
	env := &Env{Pipeline: p, Events: nopEvents{}}
	if _, err := Ingest(context.Background(), env, p.Dataset("changes")); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	source := delta.New(TableDir(p.Storage, "changes"))
	empty := func(n int64) {
		for range n {
			snap, err := source.Snapshot(-1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := source.Begin(snap).Commit("SET TBLPROPERTIES", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, _ := readTable(t, p, "target")
	empty(recordEmptyVersions - 1)
	m, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
	if after, _ := readTable(t, p, "target"); err != nil || !m.Idle || after.Version != before.Version {
		t.Fatalf("%d empty versions: idle %v, target version %d → %d, err %v; want IDLE and no commit", recordEmptyVersions-1, m.Idle, before.Version, after.Version, err)
	}
	empty(1)
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	after, rows := readTable(t, p, "target")
	latest, _ := source.LatestVersion()
	if after.AppTxns[AppID(p, "target")] != latest || len(rows) != 1 {
		t.Errorf("after %d empty versions: progress %d, want %d (recorded), %d rows", recordEmptyVersions, after.AppTxns[AppID(p, "target")], latest, len(rows))
	}
}
