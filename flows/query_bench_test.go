package flows

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
	"tributary/sqlengine"
)

const mvBenchSpec = `name: bench
storage: ./storage
datasets:
  - name: sales
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, shop BIGINT, amount DECIMAL(10,2)"
  - name: by_shop
    query: SELECT shop, count(*) AS n, sum(amount) AS total FROM sales GROUP BY shop
`

const mvBenchSQL = "SELECT shop, count(*) AS n, sum(amount) AS total FROM %s GROUP BY shop"

// BenchmarkMaterializedView refreshes a materialized view (GROUP BY over 10,000,000 rows,
// TRIBUTARY_BENCH_ROWS to change it, in 1,000 groups) and runs the same query directly in
// DuckDB on the same Parquet files; it reports both times per refresh and their ratio
// (mv/duckdb). The result does not change between refreshes, so after the first one a refresh
// is the registration of the table's files, the query, and the comparison with the view's table
// (no commit). Run: go test ./flows -run '^$' -bench MaterializedView -benchtime 5x
func BenchmarkMaterializedView(b *testing.B) {
	n := 10_000_000
	if s := os.Getenv("TRIBUTARY_BENCH_ROWS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := b.TempDir()
	p := loadPipeline(b, dir, mvBenchSpec)
	t := delta.New(TableDir(p.Storage, "sales"))
	snap, err := t.Snapshot(-1)
	if err != nil {
		b.Fatal(err)
	}
	tx := t.Begin(snap)
	const chunk = 1_000_000
	for start := 0; start < n; start += chunk {
		rows := make([][]any, 0, min(chunk, n-start))
		for i := start; i < min(start+chunk, n); i++ {
			rows = append(rows, []any{int64(i), int64(i % 1000), schema.Decimal(int64(i%10000) + 1)})
		}
		adds, err := t.WriteData(snap.Metadata, rows)
		if err != nil {
			b.Fatal(err)
		}
		tx.Add(adds...)
	}
	if _, err := tx.Commit("WRITE", nil); err != nil {
		b.Fatal(err)
	}
	snap, _ = t.Snapshot(-1)
	var files []string
	for _, f := range snap.Files {
		files = append(files, "'"+filepath.Join(t.Dir, f.Path)+"'")
	}
	direct := strings.Replace(mvBenchSQL, "%s", "read_parquet(["+strings.Join(files, ", ")+"])", 1)
	eng, err := sqlengine.Open("")
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	env := &Env{Pipeline: p, Events: nopEvents{}}
	ctx := context.Background()
	var mvTime, duckTime time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := Query(ctx, env, p.Dataset("by_shop")); err != nil {
			b.Fatal(err)
		}
		mvTime += time.Since(start)
		start = time.Now()
		if _, rows, err := eng.Query(ctx, direct, nil); err != nil || len(rows) != 1000 {
			b.Fatalf("direct query: %d rows, %v", len(rows), err)
		}
		duckTime += time.Since(start)
	}
	b.ReportMetric(float64(mvTime.Milliseconds())/float64(b.N), "mv-ms/op")
	b.ReportMetric(float64(duckTime.Milliseconds())/float64(b.N), "duckdb-ms/op")
	b.ReportMetric(float64(mvTime)/float64(duckTime), "mv/duckdb")
}
