package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEventsFollow: `pipeline events SPEC --follow` prints the events so far, then each new
// event as an update commits it, until interrupted (exit 0 on SIGINT); --type filters the
// followed events too.
func TestEventsFollow(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	mustRun(t, "init", dir)
	spec := filepath.Join(dir, "pipeline.yaml")
	mustRun(t, "run", spec) // the first update: its events are "so far"

	cmd := exec.Command(binary, "events", spec, "--follow", "--format", "jsonl", "--type", "update_progress")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	// completed waits for the update_progress event that says an update COMPLETED.
	completed := func(what string) string {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("%s: events --follow ended: %s", what, stderr.String())
				}
				if m["event_type"] != "update_progress" {
					t.Fatalf("%s: an event of type %v passed --type update_progress", what, m["event_type"])
				}
				if strings.HasSuffix(fmt.Sprint(m["message"]), "is COMPLETED.") {
					return fmt.Sprint(m["origin"].(map[string]any)["update_id"])
				}
			case <-deadline:
				t.Fatalf("%s: no COMPLETED update within 30 s", what)
			}
		}
	}
	first := completed("the update so far")
	copyFile(t, filepath.Join(dir, "landing", "batch-0001.json"), filepath.Join(dir, "landing", "batch-0005.json"))
	mustRun(t, "run", spec) // a second update while following
	second := completed("the update run while following")
	if first == second {
		t.Errorf("the followed update is the one printed before (%s)", first)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("events --follow after an interrupt: %v (want exit 0); stderr: %s", err, stderr.String())
	}
}

// TestEventsFollowBeforeFirstRun: `pipeline events SPEC --follow` on a storage where no update
// ran says once on stderr what plain `events` fails with (no update yet, run first) and waits;
// the events of the first update then come in the layout of plain `events` (its header, and per
// event the same cells: time, level, type, flow or NULL, message).
func TestEventsFollowBeforeFirstRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	mustRun(t, "init", dir)
	spec := filepath.Join(dir, "pipeline.yaml")
	plain := pipeline(t, nil, "events", spec)
	if plain.code != 1 || !strings.Contains(plain.stderr, "has no update yet") {
		t.Fatalf("events before the first run: exit %d, stderr %q; want exit 1 saying there is no update yet", plain.code, plain.stderr)
	}
	hint := strings.TrimSpace(strings.TrimPrefix(plain.stderr, "pipeline: "))

	cmd := exec.Command(binary, "events", spec, "--follow")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // when the test stops early; a no-op once it exited
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: events --follow ended: %s", what, stderr.String())
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: nothing within 30 s", what)
		}
		return ""
	}
	followed := []string{next("the header"), next("the rule under the header")}
	mustRun(t, "run", spec)
	for !strings.Contains(followed[len(followed)-1], "is COMPLETED.") {
		followed = append(followed, next("the first update's events"))
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("events --follow after an interrupt: %v (want exit 0); stderr: %s", err, stderr.String())
	}
	if got := stderr.String(); got != "pipeline: "+hint+"; waiting for its events (Ctrl-C to stop)\n" {
		t.Errorf("stderr of events --follow before the first run:\n%q\nwant the hint of plain events once, and that it waits", got)
	}

	// The same layout as plain events: the same cells line by line, the rule as many columns.
	cells := func(line string) []string {
		cs := strings.Split(line, " | ")
		for i := range cs {
			cs[i] = strings.TrimRight(cs[i], " ")
		}
		return cs
	}
	want := strings.Split(mustRun(t, "events", spec), "\n")
	if len(want) < len(followed) {
		t.Fatalf("plain events has %d lines, --follow printed %d:\n%s", len(want), len(followed), strings.Join(followed, "\n"))
	}
	for i, line := range followed {
		if i == 1 {
			if strings.Count(line, "-+-") != strings.Count(want[1], "-+-") || strings.Trim(line, "-+") != "" {
				t.Errorf("the rule under the header: %q, plain events has %q", line, want[1])
			}
			continue
		}
		if got, w := cells(line), cells(want[i]); strings.Join(got, "\x00") != strings.Join(w, "\x00") {
			t.Errorf("line %d of events --follow:\n%q\nplain events:\n%q", i+1, line, want[i])
		}
	}
}

// TestEventsFollowLatest: `events SPEC --follow --update latest` prints the events of the
// pipeline's latest update only (not those of the updates before it), and then those of each
// update that starts while it follows: the latest moves with them.
func TestEventsFollowLatest(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	mustRun(t, "init", dir)
	spec := filepath.Join(dir, "pipeline.yaml")
	mustRun(t, "run", spec)
	copyFile(t, filepath.Join(dir, "landing", "batch-0001.json"), filepath.Join(dir, "landing", "batch-0005.json"))
	mustRun(t, "run", spec) // the latest update when following starts

	cmd := exec.Command(binary, "events", spec, "--follow", "--update", "latest", "--format", "jsonl")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	// update reads events up to the one that says an update COMPLETED and returns the update
	// ids of the events read, in order.
	update := func(what string) []string {
		var ids []string
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("%s: events --follow ended: %s", what, stderr.String())
				}
				ids = append(ids, fmt.Sprint(m["origin"].(map[string]any)["update_id"]))
				if m["event_type"] == "update_progress" && strings.HasSuffix(fmt.Sprint(m["message"]), "is COMPLETED.") {
					return ids
				}
			case <-deadline:
				t.Fatalf("%s: no COMPLETED update within 30 s", what)
			}
		}
	}
	before := update("the latest update so far")
	copyFile(t, filepath.Join(dir, "landing", "batch-0001.json"), filepath.Join(dir, "landing", "batch-0006.json"))
	mustRun(t, "run", spec)
	after := update("the update run while following")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	cmd.Wait()

	// The event log holds three updates; the followed output has the last two, each whole.
	var all []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(mustRun(t, "events", spec, "--format", "jsonl")), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		all = append(all, m)
	}
	var order []string
	count := map[string]int{}
	for _, m := range all {
		id := fmt.Sprint(m["origin"].(map[string]any)["update_id"])
		if count[id] == 0 {
			order = append(order, id)
		}
		count[id]++
	}
	if len(order) != 3 {
		t.Fatalf("the event log has updates %v, want 3", order)
	}
	for i, got := range [][]string{before, after} {
		want := order[i+1]
		for _, id := range got {
			if id != want {
				t.Fatalf("followed update %d: an event of update %s among those of %s (%v)", i+1, id, want, got)
			}
		}
		if len(got) != count[want] {
			t.Errorf("followed update %d (%s): %d events, the event log has %d", i+1, want, len(got), count[want])
		}
	}
}
