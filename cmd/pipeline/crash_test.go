package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrashRecovery kills the process with SIGKILL at points of an update (after data files are
// written but before the commit; right after the commit), runs again, and checks that the final
// tables equal a clean run's: no lost and no duplicated rows (spec.md §3, "A commit is atomic").
func TestCrashRecovery(t *testing.T) {
	points := []string{
		"ingest.after-data-files",
		"ingest.after-commit",
		"apply.after-data-files",
		"apply.after-commit",
	}
	for _, point := range points {
		point := point
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
			conf := exampleArgs(landing, storage)
			for i, f := range exampleFiles {
				copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", f), filepath.Join(landing, f))
				if i == 1 {
					r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, append([]string{"run", exampleSpec}, conf...)...)
					if r.code != -1 {
						t.Fatalf("the run with TRIBUTARY_FAULT=%s exited %d, want it killed by SIGKILL\n%s%s", point, r.code, r.stdout, r.stderr)
					}
				}
				mustRun(t, append([]string{"run", exampleSpec}, conf...)...)
			}
			got := readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders", "--format", "jsonl"}, conf...)...))
			assertRows(t, "orders after recovery", got, rowsOf(t, afterBatch[3]...))
			// Every input line is in bronze exactly once: 4 + 3 + 3 + 2 rows.
			bronze := readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders_changes", "--format", "jsonl"}, conf...)...))
			if len(bronze) != 12 {
				t.Errorf("orders_changes has %d rows after recovery, want 12 (each input line once)", len(bronze))
			}
			// The change data feed holds each change once.
			cdf := mustRun(t, append([]string{"changes", exampleSpec, "orders", "--from-version", "0", "--format", "jsonl"}, conf...)...)
			if n := strings.Count(cdf, `"insert"`); n != 3 {
				t.Errorf("change data feed has %d inserts, want 3:\n%s", n, cdf)
			}
			if n := strings.Count(cdf, `"delete"`); n != 1 {
				t.Errorf("change data feed has %d deletes, want 1:\n%s", n, cdf)
			}
			// No lock is left behind and the storage is usable.
			if _, err := os.Stat(filepath.Join(storage, "tables", "orders", "_delta_log")); err != nil {
				t.Fatal(err)
			}
		})
	}
}
