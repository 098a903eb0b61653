package flows

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
)

var nines38 = strings.Repeat("9", 38)

// TestIngestWideDecimal: DECIMAL(38,18) and DECIMAL(38,0) values from JSON numbers and strings
// are stored exactly (every digit, the extremes ±(10^38-1)), extra fraction digits round half up
// as Spark's JSON reader does, and a value of 39 digits is a bad value of its row (NULL, a WARN
// naming file, line, column and why).
func TestIngestWideDecimal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, amount DECIMAL(38,18), big DECIMAL(38,0)"
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(
		`{"id": 1, "amount": 12345678901234567890.123456789012345678, "big": `+nines38+`}`+"\n"+
			`{"id": 2, "amount": -0.000000000000000001, "big": -`+nines38+`}`+"\n"+
			`{"id": 3, "amount": "99999999999999999999.999999999999999999", "big": "-1e37"}`+"\n"+
			`{"id": 4, "amount": 0.0000000000000000005, "big": 1`+nines38+`}`+"\n"+
			`{"id": 5, "amount": 100000000000000000000, "big": 1.5}`+"\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p,
		`1 12345678901234567890.123456789012345678 `+nines38,
		`2 -0.000000000000000001 -`+nines38,
		`3 99999999999999999999.999999999999999999 -10000000000000000000000000000000000000`,
		`4 0.000000000000000001 null`,
		`5 null 2`)
	if m.BadRecords != 2 {
		t.Errorf("metrics = %+v, want 2 bad records", m)
	}
	events := rec.all()
	for _, w := range []string{"a.json:4: column big: 1" + nines38 + " does not fit DECIMAL(38,0)", "a.json:5: column amount: 100000000000000000000 does not fit DECIMAL(38,18)"} {
		if !strings.Contains(events, w) {
			t.Errorf("events lack %q:\n%s", w, events)
		}
	}
}

// TestCSVWideDecimal: a CSV DECIMAL(38,18) field is read exactly, and one of too many digits is a
// bad value.
func TestCSVWideDecimal(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id INT, amount DECIMAL(38,18)", "")
	write(t, filepath.Join(landing, "a.csv"), []byte("1,-12345678901234567890.123456789012345678\n2,123456789012345678901\n"))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 -12345678901234567890.123456789012345678`, `2 null`)
	if m.BadRecords != 1 {
		t.Errorf("metrics = %+v, want 1 bad record", m)
	}
}

// wideApplySpec is an APPLY CHANGES target keyed by a DECIMAL(38,0) and sequenced by a
// DECIMAL(38,2), of SCD type %d.
const wideApplySpec = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id DECIMAL(38,0), v STRING, seq DECIMAL(38,2)"
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
      stored_as_scd_type: %d
`

// TestApplyChangesWideDecimal: keys of 38 digits that differ only beyond the 19th digit (or in
// the upper 64 bits alone) are distinct keys, and DECIMAL(38,2) sequence values order the events
// numerically, across the sign and beyond 64 bits, whatever their arrival order: for SCD type 1
// (the latest row of each key) and type 2 (every version, __START_AT and __END_AT of type
// DECIMAL(38,2)).
func TestApplyChangesWideDecimal(t *testing.T) {
	t.Parallel()
	id := func(s string) schema.Decimal128 {
		d, err := schema.ParseDecimal128(s, schema.Type{Kind: schema.DecimalKind, Precision: 38})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	seq := func(s string) schema.Decimal128 {
		d, err := schema.ParseDecimal128(s, schema.Type{Kind: schema.DecimalKind, Precision: 38, Scale: 2})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	k1 := "12345678901234567890000000000000000001"
	k2 := "12345678901234567890000000000000000002" // differs from k1 in the last digit only
	k3 := "-" + nines38
	k4 := "18446744073709551616" // 2^64: Lo 0, Hi 1
	batches := [][][]any{{
		{"U", id(k1), "k1 late", seq("18446744073709551616.01")},
		{"U", id(k1), "k1 first", seq("-99999999999999999999.99")},
		{"U", id(k2), "k2", seq("0.01")},
		{"U", id(k3), "k3 old", seq("1.00")},
		{"U", id(k4), "k4", seq("5")},
	}, {
		{"U", id(k1), "k1 middle", seq("-0.01")},
		{"U", id(k3), "k3 new", seq("99999999999999999999999999999999999.99")},
		{"D", id(k4), "", seq("18446744073709551615.99")},
	}}
	for _, scd := range []int{1, 2} {
		dir := t.TempDir()
		p := loadPipeline(t, dir, strings.Replace(wideApplySpec, "%d", string(rune('0'+scd)), 1))
		for _, b := range batches {
			appendEvents(t, p, b)
			env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
			if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
				t.Fatal(err)
			}
		}
		snap, rows := readTable(t, p, "items")
		s := snap.Metadata.Schema
		var got []string
		for _, r := range rows {
			var b []byte
			for i, f := range s.Fields {
				if i > 0 {
					b = append(b, ' ')
				}
				b = schema.AppendJSON(b, f.Type, r[i])
			}
			got = append(got, string(b))
		}
		sort.Strings(got)
		var want []string
		if scd == 1 {
			if s.DDL() != "id DECIMAL(38,0), v STRING, seq DECIMAL(38,2)" {
				t.Errorf("SCD1 schema %s", s.DDL())
			}
			want = []string{
				"-" + nines38 + ` "k3 new" 99999999999999999999999999999999999.99`,
				k1 + ` "k1 late" 18446744073709551616.01`,
				k2 + ` "k2" 0.01`,
			}
		} else {
			if s.DDL() != "id DECIMAL(38,0), v STRING, seq DECIMAL(38,2), __START_AT DECIMAL(38,2), __END_AT DECIMAL(38,2)" {
				t.Errorf("SCD2 schema %s", s.DDL())
			}
			want = []string{
				"-" + nines38 + ` "k3 new" 99999999999999999999999999999999999.99 99999999999999999999999999999999999.99 null`,
				"-" + nines38 + ` "k3 old" 1.00 1.00 99999999999999999999999999999999999.99`,
				k1 + ` "k1 first" -99999999999999999999.99 -99999999999999999999.99 -0.01`,
				k1 + ` "k1 late" 18446744073709551616.01 18446744073709551616.01 null`,
				k1 + ` "k1 middle" -0.01 -0.01 18446744073709551616.01`,
				k2 + ` "k2" 0.01 0.01 null`,
				k4 + ` "k4" 5.00 5.00 18446744073709551615.99`,
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("SCD%d rows:\n%s\nwant:\n%s", scd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestQueryWideDecimal: a streaming table and a materialized view over a DECIMAL(38,18) column
// keep every digit: the rows streamed, sum() (DuckDB's DECIMAL(38,18)) and the change data
// feed of the view; a query over the narrow column of the same source keeps DECIMAL(18,s).
func TestQueryWideDecimal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: q
storage: ./storage
datasets:
  - name: sales
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, shop STRING, amount DECIMAL(38,18)"
  - name: copied
    type: streaming_table
    query: SELECT id, amount FROM STREAM(LIVE.sales) WHERE amount < 0
  - name: by_shop
    query: SELECT shop, sum(amount) AS total, max(id) AS top FROM sales GROUP BY shop
`)
	land := filepath.Join(dir, "landing")
	write(t, filepath.Join(land, "1.json"), []byte(`{"id":1,"shop":"a","amount":12345678901234567890.123456789012345678}
{"id":2,"shop":"a","amount":-0.000000000000000001}
{"id":3,"shop":"b","amount":-99999999999999999999.999999999999999999}
`))
	update(t, p)
	check(t, "copied", sortedRows(t, p, "copied"), "2 -0.000000000000000001\n3 -99999999999999999999.999999999999999999")
	check(t, "by_shop", sortedRows(t, p, "by_shop"), "\"a\" 12345678901234567890.123456789012345677 2\n\"b\" -99999999999999999999.999999999999999999 3")
	snap, _ := readTable(t, p, "by_shop")
	if ddl := snap.Metadata.Schema.DDL(); ddl != "shop STRING, total DECIMAL(38,18), top BIGINT" {
		t.Errorf("by_shop schema %s", ddl)
	}
	write(t, filepath.Join(land, "2.json"), []byte(`{"id":4,"shop":"b","amount":0.000000000000000002}
`))
	m := update(t, p)
	mv := delta.New(TableDir(p.Storage, "by_shop"))
	cs, ch, err := mv.Changes(m["by_shop"].Version, m["by_shop"].Version)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "by_shop changes", strings.Join(jsonLines(schema.Schema{Fields: cs.Fields[:4]}, ch), "\n"),
		"\"b\" -99999999999999999999.999999999999999997 4 \"insert\"\n\"b\" -99999999999999999999.999999999999999999 3 \"delete\"")
}

// TestWideDecimalCDCSources: PostgreSQL's text of a NUMERIC and a Debezium (Kafka Connect
// Decimal) base64 unscaled value fill a DECIMAL(38,18) exactly; a NUMERIC of more fraction
// digits than the scale is refused, not rounded, as for narrower decimals, and so is one of too
// many digits.
func TestWideDecimalCDCSources(t *testing.T) {
	t.Parallel()
	typ := schema.Type{Kind: schema.DecimalKind, Precision: 38, Scale: 18}
	for _, s := range []string{"12345678901234567890.123456789012345678", "-0.000000000000000001", "-99999999999999999999.999999999999999999"} {
		v, err := pgText(typ, s)
		if err != nil || schema.Text(typ, v) != s {
			t.Errorf("pgText(%q) = %v, %v", s, v, err)
		}
	}
	for _, s := range []string{"0.0000000000000000001", "100000000000000000000", "NaN"} {
		if v, err := pgText(typ, s); err == nil {
			t.Errorf("pgText(%q) = %v, want an error", s, v)
		}
	}
	// -12345678901234567890.123456789012345678 unscaled, 16 bytes of two's complement, base64.
	v, err := debeziumValue(typ, "9rZPCQ/9zOw7tm+vIccMsg==", dbzField{logical: dbzDecimal, scale: 18})
	if err != nil || schema.Text(typ, v) != "-12345678901234567890.123456789012345678" {
		t.Errorf("debezium Decimal = %v, %v", v, err)
	}
}

// TestSnapshotWideDecimalKey: APPLY CHANGES FROM SNAPSHOT keyed by a DECIMAL(38,0) tells keys
// apart that differ only in their last digit: the second snapshot updates one, deletes the
// other (absent) and inserts a third.
func TestSnapshotWideDecimalKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: target
    apply_changes_from_snapshot:
      source: {path: ./snapshots, format: json, schema: "id DECIMAL(38,0), v STRING"}
      keys: [id]
`)
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	env := &Env{Pipeline: p, Events: &recorder{}}
	write(t, filepath.Join(snaps, "1.json"), []byte(`{"id": 12345678901234567890123456789012345601, "v": "a"}
{"id": 12345678901234567890123456789012345602, "v": "b"}
`))
	if _, err := Run(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(snaps, "2.json"), []byte(`{"id": 12345678901234567890123456789012345601, "v": "a2"}
{"id": -`+nines38+`, "v": "c"}
`))
	m, err := Run(context.Background(), env, p.Dataset("target"))
	if err != nil || m.NumUpsertedRows != 2 || m.NumDeletedRows != 1 {
		t.Fatalf("upserted %d, deleted %d, err %v; want 2 upserts (a2, c) and 1 delete (b)", m.NumUpsertedRows, m.NumDeletedRows, err)
	}
	check(t, "target", sortedRows(t, p, "target"), "-"+nines38+" \"c\"\n12345678901234567890123456789012345601 \"a2\"")
}
