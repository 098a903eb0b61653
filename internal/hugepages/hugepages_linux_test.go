package hugepages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
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
// mapping's VmFlags, proc(5)); with TRIBUTARY_HUGE_PAGES=off it advises nothing.
func TestReserveAdvisesTheHeapsNextMemory(t *testing.T) {
	t.Setenv("TRIBUTARY_HUGE_PAGES", "off")
	if n := Reserve(64 << 20); n != 0 {
		t.Fatalf("Reserve advised %d bytes with TRIBUTARY_HUGE_PAGES=off", n)
	}
	t.Setenv("TRIBUTARY_HUGE_PAGES", "")
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
