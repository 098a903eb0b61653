package update

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// TestStorageOwner: a storage holds one pipeline's tables. A spec of another name (renamed, or a
// second spec given the same storage) is refused before it reads anything, since its flows'
// progress is kept under ids that name the pipeline and it would read every file again into the
// same tables; the error says how to go on. A storage written before the owner file existed is
// known by the progress its tables record. --full-refresh-all moves the storage to the new
// name, rebuilding the tables (each row once).
func TestStorageOwner(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n"+`{"op": "I", "id": 2, "seq": 2}`+"\n")
	rows := func() int64 { return tableRows(t, p, "changes") }
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(p.Storage, ownerFile)); err != nil || strings.TrimSpace(string(b)) != `{"name":"t"}` {
		t.Fatalf("owner file %q, %v", b, err)
	}
	p.Name = "t_v2"
	_, err := Run(context.Background(), p, Options{})
	if err == nil || !strings.Contains(err.Error(), "holds the tables of pipeline t, and this spec names pipeline t_v2") || !strings.Contains(err.Error(), "--full-refresh-all") {
		t.Fatalf("a renamed spec: %v", err)
	}
	// Written before the owner file: the tables' progress names the pipeline.
	if err := os.Remove(filepath.Join(p.Storage, ownerFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Options{}); err == nil || !strings.Contains(err.Error(), "holds the tables of pipeline t,") {
		t.Fatalf("a renamed spec on a storage without owner file: %v", err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after the refused updates, want 2", n)
	}
	if _, err := Run(context.Background(), p, Options{FullRefreshAll: true}); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after --full-refresh-all under the new name, want 2", n)
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatalf("the new name after its full refresh: %v", err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after a second update under the new name, want 2", n)
	}
	if err := os.WriteFile(filepath.Join(p.Storage, ownerFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Options{}); err == nil || !strings.Contains(err.Error(), ownerFile+" is damaged") {
		t.Fatalf("a damaged owner file: %v", err)
	}
}

// TestInterruptedFullRefresh: a full refresh killed while it removed tables (the pending reset
// file still there, a table half removed) is finished by the next update, which rebuilds those
// datasets from their input (each row once) and says so in the event log, instead of failing on
// a table whose source was re-created.
func TestInterruptedFullRefresh(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n"+`{"op": "I", "id": 2, "seq": 2}`+"\n")
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	// As an update killed in its resets leaves it: changes removed, items not yet.
	if err := writePendingReset(p.Storage, []string{"changes", "items"}); err != nil {
		t.Fatal(err)
	}
	if err := flows.Reset(p, p.Dataset("changes")); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatalf("the update after an interrupted full refresh: %v", err)
	}
	for _, name := range []string{"changes", "items"} {
		if n := tableRows(t, p, name); n != 2 {
			t.Errorf("%s has %d rows, want 2", name, n)
		}
	}
	if _, err := os.Stat(filepath.Join(p.Storage, pendingResetFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pending reset file is still there: %v", err)
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	resumed := 0
	for _, e := range evs {
		if strings.Contains(e.Message, "an earlier update began its full refresh and did not finish it") {
			resumed++
		}
	}
	if resumed != 2 {
		t.Errorf("%d events say the full refresh was finished, want 2 (changes, items)", resumed)
	}
}

// tableRows returns the rows of dataset's table, by its files' statistics (0: no table yet).
func tableRows(t *testing.T, p *spec.Pipeline, dataset string) int64 {
	t.Helper()
	snap, err := delta.New(flows.TableDir(p.Storage, dataset)).Snapshot(-1)
	if err != nil {
		return 0
	}
	var n int64
	for _, a := range snap.Files {
		c, _ := a.NumRecords()
		n += c
	}
	return n
}
