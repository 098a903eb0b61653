package flows

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"tributary/delta"
)

const benchIngestSpec = `name: bench
storage: ./storage
datasets:
  - name: events
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, event STRING, user STRING, amount DECIMAL(10,2), score DOUBLE, ok BOOLEAN, at TIMESTAMP, note STRING"
`

// writeBenchLines writes JSON lines to path until it holds at least size bytes and returns the
// number of lines.
func writeBenchLines(tb testing.TB, path string, size int64) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	events := []string{"click", "view", "purchase", "signup", "logout"}
	var n, written int64
	line := make([]byte, 0, 256)
	for written < size {
		line = line[:0]
		line = append(line, `{"id":`...)
		line = strconv.AppendInt(line, n, 10)
		line = append(line, `,"event":"`...)
		line = append(line, events[n%5]...)
		line = append(line, `","user":"user_`...)
		line = strconv.AppendInt(line, n%100_003, 10)
		line = append(line, `","amount":`...)
		line = strconv.AppendInt(line, n%100_000/100, 10)
		line = append(line, '.')
		line = strconv.AppendInt(line, 10+n%90, 10)
		line = append(line, `,"score":`...)
		line = strconv.AppendFloat(line, float64(n%1000)/7, 'g', -1, 64)
		line = append(line, `,"ok":`...)
		line = strconv.AppendBool(line, n%3 == 0)
		line = append(line, `,"at":"`...)
		line = time.Unix(1_700_000_000+n, 0).UTC().AppendFormat(line, "2006-01-02T15:04:05Z")
		line = append(line, `","note":"free text of moderate length, row `...)
		line = strconv.AppendInt(line, n, 10)
		line = append(line, "\"}\n"...)
		if _, err := w.Write(line); err != nil {
			tb.Fatal(err)
		}
		written += int64(len(line))
		n++
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// peakRSS returns this process's peak resident set size in bytes (VmHWM in /proc/self/status),
// or -1 where there is no /proc.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// resetPeakRSS sets VmHWM back to the current RSS (Linux 4.0+); errors are ignored.
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// BenchmarkIngestJSONLines writes one JSON-lines file of
// TRIBUTARY_BENCH_MB megabytes (default 1024) into a temporary landing folder, ingests it into a
// bronze table twice, side by side: by column (the path an ingest of primitive columns takes,
// ingest_columns.go) and as rows (ingestColumnsOff), and reports for each MB/s, rows/s, the
// peak resident memory of the ingest (VmHWM, reset before it starts, after the memory of the one
// before is given back) and the number of data files the batch committed with their mean size,
// then has DuckDB convert the same file to Parquet (COPY (SELECT * FROM read_json(...)) TO ...
// (FORMAT parquet)) in a child process and reports its figures and our speed over its
// (x-tributary-speed, by column). Run it with
//
//	TRIBUTARY_BENCH_MB=1024 go test ./flows -run '^$' -bench IngestJSONLines -benchtime 1x
//
// TRIBUTARY_BENCH_MB=2048 checks the 2 GB memory bound; TRIBUTARY_BENCH_DUCKDB=0 skips DuckDB.
func BenchmarkIngestJSONLines(b *testing.B) {
	mb := int64(1024)
	if s := os.Getenv("TRIBUTARY_BENCH_MB"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 {
			b.Fatalf("TRIBUTARY_BENCH_MB=%q: want a positive number of megabytes", s)
		}
		mb = v
	}
	dir := b.TempDir()
	p := loadPipeline(b, dir, benchIngestSpec)
	input := filepath.Join(dir, "landing", "events.json")
	rows := writeBenchLines(b, input, mb<<20)
	st, err := os.Stat(input)
	if err != nil {
		b.Fatal(err)
	}
	size := float64(st.Size())
	var mbps float64
	var peak int64
	for _, mode := range []struct {
		name   string
		byRows bool
	}{{"by-column", false}, {"as-rows", true}} {
		b.Run(mode.name, func(b *testing.B) {
			ingestColumnsOff.Store(mode.byRows)
			defer ingestColumnsOff.Store(false)
			b.SetBytes(st.Size())
			var secs float64
			var modePeak int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				os.RemoveAll(p.Storage)
				for _, d := range p.Datasets {
					if err := Setup(p, d); err != nil {
						b.Fatal(err)
					}
				}
				debug.FreeOSMemory() // what the run before kept is not counted in this one's peak
				resetPeakRSS()
				b.StartTimer()
				start := time.Now()
				m, err := Ingest(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("events"))
				secs = time.Since(start).Seconds()
				if err != nil {
					b.Fatal(err)
				}
				if m.NumOutputRows != rows {
					b.Fatalf("ingested %d rows, want %d", m.NumOutputRows, rows)
				}
				modePeak = max(modePeak, peakRSS())
			}
			b.StopTimer()
			snap, err := delta.New(TableDir(p.Storage, "events")).Snapshot(-1)
			if err != nil {
				b.Fatal(err)
			}
			var fileBytes int64
			for _, f := range snap.Files {
				fileBytes += f.Size
			}
			files := len(snap.Files)
			modeMBps, rps := size/1e6/secs, float64(rows)/secs
			b.ReportMetric(rps, "rows/s")
			b.ReportMetric(float64(modePeak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(files), "files")
			b.Logf("tributary %s: %.0f MB (%d rows) in %.2fs: %.1f MB/s, %.0f rows/s, peak RSS %.0f MiB, %d data files of %.1f MiB on average",
				mode.name, size/1e6, rows, secs, modeMBps, rps, float64(modePeak)/(1<<20), files, float64(fileBytes)/float64(max(files, 1))/(1<<20))
			if !mode.byRows {
				mbps, peak = modeMBps, modePeak
			} else if mbps > 0 {
				b.Logf("by column against as rows: speed %.2fx, peak memory %.2fx", mbps/modeMBps, float64(peak)/float64(modePeak))
			}
		})
	}
	if os.Getenv("TRIBUTARY_BENCH_DUCKDB") == "0" {
		return
	}
	b.Run("duckdb", func(b *testing.B) {
		b.SetBytes(st.Size())
		var dsecs float64
		var dpeak int64 = -1
		for i := 0; i < b.N; i++ {
			out := filepath.Join(dir, "duckdb.parquet")
			os.Remove(out)
			cmd := exec.Command(os.Args[0], "-test.run=^TestDuckDBCopyHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TRIBUTARY_DUCKDB_IN="+input, "TRIBUTARY_DUCKDB_OUT="+out)
			start := time.Now()
			text, err := cmd.CombinedOutput()
			dsecs = time.Since(start).Seconds()
			if err != nil {
				b.Fatalf("DuckDB: %v\n%s", err, text)
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				dpeak = ru.Maxrss << 10 // kB on Linux
			}
		}
		dmbps, drps := size/1e6/dsecs, float64(rows)/dsecs
		b.ReportMetric(drps, "rows/s")
		b.ReportMetric(float64(dpeak)/(1<<20), "peak-MiB")
		b.ReportMetric(mbps/dmbps, "x-tributary-speed")
		b.Logf("duckdb COPY to Parquet (child process, start-up included): %.2fs: %.1f MB/s, %.0f rows/s, peak RSS %.0f MiB", dsecs, dmbps, drps, float64(dpeak)/(1<<20))
		b.Logf("tributary (by column)/duckdb: speed %.2fx, peak memory %.2fx", mbps/dmbps, float64(peak)/float64(dpeak))
	})
}

// TestDuckDBCopyHelper is the child process of BenchmarkIngestJSONLines: with
// TRIBUTARY_DUCKDB_IN and TRIBUTARY_DUCKDB_OUT set it has DuckDB convert the JSON-lines input to a
// Parquet file; otherwise it is skipped.
func TestDuckDBCopyHelper(t *testing.T) {
	in, out := os.Getenv("TRIBUTARY_DUCKDB_IN"), os.Getenv("TRIBUTARY_DUCKDB_OUT")
	if in == "" || out == "" {
		t.Skip("only run as BenchmarkIngestJSONLines' child process")
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := fmt.Sprintf("COPY (SELECT * FROM read_json(%s)) TO %s (FORMAT parquet)", quoteSQL(in), quoteSQL(out))
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// BenchmarkJSONLineParse parses 64 MB of the lines of BenchmarkIngestJSONLines held in memory,
// without writing them: eachJSONLine as ingestion runs it (the scanner, GOMAXPROCS workers),
// and one line after another with the scanner and with the encoding/json path (parseDecoded)
// it replaces. MB/s is of input.
func BenchmarkJSONLineParse(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.json")
	writeBenchLines(b, path, 64<<20)
	text, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	src := loadPipeline(b, b.TempDir(), benchIngestSpec).Dataset("events").Source
	lr := newLineReader(src.Schema, src.RescuedDataColumn, path)
	lines := bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n"))
	b.Run("eachJSONLine", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			err := eachJSONLine(lr, bytes.NewReader(text), nil, func([]any, bool, []badValue, int64) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			for i, l := range lines {
				if _, ok, bad := lr.parse(l, int64(i+1)); !ok || bad != nil {
					b.Fatalf("line %d: %v", i+1, bad)
				}
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			for i, l := range lines {
				if ok, bad := lr.parseDecoded(l, int64(i+1), make([]any, lr.width())); !ok || bad != nil {
					b.Fatalf("line %d: %v", i+1, bad)
				}
			}
		}
	})
}
