package sqlengine

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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
	e, err := Open("")
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
	e, err := Open("")
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

// TestQueryDeletedRows queries a Delta table with deletion vectors through its Parquet files:
// two files of 5 rows (ids 0-4 and 10-14), then a DELETE by deletion vectors of the rows at
// positions 1 and 3 of the first file and 0 of the second; DuckDB must return the 7 other rows,
// and the same rows as the delta package's reader.
func TestQueryDeletedRows(t *testing.T) {
	dir := t.TempDir()
	s := mustDDL(t, "id BIGINT, name STRING")
	tb := delta.New(dir)
	tx := tb.Begin(nil)
	tx.SetMetadata(delta.Metadata{Schema: s, Configuration: map[string]string{delta.ConfigEnableDeletionVectors: "true"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	var adds []delta.Add
	for _, base := range []int64{0, 10} {
		var rows [][]any
		for i := int64(0); i < 5; i++ {
			rows = append(rows, []any{base + i, "n" + strconv.FormatInt(base+i, 10)})
		}
		a, err := tb.WriteFile(s, rows)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, a)
	}
	snap, _ := tb.Snapshot(-1)
	tx = tb.Begin(snap)
	tx.Add(adds...)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	dvs, err := tb.WriteDeletionVectors([][]uint64{{1, 3}, {0}})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ = tb.Snapshot(-1)
	tx = tb.Begin(snap)
	for i, a := range adds {
		tx.Remove(tb.RemoveFor(a, 0))
		a.DeletionVector = dvs[i]
		tx.Add(a)
	}
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	snap, _ = tb.Snapshot(-1)
	rel := Relation{Name: "t", Schema: s, Deleted: map[string][]int64{}}
	for _, f := range snap.Files {
		name := filepath.Join(dir, f.Path)
		rel.Files = append(rel.Files, name)
		del, err := tb.ReadDeletionVector(f.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range del {
			rel.Deleted[name] = append(rel.Deleted[name], int64(p))
		}
	}
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, rows, err := e.Query(context.Background(), "SELECT id, name FROM t ORDER BY id", []Relation{rel})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(0), "n0"}, {int64(2), "n2"}, {int64(4), "n4"}, {int64(11), "n11"}, {int64(12), "n12"}, {int64(13), "n13"}, {int64(14), "n14"}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	// The relation is dropped with the query: the same name can be registered again.
	_, rows, err = e.Query(context.Background(), "SELECT count(*) FROM t", []Relation{rel})
	if err != nil || !reflect.DeepEqual(rows, [][]any{{int64(7)}}) {
		t.Fatalf("second query: %v, %v", rows, err)
	}
	clash := rel
	clash.Schema = mustDDL(t, "id BIGINT, filename STRING")
	if _, _, err := e.Query(context.Background(), "SELECT * FROM t", []Relation{clash}); err == nil || !strings.Contains(err.Error(), "filename") {
		t.Errorf("a column named filename: %v", err)
	}
}

// TestDeletedRowsAcrossRowGroups: the positions of Relation.Deleted are positions in the whole
// file, whatever its row groups. A file of 10000 rows (id = position) in row groups of 2048 rows
// has rows deleted at both sides of row group boundaries; the count and the sum of the ids left
// are those of 0..9999 without them, and the delta package's reader of the same file agrees.
func TestDeletedRowsAcrossRowGroups(t *testing.T) {
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	file := filepath.Join(t.TempDir(), "groups.parquet")
	if _, err := e.db.Exec("COPY (SELECT range AS id FROM range(10000)) TO " + quoteString(file) + " (FORMAT parquet, ROW_GROUP_SIZE 2048)"); err != nil {
		t.Fatal(err)
	}
	var groups int
	if err := e.db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata(" + quoteString(file) + ")").Scan(&groups); err != nil || groups < 4 {
		t.Fatalf("%d row groups (%v), want several", groups, err)
	}
	deleted := []int64{0, 2047, 2048, 4095, 4096, 5000, 9999}
	rel := Relation{Name: "g", Schema: mustDDL(t, "id BIGINT"), Files: []string{file}, Deleted: map[string][]int64{file: deleted}}
	_, rows, err := e.Query(context.Background(), "SELECT count(*), sum(id) FROM g", []Relation{rel})
	if err != nil {
		t.Fatal(err)
	}
	wantSum := int64(9999 * 10000 / 2)
	for _, d := range deleted {
		wantSum -= d
	}
	if n, sum := rows[0][0], rows[0][1]; n != int64(10000-len(deleted)) || sum != wantSum {
		t.Errorf("count %v sum %v (%T), want %d and %d", n, sum, sum, 10000-len(deleted), wantSum)
	}
	all, err := delta.New(filepath.Dir(file)).ReadFile(file, rel.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deleted {
		if all[d][0] != d {
			t.Errorf("row %d of the file has id %v", d, all[d][0])
		}
	}
}

// TestRelationRef: RelationRef names a registered relation even where a CTE of its name hides
// the bare name, and the relation keeps its name as its default alias.
func TestRelationRef(t *testing.T) {
	t.Parallel()
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rels := []Relation{{Name: "a", Schema: mustDDL(t, "id BIGINT, v STRING"), Rows: [][]any{{int64(1), "one"}, {int64(2), "two"}}}}
	ref := RelationRef("a")
	for _, c := range []struct{ name, query string }{
		{"under a CTE of its name", "WITH a AS (SELECT 2 AS id) SELECT x.v FROM a JOIN " + ref + " x USING (id)"},
		{"default alias", "SELECT a.v FROM " + ref + " WHERE a.id = 2"},
	} {
		_, rows, err := e.Query(context.Background(), c.query, rels)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := [][]any{{"two"}}; !reflect.DeepEqual(rows, want) {
			t.Errorf("%s: rows %v, want %v", c.name, rows, want)
		}
	}
}

// TestQueryCanceled: a query whose context is cancelled while it runs (the update's, on SIGINT
// or SIGTERM) fails with an error that wraps context.Canceled, at whatever step the cancellation
// finds it (registering a relation over many Parquet files, planning, running, fetching), so that
// its flow is STOPPED and the update CANCELED, not a flow FAILED with DuckDB's "INTERRUPT Error:
// Interrupted!". A query the cancellation does not reach succeeds.
func TestQueryCanceled(t *testing.T) {
	dir := t.TempDir()
	sch := mustDDL(t, "id BIGINT, s STRING")
	tb := delta.New(dir)
	var files []string
	for i := range 300 {
		add, err := tb.WriteFile(sch, [][]any{{int64(i), strconv.Itoa(i)}})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(dir, add.Path))
	}
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rels := []Relation{{Name: "t", Schema: sch, Files: files}}
	const q = "SELECT a.id, count(*) AS n FROM temp.main.\"t\" a, range(20000) r GROUP BY a.id"
	start := time.Now()
	if _, _, err := e.Query(context.Background(), q, rels); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	stopped := 0
	for i := range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(whole*time.Duration(i)/40, cancel)
		_, _, err := e.Query(ctx, q, rels)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			stopped++
		default:
			t.Errorf("cancelled after %v of %v: %v; want an error wrapping context.Canceled", whole*time.Duration(i)/40, whole, err)
		}
	}
	if stopped == 0 {
		t.Errorf("no query of 40 was stopped by its cancellation (a whole query takes %v)", whole)
	}
	// The engine still answers on a context of its own.
	_, rows, err := e.Query(context.Background(), "SELECT 42 AS x", nil)
	if err != nil || len(rows) != 1 || rows[0][0] != int32(42) {
		t.Fatalf("after the cancelled queries: rows %v, err %v", rows, err)
	}
}

// TestDecimalOverflow: a DECIMAL result wider than a query over narrow decimals stores (18 digits) fails naming the
// column, the value and how to make it fit: a DOUBLE, or fewer fraction digits when that is
// enough.
func TestDecimalOverflow(t *testing.T) {
	t.Parallel()
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct{ sql, want string }{
		{"SELECT CAST(99999999.99 AS DECIMAL(38,2)) * CAST(99999999.99 AS DECIMAL(10,2)) AS sq",
			"sqlengine: result column sq: value out of range: 9999999998000000.0001 has more than the 18 digits of DECIMAL(18,4), the widest DECIMAL of a query that reads no DECIMAL column of more than 18 digits; CAST it to DOUBLE, or round it to fewer fraction digits: CAST(... AS DECIMAL(18,2)); or, to keep every digit, declare the input's column DECIMAL(38,4) (a query over such a column keeps up to 38 digits)"},
		{"SELECT CAST(-1e20 AS DECIMAL(30,1)) AS big",
			"sqlengine: result column big: value out of range: -100000000000000000000.0 has more than the 18 digits of DECIMAL(18,1), the widest DECIMAL of a query that reads no DECIMAL column of more than 18 digits; CAST it to DOUBLE; or, to keep every digit, declare the input's column DECIMAL(38,1) (a query over such a column keeps up to 38 digits)"},
		// The most negative 64-bit unscaled value, -2^63, has 19 digits, one more than
		// DECIMAL(18,s) holds: it fails as any other 19-digit value, not taken as DECIMAL(18,s).
		{"SELECT CAST(-9223372036854775808 AS DECIMAL(38,0)) AS x",
			"sqlengine: result column x: value out of range: -9223372036854775808 has more than the 18 digits of DECIMAL(18,0), the widest DECIMAL of a query that reads no DECIMAL column of more than 18 digits; CAST it to DOUBLE; or, to keep every digit, declare the input's column DECIMAL(38,0) (a query over such a column keeps up to 38 digits)"},
		{"SELECT CAST(-922337203685477580.8 AS DECIMAL(38,1)) AS x",
			"sqlengine: result column x: value out of range: -922337203685477580.8 has more than the 18 digits of DECIMAL(18,1), the widest DECIMAL of a query that reads no DECIMAL column of more than 18 digits; CAST it to DOUBLE, or round it to fewer fraction digits: CAST(... AS DECIMAL(18,0)); or, to keep every digit, declare the input's column DECIMAL(38,1) (a query over such a column keeps up to 38 digits)"},
		// A UBIGINT above BIGINT's range (Spark has no unsigned types): the hint names the CAST.
		{"SELECT CAST(18446744073709551615 AS UBIGINT) AS ub",
			"sqlengine: result column ub: value out of range: 18446744073709551615 does not fit in BIGINT (an unsigned value above 9223372036854775807); CAST it to DECIMAL(20,0) or DOUBLE in the query"},
	} {
		_, _, err := e.Query(context.Background(), c.sql, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.sql, err, c.want)
		}
	}
}

// TestQueryBinary: a BINARY column (Spark's binary, in tables of other engines) reads as DuckDB's
// BLOB, its raw bytes, from Parquet files and from rows alike, and a BLOB result is BINARY: the
// bytes are not turned into DuckDB's escaped text (\x00).
func TestQueryBinary(t *testing.T) {
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "b", Type: schema.Type{Kind: schema.String, Storage: schema.StorageBinary}, Nullable: true},
	}}
	data := [][]any{{int64(1), "\x00\xff"}, {int64(2), ""}, {int64(3), nil}}
	dir := t.TempDir()
	add, err := delta.New(dir).WriteFile(s, data)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, rel := range []Relation{
		{Name: "t", Schema: s, Files: []string{filepath.Join(dir, add.Path)}},
		{Name: "t", Schema: s, Rows: data, RowsOnly: true},
	} {
		got, rows, err := e.Query(context.Background(), `SELECT id, b, octet_length(b) AS n, b || '\x01'::BLOB AS b2 FROM t ORDER BY id`, []Relation{rel})
		if err != nil {
			t.Fatal(err)
		}
		if ddl := got.DDL(); ddl != "id BIGINT, b BINARY, n BIGINT, b2 BINARY" {
			t.Errorf("files %v: schema %s, want id BIGINT, b BINARY, n BIGINT, b2 BINARY", rel.Files != nil, ddl)
		}
		want := [][]any{{int64(1), "\x00\xff", int64(2), "\x00\xff\x01"}, {int64(2), "", int64(0), "\x01"}, {int64(3), nil, nil, nil}}
		if !reflect.DeepEqual(rows, want) {
			t.Errorf("files %v: rows %q, want %q", rel.Files != nil, rows, want)
		}
	}
}

// TestDescribeBindErrors: Describe returns the result's columns of a query that binds; a
// misspelt column is a BindError; a relation DuckDB cannot register (two columns of one name,
// as a join's SELECT * gives) is an error, but no BindError of the query reading it.
func TestDescribeBindErrors(t *testing.T) {
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	rels := []Relation{{Name: "t", Schema: mustDDL(t, "id BIGINT, name STRING")}}
	s, err := e.Describe(ctx, "SELECT id, upper(name) AS u FROM temp.main.t", rels)
	if err != nil || s.DDL() != "id BIGINT, u STRING" {
		t.Errorf("Describe: %q, %v; want id BIGINT, u STRING", s.DDL(), err)
	}
	_, err = e.Describe(ctx, "SELECT nme FROM temp.main.t", rels)
	if err == nil || !BindError(err) || !strings.Contains(err.Error(), `Referenced column "nme" not found`) {
		t.Errorf("misspelt column: %v (BindError %v), want a bind error", err, err != nil && BindError(err))
	}
	dup := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
	}}
	_, err = e.Describe(ctx, "SELECT 1 FROM temp.main.d", []Relation{{Name: "d", Schema: dup}})
	if err == nil || BindError(err) || !strings.Contains(err.Error(), "registering dataset d") {
		t.Errorf("duplicate columns: %v (BindError %v), want an error registering d that is no bind error", err, err != nil && BindError(err))
	}
}

// TestNullOrderAsSpark: an ORDER BY that does not say where NULLs go puts them first when
// ascending and last when descending, as Spark SQL's default (NULLS FIRST for ASC, NULLS LAST
// for DESC), in a window's ORDER BY, an aggregate's and the query's own; an explicit NULLS
// FIRST or NULLS LAST is kept.
func TestNullOrderAsSpark(t *testing.T) {
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := Relation{Name: "t", Schema: mustDDL(t, "id BIGINT, v INT"), Rows: [][]any{{int64(1), int32(5)}, {int64(2), nil}, {int64(3), int32(3)}}}
	_, rows, err := e.Query(context.Background(), `SELECT id,
		row_number() OVER (ORDER BY v) AS asc_rn,
		row_number() OVER (ORDER BY v DESC) AS desc_rn,
		row_number() OVER (ORDER BY v NULLS LAST) AS last_rn,
		CAST(list(v ORDER BY v) OVER () AS VARCHAR) AS l
		FROM t ORDER BY v LIMIT 2`, []Relation{rel})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int64(2), int64(1), int64(3), int64(3), "[NULL, 3, 5]"},
		{int64(3), int64(2), int64(2), int64(1), "[NULL, 3, 5]"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
}

// TestDivisionByZeroIsNull: a division or modulo by zero is NULL, as Spark SQL's `/` and `%`
// return (without ANSI mode), for integers, decimals and doubles alike, not an infinity or NaN;
// a division by a number other than zero keeps its value, and a NaN or infinity read from a
// table stays one.
func TestDivisionByZeroIsNull(t *testing.T) {
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rel := Relation{Name: "t", Schema: mustDDL(t, "n BIGINT, d DOUBLE, m DECIMAL(10,2), z DOUBLE"),
		Rows: [][]any{{int64(5), 1.5, schema.Decimal(250), math.Inf(1)}}}
	_, rows, err := e.Query(context.Background(), `SELECT n / 0 AS a, d / 0.0 AS b, m / 0 AS c, 0.0 / CAST(0 AS DOUBLE) AS d0,
		n % 0 AS e, d % 0 AS f, n / 2 AS g, z + 1 AS h FROM t`, []Relation{rel})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{nil, nil, nil, nil, nil, nil, 2.5, math.Inf(1)}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
}
