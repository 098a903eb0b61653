package hugepages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that holds address p.
func vmFlags(t *testing.T, p uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < z
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("no mapping holds %#x", p)
	return ""
}

// TestReserveAdvisesTheHeapsNextMemory: where THP is in madvise mode, Reserve advises a span,
// and a large allocation made after it lies in memory advised MADV_HUGEPAGE ("hg" in the
// mapping's VmFlags, proc(5)); with TRIBUTARY_HUGE_PAGES=off it advises nothing, and with on it
// advises without the probe.
func TestReserveAdvisesTheHeapsNextMemory(t *testing.T) {
	t.Setenv("TRIBUTARY_HUGE_PAGES", "off")
	if n := Reserve(64 << 20); n != 0 {
		t.Fatalf("Reserve advised %d bytes with TRIBUTARY_HUGE_PAGES=off", n)
	}
	t.Setenv("TRIBUTARY_HUGE_PAGES", "on") // whatever the probe would find: it is not asked
	defer func(p func() time.Duration) { probe = p }(probe)
	probe = func() time.Duration { t.Fatal("Reserve probed with TRIBUTARY_HUGE_PAGES=on"); return 0 }
	if !advisable() {
		t.Skip("transparent huge pages are not in madvise mode here, or overcommit is strict")
	}
	n := Reserve(256 << 20)
	if n < 200<<20 || n > 256<<20 {
		t.Fatalf("Reserve advised %d bytes, want most of 256 MiB", n)
	}
	b := make([]byte, 64<<20)
	// (The span's first and last huge page may be partly outside it, and are not advised:
	// the middle of the allocation is.)
	mid := &b[len(b)/2]
	*mid = 1
	flags := vmFlags(t, uintptr(unsafe.Pointer(mid)))
	if !strings.Contains(flags, " hg") {
		t.Fatalf("a 64 MiB allocation after Reserve lies in a mapping without MADV_HUGEPAGE: %s", flags)
	}
}

// TestReserveFollowsTheProbe: by default Reserve advises huge pages only where the first touch
// of a small page costs slowFault or more (a fault that traps to the host), or could not be
// measured.
func TestReserveFollowsTheProbe(t *testing.T) {
	if !advisable() {
		t.Skip("transparent huge pages are not in madvise mode here, or overcommit is strict")
	}
	t.Setenv("TRIBUTARY_HUGE_PAGES", "")
	defer func(p func() time.Duration) { probe = p }(probe)
	for _, c := range []struct {
		cost   time.Duration
		advise bool
	}{{2 * time.Microsecond, false}, {slowFault - 1, false}, {slowFault, true}, {9 * time.Microsecond, true}, {0, true}} {
		probe = func() time.Duration { return c.cost }
		if n := Reserve(16 << 20); (n > 0) != c.advise {
			t.Errorf("a small page costing %v: Reserve advised %d bytes, want advising %v", c.cost, n, c.advise)
		}
	}
}

// TestSmallPageCost: the probe measures something plausible: a fault and the zeroing of 4 KiB
// take 100 ns at least, and microseconds, not a millisecond, at most.
func TestSmallPageCost(t *testing.T) {
	c := smallPageCost()
	if c < 100*time.Nanosecond || c > time.Millisecond {
		t.Fatalf("smallPageCost() = %v, want a few microseconds at most", c)
	}
	t.Logf("first touch of a 4 KiB page here: %v (huge pages advised from %v)", c, slowFault)
}
