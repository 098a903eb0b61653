package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

const pooledSpec = `name: pooled
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), score DOUBLE, seq BIGINT"
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      apply_as_truncates: op == "T"
      except_column_list: [op]
`

// TestPooledRowGroupsFold: an SCD type 1 batch of BIGINT key and sequence read from a bronze
// table of many row groups (three files of eight groups of 50 events, over 40 keys) is folded into typed
// columns while its groups are read into a pool of three (delta.RowGroupPool), each decoded
// into again once its events are folded; the target must be the one semantics.md's rules give:
// per key the event of highest sequence, on equal sequences a delete before an upsert and the
// later arrival between upserts; a truncate (in the first group, whose memory later groups
// reuse) removes every row at or below its sequence, the events after it still apply.
func TestPooledRowGroupsFold(t *testing.T) {
	t.Run("bronze", func(t *testing.T) { typedFoldReuse(t, false, 8, 50) })
	// A view's rows are read into blocks reused once folded (blockPool), in groups of
	// viewFoldRows: the truncate's sequence must not be read from a reused block.
	t.Run("view", func(t *testing.T) { typedFoldReuse(t, true, 4, viewFoldRows/2) })
}

// typedFoldReuse runs TestPooledRowGroupsFold's batch, read from a bronze table (three files of
// groups row groups of rows events) or through a view over three JSON-lines files of as many
// events.
func typedFoldReuse(t *testing.T, view bool, groups, rows int) {
	dir := t.TempDir()
	spec := pooledSpec
	if view {
		spec = strings.Replace(spec, "  - name: changes\n", "  - name: changes\n    type: view\n", 1)
	}
	p := loadPipeline(t, dir, spec)
	src := delta.New(TableDir(p.Storage, "changes"))
	meta := delta.Metadata{Schema: p.Dataset("changes").Schema}
	r := rand.New(rand.NewPCG(7, 8))
	type ev struct {
		op     string
		id     int64
		name   any
		amount schema.Decimal
		score  float64
		seq    int64
	}
	// About 30 events a key, sequences 0 to 599: the truncate at 585 is above about half of the
	// keys' last events.
	const truncateSeq = 585
	keys := 3 * groups * rows / 30
	var all []ev
	next := func() ev {
		e := ev{op: "U", id: int64(r.IntN(keys)), amount: schema.Decimal(r.Int64N(100_000)), score: float64(r.IntN(1000)) / 8, seq: int64(r.IntN(600))}
		e.name = fmt.Sprintf("n%d-%d", e.id, r.IntN(1000))
		if r.IntN(5) == 0 {
			e.name = nil
		}
		if r.IntN(8) == 0 {
			e.op = "D"
		}
		if len(all) > 0 && r.IntN(10) == 0 {
			// The same key and sequence as an earlier event: a tie, of a delete and an upsert or
			// of two upserts.
			prev := all[r.IntN(len(all))]
			e.id, e.seq = prev.id, prev.seq
		}
		return e
	}
	for f := range 3 {
		var dw *delta.DataWriter
		var lines strings.Builder
		if !view {
			var err error
			if dw, err = src.NewDataWriter(meta); err != nil {
				t.Fatal(err)
			}
		}
		for range groups {
			group := make([][]any, rows)
			for i := range group {
				e := next()
				if len(all) == 7 {
					e = ev{op: "T", seq: truncateSeq}
				}
				all = append(all, e)
				var id any = e.id
				if e.op == "T" {
					id = nil // a truncate needs no key
				}
				group[i] = []any{e.op, id, e.name, e.amount, e.score, e.seq}
				name := "null"
				if e.name != nil {
					name = fmt.Sprintf("%q", e.name)
				}
				fmt.Fprintf(&lines, `{"op":%q,"id":%v,"name":%s,"amount":%s,"score":%v,"seq":%d}`+"\n", e.op, map[bool]any{true: "null", false: e.id}[e.op == "T"], name, schema.FormatDecimal(e.amount, 2), e.score, e.seq)
			}
			if view {
				continue
			}
			if err := dw.Write(group); err != nil {
				t.Fatal(err)
			}
		}
		if view {
			if err := os.WriteFile(filepath.Join(dir, "landing", fmt.Sprintf("changes-%d.json", f)), []byte(lines.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		adds, err := dw.Close()
		if err != nil {
			t.Fatal(err)
		}
		snap, err := src.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		tx := src.Begin(snap)
		tx.Add(adds...)
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatal(err)
		}
	}
	// The rules, by hand: the winner of each key, then the truncate.
	win := map[int64]int{}
	for i, e := range all {
		if e.op == "T" {
			continue
		}
		j, ok := win[e.id]
		if !ok {
			win[e.id] = i
			continue
		}
		w := all[j]
		if e.seq > w.seq || (e.seq == w.seq && w.op != "D") {
			win[e.id] = i // higher; or equal, and a delete beats an upsert, a later upsert wins
		}
	}
	var want []string
	for _, i := range win {
		e := all[i]
		if e.op == "U" && e.seq > truncateSeq {
			want = append(want, fmt.Sprintf("%d|%v|%s|%v|%d", e.id, e.name, schema.FormatDecimal(e.amount, 2), e.score, e.seq))
		}
	}
	slices.Sort(want)
	env := &Env{Pipeline: p, Events: nopEvents{}}
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	tgt := delta.New(TableDir(p.Storage, "target"))
	snap, err := tgt.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range snap.Files {
		rows, err := tgt.FileRows(snap.Metadata, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			got = append(got, fmt.Sprintf("%d|%v|%s|%v|%d", row[0], row[1], schema.FormatDecimal(row[2].(schema.Decimal), 2), row[3], row[4]))
		}
	}
	slices.Sort(got)
	if len(want) < 10 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("target (%d rows):\n  %s\nwant (%d rows):\n  %s", len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
	}
}
