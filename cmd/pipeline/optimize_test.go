package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/spec"
	"tributary/update"
)

// TestMaintenanceCommandErrors: the exit status and message of optimize and vacuum when the
// command line or the state of the storage does not allow them.
func TestMaintenanceCommandErrors(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(specFile, []byte(accountsSpec(map[string]string{"delta.deletedFileRetentionDuration": "interval 1 hours"})), 0o644); err != nil {
		t.Fatal(err)
	}
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	conf := []string{"--conf", "landing=" + landing, "--conf", "storage=" + storage}
	check := func(code int, want string, args ...string) {
		t.Helper()
		r := pipeline(t, nil, append(args, conf...)...)
		if r.code != code || !strings.Contains(r.stderr+r.stdout, want) {
			t.Errorf("pipeline %s: exit %d\n%s%s\nwant exit %d and %q", strings.Join(args, " "), r.code, r.stdout, r.stderr, code, want)
		}
	}
	// The command to run first is the one that fills the storage these read: with their --conf.
	runFirst := "run `pipeline run " + specFile + " --conf landing=" + landing + " --conf storage=" + storage + "` first"
	check(1, "has no table yet at "+storage+": "+runFirst, "optimize", specFile)
	check(1, "has no table yet at "+filepath.Join(storage, "tables", "raw")+": "+runFirst, "vacuum", specFile, "raw")
	check(1, "has no table yet at "+filepath.Join(storage, "tables", "raw")+": "+runFirst, "show", specFile, "raw")
	check(1, "has no update yet at "+filepath.Join(storage, "system", "events")+": "+runFirst, "events", specFile)
	landBatch(t, landing, 1)
	mustRun(t, append([]string{"run", specFile}, conf...)...)
	check(2, "has no dataset", "optimize", specFile, "nope")
	check(2, "accepts 1 or 2 arguments", "vacuum", specFile, "raw", "accounts")
	check(2, "--retain", "vacuum", specFile, "--retain", "seven days")
	check(0, "accounts_history: nothing to compact", "optimize", specFile, "accounts_history")
	// The datasets allow 1 hour; the event log keeps a day (eventlog.Housekeeping) and is skipped.
	check(0, "event log: skipped: --retain 1h is shorter than its delta.deletedFileRetentionDuration (1 day)", "vacuum", specFile, "--retain", "1h", "--dry-run")
	check(2, "raw: --retain 30m is shorter than its delta.deletedFileRetentionDuration (1h)", "vacuum", specFile, "raw", "--retain", "30m")
	// A property lowered in the spec reaches the table with the next update: until then, the
	// refusal says so rather than asking for what the spec already says.
	if err := os.WriteFile(specFile, []byte(accountsSpec(map[string]string{"delta.deletedFileRetentionDuration": "interval 30 minutes"})), 0o644); err != nil {
		t.Fatal(err)
	}
	check(2, `raw: --retain 30m is shorter than its delta.deletedFileRetentionDuration (1h); the spec sets it to "interval 30 minutes", which the table takes with the next update: `+runFirst, "vacuum", specFile, "raw", "--retain", "30m")

	p, err := spec.Load(specFile, map[string]string{"landing": landing, "storage": storage})
	if err != nil {
		t.Fatal(err)
	}
	release, err := update.Lock(p, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	check(1, "locked by another update", "optimize", specFile)
	check(1, "locked by another update", "vacuum", specFile)
}
