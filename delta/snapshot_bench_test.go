package delta

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchCommits is the length of the log BenchmarkSnapshot10kCommits loads.
const benchCommits = 10_000

// buildBenchLog writes a log of benchCommits versions into dir: version 0 creates the table,
// every later version appends one file (with stats) and sets a txn, as a streaming table's
// batches do. The data files themselves are not written: loading a snapshot does not read them.
func buildBenchLog(b *testing.B, dir string) {
	b.Helper()
	s := mustDDL(b, "id BIGINT, name STRING, amount DECIMAL(10,2), at TIMESTAMP")
	if err := os.MkdirAll(filepath.Join(dir, LogDir), 0o755); err != nil {
		b.Fatal(err)
	}
	meta := Metadata{ID: "bench", Schema: s, Configuration: map[string]string{ConfigEnableChangeDataFeed: "true"}, CreatedTime: 1}
	p := DefaultProtocol
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for v := int64(0); v < benchCommits; v++ {
		c := &Commit{Info: CommitInfo{Timestamp: ts + v*1000, Operation: "STREAMING UPDATE", OperationParameters: map[string]any{"epochId": v}}}
		if v == 0 {
			c.Protocol, c.Metadata = &p, &meta
		} else {
			c.Adds = []Add{{
				Path: fmt.Sprintf("part-00000-%08d.c000.snappy.parquet", v), PartitionValues: map[string]string{}, Size: 1500 + v%100,
				ModificationTime: ts + v*1000, DataChange: true,
				Stats: fmt.Sprintf(`{"numRecords":100,"minValues":{"id":%d,"name":"a","amount":1.00,"at":"2024-01-01T00:00:00.000Z"},"maxValues":{"id":%d,"name":"z","amount":99.99,"at":"2024-01-02T00:00:00.000Z"},"nullCount":{"id":0,"name":0,"amount":0,"at":0}}`, v*100, v*100+99),
			}}
			c.Txns = []Txn{{AppID: "tributary:bench:t", Version: v, LastUpdated: ts + v*1000}}
		}
		data, err := encodeCommit(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, LogDir, fmt.Sprintf("%020d.json", v)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot10kCommits loads the latest snapshot of a table with 10,000 commits (9,999
// live files) from a fresh Table, without a checkpoint (replaying every JSON commit) and with
// the checkpoint of version 9990 that delta.checkpointInterval 10 leaves (reading it and
// replaying 9 commits), in the same run; it reports both times per load and their ratio.
func BenchmarkSnapshot10kCommits(b *testing.B) {
	plain, withCP := b.TempDir(), b.TempDir()
	buildBenchLog(b, plain)
	if err := os.MkdirAll(filepath.Join(withCP, LogDir), 0o755); err != nil {
		b.Fatal(err)
	}
	for v := 0; v < benchCommits; v++ {
		name := fmt.Sprintf("%020d.json", v)
		if err := os.Link(filepath.Join(plain, LogDir, name), filepath.Join(withCP, LogDir, name)); err != nil {
			b.Fatal(err)
		}
	}
	cpSnap, err := New(plain).Snapshot(benchCommits - 10)
	if err != nil {
		b.Fatal(err)
	}
	if err := New(withCP).WriteCheckpoint(cpSnap); err != nil {
		b.Fatal(err)
	}
	load := func(dir string) time.Duration {
		start := time.Now()
		snap, err := New(dir).Snapshot(-1)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Files) != benchCommits-1 {
			b.Fatalf("%d files", len(snap.Files))
		}
		return time.Since(start)
	}
	var json, cp time.Duration
	n := 0
	for b.Loop() {
		json += load(plain)
		cp += load(withCP)
		n++
	}
	msJSON := float64(json.Microseconds()) / 1000 / float64(n)
	msCP := float64(cp.Microseconds()) / 1000 / float64(n)
	b.ReportMetric(msJSON, "ms/load-json-only")
	b.ReportMetric(msCP, "ms/load-checkpoint")
	b.ReportMetric(msJSON/msCP, "x-speedup")
}
