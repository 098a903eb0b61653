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

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// bronzeHistSpec is histColumnsSpec (a bronze streaming table over the landed JSON-lines files)
// with the source's mode, apply_as_deletes (none when "") and SCD type set by the test.
func bronzeHistSpec(deletes, mode string, scd int) string {
	s := strings.Replace(fmt.Sprintf(histColumnsSpec, ""), "      format: json\n", "      format: json\n      mode: "+mode+"\n", 1)
	s = strings.Replace(s, "stored_as_scd_type: 2", fmt.Sprintf("stored_as_scd_type: %d", scd), 1)
	if deletes == "" {
		return strings.Replace(s, "      apply_as_deletes: op == \"D\"\n", "", 1)
	}
	return strings.Replace(s, `apply_as_deletes: op == "D"`, "apply_as_deletes: "+deletes, 1)
}

// followRun is how runFollowBatches runs each batch.
type followRun struct {
	follow bool // the update says which flows run (Env.Runs): the ingest may fold the target's batch
	// lag lands every other batch twice before the target runs: the ingest's second run finds the
	// target behind.
	lag bool
	// optimize compacts the bronze table (a commit that adds no rows) between the ingest and the
	// target.
	optimize bool
	// targetRuns is what Env.Runs says of the target (with follow).
	targetRuns bool
	// between, when not nil, runs after batch i's ingest, before the target's flow.
	between func(t *testing.T, p *spec.Pipeline, env *Env, dir string, i int)
}

// runFollowBatches lands each batch as two files (the second's text given by extra when not "")
// into a new pipeline of spec, runs its ingest flow and then its APPLY CHANGES flow, as an update
// does, and returns the outcome after each batch (or the error that stopped it) and how many
// target batches took the ingest's fold.
func runFollowBatches(t *testing.T, spec string, batches [][][]any, extra []string, run followRun) ([]histOutcome, error, int64) {
	t.Helper()
	before := followedBatches.Load()
	dir := t.TempDir()
	p := loadPipeline(t, dir, spec)
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec, Now: func() time.Time { return time.UnixMilli(1_750_000_000_000) }}
	if run.follow {
		env.Runs = func(flow string) bool { return flow != "items" || run.targetRuns }
	}
	sch := p.Dataset("changes").Schema
	var out []histOutcome
	ctx := context.Background()
	for i, b := range batches {
		r := rand.New(rand.NewPCG(uint64(i), 3))
		half := len(b) / 2
		second := untidyJSONLines(r, sch, b[half:])
		if extra != nil && extra[i] != "" {
			second = extra[i]
		}
		texts := []string{untidyJSONLines(r, sch, b[:half]), second}
		land := func(from, to int) {
			for f := from; f < to; f++ {
				if err := os.WriteFile(filepath.Join(dir, "landing", fmt.Sprintf("b%02d-%d.json", i, f)), []byte(texts[f]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if run.lag && i%2 == 1 {
			// The first file is landed by an ingest run whose fold no target takes.
			land(0, 1)
			if _, err := Ingest(ctx, env, p.Dataset("changes")); err != nil {
				t.Fatal(err)
			}
			env.DropFollowers()
			land(1, 2)
		} else {
			land(0, 2)
		}
		if _, err := Ingest(ctx, env, p.Dataset("changes")); err != nil {
			t.Fatal(err)
		}
		if run.optimize {
			if _, err := delta.New(TableDir(p.Storage, "changes")).Optimize(delta.OptimizeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if run.between != nil {
			run.between(t, p, env, dir, i)
		}
		m, err := ApplyChanges(ctx, env, p.Dataset("items"))
		env.DropFollowers()
		if err != nil {
			return out, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), dir, "DIR")), followedBatches.Load() - before
		}
		o, _ := readOutcome(t, p, m, rec)
		o.warns = strings.ReplaceAll(o.warns, dir, "DIR")
		out = append(out, o)
	}
	return out, nil, followedBatches.Load() - before
}

// compareOutcomes fails the test where two runs' outcomes differ, batch by batch.
func compareOutcomes(t *testing.T, what string, want, got []histOutcome) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d batches against %d", what, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		for _, d := range []struct{ what, w, g string }{
			{"rows", w.rows, g.rows}, {"change data feed", w.changes, g.changes},
			{"metrics", w.metrics, g.metrics}, {"events", w.warns, g.warns},
		} {
			if d.w != d.g {
				t.Fatalf("%s batch %d: %s differ\n read back from bronze:\n%s\n folded as landed:\n%s", what, i+1, d.what, d.w, d.g)
			}
		}
	}
}

// TestFollowEquivalence: a target whose batch is folded while its ingest flow lands it
// (follower) commits exactly what reading the batch back from the bronze table commits
// (semantics.md "APPLY CHANGES": the same events in the same order): the same rows, change data
// feed, metrics and WARNs (ties name the input file and line), batch after batch, for SCD type 1
// and SCD type 2 targets, with apply_as_deletes of each shape. An SCD type 2 target is followed
// for its first batch (later ones fold by row against its history), an SCD type 1 target for
// every batch.
func TestFollowEquivalence(t *testing.T) {
	seeds := uint64(4)
	if underRace {
		seeds = 2
	}
	for _, scd := range []int{1, 2} {
		for _, del := range []string{`op == "D"`, `op == "D" or amount <= 0`, ""} {
			for seed := range seeds {
				if seed == 1 {
					// From here on, blocks of about 40 lines written in chunks of 64 rows:
					// many blocks given back for reuse while later ones are read.
					setChunking(t, 64, 4096)
				}
				r := rand.New(rand.NewPCG(seed, 23))
				keys, seqs, n := 2+r.IntN(60), 5+r.IntN(100), 1+r.IntN(400)
				if seed == 0 {
					n, keys, seqs = 30_000, 3_000, 5_000
					if underRace {
						n = 10_000 // still many blocks and chunks
					}
				}
				batches := [][][]any{randomHistEvents(r, n, keys, seqs, 1), randomHistEvents(r, 1+r.IntN(200), keys+5, seqs, 1),
					randomHistEvents(r, 1+r.IntN(300), keys+9, 2*seqs, 1)}
				for _, b := range batches {
					for _, row := range b {
						if row[3] != nil && r.IntN(4) == 0 {
							row[3] = -row[3].(schema.Decimal)
						}
					}
				}
				spec := bronzeHistSpec(del, "permissive", scd)
				if seed == 2 {
					// Each file a batch of its own: the fold spans two commits of the bronze table.
					spec = strings.Replace(spec, "      format: json\n", "      format: json\n      max_files_per_trigger: 1\n", 1)
				}
				what := fmt.Sprintf("SCD %d deletes %q seed %d", scd, del, seed)
				back, errBack, off := runFollowBatches(t, spec, batches, nil, followRun{})
				folded, errFolded, on := runFollowBatches(t, spec, batches, nil, followRun{follow: true, targetRuns: true})
				if errBack != nil || errFolded != nil {
					t.Fatalf("%s: read back: %v; folded: %v", what, errBack, errFolded)
				}
				want := int64(len(batches))
				if scd == 2 {
					want = 1
				}
				if off != 0 || on != want {
					t.Fatalf("%s: %d batches folded as landed without Env.Runs, %d with it; want 0 and %d", what, off, on, want)
				}
				compareOutcomes(t, what, back, folded)
				if seed == 0 && (!strings.Contains(back[0].warns, "tie") || !strings.Contains(back[0].warns, ".json:")) {
					t.Fatalf("%s met no tie named by its file and line:\n%s", what, back[0].warns)
				}
			}
		}
	}
}

// TestFollowBadLines: lines that do not fit the bronze table's schema are what its mode makes of
// them, and a NULL key or sequence fails the target's batch naming the input file and line,
// whether the batch was folded as landed or read back.
func TestFollowBadLines(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	batch := randomHistEvents(r, 300, 40, 90, 1)
	for what, text := range badLineFiles {
		for _, mode := range []string{"permissive", "dropmalformed"} {
			for _, scd := range []int{1, 2} {
				spec := bronzeHistSpec(`op == "D" or amount <= 0`, mode, scd)
				if scd == 2 {
					// Each file a batch of its own: the bad lines are in the ingest's second
					// commit, their rows numbered from that commit's first.
					spec = strings.Replace(spec, "      format: json\n", "      format: json\n      max_files_per_trigger: 1\n", 1)
				}
				back, errBack, _ := runFollowBatches(t, spec, [][][]any{batch}, []string{text}, followRun{})
				folded, errFolded, on := runFollowBatches(t, spec, [][][]any{batch}, []string{text}, followRun{follow: true, targetRuns: true})
				c := fmt.Sprintf("%s, %s, SCD %d", what, mode, scd)
				if fmt.Sprint(errBack) != fmt.Sprint(errFolded) {
					t.Fatalf("%s: read back: %v\nfolded: %v", c, errBack, errFolded)
				}
				if on != 1 {
					t.Fatalf("%s: %d batches folded as landed, want 1", c, on)
				}
				if errBack == nil {
					compareOutcomes(t, c, back, folded)
				}
				if what == "NULL key" && mode == "permissive" && (errBack == nil || !strings.Contains(errBack.Error(), "b00-1.json:3")) {
					t.Fatalf("%s: want the batch failed naming b00-1.json:3, got %v", c, errBack)
				}
			}
		}
	}
}

// TestFollowWhen: a target's batch is folded as landed only when it is exactly the ingest's
// commits and folds by column; otherwise it is read back from the bronze table, with the same
// outcome.
func TestFollowWhen(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	batches := [][][]any{randomHistEvents(r, 300, 30, 90, 1), randomHistEvents(r, 200, 35, 90, 1), randomHistEvents(r, 200, 35, 180, 1)}
	scd1 := bronzeHistSpec(`op == "D"`, "permissive", 1)
	want, err, _ := runFollowBatches(t, scd1, batches, nil, followRun{})
	if err != nil {
		t.Fatal(err)
	}
	// landBetween lands a file of events of batch i's keys and runs an ingest that no target
	// follows: the source then holds rows the fold did not see.
	landBetween := func(t *testing.T, p *spec.Pipeline, env *Env, dir string, i int) {
		text := fmt.Sprintf(`{"op": "U", "id": %d, "name": "between", "seq": 100000}`+"\n"+`{"op": "D", "id": %d, "seq": 100001}`+"\n", i, i+1)
		if err := os.WriteFile(filepath.Join(dir, "landing", fmt.Sprintf("b%02d-9.json", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		runs := env.Runs
		env.Runs = nil
		defer func() { env.Runs = runs }()
		if _, err := Ingest(context.Background(), env, p.Dataset("changes")); err != nil {
			t.Fatal(err)
		}
	}
	// touchTarget commits the target's metadata again (as an ALTER TABLE elsewhere would): a
	// version of the target the fold was not planned on.
	touchTarget := func(t *testing.T, p *spec.Pipeline, env *Env, dir string, i int) {
		tb := delta.New(TableDir(p.Storage, "items"))
		snap, err := tb.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		tx := tb.Begin(snap)
		tx.SetMetadata(snap.Metadata)
		if _, err := tx.Commit("SET TBLPROPERTIES", nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		what string
		spec string
		run  followRun
		want int64
	}{
		// The fold is checked against the versions the target reads (follower.fits).
		{"rows landed between", scd1, followRun{follow: true, targetRuns: true, between: landBetween}, 0},
		{"the target written between", scd1, followRun{follow: true, targetRuns: true, between: touchTarget}, 0},
		{"every batch", scd1, followRun{follow: true, targetRuns: true}, 3},
		{"the target not run after the ingest", scd1, followRun{follow: true}, 0},
		// The second batch's first file was landed by an ingest run the target did not follow:
		// the ingest after finds the target behind.
		{"the target behind", scd1, followRun{follow: true, targetRuns: true, lag: true}, 2},
		{"an OPTIMIZE between", scd1, followRun{follow: true, targetRuns: true, optimize: true}, 3},
		{"a target expectation", strings.Replace(scd1, "      stored_as_scd_type: 1\n", "      stored_as_scd_type: 1\n    expectations:\n      - {name: has_seq, expect: 'seq != nil', on_violation: warn}\n", 1), followRun{follow: true, targetRuns: true}, 0},
		{"a bronze expectation", strings.Replace(scd1, "  - name: changes\n", "  - name: changes\n    expectations:\n      - {name: has_op, expect: 'op != nil', on_violation: warn}\n", 1), followRun{follow: true, targetRuns: true}, 0},
	} {
		got, err, on := runFollowBatches(t, c.spec, batches, nil, c.run)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if on != c.want {
			t.Fatalf("%s: %d batches folded as landed, want %d", c.what, on, c.want)
		}
		switch {
		case c.run.between != nil:
			// The same landings, read back.
			back, err, _ := runFollowBatches(t, c.spec, batches, nil, followRun{between: c.run.between})
			if err != nil {
				t.Fatalf("%s, read back: %v", c.what, err)
			}
			compareOutcomes(t, c.what, back, got)
		case !strings.Contains(c.what, "expectation"):
			compareOutcomes(t, c.what, want, got)
		}
	}
}

// TestBlockPoolShared: a shared pool's block is reused only once both of its users released it,
// in either order; an unshared pool's once released.
func TestBlockPoolShared(t *testing.T) {
	for _, shared := range []bool{false, true} {
		for _, writerFirst := range []bool{true, false} {
			if !shared && !writerFirst {
				continue // one user only
			}
			p := &blockPool{}
			if shared {
				p.share()
			}
			a, b := p.get(10), p.get(10)
			p.emit(a)
			p.emit(b)
			written := p.seal()
			var folded []*lineBlock
			if shared {
				folded = p.sealShared()
				if len(folded) != 2 || folded[0] != a || folded[1] != b {
					t.Fatalf("sealShared gave %d blocks, want a and b", len(folded))
				}
			}
			first, second := written, folded
			if !writerFirst {
				first, second = folded, written
			}
			p.release(first)
			wantFree := 2
			if shared {
				wantFree = 0
			}
			if len(p.free) != wantFree {
				t.Fatalf("shared %v: %d blocks free after one user released them, want %d", shared, len(p.free), wantFree)
			}
			p.release(second)
			if len(p.free) != 2 {
				t.Fatalf("shared %v: %d blocks free after both users released them, want 2", shared, len(p.free))
			}
			// Reused, a block again waits for both.
			c := p.get(5)
			p.emit(c)
			p.release(p.seal())
			if shared && len(p.free) != 1 {
				t.Fatalf("a reused block was freed by one release: %d free, want 1", len(p.free))
			}
		}
	}
}
