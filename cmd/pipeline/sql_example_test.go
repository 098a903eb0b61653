package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const vaccinationsSpec = "../../examples/pipelines/vaccinations/pipeline.yaml"

// TestVaccinationsExample runs the vaccinations example batch by batch: silver is appended to,
// updated and deleted from; gold, fed by silver's change data feed through APPLY CHANGES, equals
// silver after each update, its feed shows one update and one delete for the second batch, and
// the materialized view of rates equals its query.
func TestVaccinationsExample(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing := filepath.Join(tmp, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := exampleArgs(landing, filepath.Join(tmp, "storage"))
	show := func(ds string) []map[string]any {
		return readJSONL(t, mustRun(t, append([]string{"show", vaccinationsSpec, ds, "--format", "jsonl"}, conf...)...))
	}
	copyFile(t, filepath.Join(filepath.Dir(vaccinationsSpec), "landing", "batch-0001.json"), filepath.Join(landing, "batch-0001.json"))
	mustRun(t, append([]string{"run", vaccinationsSpec}, conf...)...)
	gold1 := rowsOf(t,
		`{"country": "FR", "population": 68000000, "doses": 34000000}`,
		`{"country": "DE", "population": 84000000, "doses": 63000000}`,
		`{"country": "IT", "population": 59000000, "doses": 29500000}`)
	assertRows(t, "doses_gold after batch 1", show("doses_gold"), gold1)
	assertRows(t, "doses_by_country after batch 1", show("doses_by_country"), gold1)
	assertRows(t, "vaccination_rate after batch 1", show("vaccination_rate"), rowsOf(t,
		`{"country": "FR", "rate_pct": 50.0}`, `{"country": "DE", "rate_pct": 75.0}`, `{"country": "IT", "rate_pct": 50.0}`))

	copyFile(t, filepath.Join(filepath.Dir(vaccinationsSpec), "landing", "batch-0002.json"), filepath.Join(landing, "batch-0002.json"))
	mustRun(t, append([]string{"run", vaccinationsSpec}, conf...)...)
	gold2 := rowsOf(t,
		`{"country": "FR", "population": 68000000, "doses": 51000000}`,
		`{"country": "DE", "population": 84000000, "doses": 63000000}`,
		`{"country": "ES", "population": 48000000, "doses": 12000000}`)
	assertRows(t, "doses_gold after batch 2", show("doses_gold"), gold2)
	assertRows(t, "doses_by_country after batch 2", show("doses_by_country"), gold2)
	assertRows(t, "vaccination_rate after batch 2", show("vaccination_rate"), rowsOf(t,
		`{"country": "FR", "rate_pct": 75.0}`, `{"country": "DE", "rate_pct": 75.0}`, `{"country": "ES", "rate_pct": 25.0}`))

	cdf := readJSONL(t, mustRun(t, append([]string{"changes", vaccinationsSpec, "doses_gold", "--from-version", "2", "--format", "jsonl"}, conf...)...))
	for _, r := range cdf {
		delete(r, "_commit_timestamp")
	}
	assertRows(t, "doses_gold changes of batch 2", cdf, rowsOf(t,
		`{"country": "FR", "population": 68000000, "doses": 34000000, "_change_type": "update_preimage", "_commit_version": 2}`,
		`{"country": "FR", "population": 68000000, "doses": 51000000, "_change_type": "update_postimage", "_commit_version": 2}`,
		`{"country": "IT", "population": 59000000, "doses": 29500000, "_change_type": "delete", "_commit_version": 2}`,
		`{"country": "ES", "population": 48000000, "doses": 12000000, "_change_type": "insert", "_commit_version": 2}`))

	// A third run with nothing new: the feed is idle and gold does not change; the materialized
	// view's result is the same, so its refresh commits nothing and says so.
	out := mustRun(t, append([]string{"run", vaccinationsSpec}, conf...)...)
	assertRows(t, "doses_gold after an idle run", show("doses_gold"), gold2)
	if !regexp.MustCompile(`vaccination_rate +COMPLETED +result unchanged, nothing committed`).MatchString(out) {
		t.Errorf("the idle run's summary does not say that vaccination_rate is unchanged:\n%s", out)
	}
}

const bookstoreSpec = "../../examples/pipelines/bookstore/pipeline.yaml"

// landBookstore copies the bookstore files of one batch ("0001" or "0002") into landing.
func landBookstore(t *testing.T, landing, batch string) {
	t.Helper()
	src := filepath.Join(filepath.Dir(bookstoreSpec), "landing")
	for _, f := range []string{"orders/orders-" + batch + ".parquet", "customers/customers-" + batch + ".json", "books-cdc/books-" + batch + ".json"} {
		if err := os.MkdirAll(filepath.Join(landing, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, filepath.Join(src, f), filepath.Join(landing, f))
	}
}

// TestBookstoreExample runs the bookstore example in two batches: new files flow through every
// layer (bronze Parquet and JSON, the silver streaming join with its drop expectation, the gold
// materialized view, the SCD type 2 books table), and the graph has the edges found in the SQL.
func TestBookstoreExample(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing := filepath.Join(tmp, "landing")
	conf := exampleArgs(landing, filepath.Join(tmp, "storage"))
	show := func(ds string) []map[string]any {
		return readJSONL(t, mustRun(t, append([]string{"show", bookstoreSpec, ds, "--format", "jsonl"}, conf...)...))
	}
	landBookstore(t, landing, "0001")
	mustRun(t, append([]string{"run", bookstoreSpec}, conf...)...)
	cleaned1 := []string{
		`{"order_id": 1, "customer_id": "C01", "email": "ana@example.com", "country": "China", "quantity": 2, "total": 40, "order_date": "2024-03-01"}`,
		`{"order_id": 2, "customer_id": "C02", "email": "ben@example.com", "country": "France", "quantity": 1, "total": 25, "order_date": "2024-03-01"}`,
		`{"order_id": 3, "customer_id": "C01", "email": "ana@example.com", "country": "China", "quantity": 1, "total": 15, "order_date": "2024-03-01"}`,
		`{"order_id": 4, "customer_id": "C03", "email": "chen@example.com", "country": "China", "quantity": 3, "total": 45, "order_date": "2024-03-02"}`,
	}
	assertRows(t, "orders_cleaned after batch 1", show("orders_cleaned"), rowsOf(t, cleaned1...))
	assertRows(t, "daily_customer_books after batch 1", show("daily_customer_books"), rowsOf(t,
		`{"customer_id": "C01", "email": "ana@example.com", "order_date": "2024-03-01", "books_counts": 3}`,
		`{"customer_id": "C03", "email": "chen@example.com", "order_date": "2024-03-02", "books_counts": 3}`))
	assertRows(t, "books_silver after batch 1", show("books_silver"), rowsOf(t,
		`{"book_id": "B01", "title": "Data Pipelines", "author": "A. Author", "price": 24.00, "__START_AT": "2024-03-01T09:00:00.000000Z", "__END_AT": null}`,
		`{"book_id": "B02", "title": "Delta Lake", "author": "B. Author", "price": 30.00, "__START_AT": "2024-03-01T09:00:00.000000Z", "__END_AT": null}`,
		`{"book_id": "B03", "title": "Spark SQL", "author": "C. Author", "price": 28.00, "__START_AT": "2024-03-01T09:00:00.000000Z", "__END_AT": null}`))

	landBookstore(t, landing, "0002")
	mustRun(t, append([]string{"run", bookstoreSpec}, conf...)...)
	assertRows(t, "orders_cleaned after batch 2", show("orders_cleaned"), rowsOf(t, append(cleaned1,
		`{"order_id": 5, "customer_id": "C01", "email": "ana@example.com", "country": "China", "quantity": 4, "total": 60, "order_date": "2024-03-02"}`,
		`{"order_id": 6, "customer_id": "C04", "email": "dara@example.com", "country": "China", "quantity": 2, "total": 30, "order_date": "2024-03-02"}`)...))
	assertRows(t, "daily_customer_books after batch 2", show("daily_customer_books"), rowsOf(t,
		`{"customer_id": "C01", "email": "ana@example.com", "order_date": "2024-03-01", "books_counts": 3}`,
		`{"customer_id": "C01", "email": "ana@example.com", "order_date": "2024-03-02", "books_counts": 4}`,
		`{"customer_id": "C03", "email": "chen@example.com", "order_date": "2024-03-02", "books_counts": 3}`,
		`{"customer_id": "C04", "email": "dara@example.com", "order_date": "2024-03-02", "books_counts": 2}`))
	assertRows(t, "books_silver after batch 2", show("books_silver"), rowsOf(t,
		`{"book_id": "B01", "title": "Data Pipelines", "author": "A. Author", "price": 24.00, "__START_AT": "2024-03-01T09:00:00.000000Z", "__END_AT": "2024-03-02T09:00:00.000000Z"}`,
		`{"book_id": "B01", "title": "Data Pipelines", "author": "A. Author", "price": 26.00, "__START_AT": "2024-03-02T09:00:00.000000Z", "__END_AT": null}`,
		`{"book_id": "B02", "title": "Delta Lake", "author": "B. Author", "price": 30.00, "__START_AT": "2024-03-01T09:00:00.000000Z", "__END_AT": null}`,
		`{"book_id": "B03", "title": "Spark SQL", "author": "C. Author", "price": 28.00, "__START_AT": "2024-03-01T09:00:00.000000Z", "__END_AT": "2024-03-02T12:00:00.000000Z"}`,
		`{"book_id": "B04", "title": "DuckDB", "author": "D. Author", "price": 35.00, "__START_AT": "2024-03-02T09:00:00.000000Z", "__END_AT": null}`))

	edges := []string{"orders_raw", "customers", "orders_cleaned", "daily_customer_books", "books_bronze", "books_silver"}
	for _, format := range []string{"text", "dot", "mermaid"} {
		out := mustRun(t, "graph", bookstoreSpec, "--format", format)
		for _, want := range map[string][]string{
			"text":    {"orders_cleaned <- orders_raw, customers", "daily_customer_books <- orders_cleaned", "books_silver <- books_bronze"},
			"dot":     {`"orders_raw" -> "orders_cleaned"`, `"customers" -> "orders_cleaned"`, `"orders_cleaned" -> "daily_customer_books"`, `"books_bronze" -> "books_silver"`},
			"mermaid": {"orders_raw --> orders_cleaned", "customers --> orders_cleaned", "orders_cleaned --> daily_customer_books", "books_bronze --> books_silver"},
		}[format] {
			if !strings.Contains(out, want) {
				t.Errorf("graph --format %s lacks %q:\n%s", format, want, out)
			}
		}
		for _, ds := range edges {
			if !strings.Contains(out, ds) {
				t.Errorf("graph --format %s lacks dataset %s", format, ds)
			}
		}
	}
}
