package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// modesSpec is a two-dataset pipeline (bronze items_raw, APPLY CHANGES items) over ./landing;
// %s is replaced by extra top-level lines.
const modesSpec = `name: modes
storage: ./storage
%s
datasets:
  - name: items_raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING, seq BIGINT"
    table_properties:
      pipelines.reset.allowed: "false"
  - name: items
    apply_changes:
      source: items_raw
      keys: [id]
      sequence_by: seq
`

// modesDir writes modesSpec with the extra top-level lines into a new folder with an empty
// landing folder and returns the spec path.
func modesDir(t *testing.T, top string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(modesSpec, top)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// land writes a file of rows into the landing folder beside spec the way producers should:
// under a temporary name, then renamed in.
func land(t *testing.T, spec, name string, ids ...int) {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, `{"id": %d, "name": "n%d", "seq": %d}`+"\n", id, id, id)
	}
	dir := filepath.Join(filepath.Dir(spec), "landing")
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// eventsOf returns the event log of the pipeline as JSON objects.
func eventsOf(t *testing.T, spec string) []map[string]any {
	t.Helper()
	return readJSONL(t, mustRun(t, "events", spec, "--format", "jsonl"))
}

// statusesOf returns "flow STATUS" for each flow_progress event and "update STATE" for each
// update_progress event, in order.
func statusesOf(t *testing.T, evs []map[string]any) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		d, _ := e["details"].(map[string]any)
		if s, ok := e["details"].(string); ok {
			_ = json.Unmarshal([]byte(s), &d)
		}
		switch e["event_type"] {
		case "flow_progress":
			fp, _ := d["flow_progress"].(map[string]any)
			o, _ := e["origin"].(map[string]any)
			out = append(out, fmt.Sprintf("%v %v", o["flow_name"], fp["status"]))
		case "update_progress":
			up, _ := d["update_progress"].(map[string]any)
			out = append(out, fmt.Sprintf("update %v", up["state"]))
		}
	}
	return out
}

// rowCount returns the number of rows of dataset in the table (0 when unreadable).
func rowCount(t *testing.T, spec, dataset string) int {
	t.Helper()
	r := pipeline(t, nil, "show", spec, dataset, "--format", "jsonl")
	if r.code != 0 {
		return 0
	}
	return len(readJSONL(t, r.stdout))
}

// eventually polls cond every 50ms for up to 20s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// started is a pipeline process running in the background.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// start runs the binary in the background; the test kills it at the end if still running.
func start(t *testing.T, args ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(binary, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		s.code = s.cmd.ProcessState.ExitCode()
		_ = err
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// stop sends sig and waits (bounded) for the process to exit, returning its exit status.
func (s *started) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the process did not stop after %v\nstdout: %s\nstderr: %s", sig, s.stdout, s.stderr)
	}
	return s.code
}

// TestRefreshSelection: --refresh runs only the named datasets (the others are EXCLUDED in the
// event log); conflicting flags exit 2; pipelines.reset.allowed "false" turns a full refresh of
// that table into a normal update.
func TestRefreshSelection(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	land(t, spec, "1.json", 1, 2)
	mustRun(t, "run", spec, "--refresh", "items_raw")
	if n := rowCount(t, spec, "items_raw"); n != 2 {
		t.Errorf("items_raw has %d rows, want 2", n)
	}
	if n := rowCount(t, spec, "items"); n != 0 {
		t.Errorf("items has %d rows after an update that excluded it, want 0", n)
	}
	got := strings.Join(statusesOf(t, eventsOf(t, spec)), ",")
	if !strings.Contains(got, "items EXCLUDED") || strings.Contains(got, "items QUEUED") {
		t.Errorf("events %s: want items EXCLUDED and never QUEUED", got)
	}

	for _, args := range [][]string{
		{"--full-refresh-all", "--refresh", "items"},
		{"--full-refresh-all", "--full-refresh", "items"},
		{"--refresh", "items", "--full-refresh", "items"},
		{"--refresh", "itemz"},
	} {
		if r := pipeline(t, nil, append([]string{"run", spec}, args...)...); r.code != 2 {
			t.Errorf("run %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}

	// items_raw refuses a reset: --full-refresh-all updates it normally (2.json only) and
	// rebuilds items from all of items_raw.
	mustRun(t, "run", spec)
	land(t, spec, "2.json", 3)
	out := mustRun(t, "run", spec, "--full-refresh-all")
	if !strings.Contains(summaryOf(out), "  items_raw was not fully refreshed: its table property pipelines.reset.allowed is \"false\", so it was updated normally\n") {
		t.Errorf("the summary does not say the reset of items_raw was refused:\n%s", out)
	}
	if n := rowCount(t, spec, "items_raw"); n != 3 {
		t.Errorf("items_raw has %d rows after a refused full refresh, want 3", n)
	}
	if n := rowCount(t, spec, "items"); n != 3 {
		t.Errorf("items has %d rows, want 3", n)
	}
	evs := mustRun(t, "events", spec, "--update", "latest", "--format", "jsonl")
	if !strings.Contains(evs, "pipelines.reset.allowed") || !strings.Contains(evs, "FULL_REFRESH_DENIED") {
		t.Errorf("the event log of the last update does not say the reset of items_raw was refused:\n%s", evs)
	}
}

// TestContinuousMode: `run --continuous` picks up files landed while it runs, running only the
// flows with new input and their downstream; SIGTERM stops it cleanly (exit 0, update
// CANCELED) with every landed file processed exactly once; meanwhile a second update on the
// storage fails at once naming the holder.
func TestContinuousMode(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "trigger_interval: 200ms")
	land(t, spec, "1.json", 1, 2)
	p := start(t, "run", spec, "--continuous")
	eventually(t, "the first batch", func() bool { return rowCount(t, spec, "items") == 2 })

	r := pipeline(t, nil, "run", spec)
	if r.code != 1 || !strings.Contains(r.stderr, "locked") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", p.cmd.Process.Pid)) {
		t.Errorf("a second run beside the continuous one: exit %d, %s; want exit 1 naming pid %d", r.code, r.stderr, p.cmd.Process.Pid)
	}

	land(t, spec, "2.json", 3)
	eventually(t, "the second file", func() bool { return rowCount(t, spec, "items") == 3 })
	land(t, spec, "3.json", 4, 5)
	eventually(t, "the third file", func() bool { return rowCount(t, spec, "items") == 5 })

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0\nstderr: %s", code, p.stderr)
	}
	if n := rowCount(t, spec, "items_raw"); n != 5 {
		t.Errorf("items_raw has %d rows, want 5 (each file once)", n)
	}
	st := statusesOf(t, eventsOf(t, spec))
	if st[len(st)-1] != "update CANCELED" {
		t.Errorf("last update state %q, want CANCELED", st[len(st)-1])
	}
	if !regexp.MustCompile(`(?m)^pipeline modes: update [0-9a-f-]+ CANCELED: stopped; every commit it made stays$`).MatchString(p.stdout.String()) {
		t.Errorf("the output does not say the update was stopped:\n%s", p.stdout.String())
	}
	completed := strings.Count(strings.Join(st, ","), "items_raw COMPLETED")
	if completed != 3 {
		t.Errorf("items_raw COMPLETED %d times, want 3 (one per file): %v", completed, st)
	}
	// A new run processes nothing twice.
	mustRun(t, "run", spec)
	if n := rowCount(t, spec, "items_raw"); n != 5 {
		t.Errorf("items_raw has %d rows after another run, want 5", n)
	}
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestScheduleCommand: `pipeline schedule --cron "@every 1s"` prints the next run time, runs
// several updates, keeps the storage locked meanwhile (a `run` beside it fails naming the
// scheduler's pid), and stops cleanly on SIGINT; a bad expression, or one that never fires,
// exits 2.
func TestScheduleCommand(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	if r := pipeline(t, nil, "schedule", spec); r.code != 2 || !strings.Contains(r.stderr, "--cron") {
		t.Errorf("schedule without a schedule: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "schedule", spec, "--cron", "0 0 6 * * *"); r.code != 2 {
		t.Errorf("schedule with six fields: exit %d, want 2", r.code)
	}
	// February has no 30th: the schedule would have no next update, so it is refused rather than
	// run updates back to back.
	never := start(t, "schedule", spec, "--cron", "0 0 30 2 *")
	eventually(t, "the schedule that never fires to end", func() bool {
		select {
		case <-never.done:
			return true
		default:
			return false
		}
	})
	if never.code != 2 || !strings.Contains(never.stderr.String(), "never fires") {
		t.Errorf("schedule that never fires: exit %d, %s; want exit 2 saying it never fires", never.code, never.stderr.String())
	}
	land(t, spec, "1.json", 1)
	p := start(t, "schedule", spec, "--cron", "@every 1s")
	eventually(t, "two scheduled updates", func() bool { return strings.Count(p.stdout.String(), "pipeline modes: update ") >= 2 })
	land(t, spec, "2.json", 2)
	r := pipeline(t, nil, "run", spec)
	// The scheduler is named as the holder, its updates as its latest, which may have ended.
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("`pipeline schedule` holds it across its updates: pid %d on ", p.cmd.Process.Pid)) || !strings.Contains(r.stderr, "(its latest update ") {
		t.Errorf("run beside the scheduler: exit %d, %s; want exit 1 naming the scheduler", r.code, r.stderr)
	}
	eventually(t, "the second file", func() bool { return rowCount(t, spec, "items") == 2 })
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0\n%s", code, p.stderr)
	}
	if !strings.Contains(p.stdout.String(), "next update at") {
		t.Errorf("no next run time printed:\n%s", p.stdout)
	}
	mustRun(t, "run", spec) // the lock is free again
}

// TestDevCommand: `pipeline dev` runs an update, re-runs after a spec edit, reports an invalid
// edit (a query that does not bind too) with file:line:column and keeps watching, picks up a new input file, holds the storage
// lock meanwhile, and stops cleanly on SIGTERM.
func TestDevCommand(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	land(t, spec, "1.json", 1)
	p := start(t, "dev", spec)
	eventually(t, "the first update", func() bool { return rowCount(t, spec, "items") == 1 })

	r := pipeline(t, nil, "run", spec)
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", p.cmd.Process.Pid)) || !strings.Contains(r.stderr, "`pipeline dev` holds it across its updates") {
		t.Errorf("run beside dev: exit %d, %s; want exit 1 naming the dev process", r.code, r.stderr)
	}

	text := fmt.Sprintf(modesSpec, "")
	save := func(s string) { // as editors do: write a new file, rename it over the spec
		t.Helper()
		tmp := spec + ".swp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, spec); err != nil {
			t.Fatal(err)
		}
	}
	updates := func() int { return strings.Count(p.stdout.String(), "pipeline modes: update ") }
	before := updates() // the first, and one more if 1.json was left to settle
	save(strings.Replace(text, "  - name: items\n", "  - name: items\n    comment: edited\n", 1))
	eventually(t, "the update after the edit", func() bool {
		return updates() >= before+1 && strings.Contains(p.stderr.String(), "the spec changed: items")
	})
	if !strings.Contains(p.stderr.String(), "the spec changed: items") {
		t.Errorf("dev did not say what changed:\n%s", p.stderr)
	}

	save(strings.Replace(text, "sequence_by: seq", "sequence_by: nope", 1))
	eventually(t, "the invalid edit reported", func() bool {
		return strings.Contains(p.stderr.String(), "pipeline.yaml:") && strings.Contains(p.stderr.String(), "nope")
	})
	// A query that does not bind is an invalid edit too (as validate reports it), not a failed
	// update.
	save(text + "  - name: names\n    query: SELECT nme FROM items\n")
	eventually(t, "the query that does not bind reported", func() bool {
		return strings.Contains(p.stderr.String(), "the query does not bind: Binder Error: Referenced column \"nme\" not found")
	})
	if strings.Contains(p.stderr.String(), "the update failed") {
		t.Errorf("the edit with a query that does not bind ran an update:\n%s", p.stderr)
	}
	land(t, spec, "2.json", 2)
	// The spec is invalid now: read the table through a valid copy beside it.
	view := filepath.Join(filepath.Dir(spec), "view.yaml")
	if err := os.WriteFile(view, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new file", func() bool { return rowCount(t, view, "items") == 2 })

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0\n%s", code, p.stderr)
	}
}

// TestContinuousSecondSignal: two signals in a row stop a continuous update at once, whatever it
// was doing; the storage stays consistent: the next run processes every landed file exactly once.
func TestContinuousSecondSignal(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "trigger_interval: 100ms")
	for i := 1; i <= 20; i++ {
		land(t, spec, fmt.Sprintf("%02d.json", i), i*10, i*10+1)
	}
	p := start(t, "run", spec, "--continuous")
	eventually(t, "the update to start", func() bool { return strings.Contains(p.stdout.String(), "continuous update") })
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.stop(t, syscall.SIGTERM); code != 0 && code != 1 {
		t.Fatalf("exit %d after two signals\n%s", code, p.stderr)
	}
	mustRun(t, "run", spec)
	if n := rowCount(t, spec, "items_raw"); n != 40 {
		t.Errorf("items_raw has %d rows, want 40 (each of the 20 files once)", n)
	}
	if n := rowCount(t, spec, "items"); n != 40 {
		t.Errorf("items has %d rows, want 40", n)
	}
}

// TestContinuousFromSpecAndDeadHolder: `continuous: true` makes `run` continuous and
// --continuous=false runs one triggered update instead; a process killed with SIGKILL leaves a
// lock file naming it, and the next update takes the lock over.
func TestContinuousFromSpecAndDeadHolder(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "continuous: true\ntrigger_interval: 100ms")
	land(t, spec, "1.json", 1)
	p := start(t, "run", spec)
	eventually(t, "the first batch", func() bool { return rowCount(t, spec, "items") == 1 })
	if !strings.Contains(p.stdout.String(), "continuous update") {
		t.Errorf("`continuous: true` did not start a continuous update:\n%s", p.stdout)
	}
	if code := p.stop(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("exit %d after SIGKILL", code)
	}
	lock, err := os.ReadFile(filepath.Join(filepath.Dir(spec), "storage", ".lock"))
	if err != nil || !strings.Contains(string(lock), fmt.Sprintf(`"pid":%d`, p.cmd.Process.Pid)) {
		t.Fatalf("lock file %s (%v): want it to name the killed process", lock, err)
	}
	land(t, spec, "2.json", 2)
	out := mustRun(t, "run", spec, "--continuous=false")
	if strings.Contains(out, "continuous update") || rowCount(t, spec, "items") != 2 {
		t.Errorf("--continuous=false: %s, %d rows", out, rowCount(t, spec, "items"))
	}
}
