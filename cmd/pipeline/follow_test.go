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
