package update

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFingerprintsFollowLinkedFolders: a file landing in a folder that the source folder links
// to is new input for dev and continuous mode, as it is for the flow that lists it
// (flows.SourceFiles); a hidden file is not.
func TestFingerprintsFollowLinkedFolders(t *testing.T) {
	t.Parallel()
	p := setup(t, `{"op": "I", "id": 1, "seq": 1}`+"\n")
	linked := filepath.Join(t.TempDir(), "more")
	if err := os.MkdirAll(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(linked, filepath.Join(filepath.Dir(p.File), "landing", "more")); err != nil {
		t.Fatal(err)
	}
	before := fingerprints(p)["changes"]
	if before == "" {
		t.Fatalf("no fingerprint for changes: %v", fingerprints(p))
	}
	if err := os.WriteFile(filepath.Join(linked, "_landing.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := fingerprints(p)["changes"]; got != before {
		t.Fatal("a hidden file in a linked folder changed the fingerprint")
	}
	if err := os.WriteFile(filepath.Join(linked, "2.json"), []byte(`{"op": "I", "id": 2, "seq": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := fingerprints(p)["changes"]; got == before {
		t.Fatal("a file landing in a linked folder left the fingerprint as it was")
	}
}
