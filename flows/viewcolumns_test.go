package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tributary/schema"
)

// viewHistSpec is histColumnsSpec with the change events read through a view over the landed
// JSON-lines files (the source's mode and apply_as_deletes set by the test).
func viewHistSpec(deletes, mode string) string {
	s := strings.Replace(fmt.Sprintf(histColumnsSpec, ""), "  - name: changes\n", "  - name: changes\n    type: view\n", 1)
	s = strings.Replace(s, "      format: json\n", "      format: json\n      mode: "+mode+"\n", 1)
	if deletes == "" {
		return strings.Replace(s, "      apply_as_deletes: op == \"D\"\n", "", 1)
	}
	return strings.Replace(s, `apply_as_deletes: op == "D"`, "apply_as_deletes: "+deletes, 1)
}

// untidyJSONLines writes rows of s as JSON lines: a NULL as null or, every other time, left out; a
// blank line now and then, and some lines ended by "\r\n", so that the lines of the events do not
// follow one another.
func untidyJSONLines(r *rand.Rand, s schema.Schema, rows [][]any) string {
	var b strings.Builder
	for _, row := range rows {
		if r.IntN(9) == 0 {
			b.WriteString("\n")
		}
		b.WriteString("{")
		first := true
		for i, f := range s.Fields[:len(row)] { // a rescued-data column is the reader's
			if row[i] == nil && r.IntN(2) == 0 {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, "%q: %s", f.Name, schema.AppendJSON(nil, f.Type, row[i]))
		}
		b.WriteString("}")
		if r.IntN(7) == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runViewBatches lands each batch (as two files, the second's text given by extra when not "")
// and applies it to a new pipeline of spec, with reading the view by column on or off; it
// returns the outcome after each batch (or the error that stopped it) and how many batches read
// the view by column.
func runViewBatches(t *testing.T, spec string, batches [][][]any, extra []string, columns bool) ([]histOutcome, error, int64) {
	t.Helper()
	viewColumnsOff.Store(!columns)
	defer viewColumnsOff.Store(false)
	before := viewColumnBatches.Load()
	dir := t.TempDir()
	p := loadPipeline(t, dir, spec)
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec, Now: func() time.Time { return time.UnixMilli(1_750_000_000_000) }}
	sch := p.Dataset("changes").Schema
	var out []histOutcome
	for i, b := range batches {
		r := rand.New(rand.NewPCG(uint64(i), 3))
		half := len(b) / 2
		second := untidyJSONLines(r, sch, b[half:])
		if extra != nil && extra[i] != "" {
			second = extra[i]
		}
		for f, text := range []string{untidyJSONLines(r, sch, b[:half]), second} {
			if err := os.WriteFile(filepath.Join(dir, "landing", fmt.Sprintf("b%02d-%d.json", i, f)), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, err := ApplyChanges(context.Background(), env, p.Dataset("items"))
		if err != nil {
			return out, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), dir, "DIR")), viewColumnBatches.Load() - before
		}
		o, _ := readOutcome(t, p, m, rec)
		o.warns = strings.ReplaceAll(o.warns, dir, "DIR")
		out = append(out, o)
	}
	return out, nil, viewColumnBatches.Load() - before
}

// TestViewColumnsEquivalence: batches read through a view by column give exactly what reading
// them by row gives (semantics.md "APPLY CHANGES"): the same table rows, change data feed,
// metrics and WARNs (ties name their file and line), batch after batch; for an SCD type 2
// target its first batch (the later ones fold by row: the target holds history, from the
// state the first saved), for an SCD type 1 target every batch; with apply_as_deletes of each
// shape (a string match, an expression over a column with NULLs, none).
func TestViewColumnsEquivalence(t *testing.T) {
	for _, scd := range []int{2, 1} {
		testViewColumnsEquivalence(t, scd)
	}
}

func testViewColumnsEquivalence(t *testing.T, scd int) {
	seeds := uint64(6)
	if underRace {
		seeds = 2 // the large batch and the small blocks, where goroutines meet
	}
	for _, del := range []string{`op == "D"`, `op == "D" or amount <= 0`, ""} {
		for seed := range seeds {
			if seed == 1 {
				// Blocks of about 40 lines: many blocks released for reuse while later ones
				// are folded.
				setChunking(t, chunkRows, 4096)
			}
			r := rand.New(rand.NewPCG(seed, 17))
			keys, seqs, n := 2+r.IntN(60), 5+r.IntN(100), 1+r.IntN(400)
			if seed == 0 {
				n, keys, seqs = 30_000, 3_000, 5_000 // many blocks, and a block of more than one group
			}
			batches := [][][]any{randomHistEvents(r, n, keys, seqs, 1), randomHistEvents(r, 1+r.IntN(200), keys+5, seqs, 1),
				randomHistEvents(r, 1+r.IntN(300), keys+9, 2*seqs, 1)}
			for _, b := range batches {
				for _, row := range b {
					if row[3] != nil && r.IntN(4) == 0 {
						row[3] = -row[3].(schema.Decimal) // negative amounts: deletes for the second expression
					}
				}
			}
			spec := viewHistSpec(del, "permissive")
			want := int64(1) // an SCD type 2 target's first batch
			if scd == 1 {
				spec, want = strings.Replace(spec, "stored_as_scd_type: 2", "stored_as_scd_type: 1", 1), int64(len(batches))
			}
			rows, errRows, off := runViewBatches(t, spec, batches, nil, false)
			cols, errCols, on := runViewBatches(t, spec, batches, nil, true)
			if errRows != nil || errCols != nil {
				t.Fatalf("SCD %d deletes %q seed %d: by row: %v; by column: %v", scd, del, seed, errRows, errCols)
			}
			if off != 0 || on != want {
				t.Fatalf("SCD %d deletes %q seed %d: %d batches read by column with it off, %d with it on; want 0 and %d", scd, del, seed, off, on, want)
			}
			for i := range batches {
				g, c := rows[i], cols[i]
				for _, d := range []struct{ what, g, c string }{
					{"rows", g.rows, c.rows}, {"change data feed", g.changes, c.changes},
					{"metrics", g.metrics, c.metrics}, {"events", g.warns, c.warns},
				} {
					if d.g != d.c {
						t.Fatalf("SCD %d deletes %q seed %d batch %d: %s differ\n by row:\n%s\n by column:\n%s", scd, del, seed, i+1, d.what, d.g, d.c)
					}
				}
			}
			if seed == 0 && (!strings.Contains(rows[0].warns, "tie") || !strings.Contains(rows[0].warns, ".json:")) {
				t.Fatalf("SCD %d seed 0 met no tie named by its file and line:\n%s", scd, rows[0].warns)
			}
		}
	}
}

// badLineFiles are second files of a batch with lines that do not fit histColumnsSpec's schema or
// have NULL keys, sequences or operations; a NULL key is on line 3.
var badLineFiles = map[string]string{
	"not JSON":     `{"op": "U", "id": 1, "seq": 2}` + "\n" + `{"op": "U", "id": 2, "seq": ` + "\n" + `{"op": "U", "id": 3, "seq": 4}` + "\n",
	"NULL key":     `{"op": "U", "id": 1, "seq": 2}` + "\n\n" + `{"op": "U", "id": null, "seq": 3}` + "\n" + `{"op": "U", "seq": 5}` + "\n",
	"NULL seq":     `{"op": "U", "id": 1, "seq": 2}` + "\n" + `{"op": "U", "id": 7}` + "\n",
	"no op":        `{"id": 1, "seq": 2}` + "\n" + `{"op": null, "id": 7, "seq": 3}` + "\n",
	"wrong type":   `{"op": "U", "id": "seven", "seq": 2}` + "\n" + `{"op": "U", "id": 8, "seq": 3}` + "\n",
	"out of range": `{"op": "U", "id": 8, "n": 99999999999, "seq": 3}` + "\n",
}

// TestViewColumnsBadLines: lines that do not fit a view's schema are what its mode makes of them
// whether the view is read by column or by row: permissive keeps a line that does not parse as a
// row of NULLs, whose NULL key fails the batch naming its file and line, as a NULL key or
// sequence does; dropmalformed drops it, and the batch applies the rest; failfast fails on it.
func TestViewColumnsBadLines(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	batch := randomHistEvents(r, 300, 40, 90, 1)
	for what, text := range badLineFiles {
		for _, mode := range []string{"permissive", "dropmalformed", "failfast"} {
			spec := viewHistSpec(`op == "D"`, mode)
			if len(what)%2 == 0 { // some of the cases into an SCD type 1 target (typedFold)
				spec = strings.Replace(spec, "stored_as_scd_type: 2", "stored_as_scd_type: 1", 1)
			}
			rows, errRows, _ := runViewBatches(t, spec, [][][]any{batch}, []string{text}, false)
			cols, errCols, on := runViewBatches(t, spec, [][][]any{batch}, []string{text}, true)
			if fmt.Sprint(errRows) != fmt.Sprint(errCols) {
				t.Fatalf("%s, %s: by row: %v\nby column: %v", what, mode, errRows, errCols)
			}
			if on != 1 {
				t.Fatalf("%s, %s: %d batches read by column, want 1", what, mode, on)
			}
			if errRows == nil && (rows[0] != cols[0]) {
				t.Fatalf("%s, %s: outcomes differ\n by row: %+v\n by column: %+v", what, mode, rows[0], cols[0])
			}
			if what == "NULL key" && mode != "failfast" && (errRows == nil || !strings.Contains(errRows.Error(), "b00-1.json:3")) {
				t.Fatalf("%s, %s: want the batch failed naming b00-1.json:3, got %v", what, mode, errRows)
			}
		}
	}
}

// TestViewColumnsWhen: a view is read by column only where the rows would give nothing more: not
// with an expectation on the target or the view, or a rescued-data column; and an SCD type 2
// target that already holds history folds its batches by row (the second batch of each case),
// where an SCD type 1 target reads each by column.
func TestViewColumnsWhen(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	batch := randomHistEvents(r, 50, 10, 40, 1)
	base := viewHistSpec(`op == "D"`, "permissive")
	for _, c := range []struct {
		what, spec string
		want       int64
	}{
		{"plain", base, 1},
		{"an SCD type 1 target (every batch)", strings.Replace(base, "stored_as_scd_type: 2", "stored_as_scd_type: 1", 1), 2},
		{"a target expectation", strings.Replace(base, "      stored_as_scd_type: 2\n", "      stored_as_scd_type: 2\n    expectations:\n      - {name: has_seq, expect: 'seq != nil', on_violation: warn}\n", 1), 0},
		{"a view expectation", strings.Replace(base, "    type: view\n", "    type: view\n    expectations:\n      - {name: has_op, expect: 'op != nil', on_violation: drop}\n", 1), 0},
		{"a rescued-data column", strings.Replace(base, "      mode: permissive\n", "      mode: permissive\n      rescued_data_column: _rescued\n", 1), 0},
	} {
		_, err, on := runViewBatches(t, c.spec, [][][]any{batch, batch}, nil, true)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if on != c.want {
			t.Fatalf("%s: %d batches read by column, want %d", c.what, on, c.want)
		}
	}
}
