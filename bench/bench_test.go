package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
	"tributary/sqlengine"
)

// TestMain lets the test binary serve as the launcher and the baseline child: the scenarios
// re-execute os.Executable() with -measure and -baseline, which under `go test` is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == measureFlag {
		os.Exit(measureMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == baselineFlag {
		if err := baselineMain(os.Args[2:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestScenarios runs every scenario at a tiny scale: both sides run and their rows agree
// (runAll fails on a difference).
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the pipeline binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pipeline")
	if out, err := exec.Command("go", "build", "-o", bin, "tributary/cmd/pipeline").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	profiles := filepath.Join(dir, "profiles")
	results, err := runAll(context.Background(), options{scale: 0.0005, pipeline: bin, dir: filepath.Join(dir, "work"), profile: profiles}, func(result) {})
	if err != nil {
		t.Fatal(err)
	}
	// -profile: one CPU profile a run of ours, numbered in order, named after its scenario's
	// folder, each a gzipped pprof file.
	entries, err := os.ReadDir(profiles)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, ent := range entries {
		num, folder, ok := strings.Cut(strings.TrimSuffix(ent.Name(), ".cpu.pprof"), "-")
		if !ok || num != fmt.Sprintf("%03d", i+1) || !strings.HasSuffix(ent.Name(), ".cpu.pprof") {
			t.Errorf("profile %d is named %s, want %03d-FOLDER.cpu.pprof", i+1, ent.Name(), i+1)
		}
		seen[folder] = true
		raw, err := os.ReadFile(filepath.Join(profiles, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
			t.Errorf("%s is not a gzipped pprof profile", ent.Name())
		}
	}
	for _, folder := range []string{"ingest", "cdc-bulk", "one-update-view", "ten-updates", "mv"} {
		if !seen[folder] {
			t.Errorf("no profile of a run in %s among %d", folder, len(entries))
		}
	}
	want := []string{"ingest", "cdc-bulk", "cdc-bulk (view)", "cdc-incremental (500 rows)", "cdc-incremental (5k rows)", "scd2", "scd2 (view)", "scd2 (10 updates)", "scd2 (10 updates, view)", "mv"}
	var got []string
	for _, r := range results {
		got = append(got, r.Scenario)
		if r.InputBytes <= 0 || r.OursS <= 0 || r.BaselineS <= 0 || r.OursPeakMiB <= 0 || r.BaselinePeakMiB <= 0 {
			t.Errorf("%s: a measure is missing: %+v", r.Scenario, r)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("scenarios run: %q, want %q", got, want)
	}
}

// TestCompareFindsDifferences checks the comparison itself: a Delta table compared with a
// Parquet file holding one row changed is reported, naming the row.
func TestCompareFindsDifferences(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the pipeline binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pipeline")
	if out, err := exec.Command("go", "build", "-o", bin, "tributary/cmd/pipeline").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	spec, err := writeSpec(dir, cdcSpec(1, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	w, err := createJSONL(filepath.Join(dir, "landing", "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	w.change("U", 1, 150, 1)
	w.change("U", 2, 250, 2)
	if _, err := w.close(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "run", spec).CombinedOutput(); err != nil {
		t.Fatalf("pipeline run: %v\n%s", err, out)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	table := filepath.Join(dir, "storage", "tables", "target")
	for _, tc := range []struct {
		name, rows string
		same       bool
	}{
		{"same", "(1, 'name-1-1', 1.50, 1), (2, 'name-2-2', 2.50, 2)", true},
		{"changed", "(1, 'name-1-1', 1.50, 1), (2, 'name-2-2', 2.51, 2)", false},
		{"missing", "(1, 'name-1-1', 1.50, 1)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pq := filepath.Join(dir, tc.name+".parquet")
			if _, err := db.Exec("COPY (SELECT * FROM (VALUES " + tc.rows + ") AS v(id, name, amount, seq)) TO '" + pq + "' (FORMAT parquet)"); err != nil {
				t.Fatal(err)
			}
			err := compareTables(context.Background(), table, pq, changeCols)
			if tc.same && err != nil {
				t.Errorf("reported a difference: %v", err)
			}
			if !tc.same && err == nil {
				t.Error("no difference reported")
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}

// TestCompareWithDeletionVectors compares a Delta table whose file has a deletion vector (rows
// 1 and 3 of five deleted) with Parquet baselines: the three live rows compare equal; the five
// rows of the data file, deleted ones included, do not.
func TestCompareWithDeletionVectors(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table")
	tb := delta.New(table)
	s, err := schema.ParseDDL("id BIGINT, name STRING, amount DECIMAL(18,2), seq BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	tx := tb.Begin(nil)
	tx.SetMetadata(delta.Metadata{Schema: s, Configuration: map[string]string{delta.ConfigEnableDeletionVectors: "true"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i := int64(1); i <= 5; i++ {
		rows = append(rows, []any{i, "n" + strconv.FormatInt(i, 10), schema.Decimal(i * 100), i})
	}
	a, err := tb.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := tb.Snapshot(-1)
	tx = tb.Begin(snap)
	tx.Add(a)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	dvs, err := tb.WriteDeletionVectors([][]uint64{{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ = tb.Snapshot(-1)
	tx = tb.Begin(snap)
	tx.Remove(tb.RemoveFor(a, 0))
	a.DeletionVector = dvs[0]
	tx.Add(a)
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name, rows string
		same       bool
	}{
		{"live rows", "(1, 'n1', 1.00, 1), (3, 'n3', 3.00, 3), (5, 'n5', 5.00, 5)", true},
		{"all rows", "(1, 'n1', 1.00, 1), (2, 'n2', 2.00, 2), (3, 'n3', 3.00, 3), (4, 'n4', 4.00, 4), (5, 'n5', 5.00, 5)", false},
	} {
		pq := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".parquet")
		if _, err := db.Exec("COPY (SELECT * FROM (VALUES " + tc.rows + ") AS v(id, name, amount, seq)) TO '" + pq + "' (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
		err := compareTables(context.Background(), table, pq, changeCols)
		if tc.same && err != nil {
			t.Errorf("%s: reported a difference: %v", tc.name, err)
		}
		if !tc.same && (err == nil || !strings.Contains(err.Error(), "ours has 3 rows, the baseline 5")) {
			t.Errorf("%s: %v, want the 3 live rows against 5", tc.name, err)
		}
	}
}

// TestRunChildPeak: the peak memory runChild reports is the child's own, not the bench's: with
// 300 MiB held (and touched) by this process, a shell that does nothing reports a few MiB, and
// one that builds a 100 MB string reports at least that.
func TestRunChildPeak(t *testing.T) {
	held := make([]byte, 300<<20)
	for i := range held {
		held[i] = byte(i)
	}
	ctx := context.Background()
	small, err := runChild(ctx, "sh", "-c", "exit 0")
	if err != nil {
		t.Fatal(err)
	}
	big, err := runChild(ctx, "sh", "-c", `x=$(head -c 100000000 /dev/zero | tr '\0' a); test ${#x} -eq 100000000`)
	if err != nil {
		t.Fatal(err)
	}
	if small.peakMiB <= 0 || small.peakMiB > 50 {
		t.Errorf("an idle shell's peak is %.1f MiB while the bench holds %d MiB; want a few MiB", small.peakMiB, len(held)>>20)
	}
	if big.peakMiB < 95 {
		t.Errorf("a shell holding a 100 MB string peaked at %.1f MiB; want at least 95", big.peakMiB)
	}
	if _, err := runChild(ctx, "sh", "-c", "exit 3"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing child: %v, want its exit status 3", err)
	}
	runtime.KeepAlive(held)
}

// TestMedianAndPair: a side's figure is its run of median wall time (the lower middle of an even
// count) with the highest peak of its runs; pair runs the sides in turn, e.repeat times each,
// each from an empty output.
func TestMedianAndPair(t *testing.T) {
	t.Parallel()
	ms := func(walls ...int) []measure {
		var out []measure
		for i, w := range walls {
			out = append(out, measure{wall: time.Duration(w) * time.Second, peakMiB: float64(10 * (i + 1))})
		}
		return out
	}
	if m := median(ms(3, 1, 2)); m.wall != 2*time.Second || m.peakMiB != 30 {
		t.Errorf("median of 3, 1, 2 s: %v, %v MiB; want 2s, 30 MiB", m.wall, m.peakMiB)
	}
	if m := median(ms(4, 1, 3, 2)); m.wall != 2*time.Second || m.peakMiB != 40 {
		t.Errorf("median of 4, 1, 3, 2 s: %v, %v MiB; want 2s, 40 MiB", m.wall, m.peakMiB)
	}

	dir := t.TempDir()
	e := &env{repeat: 3, dir: dir}
	oursDir, baseDir := filepath.Join(dir, "storage"), filepath.Join(dir, "out")
	var calls []string
	side := func(name, d string, walls []int) func() (measure, error) {
		n := 0
		return func() (measure, error) {
			if _, err := os.Stat(filepath.Join(d, "left-over")); err == nil {
				t.Errorf("%s run %d: the output of the run before is still there", name, n+1)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				return measure{}, err
			}
			if err := os.WriteFile(filepath.Join(d, "left-over"), nil, 0o644); err != nil {
				return measure{}, err
			}
			calls = append(calls, name)
			n++
			return measure{wall: time.Duration(walls[n-1]) * time.Second, peakMiB: float64(n)}, nil
		}
	}
	ours, base, err := e.pair(oursDir, baseDir, side("ours", oursDir, []int{5, 9, 4}), side("base", baseDir, []int{2, 1, 7}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, " "); got != "ours base base ours ours base" {
		t.Errorf("runs in the order %s, want the sides in turn, three times, the baseline first in the second round", got)
	}
	if ours.wall != 5*time.Second || base.wall != 2*time.Second || ours.peakMiB != 3 || base.peakMiB != 3 {
		t.Errorf("ours %v (%v MiB), base %v (%v MiB); want the medians 5s and 2s, peaks 3 MiB", ours.wall, ours.peakMiB, base.wall, base.peakMiB)
	}
}

// TestBaselineByHand runs a baseline script as a user would by hand (README "Profiling"): a
// script named by a path is refused with the names of the scripts, and a missing out folder is
// made.
func TestBaselineByHand(t *testing.T) {
	err := baselineMain([]string{"bench/baseline/ingest.sql"})
	if err == nil || !strings.Contains(err.Error(), "ingest.sql, mv.sql") || !strings.Contains(err.Error(), "not a path") {
		t.Fatalf("a script given by path: got %v, want the scripts' names and \"not a path\"", err)
	}
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := `{"id":1,"shop":2,"name":"a","amount":1.50,"note":null}` + "\n" + `{"id":2,"shop":2,"name":"b","amount":2.25,"note":"x"}` + "\n"
	if err := os.WriteFile(filepath.Join(landing, "a.json"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "nested")
	if err := baselineMain([]string{"ingest.sql", "landing=" + landing, "out=" + out}); err != nil {
		t.Fatal(err)
	}
	db, err := sqlengine.OpenDB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	var total float64
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*), sum(amount)::DOUBLE FROM read_parquet('%s')", filepath.Join(out, "sales.parquet"))).Scan(&n, &total); err != nil {
		t.Fatal(err)
	}
	if n != 2 || total != 3.75 {
		t.Fatalf("sales.parquet: %d rows summing to %v, want 2 rows summing to 3.75", n, total)
	}
}
