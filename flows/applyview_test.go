package flows

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
)

// viewSpec is a pipeline whose change events come from files, through a streaming table
// (bronzeType "streaming_table") or a view over files (bronzeType "view"), into target.
func viewSpec(bronzeType, extraSource, extraApply string) string {
	return `name: t
storage: ./storage
datasets:
  - name: changes
    type: ` + bronzeType + `
    expectations:
      - {name: valid_op, expect: 'op in ["I", "U", "D"]', on_violation: drop}
      - {name: named, expect: 'op == "D" or name != nil', on_violation: warn}
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), seq BIGINT"
` + extraSource + `  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
` + extraApply
}

// writeChangeFiles writes n change events over keys keys into files JSON-lines files under
// landing, named from prefix: inserts, updates, deletes, late and duplicate events, lines with an
// unknown op, escapes and blank lines, from a seeded generator.
func writeChangeFiles(t *testing.T, landing, prefix string, files, n, keys int, seed int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	per := n / files
	seq := seed * 1_000_000
	for f := range files {
		var b strings.Builder
		for range per {
			seq++
			s := seq
			if r.Intn(10) == 0 {
				s -= int64(r.Intn(50)) // late
			}
			id := r.Intn(keys)
			switch k := r.Intn(20); {
			case k == 0:
				fmt.Fprintf(&b, `{"op": "D", "id": %d, "seq": %d}`+"\n", id, s)
			case k == 1:
				fmt.Fprintf(&b, `{"op": "X", "id": %d, "name": "bad", "seq": %d}`+"\n", id, s)
			case k == 2:
				fmt.Fprintf(&b, `{"op": "U", "id": %d, "name": "n\u00e9-%d", "amount": %d.%02d, "seq": %d}`+"\n\n", id, s, s%1000, s%100, s)
			case k == 3:
				fmt.Fprintf(&b, `{"op": "U", "id": %d, "seq": %d}`+"\n", id, s) // no name: warned, kept
			default:
				fmt.Fprintf(&b, `{"op": "U", "id": %d, "name": "name-%d-%d", "amount": %d.%02d, "seq": %d}`+"\n", id, id, s, s%1000, s%100, s)
			}
		}
		path := filepath.Join(landing, fmt.Sprintf("%s-%02d.json", prefix, f))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runFlows runs the flows of p's datasets in spec order, as an update does.
func runFlows(t *testing.T, p *spec.Pipeline, events Emitter) []Metrics {
	t.Helper()
	env := &Env{Pipeline: p, Events: events, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	var out []Metrics
	for _, d := range p.Datasets {
		m, err := Run(context.Background(), env, d)
		if err != nil {
			t.Fatalf("flow %s: %v", d.Name, err)
		}
		out = append(out, m)
	}
	return out
}

// rowsText renders rows as sorted lines of s's column texts.
func rowsText(s schema.Schema, rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := make([]string, len(r))
		for j, v := range r {
			parts[j] = schema.Text(s.Fields[j].Type, v)
		}
		out[i] = strings.Join(parts, " ")
	}
	slices.Sort(out)
	return out
}

// targetState returns the target's rows and its change data feed (without commit timestamps).
func targetState(t *testing.T, p *spec.Pipeline) (rows, changes []string) {
	t.Helper()
	snap, rs := readTable(t, p, "target")
	rows = rowsText(snap.Metadata.Schema, rs)
	cs, cr, err := delta.New(TableDir(p.Storage, "target")).Changes(0, snap.Version)
	if err != nil {
		t.Fatal(err)
	}
	ts := cs.Index(delta.CommitTimestampColumn)
	for _, r := range cr {
		r[ts] = nil
	}
	return rows, rowsText(cs, cr)
}

// TestViewOverFilesMatchesStreamingTable: APPLY CHANGES that reads its change events through a
// view over files (read by the flow itself, block memory reused across files and batches) ends
// with the same table and the same change data feed, update after update, as one that reads them
// from a bronze streaming table, for SCD type 1 and 2, in one batch or several
// (max_files_per_trigger), and reports the same counts and data quality.
func TestViewOverFilesMatchesStreamingTable(t *testing.T) {
	setChunking(t, 97, 700)
	saved := viewBatchRows
	viewBatchRows = 89
	t.Cleanup(func() { viewBatchRows = saved })
	// With max_files_per_trigger the bronze table takes a version per two files, which the
	// bronze-fed target applies in one commit, and the view-fed one in one commit per two files:
	// the tables agree, the change data feeds hold different steps (batches).
	for _, c := range []struct {
		name, source, apply string
		batches             int // files per batch; 0: all files in one
	}{
		{"scd1", "", "", 0},
		{"scd1 two files a batch", "      max_files_per_trigger: 2\n", "", 2},
		{"scd2", "", "      stored_as_scd_type: 2\n", 0},
		{"scd1 ignore_null_updates", "", "      ignore_null_updates: true\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			bronzeDir, viewDir := t.TempDir(), t.TempDir()
			bronze := loadPipeline(t, bronzeDir, viewSpec("streaming_table", c.source, c.apply))
			view := loadPipeline(t, viewDir, viewSpec("view", c.source, c.apply))
			if _, err := os.Stat(TableDir(view.Storage, "changes")); !os.IsNotExist(err) {
				t.Fatalf("a view over files has a table folder: %v", err)
			}
			for round, files := range []int{5, 1, 3} {
				for _, dir := range []string{bronzeDir, viewDir} {
					writeChangeFiles(t, filepath.Join(dir, "landing"), fmt.Sprintf("r%d", round), files, 700*files, 300, int64(round+1))
				}
				before, _ := readTable(t, view, "target")
				mb := runFlows(t, bronze, nopEvents{})[1]
				mv := runFlows(t, view, nopEvents{})[1]
				wantRows, wantChanges := targetState(t, bronze)
				gotRows, gotChanges := targetState(t, view)
				if !slices.Equal(gotRows, wantRows) {
					t.Fatalf("round %d: the view-fed target differs from the bronze-fed one (%d rows, want %d):\n%s", round, len(gotRows), len(wantRows), firstDiffs(gotRows, wantRows))
				}
				if c.batches > 0 {
					snap, _ := readTable(t, view, "target")
					if want := int64(c.batches); snap.Version != before.Version+(int64(files)+want-1)/want {
						t.Errorf("round %d: %d files, %d a batch, took the target from version %d to %d", round, files, c.batches, before.Version, snap.Version)
					}
				} else if !slices.Equal(gotChanges, wantChanges) {
					t.Fatalf("round %d: the change data feeds differ:\n%s", round, firstDiffs(gotChanges, wantChanges))
				}
				if mv.Files != files || (c.batches == 0 && (mv.NumUpsertedRows != mb.NumUpsertedRows || mv.NumDeletedRows != mb.NumDeletedRows)) {
					t.Errorf("round %d: view flow upserted %d, deleted %d from %d files; the bronze-fed flow %d, %d; %d files landed",
						round, mv.NumUpsertedRows, mv.NumDeletedRows, mv.Files, mb.NumUpsertedRows, mb.NumDeletedRows, files)
				}
				// The view's expectations are reported by the flow that reads it, under the view's name.
				bq := countBadLines(t, bronzeDir, round)
				if len(mv.Quality.Expectations) != 2 || mv.Quality.Expectations[0].Dataset != "changes" {
					t.Fatalf("round %d: the view flow's data quality is %+v, want the view's two expectations", round, mv.Quality)
				}
				if got := mv.Quality.Expectations; got[0].FailedRecords != bq[0] || got[1].FailedRecords != bq[1] || mv.Quality.DroppedRecords != bq[0] {
					t.Errorf("round %d: the view's expectations failed %d and %d rows (dropped %d); the files have %d lines with a bad op and %d without a name",
						round, got[0].FailedRecords, got[1].FailedRecords, mv.Quality.DroppedRecords, bq[0], bq[1])
				}
			}
			if _, rows := readTable(t, bronze, "target"); len(rows) < 100 {
				t.Fatalf("the target has %d rows: the test checks too little", len(rows))
			}
			// Nothing new: the flow is idle and commits nothing.
			snap, _ := readTable(t, view, "target")
			if m := runFlows(t, view, nopEvents{})[1]; !m.Idle {
				t.Errorf("a run with no new file is not idle: %+v", m)
			}
			if after, _ := readTable(t, view, "target"); after.Version != snap.Version {
				t.Errorf("a run with no new file committed version %d", after.Version)
			}
		})
	}
}

// countBadLines counts, over the files of round under dir's landing folder, the lines
// with an op other than I, U and D, and the other non-delete lines without a name.
func countBadLines(t *testing.T, dir string, round int) [2]int64 {
	t.Helper()
	var out [2]int64
	matches, _ := filepath.Glob(filepath.Join(dir, "landing", fmt.Sprintf("r%d-*.json", round)))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			switch {
			case strings.Contains(l, `"op": "X"`):
				out[0]++
			case strings.Contains(l, `"op": "U"`) && !strings.Contains(l, `"name"`):
				out[1]++
			}
		}
	}
	return out
}

// TestViewOverFilesNullKey: a NULL key in a view's file fails the batch naming the file and line;
// nothing is committed and no file counts as read, so fixing the file and running again applies it.
func TestViewOverFilesNullKey(t *testing.T) {
	dir := t.TempDir()
	p := loadPipeline(t, dir, viewSpec("view", "", ""))
	landing := filepath.Join(dir, "landing")
	good := `{"op": "I", "id": 1, "name": "a", "amount": 1.00, "seq": 1}` + "\n"
	if err := os.WriteFile(filepath.Join(landing, "a.json"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(landing, "b.json")
	if err := os.WriteFile(bad, []byte(`{"op": "I", "id": 2, "name": "b", "amount": 2.00, "seq": 2}`+"\n"+`{"op": "U", "name": "c", "seq": 3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Pipeline: p, Events: nopEvents{}}
	_, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
	// The file relative to the pipeline's folder, as the WARNs name it.
	if err == nil || !strings.Contains(err.Error(), "landing/b.json:2") || !strings.Contains(err.Error(), "key column id") {
		t.Fatalf("a NULL key gave %v, want an error naming landing/b.json:2 and the key column id", err)
	}
	if _, err := delta.New(TableDir(p.Storage, "target")).Snapshot(-1); err == nil {
		if snap, rows := readTable(t, p, "target"); len(rows) != 0 || len(snap.AppTxns) != 0 {
			t.Fatalf("the failed batch left %d rows and progress %v", len(rows), snap.AppTxns)
		}
	}
	if err := os.WriteFile(bad, []byte(`{"op": "I", "id": 2, "name": "b", "amount": 2.00, "seq": 2}`+"\n"+`{"op": "U", "id": 3, "name": "c", "seq": 3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	_, rows := readTable(t, p, "target")
	if got := rowsText(dataSchema(p.Dataset("target")), rows); !slices.Equal(got, []string{"1 a 1.00 1", "2 b 2.00 2", "3 c NULL 3"}) {
		t.Errorf("after the fix the target holds %q", got)
	}
}

// TestViewOverFilesFailExpectation: a fail expectation on the view fails the batch, naming the
// view; nothing is committed.
func TestViewOverFilesFailExpectation(t *testing.T) {
	dir := t.TempDir()
	text := strings.Replace(viewSpec("view", "", ""), "on_violation: warn", "on_violation: fail", 1)
	p := loadPipeline(t, dir, text)
	if err := os.WriteFile(filepath.Join(dir, "landing", "a.json"), []byte(`{"op": "I", "id": 1, "name": "a", "seq": 1}`+"\n"+`{"op": "I", "id": 2, "seq": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target"))
	if err == nil || !strings.Contains(err.Error(), `expectation "named" on dataset "changes" failed`) {
		t.Fatalf("the fail expectation gave %v", err)
	}
	if snap, rows := readTable(t, p, "target"); len(rows) != 0 || len(snap.AppTxns) != 0 {
		t.Fatalf("the failed batch left %d rows and progress %v", len(rows), snap.AppTxns)
	}
}

// TestApplyChangesFailCountsQuality: when a fail expectation stops an APPLY CHANGES batch, the
// flow's metrics still count the rows that passed and failed each expectation (the event log's
// data_quality of the FAILED flow_progress), as an ingest or a query flow's do: from a streaming
// table and from a view over files (whose own expectations come first).
func TestApplyChangesFailCountsQuality(t *testing.T) {
	t.Parallel()
	extra := "    expectations:\n      - {name: early, expect: 'seq < 3', on_violation: warn}\n      - {name: small_seq, expect: 'seq < 4', on_violation: fail}\n"
	for _, c := range []struct {
		bronze string
		want   string // name:passed/failed of each expectation, then dropped
	}{
		// Events seq 1, 2 (no name), 3, 4 (op X, which valid_op drops: at ingest, or as the
		// view's rule before the target's rules see it) and 5 (a delete, no name).
		{"streaming_table", "early:2/2 small_seq:3/1 dropped:0"},
		{"view", "valid_op:4/1 named:4/1 early:2/2 small_seq:3/1 dropped:1"},
	} {
		t.Run(c.bronze, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, viewSpec(c.bronze, "", extra))
			write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"op": "I", "id": 1, "name": "a", "seq": 1}
{"op": "I", "id": 2, "seq": 2}
{"op": "U", "id": 1, "name": "b", "seq": 3}
{"op": "X", "id": 3, "name": "c", "seq": 4}
{"op": "D", "id": 2, "seq": 5}
`))
			env := &Env{Pipeline: p, Events: nopEvents{}}
			if c.bronze == "streaming_table" {
				if _, err := Ingest(context.Background(), env, p.Dataset("changes")); err != nil {
					t.Fatal(err)
				}
			}
			m, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
			var fe *expectations.FailError
			if !errors.As(err, &fe) || fe.Expectation != "small_seq" {
				t.Fatalf("the fail expectation gave %v", err)
			}
			var got []string
			for _, r := range m.Quality.Expectations {
				got = append(got, fmt.Sprintf("%s:%d/%d", r.Name, r.PassedRecords, r.FailedRecords))
			}
			got = append(got, fmt.Sprintf("dropped:%d", m.Quality.DroppedRecords))
			if strings.Join(got, " ") != c.want {
				t.Errorf("quality %s, want %s", strings.Join(got, " "), c.want)
			}
			if snap, rows := readTable(t, p, "target"); len(rows) != 0 || len(snap.AppTxns) != 0 {
				t.Fatalf("the failed batch left %d rows and progress %v", len(rows), snap.AppTxns)
			}
		})
	}
}

// TestViewOverFilesFailOnNewColumns: a file with a column the view's schema lacks, under
// schema_evolution_mode failOnNewColumns, fails the APPLY CHANGES flow that reads the view with
// an error naming the file, the column, the view whose schema to change and the full refresh of
// the table that holds its rows (the reader's: a view has no table); nothing is committed.
func TestViewOverFilesFailOnNewColumns(t *testing.T) {
	dir := t.TempDir()
	p := loadPipeline(t, dir, viewSpec("view", "      schema_evolution_mode: failOnNewColumns\n", ""))
	file := filepath.Join(dir, "landing", "a.json")
	if err := os.WriteFile(file, []byte(`{"op": "I", "id": 1, "name": "a", "seq": 1, "region": "eu"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target"))
	if want := file + " has column region, which the schema of changes does not have (schema_evolution_mode: failOnNewColumns); add it to the schema of changes and run `pipeline run "; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), " --full-refresh target`") {
		t.Fatalf("a new column gave %v, want %q", err, want)
	}
	if snap, rows := readTable(t, p, "target"); len(rows) != 0 || len(snap.AppTxns) != 0 {
		t.Fatalf("the failed batch left %d rows and progress %v", len(rows), snap.AppTxns)
	}
}

// TestViewOverFilesSourceSwitch: a target built from a bronze table cannot silently switch to a
// view over the same files (its progress counts table versions, not files): the error says to
// fully refresh it.
func TestViewOverFilesSourceSwitch(t *testing.T) {
	dir := t.TempDir()
	p := loadPipeline(t, dir, viewSpec("streaming_table", "", ""))
	writeChangeFiles(t, filepath.Join(dir, "landing"), "a", 1, 50, 10, 1)
	runFlows(t, p, nopEvents{})
	q := loadPipeline(t, dir, viewSpec("view", "", ""))
	_, err := ApplyChanges(context.Background(), &Env{Pipeline: q, Events: nopEvents{}}, q.Dataset("target"))
	if err == nil || !strings.Contains(err.Error(), "is now the view over files changes") || !strings.Contains(err.Error(), "--full-refresh target") {
		t.Fatalf("switching the source to a view gave %v", err)
	}
}

// TestOwnValue: ownValue copies every kind of value a reader makes, so that none shares memory
// with the reader's input text or slabs.
func TestOwnValue(t *testing.T) {
	text := []byte(`abcdef`)
	s := blockText(text)[1:4]
	slab := newBoxSlab(4, 1)
	vals := []any{s, slab.int64(1 << 40), slab.decimal(schema.Decimal(1 << 41)), []any{s, slab.int64(1 << 42)}, schema.Map{{Key: s, Value: slab.int64(1 << 43)}}, nil, true}
	got := make([]any, len(vals))
	copy(got, vals)
	ownValues(got)
	slabbed := make([]any, len(vals)) // the same through an ownSlab
	o := newOwnSlab()
	for i, v := range vals {
		slabbed[i] = o.value(v)
	}
	copy(text, "XXXXXX")
	slab.reset(4, 1)
	for range 4 {
		slab.int64(7)
	}
	want := []any{"bcd", int64(1 << 40), schema.Decimal(1 << 41), []any{"bcd", int64(1 << 42)}, schema.Map{{Key: "bcd", Value: int64(1 << 43)}}, nil, true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("owned values %v after their input was overwritten, want %v", got, want)
	}
	if fmt.Sprint(slabbed) != fmt.Sprint(want) || !reflect.DeepEqual(slabbed, want) {
		t.Errorf("values owned by an ownSlab %v after their input was overwritten, want %v", slabbed, want)
	}
}

// ownValues replaces each value of vals by a copy in memory of its own (ownValue).
func ownValues(vals []any) {
	for i, v := range vals {
		vals[i] = ownValue(v)
	}
}

// TestApplyChangesSourceRenamed: a source dataset renamed in the spec is another table to the
// APPLY CHANGES flow that reads it (it would be read from its start into the target): the flow
// fails saying that the source was re-created or renamed, and naming the full refresh.
func TestApplyChangesSourceRenamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, viewSpec("streaming_table", "", ""))
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"op": "I", "id": 1, "name": "a", "seq": 1}`+"\n"))
	runFlows(t, p, nopEvents{})
	renamed := strings.NewReplacer("- name: changes", "- name: changes2", "source: changes", "source: changes2").Replace(viewSpec("streaming_table", "", ""))
	p = loadPipeline(t, dir, renamed)
	env := &Env{Pipeline: p, Events: nopEvents{}}
	if _, err := Ingest(context.Background(), env, p.Dataset("changes2")); err != nil {
		t.Fatal(err)
	}
	_, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
	if err == nil || !strings.Contains(err.Error(), "the source table changes2 was re-created (a full refresh) or renamed since target last read it") || !strings.Contains(err.Error(), "--full-refresh target`") {
		t.Fatalf("reading the renamed source gave %v", err)
	}
}
