package delta

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// plainRow is a row of the files TestPlainPages writes: every kind that the reader takes from
// page buffers (rawKind), optional and required, PLAIN and dictionary-encoded.
type plainRow struct {
	L   *int64   `parquet:"l,optional"`
	I   *int32   `parquet:"i,optional,dict"`
	D   *float64 `parquet:"d,optional"`
	Dt  int32    `parquet:"dt,date"`
	Ts  *int64   `parquet:"ts,optional,timestamp(microsecond)"`
	Dec *int64   `parquet:"dec,optional,decimal(2:10)"`
	S   *string  `parquet:"s,optional"`
	Sd  *string  `parquet:"sd,optional,dict"`
	R   int64    `parquet:"r"`
}

// TestPlainPages: a file's values read from the page buffers (rawKind) are those its rows hold,
// and the same as through the value readers: NULLs at random (a column of NULLs alone too),
// empty strings, pages of a few dozen values that tiles of 100 rows cross, v1 and v2 data
// pages, and dictionary-encoded columns beside PLAIN ones. A DECIMAL beyond the column's
// precision is the same error either way.
func TestPlainPages(t *testing.T) {
	tiles := tileRows
	tileRows = 100
	t.Cleanup(func() { tileRows, plainPages = tiles, true })
	sch, err := schema.ParseDDL("l BIGINT, i INT, d DOUBLE, dt DATE, ts TIMESTAMP, dec DECIMAL(10,2), s STRING, sd STRING, r BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []int{1, 2} {
		for _, nullRate := range []float64{0, 0.3, 1} {
			rng := rand.New(rand.NewPCG(uint64(version), uint64(nullRate*10)))
			var in []plainRow
			var want [][]any
			for i := range 3000 {
				null := func() bool { return rng.Float64() < nullRate }
				r := plainRow{Dt: int32(rng.IntN(40000) - 20000), R: int64(i)}
				row := []any{nil, nil, nil, schema.Date(r.Dt), nil, nil, nil, nil, int64(i)}
				if !null() {
					v := rng.Int64() - rng.Int64()
					r.L, row[0] = &v, v
				}
				if !null() {
					v := int32(rng.IntN(7)) - 3
					r.I, row[1] = &v, v
				}
				if !null() {
					v := rng.NormFloat64() * 1e6
					r.D, row[2] = &v, v
				}
				if !null() {
					v := rng.Int64N(4e15) - 2e15
					r.Ts, row[4] = &v, schema.Timestamp(v)
				}
				if !null() {
					v := rng.Int64N(2e10) - 1e10 + 1 // |v| < 10^10: DECIMAL(10,2)
					r.Dec, row[5] = &v, schema.Decimal(v)
				}
				if !null() {
					v := strings.Repeat("é", rng.IntN(4)) + fmt.Sprint(rng.IntN(1000))
					if rng.IntN(10) == 0 {
						v = ""
					}
					r.S, row[6] = &v, v
				}
				if !null() {
					v := fmt.Sprint("shop-", rng.IntN(5))
					r.Sd, row[7] = &v, v
				}
				in = append(in, r)
				want = append(want, row)
			}
			path := filepath.Join(t.TempDir(), "plain.parquet")
			writePlainRows(t, path, in, parquet.DataPageVersion(version), parquet.PageBufferSize(256), parquet.MaxRowsPerRowGroup(1300))
			name := fmt.Sprintf("v%d, NULLs %.0f%%", version, nullRate*100)
			for _, plain := range []bool{true, false} {
				plainPages = plain
				got, err := readParquet(path, sch)
				if err != nil {
					t.Fatalf("%s, plain %v: %v", name, plain, err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s, plain %v: %d rows, want %d", name, plain, len(got), len(want))
				}
				for i := range want {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("%s, plain %v: row %d is %#v, want %#v", name, plain, i, got[i], want[i])
					}
				}
			}
		}
	}
	// A DECIMAL(10,2) file read as DECIMAL(4,2): 123.45 does not fit, either way.
	v := int64(12345)
	path := filepath.Join(t.TempDir(), "wide.parquet")
	writePlainRows(t, path, []plainRow{{R: 1}, {Dec: &v, R: 2}})
	narrow, err := schema.ParseDDL("dec DECIMAL(4,2), r BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, plain := range []bool{true, false} {
		plainPages = plain
		_, err := readParquet(path, narrow)
		if err == nil {
			t.Fatalf("plain %v: 123.45 read as DECIMAL(4,2) without an error", plain)
		}
		errs = append(errs, err.Error())
	}
	if errs[0] != errs[1] || !strings.Contains(errs[0], "row 1: decimal 123.45 does not fit DECIMAL(4,2)") {
		t.Errorf("errors %q and %q, want both to name row 1 and 123.45", errs[0], errs[1])
	}
}

// writePlainRows writes rows to a Parquet file at path with the writer options given.
func writePlainRows(t *testing.T, path string, rows []plainRow, opts ...parquet.WriterOption) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[plainRow](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
