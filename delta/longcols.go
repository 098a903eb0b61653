package delta

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// ReadLongColumns reads the BIGINT columns names of a's data file into typed arrays, leaving
// out the rows a's deletion vector deletes (Delta PROTOCOL.md, "Reader Requirements for
// Deletion Vectors"): cols[j][i] is column names[j] of the i-th live row, pos[i] that row's
// 0-based physical position in the file. It boxes no value, for a caller that reads a few
// columns of many rows (the keys of an APPLY CHANGES target). ok is false, with no error, when
// a column is missing from the file, is not a flat INT64 column, or holds a NULL: the caller
// then reads the file as ReadLiveFile does. Errors name the file.
func (t *Table) ReadLongColumns(a Add, names []string) (cols [][]int64, pos []int64, ok bool, err error) {
	name, err := localPath(t.Dir, a.Path)
	if err != nil {
		return nil, nil, false, fmt.Errorf("delta: read %s: %w", a.Path, err)
	}
	cols, ok, err = readLongColumns(name, names)
	if err != nil {
		return nil, nil, false, fmt.Errorf("delta: read %s: %w", a.Path, err)
	}
	if !ok {
		return nil, nil, false, nil
	}
	deleted, err := t.ReadDeletionVector(a.DeletionVector)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%w (data file %s)", err, a.Path)
	}
	n := 0
	if len(cols) > 0 {
		n = len(cols[0])
	}
	if len(deleted) > 0 && deleted[len(deleted)-1] >= uint64(n) {
		return nil, nil, false, fmt.Errorf("delta: the deletion vector of %s deletes row %d, but the file has %d rows", a.Path, deleted[len(deleted)-1], n)
	}
	pos = make([]int64, 0, n-len(deleted))
	d := 0
	for i := range n {
		if d < len(deleted) && deleted[d] == uint64(i) {
			d++
			continue
		}
		pos = append(pos, int64(i))
	}
	if len(deleted) > 0 {
		for j, c := range cols {
			live := c[:0]
			for _, p := range pos {
				live = append(live, c[p]) // p >= len(live): in place
			}
			cols[j] = live
		}
	}
	return cols, pos, true, nil
}

// readLongColumns reads the INT64 columns names of the Parquet file at name, every row; ok is
// false when one is missing, not a flat INT64 column, or holds a NULL.
func readLongColumns(name string, names []string) (cols [][]int64, ok bool, err error) {
	f, pf, err := openParquet(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	idx := make([]int, len(names))
	for j, n := range names {
		col := pf.Root().Column(n)
		if col == nil || !col.Leaf() || col.MaxRepetitionLevel() > 0 || col.Type().Kind() != parquet.Int64 {
			return nil, false, nil
		}
		if lt := col.Type().LogicalType(); lt != nil && isTemporal(lt.Value) {
			return nil, false, nil // as converter reads BIGINT: not a TIMESTAMP
		}
		idx[j] = col.Index()
	}
	cols = make([][]int64, len(names))
	for j := range cols {
		cols[j] = make([]int64, 0, pf.NumRows())
	}
	buf := make([]parquet.Value, 1024)
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		for j, ci := range idx {
			var ok bool
			if cols[j], ok, err = appendLongChunk(cols[j], chunks[ci].Pages(), buf); err != nil {
				return nil, false, fmt.Errorf("column %q: %w", names[j], err)
			}
			if !ok {
				return nil, false, nil
			}
		}
		for j := range cols {
			if len(cols[j]) != len(cols[0]) {
				return nil, false, fmt.Errorf("column %q has %d values, column %q %d", names[j], len(cols[j]), names[0], len(cols[0]))
			}
		}
	}
	return cols, true, nil
}

// appendLongChunk appends to out the values of an INT64 column chunk's pages, which it closes;
// ok is false when one is NULL. A plain page's values are copied as they are; a dictionary
// page's are read one by one (into buf).
func appendLongChunk(out []int64, pages parquet.Pages, buf []parquet.Value) (_ []int64, ok bool, err error) {
	defer pages.Close()
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return out, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		if page.NumNulls() > 0 {
			parquet.Release(page)
			return nil, false, nil
		}
		if data := page.Data(); page.Dictionary() == nil && data.Kind() == encoding.Int64 {
			out = append(out, data.Int64()...)
			parquet.Release(page)
			continue
		}
		vr := page.Values()
		for {
			k, err := vr.ReadValues(buf)
			for _, v := range buf[:k] {
				if v.IsNull() {
					parquet.Release(page)
					return nil, false, nil
				}
				out = append(out, v.Int64())
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(page)
				return nil, false, err
			}
		}
		parquet.Release(page)
	}
}
