package hugepages

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// hugePage is the size of a transparent huge page (x86-64 and arm64 with 4 KiB pages).
const hugePage = 2 << 20

// madvHugepage is MADV_HUGEPAGE (linux/mman.h).
const madvHugepage = 14

// madvNohugepage is MADV_NOHUGEPAGE (linux/mman.h).
const madvNohugepage = 15

// reserve allocates a span of n bytes (n capped by the machine's memory), which the runtime
// maps and does not touch (fresh memory is known to be zero), advises MADV_HUGEPAGE on its whole
// huge pages, and frees it at once, returning the memory to the runtime (and the OS: it was
// never touched) with the advice kept on its mapping. Unless force, it does so only where
// probe (smallPageCost) says small pages are slow to fault in (worthIt).
func reserve(n int, force bool) int {
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
	if !force && !worthIt(probe()) {
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

// probe is smallPageCost; tests replace it.
var probe = smallPageCost

// probePages and probeRounds size smallPageCost's probe: rounds of 128 pages (512 KiB) each.
const (
	probePages  = 128
	probeRounds = 3
)

// smallPageCost returns the first touch of a 4 KiB page of fresh anonymous memory advised
// MADV_NOHUGEPAGE (the fault and the zeroing): the least mean over probeRounds regions of
// probePages pages (a preemption then spoils one round, not the figure), or 0 when the memory
// cannot be mapped. It unmaps what it maps: 1.5 MiB touched, well under a millisecond where
// small pages are cheap, a few milliseconds where they are not.
func smallPageCost() time.Duration {
	const page = 4096
	best, measured := time.Duration(0), false
	for range probeRounds {
		m, err := syscall.Mmap(-1, 0, probePages*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			break // the rounds measured so far stand
		}
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(unsafe.SliceData(m))), uintptr(len(m)), madvNohugepage)
		start := time.Now()
		for i := 0; i < len(m); i += page {
			m[i] = 1
		}
		per := time.Since(start) / probePages
		syscall.Munmap(m)
		if !measured || per < best {
			best, measured = per, true
		}
	}
	if !measured {
		return 0
	}
	return max(best, 1) // a measured cost is never 0, which means "not measured"
}
