package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrashRecovery kills the process with SIGKILL at points of an update (after data files are
// written but before the commit; right after the commit), runs again, and checks that the final
// tables equal a clean run's: no lost and no duplicated rows (spec.md §3, "A commit is atomic").
// It does so for the example as it is (copy-on-write) and with orders merge-on-read (deletion
// vectors).
func TestCrashRecovery(t *testing.T) {
	text, err := os.ReadFile(exampleSpec)
	if err != nil {
		t.Fatal(err)
	}
	const gc = `      pipelines.cdc.tombstoneGCThresholdInSeconds: "172800"`
	if !strings.Contains(string(text), gc) {
		t.Fatal("the example spec no longer has the line this test extends")
	}
	morSpec := filepath.Join(t.TempDir(), "pipeline.yaml")
	mor := strings.Replace(string(text), gc, gc+"\n      delta.enableDeletionVectors: \"true\"", 1)
	if err := os.WriteFile(morSpec, []byte(mor), 0o644); err != nil {
		t.Fatal(err)
	}
	points := []string{
		"ingest.after-data-files",
		"ingest.after-commit",
		"apply.after-data-files",
		"apply.after-commit",
	}
	for _, c := range []struct{ name, spec string }{{"copy-on-write", exampleSpec}, {"merge-on-read", morSpec}} {
		for _, point := range points {
			crashAndRecover(t, c.name+"/"+point, c.spec, point)
		}
	}
	// Without the expectation (which drops none of the example's lines), the landing reads its
	// lines by column (flows' ingest by column): killed after its data files or after its commit,
	// it too lands every line once.
	const expectation = "    expectations:\n      - {name: valid_op, expect: 'op in [\"I\", \"U\", \"D\"]', on_violation: drop}\n"
	if !strings.Contains(string(text), expectation) {
		t.Fatal("the example spec no longer has the expectation this test takes out")
	}
	byColumn := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(byColumn, []byte(strings.Replace(string(text), expectation, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{"ingest.after-data-files", "ingest.after-commit"} {
		crashAndRecover(t, "by-column/"+point, byColumn, point)
	}
	// With the change log a view over files, orders' flow reads the files itself: its offsets,
	// data files and commit are the points to be killed at.
	const bronze = "    type: streaming_table\n    comment: The shop database's change log"
	if !strings.Contains(string(text), bronze) {
		t.Fatal("the example spec no longer has the line this test changes")
	}
	viewSpec := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(viewSpec, []byte(strings.Replace(string(text), bronze, "    type: view\n    comment: The shop database's change log", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{"apply.after-offsets", "apply.after-data-files", "apply.after-commit"} {
		crashAndRecover(t, "view/"+point, viewSpec, point)
	}
}

// crashAndRecover is one case of TestCrashRecovery: the example's batches through specPath, killed at
// point during the second batch.
func crashAndRecover(t *testing.T, name, specPath, point string) {
	t.Run(name, func(t *testing.T) {
		{
			t.Parallel()
			tmp := t.TempDir()
			landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
			conf := exampleArgs(landing, storage)
			for i, f := range exampleFiles {
				copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", f), filepath.Join(landing, f))
				if i == 1 {
					r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, append([]string{"run", specPath}, conf...)...)
					if r.code != -1 {
						t.Fatalf("the run with TRIBUTARY_FAULT=%s exited %d, want it killed by SIGKILL\n%s%s", point, r.code, r.stdout, r.stderr)
					}
				}
				mustRun(t, append([]string{"run", specPath}, conf...)...)
			}
			got := readJSONL(t, mustRun(t, append([]string{"show", specPath, "orders", "--format", "jsonl"}, conf...)...))
			assertRows(t, "orders after recovery", got, rowsOf(t, afterBatch[3]...))
			// Every input line is in bronze exactly once: 4 + 3 + 3 + 2 rows.
			if text, _ := os.ReadFile(specPath); strings.Contains(string(text), "type: view") {
				// orders_changes is a view over files: no table to count them in.
			} else if bronze := readJSONL(t, mustRun(t, append([]string{"show", specPath, "orders_changes", "--format", "jsonl"}, conf...)...)); len(bronze) != 12 {
				t.Errorf("orders_changes has %d rows after recovery, want 12 (each input line once)", len(bronze))
			}
			// The change data feed holds each change once.
			cdf := mustRun(t, append([]string{"changes", specPath, "orders", "--from-version", "0", "--format", "jsonl"}, conf...)...)
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
			v0, err := os.ReadFile(filepath.Join(storage, "tables", "orders", "_delta_log", "00000000000000000000.json"))
			if err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(specPath)
			if err != nil {
				t.Fatal(err)
			}
			if mor := strings.Contains(string(text), "delta.enableDeletionVectors"); mor != strings.Contains(string(v0), `"readerFeatures":["deletionVectors"]`) {
				t.Errorf("merge-on-read %v, but the table's first commit is\n%s", mor, v0)
			}
		}
	})
}

// TestCrashRecoveryDeletionVectors kills a merge-on-read update (delta.enableDeletionVectors) at
// each point, after it wrote its deletion vector file and new data files or after it committed,
// and checks that a re-run ends with the rows and change data feed of a clean run: orders 1001
// (untouched), 1002 (updated), 1003 (deleted), the first file kept with a deletion vector. The
// target is SCD type 1, and SCD type 2 (every version, the open ones of 1002 and 1003 closed).
func TestCrashRecoveryDeletionVectors(t *testing.T) {
	text, err := os.ReadFile(exampleSpec)
	if err != nil {
		t.Fatal(err)
	}
	const gc = `      pipelines.cdc.tombstoneGCThresholdInSeconds: "172800"`
	const scd1 = "      stored_as_scd_type: 1\n"
	if !strings.Contains(string(text), scd1) {
		t.Fatal("the example spec no longer has the line this test changes")
	}
	mor := strings.Replace(string(text), gc, gc+"\n      delta.enableDeletionVectors: \"true\"", 1)
	batches := []string{
		`{"op": "I", "order_id": 1001, "status": "placed", "amount": 25.50, "seq": 1}
{"op": "I", "order_id": 1002, "status": "placed", "amount": 12.00, "seq": 2}
{"op": "I", "order_id": 1003, "status": "placed", "amount": 60.00, "seq": 3}
`,
		`{"op": "U", "order_id": 1002, "status": "paid", "amount": 12.00, "seq": 4}
{"op": "D", "order_id": 1003, "status": null, "amount": null, "seq": 5}
`,
	}
	for _, c := range []struct {
		scd  string
		spec string
		rows []string
		cdf  map[string]int
	}{
		{"scd1", mor, []string{
			`{"order_id": 1001, "status": "placed", "amount": 25.50, "seq": 1}`,
			`{"order_id": 1002, "status": "paid", "amount": 12.00, "seq": 4}`,
		}, map[string]int{`"insert"`: 3, `"update_preimage"`: 1, `"update_postimage"`: 1, `"delete"`: 1}},
		// SCD type 2: the update closes 1002's open version and opens one; the delete closes
		// 1003's. Each closed version is an update of its open row (preimage, postimage), the
		// new version an insert.
		{"scd2", strings.Replace(mor, scd1, "      stored_as_scd_type: 2\n", 1), []string{
			`{"order_id": 1001, "status": "placed", "amount": 25.50, "seq": 1, "__START_AT": 1, "__END_AT": null}`,
			`{"order_id": 1002, "status": "placed", "amount": 12.00, "seq": 2, "__START_AT": 2, "__END_AT": 4}`,
			`{"order_id": 1002, "status": "paid", "amount": 12.00, "seq": 4, "__START_AT": 4, "__END_AT": null}`,
			`{"order_id": 1003, "status": "placed", "amount": 60.00, "seq": 3, "__START_AT": 3, "__END_AT": 5}`,
		}, map[string]int{`"insert"`: 4, `"update_preimage"`: 2, `"update_postimage"`: 2, `"delete"`: 0}},
	} {
		specPath := filepath.Join(t.TempDir(), "pipeline.yaml")
		if err := os.WriteFile(specPath, []byte(c.spec), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, point := range []string{"", "apply.after-data-files", "apply.after-commit"} {
			crashDeletionVectors(t, c.scd+"/killed at "+point, specPath, point, batches, c.rows, c.cdf)
		}
	}
}

// crashDeletionVectors is one case of TestCrashRecoveryDeletionVectors: batches through
// specPath, the second killed at point (none when ""), then the rows and the counts of change
// data feed rows by kind checked.
func crashDeletionVectors(t *testing.T, name, specPath, point string, batches, rows []string, cdfKinds map[string]int) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		tmp := t.TempDir()
		landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
		conf := exampleArgs(landing, storage)
		if err := os.MkdirAll(landing, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, b := range batches {
			if err := os.WriteFile(filepath.Join(landing, fmt.Sprintf("batch-%d.json", i)), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if i == 1 && point != "" {
				r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, append([]string{"run", specPath}, conf...)...)
				if r.code != -1 {
					t.Fatalf("the run with TRIBUTARY_FAULT=%s exited %d, want it killed by SIGKILL\n%s%s", point, r.code, r.stdout, r.stderr)
				}
			}
			mustRun(t, append([]string{"run", specPath}, conf...)...)
		}
		got := readJSONL(t, mustRun(t, append([]string{"show", specPath, "orders", "--format", "jsonl"}, conf...)...))
		assertRows(t, "orders", got, rowsOf(t, rows...))
		cdf := mustRun(t, append([]string{"changes", specPath, "orders", "--from-version", "0", "--format", "jsonl"}, conf...)...)
		for kind, want := range cdfKinds {
			if n := strings.Count(cdf, kind); n != want {
				t.Errorf("change data feed has %d %s rows, want %d:\n%s", n, kind, want, cdf)
			}
		}
		if !strings.Contains(cdf, `{"order_id": 1003, "status": "placed", "amount": 60.00, "seq": 3`) {
			t.Errorf("no change row carries the last values of 1003:\n%s", cdf)
		}
		dvs, _ := filepath.Glob(filepath.Join(storage, "tables", "orders", "deletion_vector_*.bin"))
		if len(dvs) == 0 {
			t.Error("no deletion vector file: the update rewrote the first file instead")
		}
	})
}
