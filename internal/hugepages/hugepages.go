// Package hugepages asks the operating system to back the first part of the Go heap with
// transparent huge pages (2 MiB on x86-64 and arm64 Linux) instead of 4 KiB pages.
//
// A batch of a million change events touches a few hundred MiB of new memory, and every 4 KiB
// page of it costs a page fault on first touch: on a virtual machine that is most of a batch's
// system time, and the TLB misses of the 4 KiB pages a good part of its user time. The Go
// runtime no longer advises huge pages for the heap (Go 1.21.1 and later; GODEBUG disablethp),
// and Linux's default THP mode ("madvise") gives them only to memory advised with
// MADV_HUGEPAGE. Reserve maps a span of heap once, advises it, and hands it back to the runtime
// untouched: the heap grows into that span first, one fault per 2 MiB.
//
// Huge pages pay only where a small page's first touch is slow. Where 4 KiB page faults are
// cheap (bare metal, and virtual machines whose host backs their memory ahead: about 2 µs a
// page, zeroing included), a huge page costs as much to zero and, where the host takes freed
// guest memory back in 2 MiB blocks (free page reporting), can cost a host fault per 4 KiB of
// it on first touch: 0.2 ms for a huge page the guest had just freed and 6.5 ms for one the
// host had taken back, against 1.1 ms for the same 2 MiB in small pages, on a virtual machine
// of 2 cores. So unless the environment says on, Reserve first times the first touch of a few
// small pages (smallPageCost: well under a millisecond where they are cheap, a few
// milliseconds where they are not) and advises nothing when it is below slowFault.
//
// The commands that process data (run, dev, schedule, optimize; cmd/pipeline) call Reserve,
// which probes as above; TRIBUTARY_HUGE_PAGES=on (or 1, true, yes) advises without the probe,
// off (or 0, false, no) never advises, and any other value leaves the probe to decide. It does
// nothing where THP is "never" or "always" (there is nothing to advise), under strict
// overcommit (vm.overcommit_memory 2, where the span would count against the commit limit),
// and on systems other than Linux.
package hugepages

import (
	"os"
	"time"
)

// setting reads TRIBUTARY_HUGE_PAGES: -1 for off (off, 0, false, no), 1 for on (on, 1, true,
// yes), 0 for anything else (the probe decides).
func setting() int {
	switch os.Getenv("TRIBUTARY_HUGE_PAGES") {
	case "off", "0", "false", "no":
		return -1
	case "on", "1", "true", "yes":
		return 1
	}
	return 0
}

// Disabled says whether the environment turns huge pages off (TRIBUTARY_HUGE_PAGES=off, or 0,
// false, no).
func Disabled() bool { return setting() < 0 }

// slowFault is the first touch of a 4 KiB page (fault and zeroing) from which the heap is
// advised huge pages: about twice what it costs where the host backs guest memory ahead (2 µs),
// half what it costs where page table updates trap to the host (9 µs, a paravirtualized MMU),
// where huge pages halve the time of a batch of a million SCD type 2 events.
const slowFault = 4 * time.Microsecond

// worthIt says whether a first touch of a small page of cost (smallPageCost's; 0: not measured)
// makes huge pages worth advising: at slowFault or above, or when it could not be measured.
func worthIt(cost time.Duration) bool {
	return cost == 0 || cost >= slowFault
}

// Reserve advises huge pages on a span of the Go heap of up to max bytes (an eighth of the
// machine's memory at most), unless Disabled, the system has no use for it, or small pages are
// cheap to fault in here and the environment does not say TRIBUTARY_HUGE_PAGES=on (see the
// package doc), and returns the bytes advised (0 when it did nothing). Call it once, early,
// before the heap has grown: the span is the heap's next memory. It allocates nothing that
// stays, and touches no page of the span.
func Reserve(max int) int {
	switch setting() {
	case -1:
		return 0
	case 1:
		return reserve(max, true)
	}
	return reserve(max, false)
}
