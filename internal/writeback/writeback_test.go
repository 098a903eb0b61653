package writeback

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestWriter: what goes through a Writer is what the file holds, byte for byte, and the
// write-back of each Chunk is started once that many bytes are written past the last start.
func TestWriter(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := New(f)
	var want bytes.Buffer
	piece := make([]byte, 700_000)
	var starts []int64
	for i := range 15 {
		for j := range piece {
			piece[j] = byte(i*7 + j)
		}
		if n, err := w.Write(piece); n != len(piece) || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		want.Write(piece)
		if len(starts) == 0 || starts[len(starts)-1] != w.started {
			starts = append(starts, w.started)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the file holds %d bytes, not the %d written", len(got), want.Len())
	}
	// 15 pieces of 700,000 bytes: a start after the 6th (4.2 MB) and after the 12th (4.2 MB more).
	if wantStarts := []int64{0, 6 * 700_000, 12 * 700_000}; len(starts) != 3 || starts[1] != wantStarts[1] || starts[2] != wantStarts[2] {
		t.Fatalf("write-back started at %v, want %v", starts, wantStarts)
	}
	// On Linux the kernel took both (a local file system supports the call).
	if runtime.GOOS == "linux" && (w.off || w.calls != 2) {
		t.Fatalf("on Linux: %d write-backs started (failed: %v), want 2", w.calls, w.off)
	}
}
