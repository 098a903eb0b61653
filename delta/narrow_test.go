package delta

import (
	"math"
	"strings"
	"testing"

	"tributary/schema"
)

// TestReadWiderAsNarrow: a Parquet INT32 column without a narrower logical type, read as
// SMALLINT or TINYINT (a declared schema), keeps the values in the type's range and refuses one
// beyond it, naming it, rather than storing what the type cannot hold; a DOUBLE column read as
// FLOAT is rounded to the nearest float32. Columns written as SMALLINT and FLOAT read back as
// written.
func TestReadWiderAsNarrow(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	wide := schema.Schema{Fields: []schema.Field{{Name: "n", Type: schema.Type{Kind: schema.Integer}}, {Name: "f", Type: schema.Type{Kind: schema.Double}}}}
	narrow := schema.Schema{Fields: []schema.Field{{Name: "n", Type: schema.Type{Kind: schema.Integer, Storage: schema.StorageShort}}, {Name: "f", Type: schema.Type{Kind: schema.Double, Storage: schema.StorageFloat}}}}
	ok, err := tbl.WriteFile(wide, [][]any{{int32(-32768), 0.1}, {int32(32767), 1e300}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tbl.ReadFile(ok.Path, narrow)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][0] != int32(-32768) || rows[1][0] != int32(32767) || rows[0][1] != float64(float32(0.1)) || rows[1][1] != math.Inf(1) {
		t.Errorf("read as SMALLINT, FLOAT: %v", rows)
	}
	bad, err := tbl.WriteFile(wide, [][]any{{int32(1), 1.0}, {int32(40000), 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.ReadFile(bad.Path, narrow); err == nil || !strings.Contains(err.Error(), "40000 does not fit SMALLINT") {
		t.Errorf("40000 read as SMALLINT: error %v", err)
	}
	own, err := tbl.WriteFile(narrow, [][]any{{int32(-5), float64(float32(0.1))}})
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := tbl.ReadFile(own.Path, narrow); err != nil || rows[0][0] != int32(-5) || rows[0][1] != float64(float32(0.1)) {
		t.Errorf("SMALLINT, FLOAT read back: %v, %v", rows, err)
	}
}
