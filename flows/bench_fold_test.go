package flows

import (
	"flag"
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"tributary/schema"
)

var (
	benchFoldKeys   = flag.Int("bench.fold-keys", 1_000_000, "keys of BenchmarkFoldBulk")
	benchFoldEvents = flag.Int("bench.fold-events", 10_000_000, "change events of BenchmarkFoldBulk")
)

// BenchmarkFoldBulk folds -bench.fold-events change events (default 10,000,000) over
// -bench.fold-keys BIGINT keys (default 1,000,000) with rising BIGINT sequences, 5% deletes, as
// the folding goroutine of readChangeBatch does for the cdc-bulk scenario: groups of 1,000,000
// events (a row group) handed to folder.addAll, two buffers of events reused in turn, then
// folder.finish. Each group's events are built (new values, as a row group's are) with the
// timer stopped (and collected, so that the collections during the fold are the fold's own);
// the fold alone is timed. Reported: ns per event, and the process's CPU time (user and
// system, the collector's included) per event.
func BenchmarkFoldBulk(b *testing.B) {
	const group = 1_000_000
	keys, total := *benchFoldKeys, *benchFoldEvents
	r := rand.New(rand.NewPCG(5, 6))
	// Two buffers of events, as readChangeBatch's eventBufs, each a row group's worth.
	bufs := make([][]event, 2)
	names := make([]any, keys)
	for i := range names {
		names[i] = "name-" + strconv.Itoa(i)
	}
	fill := func(evs []event, first int) {
		vals := make([]any, len(evs)*6)
		for i := range evs {
			v := vals[i*6 : (i+1)*6 : (i+1)*6]
			id := r.Int64N(int64(keys))
			v[0], v[1] = id, int64(first+i)
			v[2], v[3], v[4], v[5] = id, names[id], schema.Decimal(r.Int64N(1_000_000)), int64(first+i)
			evs[i] = event{key: v[0:1:1], seq: v[1:2:2], row: v[2:6:6], delete: r.IntN(20) == 0, arrival: first + i}
		}
	}
	for i := range bufs {
		bufs[i] = make([]event, min(group, total))
	}
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		f := newFolder(0)
		for done, i := 0, 0; done < total; done, i = done+group, i+1 {
			b.StopTimer()
			evs := bufs[i%2][:min(group, total-done)]
			fill(evs, done)
			runtime.GC()
			b.StartTimer()
			c0 := cpuTime()
			f.addAll(evs)
			cpu += cpuTime() - c0
		}
		c0 := cpuTime()
		red := f.finish()
		cpu += cpuTime() - c0
		if len(red.order) == 0 {
			b.Fatal("no winners")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(total), "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(total), "cpu-ns/event")
}

// cpuTime returns the user and system CPU time of the process so far (0 where unavailable).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
