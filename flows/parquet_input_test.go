package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

// TestParquetInput: Parquet files are read by column name: a declared column the file lacks is
// NULL, a file column the schema lacks is ignored, DECIMAL, DATE and TIMESTAMP keep their
// values; a file that is not Parquet is one malformed record (a row of NULLs, reported), and the
// other files are still read.
func TestParquetInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT, amount DECIMAL(10,2), day DATE, missing STRING"
`)
	fileSchema, err := schema.ParseDDL("extra STRING, id BIGINT, amount DECIMAL(10,2), day DATE")
	if err != nil {
		t.Fatal(err)
	}
	src := delta.New(t.TempDir())
	adds, err := src.WriteData(delta.Metadata{Schema: fileSchema}, [][]any{
		{"x", int64(1), schema.Decimal(2550), schema.Date(19753)},
		{nil, int64(2), nil, nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src.Dir, adds[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "landing", "a.parquet"), data)
	write(t, filepath.Join(dir, "landing", "b.parquet"), data[:len(data)/2])
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 25.50 "2024-01-31" null`, `2 null null null`, `null null null null`)
	if m.BadRecords != 1 || !strings.Contains(rec.all(), "b.parquet:1: the file cannot be read as Parquet") {
		t.Errorf("bad %d, events:\n%s", m.BadRecords, rec.all())
	}
}
