package flows

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent returns the garbage collector's target percentage without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// memoryLimit returns the memory limit without changing it.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// TestRelaxGC: batches applied at once share the raise, and the percentage and the memory limit
// come back once the last is done; GOGC=off, or a GOGC above the raise, is kept. While batches
// are applied the percentage is off and the memory limit is at least the floor, never above a
// limit set before (GOMEMLIMIT). Not parallel: the percentage is the process's, and the
// parallel tests apply batches.
func TestRelaxGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	defer func(kept bool) { gcKept = kept }(gcKept)
	// GOGC=off or above the raise in the environment: the target is left alone.
	gcKept = true
	done := relaxGC()
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC kept: %d during a batch, want 100", got)
	}
	done()
	gcKept = false
	floor := gcFloor()
	if floor < 256<<20 || floor > maxGCFloor {
		t.Fatalf("gcFloor() = %d, want 256 MiB to 1 GiB", floor)
	}
	for _, c := range []struct {
		before, during int
		limit          int64 // the memory limit before
	}{{100, -1, math.MaxInt64}, {50, -1, math.MaxInt64}, {100, -1, 200 << 20}, {-1, -1, math.MaxInt64}, {1000, 1000, math.MaxInt64}} {
		debug.SetGCPercent(c.before)
		debug.SetMemoryLimit(c.limit)
		floored := c.before >= 0 && c.before <= applyGCPercent
		done1 := relaxGC()
		done2 := relaxGC()
		if got := gcPercent(); got != c.during {
			t.Errorf("GOGC=%d, two batches: %d, want %d", c.before, got, c.during)
		}
		switch got := memoryLimit(); {
		case !floored && got != c.limit:
			t.Errorf("GOGC=%d: memory limit %d during the batches, want %d", c.before, got, c.limit)
		case floored && (got < min(floor, c.limit) || got > c.limit):
			t.Errorf("GOGC=%d, limit %d before: memory limit %d during the batches, want from %d to %d", c.before, c.limit, got, min(floor, c.limit), c.limit)
		}
		done1()
		if got := gcPercent(); got != c.during {
			t.Errorf("GOGC=%d, one batch left: %d, want %d", c.before, got, c.during)
		}
		done2()
		if got := gcPercent(); got != c.before {
			t.Errorf("GOGC=%d, no batch left: %d, want %d", c.before, got, c.before)
		}
		if got := memoryLimit(); got != c.limit {
			t.Errorf("GOGC=%d, no batch left: memory limit %d, want %d as before", c.before, got, c.limit)
		}
	}
}

// TestRelaxGCFollowsLiveHeap: past the floor, the memory limit follows what each collection
// leaves live, (100+applyGCPercent)% of it, as the percentage would: a batch whose live heap
// outgrows the floor is not collected over and over.
func TestRelaxGCFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	defer func(kept bool, floor func() int64) { gcKept, gcFloor = kept, floor }(gcKept, gcFloor)
	gcKept = false
	gcFloor = func() int64 { return 32 << 20 }
	done := relaxGC()
	defer done()
	const held = 128 << 20
	live := make([]byte, held)
	for i := range live {
		live[i] = 1
	}
	runtime.GC()
	want := int64(held) / 100 * (100 + applyGCPercent)
	deadline := time.Now().Add(5 * time.Second)
	for memoryLimit() < want && time.Now().Before(deadline) {
		runtime.GC() // the watch's finalizer runs after a collection, on a goroutine of its own
		time.Sleep(10 * time.Millisecond)
	}
	if got := memoryLimit(); got < want || got > 2*want {
		t.Errorf("memory limit %d MiB with %d MiB live, want about %d MiB", got>>20, held>>20, want>>20)
	}
	runtime.KeepAlive(live)
	done()
	if got := memoryLimit(); got != math.MaxInt64 {
		t.Errorf("memory limit %d after the batch, want none (%d)", got, int64(math.MaxInt64))
	}
	done = func() {}
}

// TestAdjacent: columns side by side in order start a window of their row; a gap, a missing
// column (-1), the wrong order or no columns do not.
func TestAdjacent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		idx  []int
		want int
	}{{[]int{1, 2, 3, 4}, 1}, {[]int{0}, 0}, {[]int{1, 3}, -1}, {[]int{2, 1}, -1}, {[]int{-1, 0}, -1}, {[]int{1, -1}, -1}, {nil, -1}} {
		if got := adjacent(c.idx); got != c.want {
			t.Errorf("adjacent(%v) = %d, want %d", c.idx, got, c.want)
		}
		if got, want := copies(c.want), map[bool]int{true: 1, false: 0}[c.want < 0]; got != want {
			t.Errorf("copies(%d) = %d, want %d", c.want, got, want)
		}
	}
}

// TestKeyRanges: the ranges cover the keys in order, each of minKeysPerWorker keys or more, with
// about as many events each; a batch of fewer than twice as many keys is one range.
func TestKeyRanges(t *testing.T) {
	t.Parallel()
	least := int(minKeysPerWorker.Load())
	cores := min(runtime.GOMAXPROCS(0), 4)
	for _, c := range []struct {
		name   string
		counts func(i int) int // events of the i-th key
		keys   int
		extra  int // keys after the batch's, without events
		// balanced: no range needs more keys than its share of events (a range may take more
		// to have minKeysPerWorker keys)
		balanced bool
	}{
		{"even", func(int) int { return 3 }, 40_000, 0, true},
		{"skewed", func(i int) int { return 1 + i%7*(i%5) }, 40_000, 0, true},
		{"heavy first keys", func(i int) int { return map[bool]int{true: 50, false: 1}[i < 200] }, 20_000, 0, false},
		{"keys without events", func(int) int { return 2 }, 9_000, 5_000, false},
		{"too few", func(int) int { return 10 }, 2*least - 1, 0, false},
	} {
		evs := make([]event, 0)
		for i := range c.keys {
			for range c.counts(i) {
				evs = append(evs, event{key: []any{int64(i)}})
			}
		}
		g := groupByKey(evs)
		n := c.keys + c.extra
		ranges := keyRanges(g, n)
		want := min(cores, n/least)
		if n < 2*least {
			want = 1
		}
		if len(ranges) != max(want, 1) {
			t.Errorf("%s: %d ranges, want %d", c.name, len(ranges), max(want, 1))
		}
		at, total := 0, len(evs)+n
		for _, r := range ranges {
			if r[0] != at || r[1] <= r[0] {
				t.Fatalf("%s: ranges %v do not follow each other from 0", c.name, ranges)
			}
			if len(ranges) > 1 && r[1]-r[0] < least {
				t.Errorf("%s: range %v has fewer than %d keys", c.name, r, least)
			}
			weight := g.start[min(r[1], g.nBatch)] - g.start[min(r[0], g.nBatch)] + r[1] - r[0]
			if share := total / len(ranges); c.balanced && len(ranges) > 1 && (weight < share*9/10 || weight > share*11/10) {
				t.Errorf("%s: range %v weighs %d, want about %d", c.name, r, weight, share)
			}
			at = r[1]
		}
		if at != n {
			t.Errorf("%s: ranges %v end at %d, want %d", c.name, ranges, at, n)
		}
	}
}
