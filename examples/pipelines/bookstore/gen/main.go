// Command gen writes the bookstore example's small data set into the example's landing folder:
// orders as Parquet files (orders_raw), customers as JSON lines, and a books change feed as JSON
// lines, in two batches (the second lands new files in every folder). Run it from the
// repository root: `go run ./examples/pipelines/bookstore/gen`. The output is deterministic.
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// order is one row of orders_raw; a nil OrderID is a broken record the pipeline drops.
type order struct {
	OrderID        *int64 `parquet:"order_id,optional"`
	OrderTimestamp int64  `parquet:"order_timestamp"` // Unix seconds, as in the Databricks course
	CustomerID     string `parquet:"customer_id"`
	Quantity       int64  `parquet:"quantity"`
	Total          int64  `parquet:"total"`
}

func id(n int64) *int64 { return &n }

// day is 2024-03-<d> at 10:00 UTC, in Unix seconds.
func day(d int) int64 { return 1709287200 + int64(d-1)*86400 }

func main() {
	dir := "examples/pipelines/bookstore/landing"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	orders := map[string][]order{
		"orders/orders-0001.parquet": {
			{id(1), day(1), "C01", 2, 40},
			{id(2), day(1), "C02", 1, 25},
			{id(3), day(1), "C01", 1, 15},
			{nil, day(1), "C03", 5, 100},
			{id(4), day(2), "C03", 3, 45},
		},
		"orders/orders-0002.parquet": {
			{id(5), day(2), "C01", 4, 60},
			{id(6), day(2), "C04", 2, 30},
			{nil, day(2), "C01", 9, 1},
		},
	}
	for name, rows := range orders {
		path := filepath.Join(dir, name)
		must(os.MkdirAll(filepath.Dir(path), 0o755))
		must(parquet.WriteFile(path, rows))
	}
	text := map[string][]string{
		"customers/customers-0001.json": {
			`{"customer_id": "C01", "email": "ana@example.com", "country": "China"}`,
			`{"customer_id": "C02", "email": "ben@example.com", "country": "France"}`,
			`{"customer_id": "C03", "email": "chen@example.com", "country": "China"}`,
		},
		"customers/customers-0002.json": {
			`{"customer_id": "C04", "email": "dara@example.com", "country": "China"}`,
		},
		"books-cdc/books-0001.json": {
			`{"book_id": "B01", "title": "Data Pipelines", "author": "A. Author", "price": 24.00, "row_status": "INSERT", "row_time": "2024-03-01T09:00:00Z"}`,
			`{"book_id": "B02", "title": "Delta Lake", "author": "B. Author", "price": 30.00, "row_status": "INSERT", "row_time": "2024-03-01T09:00:00Z"}`,
			`{"book_id": "B03", "title": "Spark SQL", "author": "C. Author", "price": 28.00, "row_status": "INSERT", "row_time": "2024-03-01T09:00:00Z"}`,
		},
		"books-cdc/books-0002.json": {
			`{"book_id": "B01", "title": "Data Pipelines", "author": "A. Author", "price": 26.00, "row_status": "UPDATE", "row_time": "2024-03-02T09:00:00Z"}`,
			`{"book_id": "B03", "title": null, "author": null, "price": null, "row_status": "DELETE", "row_time": "2024-03-02T12:00:00Z"}`,
			`{"book_id": "B04", "title": "DuckDB", "author": "D. Author", "price": 35.00, "row_status": "INSERT", "row_time": "2024-03-02T09:00:00Z"}`,
		},
	}
	for name, lines := range text {
		path := filepath.Join(dir, name)
		must(os.MkdirAll(filepath.Dir(path), 0o755))
		must(os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	fmt.Println("wrote", dir)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
