package flows

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIngestFileCompletedAfterListing: a file completed between the update's listing and its
// batch is read whole, and its offsets record it as the batch read it, so that the next update
// does not report it as changed after it was read (unreadFiles.take looks at each file again).
func TestIngestFileCompletedAfterListing(t *testing.T) {
	t.Parallel()
	p, landing, batch, _ := twoFilesABatch(t, 4)
	batch(true)
	// f4 is completed (a second line) after the listing, before its batch reads it.
	f4 := filepath.Join(landing, "f4.json")
	write(t, f4, []byte(`{"id": 4}`+"\n"+`{"id": 44}`+"\n"))
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(f4, later, later); err != nil {
		t.Fatal(err)
	}
	batch(false)
	if got := strings.Join(rawRows(t, p), ","); got != "1,2,3,4,44" {
		t.Fatalf("rows %s, want 1,2,3,4,44 (f4 read whole)", got)
	}
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.ChangedFiles != 0 {
		t.Errorf("next update: %d file(s) reported changed after they were read, want 0: f4 was read whole after it changed", m.ChangedFiles)
	}
}

// TestIngestReplayAfterFileCompletedAfterListing: with a quarantine expectation, a crash between
// a batch's quarantine commit and its table commit is recovered by replaying the batch's files,
// which must be as the batch read them (its offsets). A file completed after the update's listing
// and before its batch (f4, read whole by batch 2, killed at ingest.after-quarantine-commit in a
// child process) is replayed, not refused as changed.
func TestIngestReplayAfterFileCompletedAfterListing(t *testing.T) {
	if dir := os.Getenv("TRIBUTARY_REPLAY_CHILD_DIR"); dir != "" {
		p := loadPipeline(t, dir, replayQuarantineSpec)
		env := &Env{Pipeline: p, Events: &recorder{}}
		unread := &unreadFiles{}
		if _, err := ingestBatch(context.Background(), env, p.Dataset("raw"), true, unread, nil); err != nil {
			t.Fatal(err)
		}
		f4 := filepath.Join(dir, "landing", "f4.json")
		write(t, f4, []byte(`{"id": 4}`+"\n"+`{"id": 45}`+"\n"))
		later := time.Now().Add(2 * time.Second)
		os.Chtimes(f4, later, later)
		os.Setenv("TRIBUTARY_FAULT", "ingest.after-quarantine-commit") // batch 2 dies there
		ingestBatch(context.Background(), env, p.Dataset("raw"), false, unread, nil)
		t.Fatal("the fault point did not kill the process")
	}
	dir := t.TempDir()
	p := loadPipeline(t, dir, replayQuarantineSpec)
	for i := 1; i <= 4; i++ {
		write(t, filepath.Join(dir, "landing", fmt.Sprintf("f%d.json", i)), []byte(fmt.Sprintf(`{"id": %d}`+"\n"+`{"id": %d}`+"\n", 2*i, 2*i+1)))
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestIngestReplayAfterFileCompletedAfterListing$")
	cmd.Env = append(os.Environ(), "TRIBUTARY_REPLAY_CHILD_DIR="+dir)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(cmd.ProcessState.String(), "killed") {
		t.Fatalf("child: %s\n%s", cmd.ProcessState, out)
	}
	// f4 has not changed since batch 2 read it; the next update should replay batch 2.
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatalf("the update after the crash: %v", err)
	}
	if m.Files != 2 {
		t.Errorf("the update after the crash read %d files, want 2 (batch 2 replayed: f3, f4)", m.Files)
	}
	if got := strings.Join(rawRows(t, p), ","); got != "2,4,6,4" {
		t.Errorf("rows %s, want 2,4,6,4 (the even ids of f1-f3, then f4 as batch 2 read it)", got)
	}
}

const replayQuarantineSpec = `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT", max_files_per_trigger: 2}
    expectations:
      - {name: even, expect: 'id % 2 == 0', on_violation: quarantine}
`
