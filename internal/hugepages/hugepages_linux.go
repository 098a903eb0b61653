package hugepages

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page (x86-64 and arm64 with 4 KiB pages).
const hugePage = 2 << 20

// madvHugepage is MADV_HUGEPAGE (linux/mman.h).
const madvHugepage = 14

// reserve allocates a span of n bytes (n capped by the machine's memory), which the runtime
// maps and does not touch (fresh memory is known to be zero), advises MADV_HUGEPAGE on its whole
// huge pages, and frees it at once, returning the memory to the runtime (and the OS: it was
// never touched) with the advice kept on its mapping.
func reserve(n int) int {
	if !advisable() {
		return 0
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		n = min(n, int(uint64(si.Totalram)*uint64(si.Unit)/8))
	}
	if n < 2*hugePage {
		return 0
	}
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(n)) &^ (hugePage - 1)
	advised := 0
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, madvHugepage); e == 0 {
		advised = int(end - beg)
	}
	runtime.KeepAlive(b)
	b = nil
	debug.FreeOSMemory()
	return advised
}

// advisable says whether advising huge pages changes anything and is safe: THP is in "madvise"
// mode, and overcommit is not strict.
func advisable() bool {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		return false
	}
	oc, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return err == nil && strings.TrimSpace(string(oc)) != "2"
}
