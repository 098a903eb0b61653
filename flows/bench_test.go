package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// nopEvents discards events.
type nopEvents struct{}

func (nopEvents) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
}

const benchSpec = `name: bench
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, amount DECIMAL(10,2), seq BIGINT"
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
`

// loadPipeline writes a spec into dir, creates its landing folder, loads it and sets up its tables.
func loadPipeline(tb testing.TB, dir, text string) *spec.Pipeline {
	tb.Helper()
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		tb.Fatal(err)
	}
	p, err := spec.Load(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range p.Datasets {
		if err := Setup(p, d); err != nil {
			tb.Fatal(err)
		}
	}
	return p
}

// appendEvents commits rows to the bronze table directly, as one ingest batch would.
func appendEvents(tb testing.TB, p *spec.Pipeline, rows [][]any) {
	tb.Helper()
	t := delta.New(TableDir(p.Storage, "changes"))
	snap, err := t.Snapshot(-1)
	if err != nil {
		tb.Fatal(err)
	}
	add, err := t.WriteFile(p.Dataset("changes").Schema, rows)
	if err != nil {
		tb.Fatal(err)
	}
	tx := t.Begin(snap)
	tx.Add(add)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		tb.Fatal(err)
	}
}

// changeEvents returns n events over keys keys with increasing sequence: 5% deletes, the rest
// upserts, keys drawn uniformly (deterministic seed).
func changeEvents(r *rand.Rand, n, keys int, seq *int64) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		*seq++
		id := int64(r.IntN(keys))
		op := "U"
		if r.IntN(20) == 0 {
			op = "D"
		}
		rows[i] = []any{op, id, "name-" + strconv.FormatInt(id, 10), schema.Decimal(r.Int64N(1_000_000)), *seq}
	}
	return rows
}

// BenchmarkApplyChangesSCD1 applies 1,000,000 change events over 100,000 keys to an SCD type 1
// table in batches of 100,000 (the main-job issue's target). Reported: events/s and the
// process's peak resident memory (VmHWM) in MiB.
func BenchmarkApplyChangesSCD1(b *testing.B) {
	const total, keys, batch = 1_000_000, 100_000, 100_000
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		p := loadPipeline(b, dir, benchSpec)
		env := &Env{Pipeline: p, Events: nopEvents{}}
		r := rand.New(rand.NewPCG(1, 2))
		var seq int64
		for done := 0; done < total; done += batch {
			b.StopTimer()
			appendEvents(b, p, changeEvents(r, batch, keys, &seq))
			b.StartTimer()
			m, err := ApplyChanges(ctx, env, p.Dataset("target"))
			if err != nil {
				b.Fatal(err)
			}
			if m.Idle {
				b.Fatal("the flow found no new events")
			}
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
}

// peakRSSMiB reads VmHWM from /proc/self/status (0 where unavailable).
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// readTable returns the latest snapshot of dataset's table and every row of it.
func readTable(tb testing.TB, p *spec.Pipeline, dataset string) (*delta.Snapshot, [][]any) {
	tb.Helper()
	t := delta.New(TableDir(p.Storage, dataset))
	snap, err := t.Snapshot(-1)
	if err != nil {
		tb.Fatal(err)
	}
	rows, err := t.Rows(snap)
	if err != nil {
		tb.Fatal(err)
	}
	return snap, rows
}
