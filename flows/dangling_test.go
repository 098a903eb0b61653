package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestDanglingLink: a symbolic link in a landing folder whose target does not exist yet is
// no file: it is skipped with a WARN that names the link and its target, the other files are
// read, and once the target exists a later update reads it (under the link's path).
func TestIngestDanglingLink(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"))
	target := filepath.Join(filepath.Dir(landing), "later.json")
	if err := os.Symlink(target, filepath.Join(landing, "dangling.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(filepath.Dir(landing), "nowhere"), filepath.Join(landing, "_hidden.json")); err != nil {
		t.Fatal(err)
	}
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "1 null null")
	// The link relative to the pipeline's folder, as every WARN names a file; its target as it says.
	want := "WARN landing/dangling.json is a symbolic link to " + target + ", which does not exist (yet): it is skipped, and read once its target exists"
	if m.Files != 1 || !strings.Contains(rec.all(), want) || strings.Contains(rec.all(), "_hidden") {
		t.Fatalf("files %d, events:\n%s\nwant one WARN: %s", m.Files, rec.all(), want)
	}

	write(t, target, []byte(`{"id": 2}`+"\n"))
	m, rec, err = ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 1 || strings.Contains(rec.all(), "symbolic link") {
		t.Errorf("second run: files %d, events:\n%s", m.Files, rec.all())
	}
	wantRows(t, p, "1 null null", "2 null null")
}

// TestSourceFilesDanglingLink: SourceFiles lists no file for a link whose target does not exist,
// nor does a glob source, and neither fails.
func TestSourceFilesDanglingLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.json"), []byte("{}\n"))
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	files, err := SourceFiles(dir)
	if err != nil || len(files) != 1 || files[0].Path != filepath.Join(dir, "a.json") {
		t.Errorf("SourceFiles = %v, %v; want a.json alone", files, err)
	}
	_, listed, dangling, err := listInputs(filepath.Join(dir, "*.json"))
	if err != nil || len(listed) != 1 || len(dangling) != 1 || dangling[0].path != filepath.Join(dir, "b.json") || dangling[0].target != filepath.Join(dir, "missing") {
		t.Errorf("glob: files %v, dangling %v, %v; want a.json, and b.json dangling", listed, dangling, err)
	}
}
