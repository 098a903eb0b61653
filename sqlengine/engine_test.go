package sqlengine

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

func mustDDL(t *testing.T, s string) schema.Schema {
	t.Helper()
	sc, err := schema.ParseDDL(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestQueryParquetAndRows registers one relation over a Parquet file written by our Delta writer
// and one over rows, joins them and checks the typed result.
func TestQueryParquetAndRows(t *testing.T) {
	dir := t.TempDir()
	orders := mustDDL(t, "id BIGINT, cust STRING, amount DECIMAL(10,2), day DATE, at TIMESTAMP")
	tb := delta.New(dir)
	add, err := tb.WriteFile(orders, [][]any{
		{int64(1), "a", schema.Decimal(1050), schema.Date(19000), schema.Timestamp(1_700_000_000_000_000)},
		{int64(2), "b", schema.Decimal(200), schema.Date(19001), nil},
		{int64(3), "a", schema.Decimal(25), nil, schema.Timestamp(1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	custs := mustDDL(t, "cust STRING, country STRING, vip BOOLEAN, n INT")
	e, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rels := []Relation{
		{Name: "orders", Schema: orders, Files: []string{filepath.Join(dir, add.Path)}},
		{Name: "customers", Schema: custs, Rows: [][]any{{"a", "FR", true, int32(7)}, {"b", "DE", false, nil}}},
	}
	s, rows, err := e.Query(context.Background(), `SELECT o.cust, c.country, sum(o.amount) AS total, count(*) AS n, max(o.day) AS last_day, min(o.at) AS first_at, any_value(c.n) AS cn, avg(o.id) AS avg_id
		FROM orders o JOIN customers c ON o.cust = c.cust GROUP BY ALL ORDER BY o.cust`, rels)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.DDL(), "cust STRING, country STRING, total DECIMAL(18,2), n BIGINT, last_day DATE, first_at TIMESTAMP, cn INT, avg_id DOUBLE"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	want := [][]any{
		{"a", "FR", schema.Decimal(1075), int64(2), schema.Date(19000), schema.Timestamp(1), int32(7), 2.0},
		{"b", "DE", schema.Decimal(200), int64(1), schema.Date(19001), nil, nil, 2.0},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
}

// TestQueryEmptyAndErrors: an empty relation reads as no rows with its columns; an unsupported
// result type and a SQL error are errors.
func TestQueryEmptyAndErrors(t *testing.T) {
	e, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := Relation{Name: "t", Schema: mustDDL(t, "x BIGINT"), RowsOnly: true}
	_, rows, err := e.Query(context.Background(), "SELECT x FROM t", []Relation{rel})
	if err != nil || len(rows) != 0 {
		t.Fatalf("rows %v err %v", rows, err)
	}
	if _, _, err := e.Query(context.Background(), "SELECT [INTERVAL 1 DAY] AS l", nil); err == nil {
		t.Fatal("a LIST of INTERVAL result was accepted")
	}
	if _, _, err := e.Query(context.Background(), "SELEC 1", nil); err == nil {
		t.Fatal("a syntax error was accepted")
	}
}
