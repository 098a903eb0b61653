// Command bench measures the pipeline runner against a DuckDB baseline on the same generated
// data: go run ./bench [-scenario NAME] [-scale N] [-format table|jsonl].
//
// Every scenario generates its input deterministically (seeded) into a temporary folder, runs
// the built `pipeline` binary on a generated spec, runs the baseline (a SQL script of
// bench/baseline/ on the project's embedded DuckDB, in a child process of this binary started
// with the hidden first argument -baseline), and checks that our table and the baseline's
// Parquet output hold the same rows. Each side runs in its own process, so the peak memory is
// that process's own (getrusage's ru_maxrss). Sizes are the at -scale 1; see README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// defaultScale is the sizes: all scenarios take about 5 minutes on a 2-core machine (see README.md).
const defaultScale = 1

func main() {
	if len(os.Args) > 1 && os.Args[1] == measureFlag {
		os.Exit(measureMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == baselineFlag {
		if err := baselineMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the flag set printed the usage
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	scenario, format, pipeline, dir string
	profile                         string
	scale                           float64
	repeat                          int
	keep                            bool
}

func run(args []string, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.scenario, "scenario", "", "run only this scenario (comma-separated list): "+scenarioNames())
	fs.Float64Var(&o.scale, "scale", defaultScale, "multiplies the issue's sizes (1: 1 GB ingest, 10M events, 10M-row tables)")
	fs.IntVar(&o.repeat, "repeat", 3, "runs of each side of ingest, cdc-bulk and scd2 (one update), interleaved ABBA; the median run is reported (the other lines run once)")
	fs.StringVar(&o.format, "format", "table", "table or jsonl")
	fs.StringVar(&o.pipeline, "pipeline", "", "the pipeline binary to measure (default: go build ./cmd/pipeline into the work folder)")
	fs.StringVar(&o.dir, "dir", "", "work folder (default: a temporary one, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work folder")
	fs.StringVar(&o.profile, "profile", "", "write a CPU profile of each of our runs into `FOLDER` (NNN-RUN.cpu.pprof: NNN counts our runs, RUN is the folder the run worked in, e.g. one-update; for go tool pprof); profiling adds a little to our times")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.format != "table" && o.format != "jsonl" {
		return fmt.Errorf("-format %q: want table or jsonl", o.format)
	}
	if o.scale <= 0 {
		return fmt.Errorf("-scale %v: want a positive number", o.scale)
	}
	if o.repeat < 1 {
		return fmt.Errorf("-repeat %d: want 1 or more", o.repeat)
	}
	results, err := runAll(context.Background(), o, func(r result) {
		if o.format == "jsonl" {
			b, _ := json.Marshal(r)
			fmt.Fprintln(stdout, string(b))
		}
	})
	if err != nil {
		return err
	}
	if o.format == "table" {
		printTable(stdout, o.scale, results)
	}
	return nil
}

// runAll runs the selected scenarios in order, calling each for every result as it comes.
func runAll(ctx context.Context, o options, each func(result)) ([]result, error) {
	var selected []scenario
	for _, name := range strings.Split(o.scenario, ",") {
		found := false
		for _, s := range scenarios {
			if name == "" || s.name == name {
				selected, found = append(selected, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-scenario %q: unknown; the scenarios are %s", name, scenarioNames())
		}
	}
	dir := o.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "tributary-bench-"); err != nil {
			return nil, err
		}
		if !o.keep {
			defer os.RemoveAll(dir)
		}
	}
	bin := o.pipeline
	if bin == "" {
		bin = filepath.Join(dir, "pipeline")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "tributary/cmd/pipeline")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the pipeline binary: %w\n%s", err, out)
		}
	}
	profiles, runs := "", 0
	if o.profile != "" {
		var err error
		if profiles, err = filepath.Abs(o.profile); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			return nil, fmt.Errorf("-profile: %w", err)
		}
	}
	var results []result
	for _, s := range selected {
		e := &env{ctx: ctx, pipeline: bin, scale: o.scale, repeat: max(1, o.repeat), dir: filepath.Join(dir, s.name), profiles: profiles, runs: &runs}
		if err := os.MkdirAll(e.dir, 0o755); err != nil {
			return nil, err
		}
		rs, err := s.run(e)
		if err != nil {
			return results, fmt.Errorf("scenario %s: %w", s.name, err)
		}
		for _, r := range rs {
			each(r)
		}
		results = append(results, rs...)
		if !o.keep && o.dir == "" {
			os.RemoveAll(e.dir) // the disk is shared
		}
	}
	return results, nil
}

func scenarioNames() string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// printTable prints the results as an aligned table; ratio is ours / baseline (below 1: we are
// faster).
func printTable(w io.Writer, scale float64, results []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\tinput\tours (s)\tbaseline (s)\tratio\tours peak (MiB)\tbaseline peak (MiB)\t\n")
	for _, r := range results {
		ratio := "-"
		if r.BaselineS > 0 {
			ratio = fmt.Sprintf("%.2f", r.OursS/r.BaselineS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%s\t%.0f\t%.0f\t\n", r.Scenario, humanBytes(r.InputBytes), r.OursS, r.BaselineS, ratio, r.OursPeakMiB, r.BaselinePeakMiB)
	}
	tw.Flush()
	fmt.Fprintf(w, "scale %g; ratio = ours / baseline wall time (below 1.00: ours is faster)\n", scale)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
