package flows

import (
	"path/filepath"
	"reflect"
	"testing"

	"tributary/schema"
)

// TestDecimalGroupingCommas: a DECIMAL given as text with grouping commas ("1,234.50") reads as
// its number, from a JSON string and from a CSV field, as Spark's readers parse it in their
// default en-US locale (ExprUtils.getDecimalParser drops the commas); a JSON number is as before.
func TestDecimalGroupingCommas(t *testing.T) {
	t.Parallel()
	want := [][]any{{int64(1), schema.Decimal(123450)}, {int64(2), schema.Decimal(100000000)}, {int64(3), schema.Decimal(-500)}}

	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, amount DECIMAL(12,2)"
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "amount": "1,234.50"}
{"id": 2, "amount": "1,000,000"}
{"id": 3, "amount": -5}
`))
	if m, rec, err := ingest(t, p); err != nil || m.BadRecords != 0 {
		t.Fatalf("JSON: %v, %d bad records; events:\n%s", err, m.BadRecords, rec.all())
	}
	if _, rows := readTable(t, p, "raw"); !reflect.DeepEqual(rows, want) {
		t.Errorf("JSON rows %v, want %v", rows, want)
	}

	pc, landing := newCSV(t, "id BIGINT, amount DECIMAL(12,2)", "      options:\n        header: true\n")
	write(t, filepath.Join(landing, "a.csv"), []byte("id,amount\n1,\"1,234.50\"\n2,\"1,000,000\"\n3,-5\n"))
	if m, rec, err := ingest(t, pc); err != nil || m.BadRecords != 0 {
		t.Fatalf("CSV: %v, %d bad records; events:\n%s", err, m.BadRecords, rec.all())
	}
	if _, rows := readTable(t, pc, "raw"); !reflect.DeepEqual(rows, want) {
		t.Errorf("CSV rows %v, want %v", rows, want)
	}
}
