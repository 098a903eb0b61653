package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrashDuringMaintenance kills updates with SIGKILL inside the automatic maintenance that
// follows a flow's commit (half way through a VACUUM or a metadata cleanup, before an automatic
// OPTIMIZE commits, before a checkpoint is written, before _last_checkpoint names it), with
// retentions of zero so that every checkpoint (each second commit) vacuums and cleans up, and
// checks that the next updates read on without a lost or duplicated row (and that two updates
// without a crash then clean up every log): the bronze table holds
// every input line once, the SCD type 1 target the rows semantics.md gives, the SCD type 2
// target the history of one clean run, copy-on-write and merge-on-read (deletion vectors).
func TestCrashDuringMaintenance(t *testing.T) {
	t.Parallel()
	points := []string{"vacuum.mid-delete", "cleanup.mid-delete", "optimize.before-commit", "checkpoint.before-write", "checkpoint.before-last-checkpoint"}
	for _, dv := range []string{"false", "true"} {
		for _, point := range points {
			t.Run("deletionVectors="+dv+"/"+point, func(t *testing.T) {
				t.Parallel()
				tmp := t.TempDir()
				specFile := filepath.Join(tmp, "pipeline.yaml")
				props := map[string]string{
					"delta.checkpointInterval":           "2",
					"delta.deletedFileRetentionDuration": "interval 0 seconds",
					"delta.logRetentionDuration":         "interval 0 seconds",
					"delta.enableDeletionVectors":        dv,
					"pipelines.autoOptimize.minNumFiles": "2",
				}
				if err := os.WriteFile(specFile, []byte(accountsSpec(props)), 0o644); err != nil {
					t.Fatal(err)
				}
				landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
				conf := []string{"--conf", "landing=" + landing, "--conf", "storage=" + storage}
				run := func(args ...string) string { return mustRun(t, append(args, conf...)...) }
				const batches = 8
				killed := 0
				for b := 1; b <= batches; b++ {
					landBatch(t, landing, b)
					r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, append([]string{"run", specFile}, conf...)...)
					switch r.code {
					case -1:
						killed++
					case 0: // the update did not reach the point
					default:
						t.Fatalf("batch %d, run with TRIBUTARY_FAULT=%s: exit %d\n%s%s", b, point, r.code, r.stdout, r.stderr)
					}
					run("run", specFile)
				}
				if killed < batches/2 {
					t.Fatalf("%d of %d updates were killed at %s, want at least %d", killed, batches, point, batches/2)
				}
				// Two updates without a crash: each table writes a checkpoint again, and its
				// maintenance runs.
				for b := batches + 1; b <= batches+2; b++ {
					landBatch(t, landing, b)
					run("run", specFile)
				}
				assertRows(t, "raw", readJSONL(t, run("show", specFile, "raw", "--format", "jsonl")), rowsOf(t, expectedRaw(batches+2)...))
				assertRows(t, "accounts", readJSONL(t, run("show", specFile, "accounts", "--format", "jsonl")), rowsOf(t, expectedAccounts(batches+2)...))
				assertRows(t, "accounts_history", readJSONL(t, run("show", specFile, "accounts_history", "--format", "jsonl")), cleanHistory(t, specFile, landing))
				// The maintenance did run: the logs were cleaned up.
				for _, ds := range []string{"raw", "accounts", "accounts_history"} {
					if _, err := os.Stat(filepath.Join(storage, "tables", ds, "_delta_log", "00000000000000000000.json")); err == nil {
						t.Errorf("%s: the log still starts at version 0", ds)
					}
				}
				if out := run("events", specFile, "--format", "jsonl"); !strings.Contains(out, "COMPLETED") {
					t.Errorf("the event log has no COMPLETED update:\n%s", out)
				}
				run("history", specFile, "accounts")
			})
		}
	}
}
