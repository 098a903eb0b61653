package sqlengine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

// TestQueryWideDecimal: DECIMAL(38,18) values enter DuckDB exactly, from Parquet files and from
// rows, and leave it exactly: the values themselves, SUM (DuckDB's DECIMAL(38,18)), a comparison
// and a CAST to DECIMAL(38,2); a query over only narrow decimals still gives DECIMAL(18,s).
func TestQueryWideDecimal(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, amount DECIMAL(38,18)")
	typ := s.Fields[1].Type
	dec := func(text string) schema.Decimal128 {
		d, err := schema.ParseDecimal128(text, typ)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	data := [][]any{
		{int64(1), dec("12345678901234567890.123456789012345678")},
		{int64(2), dec("-0.000000000000000001")},
		{int64(3), dec("10000000000000000000.000000000000000001")},
		{int64(4), nil},
	}
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
		q := `SELECT sum(amount) AS total, max(amount) AS top, count(*) FILTER (WHERE amount > 12345678901234567890.123456789012345677) AS above,
			CAST(min(amount) AS DECIMAL(38,2)) AS low FROM t`
		got, rows, err := e.Query(context.Background(), q, []Relation{rel})
		if err != nil {
			t.Fatal(err)
		}
		if ddl := got.DDL(); ddl != "total DECIMAL(38,18), top DECIMAL(38,18), above BIGINT, low DECIMAL(38,2)" {
			t.Errorf("files %v: schema %s", rel.Files != nil, ddl)
		}
		var texts []string
		for i, f := range got.Fields {
			texts = append(texts, schema.Text(f.Type, rows[0][i]))
		}
		// 12345678901234567890.123456789012345678 - 0.000000000000000001 + 10000000000000000000.000000000000000001
		want := "22345678901234567890.123456789012345678 12345678901234567890.123456789012345678 1 0.00" // the min rounds to 0.00
		if g := strings.Join(texts, " "); g != want {
			t.Errorf("files %v: %s, want %s", rel.Files != nil, g, want)
		}
		if _, ok := rows[0][0].(schema.Decimal128); !ok {
			t.Errorf("sum is a %T", rows[0][0])
		}
		d, err := e.Describe(context.Background(), q, []Relation{rel})
		if err != nil || !d.Equal(got) {
			t.Errorf("Describe: %s, %v; want the schema of Query", d.DDL(), err)
		}
	}

	narrow := mustDDL(t, "id BIGINT, amount DECIMAL(10,2)")
	got, rows, err := e.Query(context.Background(), "SELECT sum(amount) AS total FROM t", []Relation{{Name: "t", Schema: narrow, Rows: [][]any{{int64(1), schema.Decimal(150)}}, RowsOnly: true}})
	if err != nil || got.DDL() != "total DECIMAL(18,2)" || rows[0][0] != schema.Decimal(150) {
		t.Errorf("sum of DECIMAL(10,2): %s %v, %v; want DECIMAL(18,2) 1.50", got.DDL(), rows, err)
	}
}

// TestWideDecimalOverflowMessages: a DECIMAL(38,s) result past 38 digits fails with the fix: for
// a sum DuckDB overflows itself (past about 1.7e38 unscaled), the words say the numbers are
// unscaled and to CAST to DOUBLE; for DECIMAL(38,0) no "fewer fraction digits" is offered.
func TestWideDecimalOverflowMessages(t *testing.T) {
	t.Parallel()
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct {
		ddl, value string
		want, not  string
	}{
		{"x DECIMAL(38,2)", "999999999999999999999999999999999999.99", "the numbers are its unscaled values, without the decimal point: CAST the column to DOUBLE first", ""},
		{"x DECIMAL(38,0)", "60000000000000000000000000000000000000", "CAST it to DOUBLE", "fewer fraction digits"},
	} {
		s := mustDDL(t, c.ddl)
		d, err := schema.ParseDecimal128(c.value, s.Fields[0].Type)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.Query(context.Background(), "SELECT sum(x) AS total FROM t", []Relation{{Name: "t", Schema: s, Rows: [][]any{{d}, {d}}, RowsOnly: true}})
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.not != "" && strings.Contains(err.Error(), c.not)) {
			t.Errorf("sum of two %s in %s: %v; want an error with %q", c.value, c.ddl, err, c.want)
		}
	}
}
