package flows

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestParquetInputRowGroups: a Parquet input of several row groups (4, 4 and 2 rows, as another
// engine may write it) is read group by group into rows in file order.
func TestParquetInputRowGroups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: parquet
      schema: "id BIGINT, name STRING"
`)
	type rec struct {
		ID   int64  `parquet:"id"`
		Name string `parquet:"name"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[rec](&buf, parquet.MaxRowsPerRowGroup(4))
	var want []string
	for i := range 10 {
		if _, err := w.Write([]rec{{ID: int64(i + 1), Name: fmt.Sprint("n", i+1)}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf(`%d "n%d"`, i+1, i+1))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n != 3 {
		t.Fatalf("the test file has %d row groups, want 3", n)
	}
	write(t, filepath.Join(dir, "landing", "a.parquet"), buf.Bytes())
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumOutputRows != 10 || m.BadRecords != 0 {
		t.Errorf("metrics %+v, want 10 rows and no bad records", m)
	}
	wantRows(t, p, want...)
}
