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
