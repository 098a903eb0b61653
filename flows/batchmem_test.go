package flows

import (
	"runtime/debug"
	"testing"
)

// gcPercent returns the garbage collector's target percentage without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestRelaxGC: batches applied at once share the raise, and the percentage comes back once the
// last is done; GOGC=off, or a GOGC above the raise, is kept. Not parallel: the percentage is
// the process's, and the parallel tests apply batches.
func TestRelaxGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct{ before, during int }{{100, applyGCPercent}, {50, applyGCPercent}, {-1, -1}, {1000, 1000}} {
		debug.SetGCPercent(c.before)
		done1 := relaxGC()
		done2 := relaxGC()
		if got := gcPercent(); got != c.during {
			t.Errorf("GOGC=%d, two batches: %d, want %d", c.before, got, c.during)
		}
		done1()
		if got := gcPercent(); got != c.during {
			t.Errorf("GOGC=%d, one batch left: %d, want %d", c.before, got, c.during)
		}
		done2()
		if got := gcPercent(); got != c.before {
			t.Errorf("GOGC=%d, no batch left: %d, want %d", c.before, got, c.before)
		}
	}
}

// TestAdjacent: columns side by side in order start a window of their row; a gap, a missing
// column (-1), the wrong order or no columns do not.
func TestAdjacent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		idx  []int
		want int
	}{{[]int{1, 2, 3, 4}, 1}, {[]int{0}, 0}, {[]int{1, 3}, -1}, {[]int{2, 1}, -1}, {[]int{-1, 0}, -1}, {[]int{1, -1}, -1}, {nil, -1}} {
		if got := adjacent(c.idx); got != c.want {
			t.Errorf("adjacent(%v) = %d, want %d", c.idx, got, c.want)
		}
		if got, want := copies(c.want), map[bool]int{true: 1, false: 0}[c.want < 0]; got != want {
			t.Errorf("copies(%d) = %d, want %d", c.want, got, want)
		}
	}
}
