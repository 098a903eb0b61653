package delta

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tributary/schema"
)

// rowsPart is a ColumnPart over boxed rows: each value as the word or string ColumnPart's
// documentation gives it.
type rowsPart struct {
	s    schema.Schema
	rows [][]any
}

func (p rowsPart) Len() int { return len(p.rows) }

func (p rowsPart) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	for i, r := range p.rows[from:to] {
		switch v := r[j].(type) {
		case nil:
			nulls[i] = true
		case int64:
			words[i] = v
		case int32:
			words[i] = int64(v)
		case schema.Decimal:
			words[i] = int64(v)
		case schema.Date:
			words[i] = int64(v)
		case schema.Timestamp:
			words[i] = int64(v)
		case float64:
			words[i] = int64(math.Float64bits(v))
		case bool:
			if v {
				words[i] = 1
			} else {
				words[i] = 0
			}
		case string:
			strs[i] = v
		default:
			panic("rowsPart: a " + p.s.Fields[j].Type.DDL() + " value of an unexpected type")
		}
	}
}

// columnRows returns n seeded rows of every type ColumnsWritable accepts, about one value in
// eight NULL, with the extremes of each type and DOUBLE's NaN and infinities among them.
func columnRows(t *testing.T, n int) (schema.Schema, [][]any) {
	s := mustDDL(t, "b BIGINT, i INT, sh SMALLINT, ti TINYINT, d DOUBLE, f FLOAT, ok BOOLEAN, s STRING, bin BINARY, day DATE, at TIMESTAMP, local TIMESTAMP_NTZ, small DECIMAL(5,2), big DECIMAL(18,3)")
	rng := rand.New(rand.NewPCG(7, 11))
	rows := make([][]any, n)
	for i := range rows {
		r := []any{
			rng.Int64() - math.MaxInt64/2, rng.Int32() - math.MaxInt32/2, int32(int16(rng.Uint32())), int32(int8(rng.Uint32())),
			rng.NormFloat64() * 1e6, float64(float32(rng.NormFloat64())), rng.IntN(2) == 1,
			strings.Repeat("x", rng.IntN(5)) + string(rune('a'+rng.IntN(26))) + strings.Repeat("é", rng.IntN(3)),
			string([]byte{byte(rng.IntN(256)), 0, byte(rng.IntN(256))}),
			schema.Date(rng.IntN(40000) - 10000), schema.Timestamp(rng.Int64N(4e15) - 1e15), schema.Timestamp(rng.Int64N(4e15)),
			schema.Decimal(rng.IntN(199999) - 99999), schema.Decimal(rng.Int64N(2e17) - 1e17),
		}
		switch i % 97 {
		case 3:
			r[0], r[1], r[2], r[3] = int64(math.MinInt64), int32(math.MaxInt32), int32(math.MinInt16), int32(math.MaxInt8)
			r[4], r[12], r[13] = math.NaN(), schema.Decimal(99999), schema.Decimal(-999999999999999999)
		case 5:
			r[0], r[1], r[2], r[3] = int64(math.MaxInt64), int32(math.MinInt32), int32(math.MaxInt16), int32(math.MinInt8)
			r[4], r[5], r[7] = math.Inf(1), math.Inf(-1), ""
		}
		for j := range r {
			if rng.IntN(8) == 0 {
				r[j] = nil
			}
		}
		rows[i] = r
	}
	return s, rows
}

// TestWriteFileFromColumns: a file written from column parts of any size is, byte for byte, the
// file WriteFile writes of the same rows, with the same statistics; a value out of its column's
// range is an error naming its row (from the file's first) and column, and leaves no file; a
// nested schema is refused before anything is written. It is not parallel: it changes
// rowGroupRows.
func TestWriteFileFromColumns(t *testing.T) {
	saved := rowGroupRows
	rowGroupRows = 7000
	defer func() { rowGroupRows = saved }()
	s, rows := columnRows(t, 20_000)
	if !ColumnsWritable(s) {
		t.Fatalf("ColumnsWritable(%s) = false", s.DDL())
	}
	tbl := New(t.TempDir())
	whole, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(tbl.Dir, whole.Path))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 999, 4096, 7000, 6999, 30_000} {
		next := 0
		a, err := tbl.WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
			n := min(size, len(rows)-next)
			part := rowsPart{s: s, rows: rows[next : next+n]}
			next += n
			return part, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(tbl.Dir, a.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("parts of %d: the file (%d bytes) differs from WriteFile's (%d bytes)", size, len(got), len(want))
		}
		if a.Stats != whole.Stats || a.Size != whole.Size {
			t.Errorf("parts of %d: stats %s (size %d), WriteFile's %s (size %d)", size, a.Stats, a.Size, whole.Stats, whole.Size)
		}
		back, err := tbl.ReadFile(a.Path, s)
		if err != nil {
			t.Fatal(err)
		}
		assertRows(t, back, rows)
	}

	// A SMALLINT word beyond 16 bits in the second part: row 12 of the file, column "sh".
	bad := make([]any, len(s.Fields))
	copy(bad, rows[12])
	bad[2] = int32(40000)
	parts := [][][]any{rows[:10], {rows[10], rows[11], bad}}
	dir := t.TempDir()
	_, err = New(dir).WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
		if len(parts) == 0 {
			return nil, nil
		}
		p := rowsPart{s: s, rows: parts[0]}
		parts = parts[1:]
		return p, nil
	})
	if err == nil || !strings.Contains(err.Error(), `row 12: column "sh": 40000 does not fit SMALLINT`) {
		t.Fatalf("err = %v, want row 12 and column sh named", err)
	}
	// A DECIMAL beyond its precision.
	bad[2], bad[12] = rows[12][2], schema.Decimal(100000)
	_, err = New(dir).WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
		if bad == nil {
			return nil, nil
		}
		p := rowsPart{s: s, rows: [][]any{bad}}
		bad = nil
		return p, nil
	})
	if err == nil || !strings.Contains(err.Error(), `row 0: column "small": 1000.00 does not fit DECIMAL(5,2)`) {
		t.Fatalf("err = %v, want row 0 and column small named", err)
	}
	// Two values out of range in different batches of the column writers (writeBatch rows
	// each): the lower column's, in a later batch, is the error, as WriteFile reports it.
	_, many := columnRows(t, 5000)
	many[4500][2] = int32(40000) // sh
	many[10][3] = int32(300)     // ti
	_, boxedErr := New(dir).WriteFile(s, many)
	once := false
	_, err = New(dir).WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
		if once {
			return nil, nil
		}
		once = true
		return rowsPart{s: s, rows: many}, nil
	})
	// (The messages name each its own file.)
	after := func(e error) string { _, rest, _ := strings.Cut(e.Error(), ".parquet: "); return rest }
	if err == nil || boxedErr == nil || after(err) != after(boxedErr) || !strings.HasPrefix(after(err), `row 4500: column "sh"`) {
		t.Fatalf("err = %v, want WriteFile's (%v), naming row 4500 and column sh", err, boxedErr)
	}
	// next's own error.
	_, err = New(dir).WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) { return nil, os.ErrClosed })
	if err != os.ErrClosed {
		t.Fatalf("err = %v, want next's", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left behind: %v", left)
	}
	// A nested column: refused, nothing written.
	nested := mustDDL(t, "id BIGINT, tags ARRAY<STRING>")
	if ColumnsWritable(nested) || ColumnsWritable(mustDDL(t, "d DECIMAL(38,2)")) {
		t.Fatal("ColumnsWritable accepts an ARRAY or a wide DECIMAL")
	}
	_, err = New(dir).WriteFileFromColumns(NewDataFileName(), nested, func() (ColumnPart, error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), "cannot be written from columns") {
		t.Fatalf("err = %v, want the schema refused", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left behind: %v", left)
	}
}

// wordsPart is a ColumnPart over unboxed columns: words[j] (nil for a string column), strs[j]
// and nulls[j] (nil: none NULL).
type wordsPart struct {
	words [][]int64
	strs  [][]string
	nulls [][]bool
}

func (p *wordsPart) Len() int { return len(p.words[0]) }

func (p *wordsPart) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	if p.nulls[j] != nil {
		copy(nulls, p.nulls[j][from:to])
	}
	if p.strs[j] != nil {
		copy(strs, p.strs[j][from:to])
		return
	}
	copy(words, p.words[j][from:to])
}

// BenchmarkWriteFileFromColumns writes a file of 500,000 rows from columns, in the shape of an
// SCD type 2 target's (id, name, amount, seq, __START_AT, __END_AT, a tenth of __END_AT NULL):
// half the first batch of the bench's scd2 scenario. Reported: rows/s.
func BenchmarkWriteFileFromColumns(b *testing.B) {
	const n = 500_000
	s := mustDDL(b, "id BIGINT, name STRING, amount DECIMAL(10,2), seq BIGINT, __START_AT BIGINT, __END_AT BIGINT")
	p := &wordsPart{words: make([][]int64, 6), strs: make([][]string, 6), nulls: make([][]bool, 6)}
	rng := rand.New(rand.NewPCG(5, 6))
	for j := range 6 {
		if j == 1 {
			p.strs[j] = make([]string, n)
			continue
		}
		p.words[j] = make([]int64, n)
	}
	p.nulls[5] = make([]bool, n)
	for i := range n {
		id := int64(i / 10)
		seq := rng.Int64N(1_000_000)
		p.words[0][i], p.words[2][i], p.words[3][i], p.words[4][i], p.words[5][i] = id, rng.Int64N(1_000_000), seq, seq, seq+rng.Int64N(1000)
		p.strs[1][i] = "name-" + strconv.FormatInt(id, 10) + "-" + strconv.Itoa(i%10)
		p.nulls[5][i] = i%10 == 9
	}
	tbl := New(b.TempDir())
	b.ResetTimer()
	for b.Loop() {
		done := false
		a, err := tbl.WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
			if done {
				return nil, nil
			}
			done = true
			return p, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(filepath.Join(tbl.Dir, a.Path))
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}
