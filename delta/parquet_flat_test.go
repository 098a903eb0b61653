package delta

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// edgeRows returns n rows of columnRows' schema with stretches that make pages of one kind:
// rows [200, 700) all NULL (whole pages of NULLs), DOUBLE and FLOAT all NaN (of three bit
// patterns) in rows [900, 1300)
// and again from the start of the second row group of 3000 rows ([3000, 3200)), so that a row
// group's first bounds are NaN; -0.0 and +0.0 in turn in rows [1500, 1700); strings longer than
// the column index's 16 bytes, some all 0xFF bytes (whose truncated max cannot be incremented),
// in rows [1800, 2600); only empty strings in rows [2600, 2800); BOOLEAN all true in rows
// [3500, 4000).
func edgeRows(t *testing.T, n int) (schema.Schema, [][]any) {
	s, rows := columnRows(t, n)
	for i, r := range rows {
		switch {
		case i >= 200 && i < 700:
			clear(r)
		case i >= 900 && i < 1300, i >= 3000 && i < 3200:
			// NaNs of other bits than math.NaN()'s, and of two kinds in turn: a page's bounds
			// are its first NaN.
			r[4], r[5] = math.Float64frombits(0xfff8000000000000), math.Float64frombits(0x7ff8100000000000)
			if i%3 == 1 {
				r[4], r[5] = math.NaN(), math.Float64frombits(0x7ff8200000000000)
			}
		case i >= 1500 && i < 1700:
			z := 0.0
			if i%2 == 0 {
				z = math.Copysign(0, -1)
			}
			r[4], r[5] = z, z
		case i >= 1800 && i < 2600:
			if i%3 == 0 {
				r[7], r[8] = strings.Repeat("\xff", 20+i%7), strings.Repeat("\xff", 17)
			} else {
				r[7], r[8] = strings.Repeat("long value ", 1+i%4)+string(rune('a'+i%26)), strings.Repeat("b", 16+i%3)
			}
		case i >= 2600 && i < 2800:
			r[7], r[8] = "", ""
		case i >= 3500 && i < 4000:
			r[6] = true
		}
	}
	return s, rows
}

// TestFlatFileMatchesRowPath: with pages of about 1 KiB, batches of 100 rows (pages close at the
// end of a batch) and row groups of 3000 rows, a file
// written by column (flatFile) is byte for byte the file the row path (parquet-go's writer)
// writes of the same rows handed over in the same parts, with the same statistics, for rows of
// every primitive type with NULLs, NaN, infinities and the extremes of each type (columnRows),
// and for rows with pages of only NULLs, only NaN (a row group's first bounds among them), only
// empty strings, signed zeros, and strings the column index truncates (edgeRows). Both read back
// as the rows written. It is not parallel: it changes pageBufferSize, writeBatch and
// rowGroupRows.
func TestFlatFileMatchesRowPath(t *testing.T) {
	savedPage, savedBatch, savedGroup := pageBufferSize, writeBatch, rowGroupRows
	pageBufferSize, writeBatch, rowGroupRows = 1024, 100, 3000
	defer func() { pageBufferSize, writeBatch, rowGroupRows = savedPage, savedBatch, savedGroup }()
	tbl := New(t.TempDir())
	for _, data := range []struct {
		name string
		make func(*testing.T, int) (schema.Schema, [][]any)
	}{{"mixed", columnRows}, {"edges", edgeRows}} {
		s, rows := data.make(t, 7500)
		for _, size := range []int{1, 777, 3000, 4096, 7500} {
			parts := func() [][][]any {
				var out [][][]any
				for at := 0; at < len(rows); at += size {
					out = append(out, rows[at:min(at+size, len(rows))])
				}
				return out
			}
			byRows := parts()
			want, err := tbl.WriteFileFrom(NewDataFileName(), s, func() ([][]any, error) {
				if len(byRows) == 0 {
					return nil, nil
				}
				p := byRows[0]
				byRows = byRows[1:]
				return p, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			byCols := parts()
			got, err := tbl.WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
				if len(byCols) == 0 {
					return nil, nil
				}
				p := rowsPart{s: s, rows: byCols[0]}
				byCols = byCols[1:]
				return p, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// The same parts given in place (ColumnSlicer), but for every third batch.
			bySlices := parts()
			var given []*slicedPart
			sliced, err := tbl.WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
				if len(bySlices) == 0 {
					return nil, nil
				}
				p := newSlicedPart(s, bySlices[0])
				given = append(given, p)
				bySlices = bySlices[1:]
				return p, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			inPlace := 0
			for _, p := range given {
				inPlace += p.inPlace
			}
			if size > 1 && inPlace == 0 {
				t.Errorf("%s, parts of %d: no column given in place", data.name, size)
			}
			sb, err := os.ReadFile(filepath.Join(tbl.Dir, sliced.Path))
			if err != nil {
				t.Fatal(err)
			}
			gb, err := os.ReadFile(filepath.Join(tbl.Dir, got.Path))
			if err != nil {
				t.Fatal(err)
			}
			wb, err := os.ReadFile(filepath.Join(tbl.Dir, want.Path))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sb, wb) || sliced.Stats != want.Stats {
				t.Errorf("%s, parts of %d: given in place, %d bytes, stats %s; by rows %d bytes, stats %s", data.name, size, sliced.Size, sliced.Stats, want.Size, want.Stats)
			}
			if !bytes.Equal(gb, wb) || got.Stats != want.Stats || got.Size != want.Size {
				t.Errorf("%s, parts of %d: by column %d bytes, stats %s; by rows %d bytes, stats %s (same bytes: %v)",
					data.name, size, got.Size, got.Stats, want.Size, want.Stats, bytes.Equal(gb, wb))
			}
			f, err := parquet.OpenFile(bytes.NewReader(gb), int64(len(gb)))
			if err != nil {
				t.Fatal(err)
			}
			if pages := len(f.OffsetIndexes()[0].PageLocations); len(f.RowGroups()) != 3 || pages < 10 {
				t.Errorf("%s, parts of %d: %d row groups, %d pages in the first chunk; want 3, and many", data.name, size, len(f.RowGroups()), pages)
			}
			back, err := tbl.ReadFile(got.Path, s)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, back, rows)
		}
	}
}

// TestFlatFileEmpty: a file written by column from no rows is the row path's empty file: no row
// group, the schema in its footer.
func TestFlatFileEmpty(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING")
	tbl := New(t.TempDir())
	got, err := tbl.WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	want, err := tbl.WriteFileFrom(NewDataFileName(), s, func() ([][]any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := os.ReadFile(filepath.Join(tbl.Dir, got.Path))
	wb, _ := os.ReadFile(filepath.Join(tbl.Dir, want.Path))
	if !bytes.Equal(gb, wb) || got.Stats != want.Stats {
		t.Fatalf("empty by column: %d bytes, stats %s; by rows %d bytes, stats %s", len(gb), got.Stats, len(wb), want.Stats)
	}
	back, err := tbl.ReadFile(got.Path, s)
	if err != nil || len(back) != 0 {
		t.Fatalf("read back %d rows, err %v; want none", len(back), err)
	}
}

// slicedPart is a ColumnSlicer over unboxed columns (made from rows), held in runs of 37 rows:
// ColumnSlice gives the rows up to the end of the run holding from (or to) in place, except in
// every third batch of writeBatch rows (then the writer calls Column), and counts the calls it
// answered.
type slicedPart struct {
	wordsPart
	inPlace int
}

func newSlicedPart(s schema.Schema, rows [][]any) *slicedPart {
	p := &slicedPart{wordsPart: wordsPart{words: make([][]int64, len(s.Fields)), strs: make([][]string, len(s.Fields)), nulls: make([][]bool, len(s.Fields))}}
	rp := rowsPart{s: s, rows: rows}
	for j, f := range s.Fields {
		p.nulls[j] = make([]bool, len(rows))
		words, strs := make([]int64, len(rows)), make([]string, len(rows))
		rp.Column(j, 0, len(rows), p.nulls[j], words, strs)
		if f.Type.Kind == schema.String {
			p.strs[j] = strs
		} else {
			p.words[j] = words
		}
	}
	return p
}

func (p *slicedPart) ColumnSlice(j, from, to int) ([]bool, []int64, []string, bool) {
	if (from/writeBatch)%3 == 2 {
		return nil, nil, nil, false
	}
	p.inPlace++
	to = min(to, (from/37+1)*37)
	if p.strs[j] != nil {
		return p.nulls[j][from:to], nil, p.strs[j][from:to], true
	}
	return p.nulls[j][from:to], p.words[j][from:to], nil, true
}

// TestFlatFileSlicedError: a value out of range in a part given in place, in pieces (runs of 37
// rows), is an error naming its row counted from the file's first, and leaves no file; so is a
// DATE word beyond 32 bits.
func TestFlatFileSlicedError(t *testing.T) {
	t.Parallel()
	s, rows := columnRows(t, 200)
	rows[150][2] = int32(40000) // sh, in the second part's fifth run
	dir := t.TempDir()
	parts := [][][]any{rows[:60], rows[60:]}
	_, err := New(dir).WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
		if len(parts) == 0 {
			return nil, nil
		}
		p := newSlicedPart(s, parts[0])
		parts = parts[1:]
		return p, nil
	})
	if err == nil || !strings.Contains(err.Error(), `row 150: column "sh": 40000 does not fit SMALLINT`) {
		t.Fatalf("err = %v, want row 150 and column sh named", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left behind: %v", left)
	}
	// A DATE word beyond 32 bits (no row holds one; a part could give it).
	p := newSlicedPart(s, rows[:10])
	p.words[9][5], p.nulls[9][5] = 1<<31, false // day
	_, err = New(dir).WriteFileFromColumns(NewDataFileName(), s, func() (ColumnPart, error) {
		if p == nil {
			return nil, nil
		}
		part := p
		p = nil
		return part, nil
	})
	if err == nil || !strings.Contains(err.Error(), `row 5: column "day": 2147483648 days does not fit DATE`) {
		t.Fatalf("err = %v, want row 5 and column day named", err)
	}
}

// TestDataWriterMixed: a DataWriter given rows as rows, then by column, then as rows again
// finishes the open file at each switch (a file takes one kind only): three files, the rows
// back in order, each file the row path's file of its rows.
func TestDataWriterMixed(t *testing.T) {
	t.Parallel()
	s, rows := columnRows(t, 300)
	tbl := createSizedTable(t, s, "64mb")
	w, err := tbl.NewDataWriter(mustSnapshot(t, tbl, -1).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows[:100]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteColumns(newSlicedPart(s, rows[100:200])); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows[200:]); err != nil {
		t.Fatal(err)
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) != 3 {
		t.Fatalf("%d files, want 3 (one a kind of write)", len(adds))
	}
	var back [][]any
	for i, a := range adds {
		part, err := tbl.ReadFile(a.Path, s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := New(t.TempDir()).WriteFile(s, rows[100*i:100*(i+1)])
		if err != nil {
			t.Fatal(err)
		}
		if a.Stats != want.Stats || a.Size != want.Size {
			t.Errorf("file %d: size %d, stats %s; the row path's %d, %s", i, a.Size, a.Stats, want.Size, want.Stats)
		}
		back = append(back, part...)
	}
	assertRows(t, back, rows)
}
