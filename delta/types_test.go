package delta

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// TestNarrowTypesRoundTrip reads all_primitive_types (Spark 3.5.1 / Delta 3.1: short, byte,
// float and binary columns beside the others), writes its rows into a new table with the same
// schema, and checks that the rows read back the same, that the Parquet types are the ones Delta
// PROTOCOL.md "Delta Data Type to Parquet Type Mappings" gives (short INT32 INT(16,true), byte
// INT32 INT(8,true), float FLOAT, binary BYTE_ARRAY without the String annotation), and that our
// statistics equal the ones Spark wrote for the same rows.
func TestNarrowTypesRoundTrip(t *testing.T) {
	t.Parallel()
	src := New("testdata/all_primitive_types")
	snap := mustSnapshot(t, src, -1)
	s := snap.Metadata.Schema
	if got := s.DDL(); got != "utf8 STRING, int64 BIGINT, int32 INT, int16 SMALLINT, int8 TINYINT, float32 FLOAT, float64 DOUBLE, bool BOOLEAN, binary BINARY, decimal DECIMAL(5,3), date32 DATE, timestamp TIMESTAMP" {
		t.Fatalf("schema %s", got)
	}
	if got := s.SparkJSON(); got != `{"type":"struct","fields":[{"name":"utf8","type":"string","nullable":true,"metadata":{}},{"name":"int64","type":"long","nullable":true,"metadata":{}},{"name":"int32","type":"integer","nullable":true,"metadata":{}},{"name":"int16","type":"short","nullable":true,"metadata":{}},{"name":"int8","type":"byte","nullable":true,"metadata":{}},{"name":"float32","type":"float","nullable":true,"metadata":{}},{"name":"float64","type":"double","nullable":true,"metadata":{}},{"name":"bool","type":"boolean","nullable":true,"metadata":{}},{"name":"binary","type":"binary","nullable":true,"metadata":{}},{"name":"decimal","type":"decimal(5,3)","nullable":true,"metadata":{}},{"name":"date32","type":"date","nullable":true,"metadata":{}},{"name":"timestamp","type":"timestamp","nullable":true,"metadata":{}}]}` {
		t.Errorf("schemaString %s", got)
	}
	rows, err := src.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	// Row 2 of the DAT case: utf8 "2", every number 2, bool true, binary two zero bytes,
	// decimal 12.000, date 1970-01-03, timestamp 1970-01-01T02:00:00Z.
	want2 := []any{"2", int64(2), int32(2), int32(2), int32(2), float64(2), float64(2), true, "\x00\x00", schema.Decimal(12000), date("1970-01-03"), ts("1970-01-01T02:00:00Z")}
	found := false
	for _, r := range rows {
		if r[0] == "2" {
			assertRows(t, [][]any{r}, [][]any{want2})
			found = true
		}
	}
	if !found {
		t.Fatalf("no row with utf8 = 2 in %v", rows)
	}

	dst := createTable(t, s)
	_, add := appendRows(t, dst, rows)
	back, err := dst.Rows(mustSnapshot(t, dst, -1))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonical(s, back), canonical(s, rows); !equalStrings(got, want) {
		t.Errorf("read back %v, want %v", got, want)
	}

	f, err := os.Open(filepath.Join(dst.Dir, add.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ col, want string }{
		{"int16", "INT32 INT(16,true)"}, {"int8", "INT32 INT(8,true)"}, {"float32", "FLOAT"}, {"binary", "BYTE_ARRAY"},
	} {
		ty := pf.Root().Column(c.col).Type()
		got := ty.Kind().String()
		if lt := ty.LogicalType(); lt != nil && lt.Value != nil {
			got += " " + lt.String()
		}
		if got != c.want {
			t.Errorf("column %s is %s, want %s", c.col, got, c.want)
		}
	}

	ours, err := ParseStats(add.Stats, s)
	if err != nil {
		t.Fatal(err)
	}
	spark, err := ParseStats(snap.Files[0].Stats, s)
	if err != nil {
		t.Fatal(err)
	}
	if ours.NumRecords != spark.NumRecords {
		t.Errorf("numRecords %d, Spark %d", ours.NumRecords, spark.NumRecords)
	}
	for _, f := range s.Fields {
		if !sameValue(ours.Min[f.Name], spark.Min[f.Name]) || !sameValue(ours.Max[f.Name], spark.Max[f.Name]) || ours.NullCount[f.Name] != spark.NullCount[f.Name] {
			t.Errorf("stats of %s: min %v max %v nulls %d; Spark min %v max %v nulls %d", f.Name,
				ours.Min[f.Name], ours.Max[f.Name], ours.NullCount[f.Name], spark.Min[f.Name], spark.Max[f.Name], spark.NullCount[f.Name])
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
