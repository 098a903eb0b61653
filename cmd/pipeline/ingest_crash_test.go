package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestCrashCSVQuarantine kills a CSV ingest with quarantine expectations and
// max_files_per_trigger 1 with SIGKILL at each point of a batch (data files written; quarantine
// committed; dataset committed), runs again, and checks that the bronze and quarantine tables
// hold every input row exactly once, as a clean run gives.
func TestIngestCrashCSVQuarantine(t *testing.T) {
	for _, point := range []string{"ingest.after-data-files", "ingest.after-quarantine-commit", "ingest.after-commit"} {
		point := point
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			spec := filepath.Join(tmp, "pipeline.yaml")
			if err := os.WriteFile(spec, []byte(`name: crash_csv
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: csv
      schema: "id INT, amount DECIMAL(10,2)"
      options: {header: true}
      max_files_per_trigger: 1
    expectations:
      - {name: positive, expect: "amount > 0", on_violation: quarantine}
`), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{"a.csv": "id,amount\n1,5\n2,-5\n", "b.csv": "id,amount\n3,7\n4,-7\n", "c.csv": "id,amount\n5,9\n"} {
				copyString(t, filepath.Join(tmp, "landing", name), body)
			}
			r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, "run", spec)
			if r.code != -1 {
				t.Fatalf("exit %d, want SIGKILL\n%s%s", r.code, r.stdout, r.stderr)
			}
			out := mustRun(t, "run", spec)
			if !strings.Contains(out, "positive") {
				t.Errorf("no data-quality table in the output:\n%s", out)
			}
			assertRows(t, "raw", readJSONL(t, mustRun(t, "show", spec, "raw", "--format", "jsonl")),
				readJSONL(t, `{"id": 1, "amount": 5.00}`+"\n"+`{"id": 3, "amount": 7.00}`+"\n"+`{"id": 5, "amount": 9.00}`))
			assertRows(t, "raw_quarantine", readJSONL(t, mustRun(t, "show", spec, "raw_quarantine", "--format", "jsonl")),
				readJSONL(t, `{"id": 2, "amount": -5.00, "_failed_expectations": "[\"positive\"]"}`+"\n"+`{"id": 4, "amount": -7.00, "_failed_expectations": "[\"positive\"]"}`))
		})
	}
}

func copyString(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
