package hugepages

import (
	"testing"
	"time"
)

// TestWorthIt: huge pages are worth advising from slowFault a small page's first touch, and
// when it could not be measured (0).
func TestWorthIt(t *testing.T) {
	for _, c := range []struct {
		cost time.Duration
		want bool
	}{{time.Nanosecond, false}, {2 * time.Microsecond, false}, {slowFault - 1, false}, {slowFault, true}, {9 * time.Microsecond, true}, {0, true}} {
		if got := worthIt(c.cost); got != c.want {
			t.Errorf("worthIt(%v) = %v, want %v", c.cost, got, c.want)
		}
	}
}
