package flows

import (
	"bufio"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// applyGCPercent is the garbage collector's target percentage while an APPLY CHANGES batch is
// read and applied, above the floor (gcFloor): the heap may grow to (100+applyGCPercent)% of
// what the last collection left live. Most of what such a batch holds is pointer-free (a fold's
// hash table and records, the CDC state's buckets, encoded histories) or lives until the batch
// ends (its events, the winners, the rows to write), so the collections that the heap's growth
// starts at the default 100 find little garbage and cost CPU (cdc-bulk through a view, 10M
// events: about 0.25 s of 2.9, for 40 MB more peak; the large folds collect before and after
// their winners are boxed anyway, see collectAroundFinish).
const applyGCPercent = 400

// maxGCFloor is the most the heap of a process applying batches grows to before it collects at
// all (bytes); gcFloor lowers it on machines or containers with little memory. A batch of 1M SCD
// type 2 events peaks at about 700 MB, nearly all of it live to the end: at the percentage
// alone it collected twice on the way (the last 0.35 s of marking for 50 MB of garbage).
const maxGCFloor = 1 << 30

var relaxed struct {
	sync.Mutex
	n       int   // batches being applied
	prev    int   // the percentage before the first of them
	floored bool  // the collector runs by the floor and the memory limit (batchLimit)
	limit   int64 // the memory limit before the first of them (debug.SetMemoryLimit)
	floor   int64 // gcFloor, taken when the first of them started
	epoch   int   // counts the times the floor was set, so that a stale gcWatch stops
}

// gcKept says whether the GOGC environment variable turns the collector off or sets a target
// above applyGCPercent: relaxGC then leaves the target alone, without even setting it for a
// moment (in which a collection could start).
var gcKept = func() bool {
	v := os.Getenv("GOGC")
	n, err := strconv.Atoi(v)
	return strings.EqualFold(v, "off") || (err == nil && n > applyGCPercent)
}()

// relaxGC lets the heap grow further between collections while batches are applied, and
// returns the function that undoes it. The target is the process's: batches applied at once
// share it, and it comes back once the last of them is done. Unless the collector is off or
// its percentage already above applyGCPercent (GOGC, or debug.SetGCPercent), the percentage is
// turned off and the collector runs by a memory limit instead (debug.SetMemoryLimit, Go's
// GC guide, "Memory limit"): the larger of the floor (gcFloor) and applyGCPercent over what the
// last collection left live (batchLimit, set again after every collection), never above a limit
// already set (GOMEMLIMIT).
func relaxGC() (restore func()) {
	if gcKept {
		return func() {}
	}
	relaxed.Lock()
	defer relaxed.Unlock()
	if relaxed.n == 0 {
		relaxed.prev = debug.SetGCPercent(-1)
		relaxed.floored = relaxed.prev >= 0 && relaxed.prev <= applyGCPercent
		if !relaxed.floored {
			debug.SetGCPercent(relaxed.prev)
		} else {
			relaxed.limit = debug.SetMemoryLimit(-1)
			relaxed.floor = gcFloor()
			relaxed.epoch++
			debug.SetMemoryLimit(batchLimit(liveHeap()))
			watchGC(relaxed.epoch)
		}
	}
	relaxed.n++
	return func() {
		relaxed.Lock()
		defer relaxed.Unlock()
		if relaxed.n--; relaxed.n == 0 {
			debug.SetGCPercent(relaxed.prev)
			if relaxed.floored {
				debug.SetMemoryLimit(relaxed.limit)
			}
		}
	}
}

// batchLimit is the memory limit while batches are applied, when the last collection left live
// bytes of heap: (100+applyGCPercent)% of them, as the percentage would let the heap grow to, plus
// 64 MiB for what the limit counts besides the heap (stacks, the runtime's own), but at least the
// floor, and at most the limit set before. Called with relaxed locked.
func batchLimit(live int64) int64 {
	limit := max(relaxed.floor, live/100*(100+applyGCPercent)+64<<20)
	return min(limit, relaxed.limit)
}

// gcWatch is an object whose finalizer runs after each collection while batches are applied:
// it sets the memory limit from what the collection left live (batchLimit) and, until the last
// batch is done, makes itself reachable again for the next. It holds a pointer so that it is not
// a tiny allocation, whose finalizer may never run (runtime.SetFinalizer).
type gcWatch struct {
	epoch int
	_     *int
}

// watchGC starts the gcWatch of the floor set the epoch-th time.
func watchGC(epoch int) {
	runtime.SetFinalizer(&gcWatch{epoch: epoch}, afterGC)
}

// afterGC is the finalizer of a gcWatch (see there).
func afterGC(w *gcWatch) {
	relaxed.Lock()
	defer relaxed.Unlock()
	if relaxed.n == 0 || !relaxed.floored || w.epoch != relaxed.epoch {
		return
	}
	debug.SetMemoryLimit(batchLimit(liveHeap()))
	runtime.SetFinalizer(w, afterGC)
}

// liveHeap returns the bytes of heap the last collection left live (runtime/metrics
// /gc/heap/live:bytes; 0 before the first).
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64))
}

// gcFloor is the heap the process lets grow before a batch collects (bytes): maxGCFloor, or an
// eighth of the memory of the machine or the container (cgroup memory.max or
// memory.limit_in_bytes, /proc/meminfo MemTotal) if less; 256 MiB when none is known.
var gcFloor = func() int64 {
	total := systemMemory()
	if total <= 0 {
		return 256 << 20
	}
	return min(maxGCFloor, total/8)
}

// systemMemory returns the least of the memory limits it finds, in bytes: the cgroup's (v2
// memory.max, v1 memory.limit_in_bytes) and the machine's (MemTotal of /proc/meminfo); 0 when it
// finds none (another system than Linux).
func systemMemory() int64 {
	var least int64
	take := func(n int64) {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			// "max" (no limit) does not parse; v1's no-limit value is about 2^63, above MemTotal.
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				take(n)
			}
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// MemTotal:       24592164 kB
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64); err == nil {
					take(kb << 10)
				}
				break
			}
		}
	}
	return least
}
