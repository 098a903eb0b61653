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
// It is on for the commands that process data (run, dev, schedule; cmd/pipeline) and off with
// TRIBUTARY_HUGE_PAGES=off in the environment. It does nothing where THP is "never" or "always"
// (there is nothing to advise), under strict overcommit (vm.overcommit_memory 2, where the span
// would count against the commit limit), and on systems other than Linux.
package hugepages

import "os"

// Disabled says whether the environment turns huge pages off (TRIBUTARY_HUGE_PAGES=off, or 0,
// false, no).
func Disabled() bool {
	switch os.Getenv("TRIBUTARY_HUGE_PAGES") {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

// Reserve advises huge pages on a span of the Go heap of up to max bytes (an eighth of the
// machine's memory at most), unless Disabled or the system has no use for it (see the package
// doc), and returns the bytes advised (0 when it did nothing). Call it once, early, before the
// heap has grown: the span is the heap's next memory. It allocates nothing that stays, and
// touches no page of the span.
func Reserve(max int) int {
	if Disabled() {
		return 0
	}
	return reserve(max)
}
