package flows

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// applyGCPercent is the garbage collector's target percentage (debug.SetGCPercent) while an
// APPLY CHANGES batch is read and applied. Most of what such a batch holds is pointer-free (a
// fold's hash table and records, the CDC state's buckets, encoded histories) or lives until the
// batch ends (its events, the winners, the rows to write), so the collections that the heap's
// growth starts at the default 100 find little garbage and cost CPU (cdc-bulk through a view,
// 10M events: about 0.25 s of 2.9, for 40 MB more peak; the large folds collect before and
// after their winners are boxed anyway, see collectAroundFinish).
const applyGCPercent = 400

var relaxed struct {
	sync.Mutex
	n    int // batches being applied
	prev int // the percentage before the first of them
}

// gcKept says whether the GOGC environment variable turns the collector off or sets a target
// above applyGCPercent: relaxGC then leaves the target alone, without even setting it for a
// moment (in which a collection could start).
var gcKept = func() bool {
	v := os.Getenv("GOGC")
	n, err := strconv.Atoi(v)
	return strings.EqualFold(v, "off") || (err == nil && n > applyGCPercent)
}()

// relaxGC raises the garbage collector's target, which is the process's, to applyGCPercent,
// unless it is off or already higher (GOGC, or debug.SetGCPercent), and returns the function
// that undoes it. Batches applied at once share the raise: the percentage comes back once the
// last of them is done.
func relaxGC() (restore func()) {
	if gcKept {
		return func() {}
	}
	relaxed.Lock()
	defer relaxed.Unlock()
	if relaxed.n == 0 {
		relaxed.prev = debug.SetGCPercent(applyGCPercent)
		if relaxed.prev < 0 || relaxed.prev > applyGCPercent {
			debug.SetGCPercent(relaxed.prev)
		}
	}
	relaxed.n++
	return func() {
		relaxed.Lock()
		defer relaxed.Unlock()
		if relaxed.n--; relaxed.n == 0 {
			debug.SetGCPercent(relaxed.prev)
		}
	}
}
