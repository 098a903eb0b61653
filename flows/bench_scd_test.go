package flows

import (
	"context"
	"flag"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
)

var benchTableRows = flag.Int("bench.table-rows", 10_000_000, "rows of the SCD type 1 table in BenchmarkTouchedFiles")

// BenchmarkApplyChangesSCD2 applies 1,000,000 change events over 100,000 keys to an SCD type 2
// table in batches of 100,000. Reported: events/s and peak RSS (MiB).
func BenchmarkApplyChangesSCD2(b *testing.B) {
	const total, keys, batch = 1_000_000, 100_000, 100_000
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := loadPipeline(b, b.TempDir(), strings.Replace(benchSpec, "except_column_list: [op]", "except_column_list: [op]\n      stored_as_scd_type: 2", 1))
		env := &Env{Pipeline: p, Events: nopEvents{}}
		r := rand.New(rand.NewPCG(1, 2))
		var seq int64
		for done := 0; done < total; done += batch {
			b.StopTimer()
			appendEvents(b, p, changeEvents(r, batch, keys, &seq))
			b.StartTimer()
			if _, err := ApplyChanges(ctx, env, p.Dataset("target")); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
}

// BenchmarkTouchedFiles applies one batch of 10,000 changes (updates of recent keys, as order
// updates are) to an SCD type 1 table of -bench.table-rows rows (default 10,000,000), two ways in
// one run: "touched-files" is the flow, which rewrites only the data files holding touched keys;
// "whole-table" rewrites every data file, as an APPLY CHANGES without a key-to-file index would.
// Reported: bytes written (data + change data files) and the time of the batch.
func BenchmarkTouchedFiles(b *testing.B) {
	const changes = 10_000
	rows := *benchTableRows
	ctx := context.Background()
	p := loadPipeline(b, b.TempDir(), benchSpec)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
	// Build the table: inserts of keys 0..rows-1 in batches of 1,000,000.
	var seq int64
	for start := 0; start < rows; start += 1_000_000 {
		n := min(1_000_000, rows-start)
		evs := make([][]any, n)
		for i := range evs {
			seq++
			id := int64(start + i)
			evs[i] = []any{"I", id, "name-" + strconv.FormatInt(id, 10), schema.Decimal(id % 100000), seq}
		}
		appendEvents(b, p, evs)
		if _, err := ApplyChanges(ctx, env, p.Dataset("target")); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	batch := func() [][]any {
		evs := make([][]any, changes)
		for i := range evs {
			seq++
			id := int64(rows - 1 - r.IntN(min(rows, 500_000))) // the most recent keys
			evs[i] = []any{"U", id, "changed", schema.Decimal(r.Int64N(100000)), seq}
		}
		return evs
	}
	target := delta.New(TableDir(p.Storage, "target"))
	written := func(from int64) float64 {
		latest, _ := target.LatestVersion()
		var n int64
		for v := from + 1; v <= latest; v++ {
			c, err := target.ReadCommit(v)
			if err != nil {
				b.Fatal(err)
			}
			for _, a := range c.Adds {
				n += a.Size
			}
			for _, c := range c.CDCs {
				n += c.Size
			}
		}
		return float64(n)
	}
	b.Run("touched-files", func(b *testing.B) {
		var bytes float64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			appendEvents(b, p, batch())
			before, _ := target.LatestVersion()
			b.StartTimer()
			if _, err := ApplyChanges(ctx, env, p.Dataset("target")); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			bytes += written(before)
		}
		b.ReportMetric(bytes/float64(b.N), "bytes-written/op")
	})
	b.Run("whole-table", func(b *testing.B) {
		var bytes float64
		sch := p.Dataset("target").Schema
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			evs := batch()
			before, _ := target.LatestVersion()
			b.StartTimer()
			snap, err := target.Snapshot(-1)
			if err != nil {
				b.Fatal(err)
			}
			upd := map[int64][]any{}
			for _, e := range evs {
				upd[e[1].(int64)] = []any{e[1], e[2], e[3], e[4]}
			}
			tx := target.Begin(snap)
			var out, pre, post [][]any
			for _, f := range snap.Files {
				frows, err := target.ReadFile(f.Path, sch)
				if err != nil {
					b.Fatal(err)
				}
				for _, row := range frows {
					if u, ok := upd[row[0].(int64)]; ok {
						pre, post = append(pre, row), append(post, u)
						row = u
					}
					out = append(out, row)
				}
				tx.Remove(target.RemoveFor(f, 0))
			}
			adds, err := writeRows(target, sch, out, func([]any, string) {})
			if err != nil {
				b.Fatal(err)
			}
			tx.Add(adds...)
			var cdcRows [][]any
			var types []string
			for j := range pre {
				cdcRows = append(cdcRows, pre[j], post[j])
				types = append(types, delta.ChangeUpdatePreimage, delta.ChangeUpdatePostimage)
			}
			c, err := target.WriteCDCFile(sch, cdcRows, types)
			if err != nil {
				b.Fatal(err)
			}
			tx.AddCDC(c)
			if _, err := tx.Commit("MERGE", nil); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			bytes += written(before)
		}
		b.ReportMetric(bytes/float64(b.N), "bytes-written/op")
	})
}

// histGatherBatch is 1,000,000 events over 100,000 keys in the shape of the bench's scd2
// scenario (id, name, amount, seq; names of 8 to 12 bytes; 5% of the events late), folded into
// histColumns in arrival order.
func histGatherBatch(b *testing.B) *histColumns {
	const n, keys = 1_000_000, 100_000
	c := histColumnsOf(b, "id BIGINT, name STRING, amount DECIMAL(10,2), seq BIGINT")
	r := rand.New(rand.NewPCG(3, 4))
	evs := make([]event, n)
	for i := range evs {
		id, seq := int64(r.IntN(keys)), int64(i+1)
		if r.IntN(20) == 0 {
			seq -= int64(r.IntN(300_000)) // late: after newer events of its key
		}
		name := "name-" + strconv.FormatInt(id, 10) + "-" + strconv.Itoa(i%10)
		evs[i] = event{key: []any{id}, seq: []any{seq}, arrival: i, row: []any{id, name, schema.Decimal(r.IntN(1_000_000)), seq}}
	}
	c.addAll(evs)
	return c
}

// BenchmarkHistColumnsGather sorts and gathers a first SCD type 2 batch of 1,000,000 events
// (histColumns.order, then gather in two ranges, as fold cuts it on two cores). Reported:
// events/s.
func BenchmarkHistColumnsGather(b *testing.B) {
	c := histGatherBatch(b)
	b.ResetTimer()
	for range b.N {
		ord, sorted := c.order()
		half := len(ord) / 2
		for half < len(ord) && sorted.keys[half] == sorted.keys[half-1] {
			half++
		}
		done := make(chan struct{})
		go func() {
			c.gather(ord[half:], sorted.part(half, len(ord)))
			close(done)
		}()
		c.gather(ord[:half], sorted.part(0, half))
		<-done
	}
	b.ReportMetric(float64(c.len())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkHistColumnsEncode encodes the histories of the 100,000 keys of a first SCD type 2
// batch of 1,000,000 events for the CDC state (histBatch.reduce and appendHistory, as the state's
// save does with a fresh key's events), each into the same reused buffer. Reported: events/s.
func BenchmarkHistColumnsEncode(b *testing.B) {
	c := histGatherBatch(b)
	ord, sorted := c.order()
	hb := c.gather(ord, sorted)
	var buf []byte
	var red []int32
	b.ResetTimer()
	for range b.N {
		for a := 0; a < len(hb.keys); {
			end := a + 1
			for end < len(hb.keys) && hb.keys[end] == hb.keys[a] {
				end++
			}
			red = hb.reduce(red[:0], int32(a), int32(end), nil)
			buf = hb.appendHistory(buf[:0], red)
			a = end
		}
	}
	b.ReportMetric(float64(len(hb.keys))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
