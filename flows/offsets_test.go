package flows

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCommittedFilesCompactedList: past committedCompactAfter batches of offsets, committedFiles
// writes the list of the committed files (committed/<batch>.json) and later calls start from it
// (they read only the offsets after it); a list newer than the committed batch is not used, a
// missing offsets file after the list is an error naming the batch, a damaged list an error
// naming the list, and an older list is removed when a newer one is written, with the offsets
// files it covers but the newest offsetsRetained. A file read again
// by a later batch (a full refresh keeps no checkpoint, but offsets may name a path twice) keeps
// the later batch's size and time.
func TestCommittedFilesCompactedList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := int64(committedCompactAfter + 5)
	want := map[string]offsetFile{}
	for b := int64(1); b <= n; b++ {
		f := offsetFile{Path: fmt.Sprintf("f%04d.json", b), Size: b, ModTime: 1000 + b, Lines: [][2]int64{{1, b}}}
		if b == n {
			f.Path = "f0001.json" // read again, changed
		}
		if err := writeOffsets(dir, &offsets{Batch: b, Base: "/in", Files: []offsetFile{f}}); err != nil {
			t.Fatal(err)
		}
		want[f.Path] = offsetFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime}
	}
	check := func(label string, upTo int64, want map[string]offsetFile) {
		t.Helper()
		got, err := committedFiles(dir, upTo)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if !maps.EqualFunc(got, want, func(a, b offsetFile) bool {
			return a.Path == b.Path && a.Size == b.Size && a.ModTime == b.ModTime && a.Lines == nil
		}) {
			t.Fatalf("%s: %d files, want %d (first differences: %v)", label, len(got), len(want), firstDiff(got, want))
		}
	}
	lists := func() []string {
		t.Helper()
		entries, _ := os.ReadDir(committedListDir(dir))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	// Fewer batches than committedCompactAfter: no list.
	few := map[string]offsetFile{}
	for b := int64(1); b <= 10; b++ {
		p := fmt.Sprintf("f%04d.json", b)
		few[p] = offsetFile{Path: p, Size: b, ModTime: 1000 + b}
	}
	check("10 batches", 10, few)
	if got := lists(); len(got) != 0 {
		t.Fatalf("a list after 10 batches: %v", got)
	}
	check("all batches", n, want)
	if got := lists(); !slices.Equal(got, []string{fmt.Sprintf("%d.json", n)}) {
		t.Fatalf("lists %v, want %d.json", got, n)
	}
	// Of the offsets the list covers, the newest offsetsRetained stay.
	for b := int64(1); b <= n; b++ {
		_, err := os.Stat(offsetsPath(dir, b))
		if kept := b > n-offsetsRetained; kept != (err == nil) {
			t.Fatalf("offsets of batch %d: kept %v, want %v (%v)", b, err == nil, kept, err)
		}
	}
	// The list stands in for the offsets it covers.
	for b := n - offsetsRetained + 1; b <= n; b++ {
		if err := os.Remove(offsetsPath(dir, b)); err != nil {
			t.Fatal(err)
		}
	}
	check("from the list", n, want)
	// One batch more: the list and its offsets.
	if err := writeOffsets(dir, &offsets{Batch: n + 1, Files: []offsetFile{{Path: "new.json", Size: 7, ModTime: 8}}}); err != nil {
		t.Fatal(err)
	}
	more := maps.Clone(want)
	more["new.json"] = offsetFile{Path: "new.json", Size: 7, ModTime: 8}
	check("the list and one batch", n+1, more)
	// A list is not used for fewer committed batches than it covers.
	if _, err := committedFiles(dir, n-1); err == nil || !strings.Contains(err.Error(), "no offsets for committed batch 1;") {
		t.Fatalf("upTo below the list: %v, want the missing offsets of batch 1", err)
	}
	// A committed batch after the list without offsets.
	if _, err := committedFiles(dir, n+2); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no offsets for committed batch %d;", n+2)) {
		t.Fatalf("missing offsets after the list: %v", err)
	}
	// A newer list replaces the older one.
	for b := n + 2; b <= n+1+committedCompactAfter; b++ {
		p := fmt.Sprintf("g%04d.json", b)
		if err := writeOffsets(dir, &offsets{Batch: b, Files: []offsetFile{{Path: p, Size: 1, ModTime: 2}}}); err != nil {
			t.Fatal(err)
		}
		more[p] = offsetFile{Path: p, Size: 1, ModTime: 2}
	}
	last := n + 1 + committedCompactAfter
	check("a second list", last, more)
	if got := lists(); !slices.Equal(got, []string{fmt.Sprintf("%d.json", last)}) {
		t.Fatalf("lists %v, want only %d.json", got, last)
	}
	// A damaged list.
	path := filepath.Join(committedListDir(dir), fmt.Sprintf("%d.json", last))
	if err := os.WriteFile(path, []byte(`{"up_to_batch": 3, "files": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := committedFiles(dir, last); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "run with --full-refresh of this dataset") {
		t.Fatalf("a damaged list, its offsets removed: %v", err)
	}
	// With the offsets of the first batch there, removing the list is the way out.
	if err := writeOffsets(dir, &offsets{Batch: 1, Files: []offsetFile{{Path: "f0001.json", Size: 1, ModTime: 1001}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := committedFiles(dir, last); err == nil || !strings.Contains(err.Error(), "remove it, and the offsets of every batch are read instead") {
		t.Fatalf("a damaged list, the offsets there: %v", err)
	}
}

// firstDiff names a few paths whose entries differ between got and want.
func firstDiff(got, want map[string]offsetFile) []string {
	var out []string
	for p, w := range want {
		if g, ok := got[p]; !ok || g.Size != w.Size || g.ModTime != w.ModTime || g.Lines != nil {
			out = append(out, p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), 5)]
}

// TestCommittedFilesRemovesStaleTemps: the temporary files a killed run leaves in a checkpoint's
// offsets and compacted-list folders (writeFileAtomic's ".tmp-<name>-<random>", never renamed)
// are removed when the flow next reads its committed files; the offsets themselves, and files of
// other names, stay.
func TestCommittedFilesRemovesStaleTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := writeOffsets(dir, &offsets{Batch: 1, Base: "/in", Files: []offsetFile{{Path: "a.json", Size: 3, ModTime: 4}}}); err != nil {
		t.Fatal(err)
	}
	stale := []string{filepath.Join(dir, "offsets", ".tmp-2.json-123456"), filepath.Join(committedListDir(dir), ".tmp-100.json-99")}
	other := filepath.Join(dir, "offsets", "notes.txt")
	if err := os.MkdirAll(committedListDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(stale, other) {
		write(t, p, []byte(`{"batch":`)) // cut short, as a kill leaves one
	}
	seen, err := committedFiles(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := seen["a.json"]; !ok || f.Size != 3 || len(seen) != 1 {
		t.Fatalf("committed files %v, want a.json alone", seen)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it removed", p, err)
		}
	}
	for _, p := range []string{other, offsetsPath(dir, 1)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
}
