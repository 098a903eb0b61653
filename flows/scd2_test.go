package flows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
)

const scd2Spec = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op, seq]
      stored_as_scd_type: 2
`

// TestSCD2ChangeDataFeed: the target's change data feed shows each version row inserted, updated
// (pre- and post-image) or deleted (semantics.md "APPLY CHANGES": SCD type 2 and the change data
// feed). A late event that splits a version updates the old version (its __END_AT) and inserts
// the new one; a delete updates the current version's __END_AT; a new key's versions are
// inserted.
func TestSCD2ChangeDataFeed(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, t.TempDir(), scd2Spec)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
	for _, batch := range [][][]any{
		{ch("I", 1, "a", 10), ch("U", 1, "c", 30)},
		{ch("U", 1, "b", 20)},
		{ch("D", 1, "", 40)},
		{ch("I", 2, "x", 50), ch("U", 1, "d", 60)},
	} {
		appendEvents(t, p, batch)
		if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
			t.Fatal(err)
		}
	}
	tb := delta.New(TableDir(p.Storage, "items"))
	s, rows, err := tb.Changes(1, -1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		var b []string
		for i, f := range s.Fields {
			if f.Name == "_commit_timestamp" {
				continue
			}
			b = append(b, string(schema.AppendJSON(nil, f.Type, r[i])))
		}
		got = append(got, strings.Join(b, " "))
	}
	sort.Strings(got)
	want := []string{
		// version 1: the two versions of the first batch
		`1 "a" 10 30 "insert" 1`,
		`1 "c" 30 null "insert" 1`,
		// version 2: the late event at 20 ends a at 20 and opens b from 20 to 30
		`1 "a" 10 20 "update_postimage" 2`,
		`1 "a" 10 30 "update_preimage" 2`,
		`1 "b" 20 30 "insert" 2`,
		// version 3: the delete at 40 closes c
		`1 "c" 30 40 "update_postimage" 3`,
		`1 "c" 30 null "update_preimage" 3`,
		// version 4: a new key and a re-insert after the delete; key 1's file is rewritten, so
		// the version has a change data file, which holds both inserts
		`1 "d" 60 null "insert" 4`,
		`2 "x" 50 null "insert" 4`,
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("change data feed:\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestSCD2TrackHistoryGuard: a new track_history_column_list would make the stored history
// disagree with the one the new list gives, so it asks for a full refresh.
func TestSCD2TrackHistoryGuard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := strings.Replace(scd2Spec, "except_column_list: [op, seq]", "except_column_list: [op]", 1) // name and seq tracked
	p := loadPipeline(t, dir, base)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
	appendEvents(t, p, [][]any{ch("I", 1, "a", 1)})
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
		t.Fatal(err)
	}
	p2 := loadPipeline(t, dir, strings.Replace(base, "stored_as_scd_type: 2", "stored_as_scd_type: 2\n      track_history_column_list: [name]", 1))
	appendEvents(t, p2, [][]any{ch("U", 1, "b", 2)})
	_, err := ApplyChanges(context.Background(), &Env{Pipeline: p2, Events: nopEvents{}, Now: time.Now}, p2.Dataset("items"))
	if err == nil || !strings.Contains(err.Error(), "the tracked columns") || !strings.Contains(err.Error(), "--full-refresh items") {
		t.Fatalf("error = %v, want the tracked columns change refused with a full refresh hint", err)
	}
}

// TestSCD2BatchOfSeveralCommits: one batch read from three source commits (each its own row
// group) is applied as one: events are in arrival order across the commits (between two upserts
// of a key at one sequence the later arrival wins, semantics.md "Decision on ties"), a late event
// of the last commit lands where its sequence belongs, and a drop expectation drops its rows in
// every commit, its counts summed over them. The WARN about ties names the first (key 2's y, row 2
// of the second commit's file, against x, row 2 of the first's; z ties later).
func TestSCD2BatchOfSeveralCommits(t *testing.T) {
	t.Parallel()
	text := strings.Replace(scd2Spec, "      stored_as_scd_type: 2\n", `      stored_as_scd_type: 2
    expectations:
      - {name: named, expect: "name != \"bad\"", on_violation: drop}
`, 1)
	p := loadPipeline(t, t.TempDir(), text)
	rec := &tieRecorder{}
	env := &Env{Pipeline: p, Events: rec, Now: time.Now}
	appendEvents(t, p, [][]any{ch("I", 1, "a", 10), ch("I", 2, "x", 10), ch("U", 1, "bad", 20)})
	appendEvents(t, p, [][]any{ch("U", 1, "c", 30), ch("U", 2, "y", 10), ch("U", 2, "bad", 15)})
	appendEvents(t, p, [][]any{ch("U", 1, "b", 20), ch("U", 2, "z", 10), ch("U", 1, "bad", 40)})
	m, err := ApplyChanges(context.Background(), env, p.Dataset("items"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Quality.DroppedRecords != 3 || m.Ties != 2 {
		t.Errorf("dropped %d, ties %d; want the 3 bad rows dropped and 2 ties (key 2 at 10, three upserts)", m.Quality.DroppedRecords, m.Ties)
	}
	files := sourceDataFiles(t, p)
	msgs, details := rec.take()
	checkTieWarnRows(t, "ties", msgs, details, wantTie{ties: 2, key: "id=2", seq: "seq=10", file: files[1], line: 2,
		with: files[0] + " row 2", rule: "between upserts of this batch the later arrival won"})
	_, rows := readTable(t, p, "items")
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v %v %v %v", r[0], r[1], r[2], r[3]))
	}
	sort.Strings(got)
	want := []string{"1 a 10 20", "1 b 20 30", "1 c 30 <nil>", "2 z 10 <nil>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// TestKeyWorkerPanicKeepsItsStack: a key worker's panic is raised again by applyHistory on its
// own goroutine, with the stack of the worker where it happened (here a worker without its
// batch's groups), so that the report of a bug shows where it is.
func TestKeyWorkerPanicKeepsItsStack(t *testing.T) {
	t.Parallel()
	w := &keyWorker{order: []string{"k"}}
	w.run(0, 1)
	msg := fmt.Sprint(w.panicked)
	if !strings.Contains(msg, "nil pointer") || !strings.Contains(msg, "flows.(*keyWorker).run(") {
		t.Fatalf("the kept panic is %q, want the nil dereference with the stack of the worker's run", msg)
	}
}
