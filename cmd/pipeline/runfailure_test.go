package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunFailure: a triggered update cancelled by a signal ends with exit 1 and a message that
// says so (not "context canceled"); other errors keep their text; success is no error.
func TestRunFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ee *exitError
	err := runFailure(ctx, fmt.Errorf("flow items: %w", context.Canceled))
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "the update was canceled (SIGINT or SIGTERM)") {
		t.Fatalf("cancelled: %v", err)
	}
	if err := runFailure(context.Background(), errors.New("flow items: boom")); !errors.As(err, &ee) || ee.code != 1 || err.Error() != "flow items: boom" {
		t.Fatalf("failed: %v", err)
	}
	if err := runFailure(ctx, nil); err != nil {
		t.Fatalf("success: %v", err)
	}
}

// TestFlagHintAndVersion: an unknown flag exits 2 naming the closest flag of the command;
// a long flag given with one dash is told to take two; --version prints the build's version.
func TestFlagHintAndVersion(t *testing.T) {
	t.Parallel()
	r := pipeline(t, nil, "run", "p.yaml", "--fullrefresh", "a")
	if r.code != 2 || !strings.Contains(r.stderr, "unknown flag: --fullrefresh (did you mean --full-refresh?)") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	for arg, want := range map[string]string{
		"-full-refresh-all": "unknown shorthand flag: 'f' in -full-refresh-all (long flags take two dashes: did you mean --full-refresh-all?)",
		"-contnuous":        "unknown shorthand flag: 'c' in -contnuous (long flags take two dashes: did you mean --continuous?)",
		"-conf=a=b":         "unknown shorthand flag: 'c' in -conf=a=b (long flags take two dashes: did you mean --conf?)",
		"-qqqq":             "unknown shorthand flag: 'q' in -qqqq\n",
	} {
		r = pipeline(t, nil, "run", "p.yaml", arg)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", arg, r.code, r.stderr, want)
		}
	}
	r = pipeline(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pipeline version ") {
		t.Fatalf("--version: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestEventsLatestOfSharedStorage: two specs that share a storage share its event log; `events
// --update latest` shows the latest update of the spec's own pipeline, not the other's, and says
// so when it has none.
func TestEventsLatestOfSharedStorage(t *testing.T) {
	t.Parallel()
	dir := oneRowLanding(t)
	specs := map[string]string{}
	for _, name := range []string{"first", "second"} {
		specs[name] = filepath.Join(dir, name+".yaml")
		text := "name: " + name + "\nstorage: ./storage\ndatasets:\n  - name: " + name + "_raw\n    source:\n      path: ./landing\n      format: json\n      schema: \"id BIGINT\"\n"
		if err := os.WriteFile(specs[name], []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Before any update, events has nothing to show: an error that says to run first, rather than
	// an empty table a typo in the storage path would print as well.
	for _, args := range [][]string{{"events", specs["first"]}, {"events", specs["first"], "--update", "latest"}} {
		r := pipeline(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "the event log of first has no update") || !strings.Contains(r.stderr, "run `pipeline run "+specs["first"]+"` first") {
			t.Errorf("%s on a new storage: exit %d\n%s%s\nwant exit 1, no update yet and the command to run", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	mustRun(t, "run", specs["first"])
	// The log now holds first's update only: second's latest is still none.
	if r := pipeline(t, nil, "events", specs["second"], "--update", "latest"); r.code != 1 || !strings.Contains(r.stderr, "the event log of second has no update of it yet") {
		t.Errorf("events --update latest of second before its run: exit %d\n%s", r.code, r.stderr)
	}
	mustRun(t, "run", specs["second"])
	// Without --update, each spec's events are its own pipeline's, with a note naming the other.
	for name, spec := range specs {
		r := pipeline(t, nil, "events", spec, "--format", "jsonl")
		other := map[string]string{"first": "second", "second": "first"}[name]
		if r.code != 0 || !strings.Contains(r.stderr, "is shared with pipeline "+other+": ") {
			t.Errorf("events of %s: exit %d, stderr %q; want a note naming %s", name, r.code, r.stderr, other)
		}
		evs := readJSONL(t, r.stdout)
		if len(evs) == 0 {
			t.Fatalf("events of %s: none", name)
		}
		for _, e := range evs {
			if o, _ := e["origin"].(map[string]any); o["pipeline_name"] != name {
				t.Fatalf("events of %s shows an event of pipeline %v: %v", name, o["pipeline_name"], e)
			}
		}
	}
	for name, spec := range specs {
		evs := readJSONL(t, mustRun(t, "events", spec, "--update", "latest", "--format", "jsonl"))
		// The short id the messages print names the same update.
		if o, _ := evs[0]["origin"].(map[string]any); o != nil {
			id, _ := o["update_id"].(string)
			short := readJSONL(t, mustRun(t, "events", spec, "--update", id[:8], "--format", "jsonl"))
			if len(short) != len(evs) {
				t.Errorf("%s: --update %s gives %d events, --update %s %d", name, id[:8], len(short), id, len(evs))
			}
		}
		if len(evs) == 0 {
			t.Fatalf("%s: no events", name)
		}
		for _, e := range evs {
			if o, _ := e["origin"].(map[string]any); o["pipeline_name"] != name {
				t.Fatalf("%s: --update latest shows an event of pipeline %v: %v", name, o["pipeline_name"], e)
			}
		}
	}
}

// TestDatasetNamesAnyCase: a command names a dataset in any case, as a query may (names are
// unique regardless of case): show, history and --refresh take ITEMS_RAW for items_raw.
func TestDatasetNamesAnyCase(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	land(t, spec, "1.json", 1, 2)
	mustRun(t, "run", spec)
	want := mustRun(t, "show", spec, "items_raw", "--format", "jsonl")
	if got := mustRun(t, "show", spec, "ITEMS_RAW", "--format", "jsonl"); got != want || strings.Count(got, "\n") != 2 {
		t.Errorf("show ITEMS_RAW:\n%s\nwant the 2 rows of items_raw:\n%s", got, want)
	}
	mustRun(t, "history", spec, "Items_Raw")
	land(t, spec, "2.json", 3)
	out := mustRun(t, "run", spec, "--refresh", "ITEMS_RAW")
	if !strings.Contains(summaryOf(out), "items_raw                COMPLETED  1 row from 1 file") {
		t.Errorf("run --refresh ITEMS_RAW:\n%s", out)
	}
	r := pipeline(t, nil, "run", spec, "--refresh", "ITEMS_RAW", "--full-refresh", "items_raw")
	if r.code != 2 || !strings.Contains(r.stderr, "dataset items_raw is given to both --refresh and --full-refresh") {
		t.Errorf("the same dataset in both lists, in two cases: exit %d, %s", r.code, r.stderr)
	}
}

// TestOrphanTables: after a dataset is renamed, the storage still holds the table of its old
// name, which nothing updates any more: the run's summary (and a WARN event) names it and where
// its folder is, until the folder is removed. Another pipeline's tables in a shared storage are
// not this one's orphans.
func TestOrphanTables(t *testing.T) {
	t.Parallel()
	dir := oneRowLanding(t)
	specOf := func(pipeline, dataset string) string {
		path := filepath.Join(dir, pipeline+"-"+dataset+".yaml")
		text := "name: " + pipeline + "\nstorage: ./storage\ndatasets:\n  - name: " + dataset + "\n    source:\n      path: ./landing\n      format: json\n      schema: \"id BIGINT\"\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mustRun(t, "run", specOf("shop", "raw"))
	mustRun(t, "run", specOf("other", "theirs"))
	renamed := specOf("shop", "bronze")
	out := summaryOf(mustRun(t, "run", renamed))
	want := "the storage holds tables that pipeline shop wrote and no dataset of its spec writes any more (renamed or removed): raw; nothing reads or updates them, and they stay until their folders under " + filepath.Join(dir, "storage", "tables") + " are removed"
	if !strings.Contains(out, want) {
		t.Errorf("summary after the rename:\n%s\nwant it to say %q", out, want)
	}
	if evs := mustRun(t, "events", renamed, "--update", "latest", "--format", "jsonl"); !strings.Contains(evs, `\"orphan_tables\":[\"raw\"]`) {
		t.Errorf("no WARN event names the orphan table:\n%s", evs)
	}
	if err := os.RemoveAll(filepath.Join(dir, "storage", "tables", "raw")); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "run", renamed); strings.Contains(out, "no dataset of its spec writes") {
		t.Errorf("summary after the folder was removed still names orphans:\n%s", out)
	}
}

// TestFirstRunWithoutInput: a first run with no input file has nothing to apply: the APPLY CHANGES
// target is IDLE like its source (it was COMPLETED with 0 upserted, committing progress over the
// source's creation), and then reads the first file as any other.
func TestFirstRunWithoutInput(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	out := summaryOf(mustRun(t, "run", spec))
	for _, want := range []string{"  items_raw                IDLE", "  items                    IDLE"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run without input:\n%s\nwant %q", out, want)
		}
	}
	land(t, spec, "1.json", 1, 2)
	if out := summaryOf(mustRun(t, "run", spec)); !strings.Contains(out, "  items                    COMPLETED  2 upserted, 0 deleted") {
		t.Errorf("run after the first file:\n%s", out)
	}
}

// oneRowLanding returns a new folder with a landing folder that holds 1.json, one row {"id": 1},
// for specs (written by the test into the folder) that read ./landing.
func oneRowLanding(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "1.json"), []byte(`{"id": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
