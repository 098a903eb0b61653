package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// result is one line of the table.
type result struct {
	Scenario        string  `json:"scenario"`
	InputBytes      int64   `json:"input_bytes"`
	OursS           float64 `json:"ours_s"`
	BaselineS       float64 `json:"baseline_s"`
	OursPeakMiB     float64 `json:"ours_peak_mib"`
	BaselinePeakMiB float64 `json:"baseline_peak_mib"`
}

// env is what every scenario gets: the pipeline binary, the scale and a folder of its own.
type env struct {
	ctx      context.Context
	pipeline string
	scale    float64
	repeat   int // runs of each side, for the scenarios that start from their input alone
	dir      string
	// profiles, when set, is the folder each of our runs writes a CPU profile into (-profile).
	profiles string
	runs     *int // our runs so far, numbering the profiles
}

// sub returns an environment like e's for a part of its scenario, in folder dir.
func (e *env) sub(dir string) *env {
	s := *e
	s.dir = dir
	return &s
}

// scaled returns n times the scale, at least lo.
func (e *env) scaled(n int, lo int) int { return max(lo, int(float64(n)*e.scale)) }

// scenario runs both sides and returns one line per table size (cdc-incremental has two).
type scenario struct {
	name string
	run  func(e *env) ([]result, error)
}

// scenarios in the order they run; sizes are the at -scale 1.
var scenarios = []scenario{
	{"ingest", runIngest},
	{"cdc-bulk", runCDCBulk},
	{"cdc-incremental", runCDCIncremental},
	{"scd2", runSCD2},
	{"mv", runMV},
}

const changesSchema = `"op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), seq BIGINT"`
const salesSchema = `"id BIGINT, shop BIGINT, name STRING, amount DECIMAL(10,2), note STRING"`

// writeSpec writes pipeline.yaml into dir: storage ./storage, landing ./landing.
func writeSpec(dir, datasets string) (string, error) {
	path := filepath.Join(dir, "pipeline.yaml")
	text := "name: bench\nstorage: ./storage\ndatasets:\n" + datasets
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// cdcSpec is a bronze table of change events (or, with view, a view over the change files, which
// the APPLY CHANGES flow reads itself) and its APPLY CHANGES target.
func cdcSpec(scdType int, filesPerTrigger int, view bool) string {
	s := "  - name: changes\n"
	if view {
		s += "    type: view\n"
	}
	s += `    source:
      path: ./landing
      format: json
      schema: ` + changesSchema + "\n"
	if filesPerTrigger > 0 {
		s += fmt.Sprintf("      max_files_per_trigger: %d\n", filesPerTrigger)
	}
	return s + fmt.Sprintf(`  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
      stored_as_scd_type: %d
`, scdType)
}

// mergeOnRead is the table_properties entry, after cdcSpec, that makes the target merge-on-read.
const mergeOnRead = "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"

// runOurs runs `pipeline run SPEC args...` in its own process and measures it.
func (e *env) runOurs(spec string, args ...string) (measure, error) {
	args = append([]string{"run", spec}, args...)
	if e.profiles != "" {
		if e.runs == nil {
			e.runs = new(int)
		}
		*e.runs++
		name := fmt.Sprintf("%03d-%s.cpu.pprof", *e.runs, strings.ReplaceAll(filepath.Base(e.dir), " ", "-"))
		args = append(args, "--cpuprofile", filepath.Join(e.profiles, name))
	}
	return runChild(e.ctx, e.pipeline, args...)
}

// pair measures a scenario that starts from its input alone: e.repeat runs of each side,
// interleaved, each from an empty output (ourStorage and baseOut removed first), ours first in
// the first round, the baseline first in the second, and so on (ABBA: a side that runs first
// after the data were written, or on the memory the other side just freed, is not always the
// same side). A side's figure is its run of median wall time, with the highest peak of its
// runs: one slow moment of a shared machine then moves neither side.
func (e *env) pair(ourStorage, baseOut string, ours, base func() (measure, error)) (measure, measure, error) {
	var ourRuns, baseRuns []measure
	type side struct {
		dir string
		run func() (measure, error)
		out *[]measure
	}
	for round := range max(1, e.repeat) {
		sides := []side{{ourStorage, ours, &ourRuns}, {baseOut, base, &baseRuns}}
		if round%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if side.dir != "" {
				if err := os.RemoveAll(side.dir); err != nil {
					return measure{}, measure{}, err
				}
			}
			m, err := side.run()
			if err != nil {
				return measure{}, measure{}, err
			}
			*side.out = append(*side.out, m)
		}
	}
	return median(ourRuns), median(baseRuns), nil
}

// median returns the run of median wall time (the lower middle of an even count), with the
// highest peak of all the runs.
func median(ms []measure) measure {
	sorted := slices.SortedFunc(slices.Values(ms), func(a, b measure) int { return cmp.Compare(a.wall, b.wall) })
	m := sorted[(len(sorted)-1)/2]
	for _, x := range ms {
		m.peakMiB = max(m.peakMiB, x.peakMiB)
	}
	return m
}

// check compares our table with the baseline's Parquet file, naming the scenario on a mismatch.
func (e *env) check(name, storage, table, parquet string, cols []column) error {
	if err := compareTables(e.ctx, filepath.Join(storage, "tables", table), parquet, cols); err != nil {
		return fmt.Errorf("%s: ours and the baseline differ: %w", name, err)
	}
	return nil
}

var changeCols = []column{{"id", "BIGINT"}, {"name", "VARCHAR"}, {"amount", "DECIMAL(18,2)"}, {"seq", "BIGINT"}}

func runIngest(e *env) ([]result, error) {
	rows := e.scaled(10_000_000, 1000)
	spec, err := writeSpec(e.dir, `  - name: sales
    source:
      path: ./landing
      format: json
      schema: `+salesSchema+"\n")
	if err != nil {
		return nil, err
	}
	landing := filepath.Join(e.dir, "landing")
	size, err := genSales(landing, rows, max(1000, rows/8), 1)
	if err != nil {
		return nil, err
	}
	cols := []column{{"id", "BIGINT"}, {"shop", "BIGINT"}, {"name", "VARCHAR"}, {"amount", "DECIMAL(18,2)"}, {"note", "VARCHAR"}}
	r, err := e.pairLine("ingest", spec, "ingest.sql", landing, "sales", cols, size)
	if err != nil {
		return nil, err
	}
	return []result{r}, nil
}

// pairLine measures the line name from its input alone (pair): our update of spec, into
// e.dir/storage, against the baseline script reading landing and writing e.dir/baseline. Our
// table and the baseline's <table>.parquet must hold the same rows (columns cols); size is the
// input's bytes.
func (e *env) pairLine(name, spec, script, landing, table string, cols []column, size int64) (result, error) {
	out := filepath.Join(e.dir, "baseline")
	ours, base, err := e.pair(filepath.Join(e.dir, "storage"), out,
		func() (measure, error) { return e.runOurs(spec) },
		func() (measure, error) {
			return runBaselineChild(e.ctx, script, map[string]string{"landing": landing, "out": out})
		})
	if err != nil {
		return result{}, err
	}
	if err := e.check(name, filepath.Join(e.dir, "storage"), table, filepath.Join(out, table+".parquet"), cols); err != nil {
		return result{}, err
	}
	return line(name, size, ours, base), nil
}

// runCDCBulk runs two lines over the same files: "cdc-bulk", the change events landed in a bronze
// streaming table and applied from it, and "cdc-bulk (view)", the events read by the APPLY
// CHANGES flow through a view over the files, as the baseline reads them (no bronze copy). The
// baseline is measured again beside each.
func runCDCBulk(e *env) ([]result, error) {
	events, keys := e.scaled(10_000_000, 1000), e.scaled(1_000_000, 100)
	landing := filepath.Join(e.dir, "landing")
	size, err := genChanges(landing, events, keys, max(1000, events/8), true, 0, 2)
	if err != nil {
		return nil, err
	}
	var lines []result
	for _, l := range []struct {
		name string
		view bool
	}{{"cdc-bulk", false}, {"cdc-bulk (view)", true}} {
		spec, err := writeSpec(e.dir, cdcSpec(1, 0, l.view))
		if err != nil {
			return nil, err
		}
		r, err := e.pairLine(l.name, spec, "cdc_bulk.sql", landing, "target", changeCols, size)
		if err != nil {
			return nil, err
		}
		lines = append(lines, r)
	}
	return lines, nil
}

// runCDCIncremental runs at two table sizes: the scaled 10,000,000 rows and a tenth of it.
func runCDCIncremental(e *env) ([]result, error) {
	big := e.scaled(10_000_000, 1000)
	batch := max(100, int(10_000*min(1, e.scale*10)))
	var out []result
	for _, rows := range []int{big / 10, big} {
		sub := e.sub(filepath.Join(e.dir, fmt.Sprintf("rows-%d", rows)))
		sub.repeat = 0
		r, err := cdcIncrementalAt(sub, rows, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// cdcIncrementalAt builds a table of rows rows (not timed), then applies ten batches of batch
// changes, one update each side per batch.
func cdcIncrementalAt(e *env, rows, batch int) (result, error) {
	name := fmt.Sprintf("cdc-incremental (%s rows)", humanCount(rows))
	// The target is merge-on-read (deletion vectors), as a table that takes small batches of
	// changes spread over many files should be: a batch writes its own rows, not the table.
	spec, err := writeSpec(e.dir, cdcSpec(1, 0, false)+mergeOnRead)
	if err != nil {
		return result{}, err
	}
	landing, batches, out := filepath.Join(e.dir, "landing"), filepath.Join(e.dir, "batches"), filepath.Join(e.dir, "baseline")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return result{}, err
	}
	// The initial table: one insert per key.
	init, err := createJSONL(filepath.Join(batches, "initial.json"))
	if err != nil {
		return result{}, err
	}
	r := rand.New(rand.NewPCG(3, uint64(rows)))
	for i := 0; i < rows; i++ {
		init.change("I", int64(i), r.Int64N(1_000_000), int64(i+1))
	}
	if _, err := init.close(); err != nil {
		return result{}, err
	}
	// Ten batches: updates of existing keys, 5% deletes, 1% new keys; seq keeps increasing.
	seq := int64(rows)
	var size int64
	for b := 0; b < 10; b++ {
		w, err := createJSONL(filepath.Join(batches, fmt.Sprintf("batch-%02d.json", b)))
		if err != nil {
			return result{}, err
		}
		for i := 0; i < batch; i++ {
			seq++
			id, op := int64(r.IntN(rows)), "U"
			switch n := r.IntN(100); {
			case n < 5:
				op = "D"
			case n < 6:
				id = int64(rows + r.IntN(rows))
			}
			w.change(op, id, r.Int64N(1_000_000), seq)
		}
		n, err := w.close()
		if err != nil {
			return result{}, err
		}
		size += n
	}
	db := filepath.Join(e.dir, "baseline.duckdb")
	// Set-up, not timed.
	if err := os.Link(filepath.Join(batches, "initial.json"), filepath.Join(landing, "initial.json")); err != nil {
		return result{}, err
	}
	if _, err := e.runOurs(spec); err != nil {
		return result{}, err
	}
	if _, err := runBaselineChild(e.ctx, "cdc_incremental_init.sql", map[string]string{"db": db, "file": filepath.Join(batches, "initial.json"), "out": out}); err != nil {
		return result{}, err
	}
	var ours, base measure
	for b := 0; b < 10; b++ {
		file := filepath.Join(batches, fmt.Sprintf("batch-%02d.json", b))
		if err := os.Link(file, filepath.Join(landing, filepath.Base(file))); err != nil {
			return result{}, err
		}
		m, err := e.runOurs(spec)
		if err != nil {
			return result{}, err
		}
		ours.add(m)
		if m, err = runBaselineChild(e.ctx, "cdc_incremental_batch.sql", map[string]string{"db": db, "file": file, "out": out}); err != nil {
			return result{}, err
		}
		base.add(m)
	}
	if err := e.check(name, filepath.Join(e.dir, "storage"), "target", filepath.Join(out, "target.parquet"), changeCols); err != nil {
		return result{}, err
	}
	return line(name, size, ours, base), nil
}

// runSCD2 runs two lines over the same ten files of events (5% of them one to three files later
// than their place, so that they come after newer events of their key):
//
//   - "scd2": all ten files landed, one update of every event against the baseline's one query
//     over all of them (scd2.sql);
//   - "scd2 (10 updates)": one file landed at a time and an update after each; after each arrival
//     the baseline recomputes the history from every file landed so far and re-exports it, as a
//     user without a lake format must to have an up-to-date table. Both sides are summed over the
//     ten arrivals.
//
// Our target is merge-on-read (delta.enableDeletionVectors), as cdc-incremental's is: an update
// marks the rows it replaces deleted instead of rewriting the files that hold them.
func runSCD2(e *env) ([]result, error) {
	events, keys := e.scaled(1_000_000, 1000), e.scaled(100_000, 100)
	batches := filepath.Join(e.dir, "batches")
	size, err := genChanges(batches, events, keys, (events+9)/10, false, 0.05, 4)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(batches, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []result
	for _, l := range []struct {
		name, dir     string
		perFile, view bool
	}{
		{"scd2", "one-update", false, false},
		{"scd2 (view)", "one-update-view", false, true},
		{"scd2 (10 updates)", "ten-updates", true, false},
		{"scd2 (10 updates, view)", "ten-updates-view", true, true},
	} {
		sub := e.sub(filepath.Join(e.dir, l.dir))
		r, err := scd2Line(sub, l.name, files, l.perFile, l.view)
		if err != nil {
			return nil, err
		}
		r.InputBytes = size
		out = append(out, r)
	}
	return out, nil
}

// scd2Line lands files into e.dir/landing, all at once or (perFile) one at a time, and after the
// landing (or each) runs one update on each side: ours into an SCD type 2 target (from a bronze
// table, or with view through a view over the files), the baseline's
// scd2.sql over the files landed so far (all at once: e.repeat times each, the median kept, as
// pair does). It compares the final tables.
func scd2Line(e *env, name string, files []string, perFile, view bool) (result, error) {
	spec, err := writeSpec(e.dir, cdcSpec(2, 0, view)+mergeOnRead)
	if err != nil {
		return result{}, err
	}
	landing, out := filepath.Join(e.dir, "landing"), filepath.Join(e.dir, "baseline")
	var ours, base measure
	if !perFile {
		for _, f := range files {
			if err := os.Link(f, filepath.Join(landing, filepath.Base(f))); err != nil {
				return result{}, err
			}
		}
		ours, base, err = e.pair(filepath.Join(e.dir, "storage"), out,
			func() (measure, error) { return e.runOurs(spec) },
			func() (measure, error) {
				return runBaselineChild(e.ctx, "scd2.sql", map[string]string{"landing": landing, "out": out})
			})
		if err != nil {
			return result{}, err
		}
	}
	for i := 0; perFile && i < len(files); i++ {
		if err := os.Link(files[i], filepath.Join(landing, filepath.Base(files[i]))); err != nil {
			return result{}, err
		}
		m, err := e.runOurs(spec)
		if err != nil {
			return result{}, err
		}
		ours.add(m)
		if m, err = runBaselineChild(e.ctx, "scd2.sql", map[string]string{"landing": landing, "out": out}); err != nil {
			return result{}, err
		}
		base.add(m)
	}
	cols := append(changeCols[:len(changeCols):len(changeCols)], column{"__START_AT", "BIGINT"}, column{"__END_AT", "BIGINT"})
	if err := e.check(name, filepath.Join(e.dir, "storage"), "target", filepath.Join(out, "target.parquet"), cols); err != nil {
		return result{}, err
	}
	return line(name, 0, ours, base), nil
}

// runMV ingests the sales rows (not timed), then refreshes the GROUP BY view alone; the baseline
// runs the same query on the bronze table's Parquet files.
func runMV(e *env) ([]result, error) {
	rows := e.scaled(10_000_000, 1000)
	spec, err := writeSpec(e.dir, `  - name: sales
    source:
      path: ./landing
      format: json
      schema: `+salesSchema+`
  - name: by_shop
    query: SELECT shop, count(*) AS n, sum(amount) AS total FROM sales GROUP BY shop
`)
	if err != nil {
		return nil, err
	}
	if _, err := genSales(filepath.Join(e.dir, "landing"), rows, max(1000, rows/8), 5); err != nil {
		return nil, err
	}
	if _, err := e.runOurs(spec, "--refresh", "sales"); err != nil {
		return nil, err
	}
	storage := filepath.Join(e.dir, "storage")
	files, deleted, size, err := tableFiles(filepath.Join(storage, "tables", "sales"))
	if err != nil {
		return nil, err
	}
	if len(deleted) > 0 {
		return nil, fmt.Errorf("the sales table has deletion vectors; the baseline script reads its Parquet files as they are")
	}
	ours, err := e.runOurs(spec, "--refresh", "by_shop")
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	out := filepath.Join(e.dir, "baseline")
	base, err := runBaselineChild(e.ctx, "mv.sql", map[string]string{"files": strings.Join(quoted, ", "), "out": out})
	if err != nil {
		return nil, err
	}
	cols := []column{{"shop", "BIGINT"}, {"n", "BIGINT"}, {"total", "DECIMAL(18,2)"}}
	if err := e.check("mv", storage, "by_shop", filepath.Join(out, "by_shop.parquet"), cols); err != nil {
		return nil, err
	}
	return []result{line("mv", size, ours, base)}, nil
}

func line(name string, size int64, ours, base measure) result {
	return result{Scenario: name, InputBytes: size, OursS: ours.wall.Seconds(), BaselineS: base.wall.Seconds(),
		OursPeakMiB: ours.peakMiB, BaselinePeakMiB: base.peakMiB}
}

// humanCount prints 10000000 as 10M, 100000 as 100k.
func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
