package flows

import (
	"slices"
	"sync/atomic"

	"tributary/delta"
	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
)

// An ingest flow whose rows go to its data files as they are read (JSON lines of declared
// primitive columns, no expectation, no partition column, no rescued-data or metadata column)
// reads them by column: each parsed block keeps its rows as unboxed column values
// (blockColumns), and the chunks of blocks are written with delta.DataWriter.WriteColumns. A
// line the scanner settles is scanned straight into the block's columns (blockColumns.put); any
// other is parsed into a boxed row that lives only while the line is parsed (in memory the block
// reuses line after line), so the batch holds about a third of the memory of its rows as rows,
// and the writer converts no boxed value. The table written is the one the rows would make, file
// for file and row group for row group: a chunk ends at the row it would end at as rows (rowBytes,
// chunkRows, chunkBytes), within a block if need be, and delta.DataWriter.WriteColumns writes
// what Write would (TestIngestByColumnsEquivalence). On the bench's 1 GB ingest (2 cores) it
// took 2.4-3.1 s and 160-170 MiB, against 3.1-3.4 s and 278 MiB as rows.

// ingestColumnsOff turns reading by column off, so that tests can compare it with the rows of
// the same input.
var ingestColumnsOff atomic.Bool

// ingestColumnBatches counts the ingest batches read by column, for tests.
var ingestColumnBatches atomic.Int64

// ingestByColumns reports whether an ingest batch of d, whose table metadata is meta, with the
// expectations set and the quarantine quar (nil: none), is read by column (see above).
func ingestByColumns(d *spec.Dataset, meta delta.Metadata, set *expectations.Set, quar *quarantine) bool {
	src := d.Source
	if ingestColumnsOff.Load() || src.Format != "json" || src.Options[spec.JSONMultiline] == "true" ||
		src.RescuedDataColumn != "" || src.IncludeMetadata || len(set.Rules) > 0 || quar != nil ||
		len(meta.PartitionColumns) > 0 || !delta.ColumnsWritable(meta.Schema) {
		return false
	}
	// The rows the reader makes are the table's, column for column.
	if len(src.Schema.Fields) != len(meta.Schema.Fields) || len(d.Schema.Fields) != len(meta.Schema.Fields) {
		return false
	}
	for i, f := range meta.Schema.Fields {
		if g, h := src.Schema.Fields[i], d.Schema.Fields[i]; g.Name != f.Name || !g.Type.Equal(f.Type) || h.Name != f.Name || !h.Type.Equal(f.Type) {
			return false
		}
	}
	return true
}

// columnLayout is the shape of the rows a lineReader keeps by column: each column's kind (the
// schema's primitive types; a STRING's values are strings, the others' words as
// delta.ColumnPart gives them).
type columnLayout struct {
	kinds []schema.Kind
}

// newColumnLayout returns the layout of rows of s, which delta.ColumnsWritable accepts.
func newColumnLayout(s schema.Schema) *columnLayout {
	l := &columnLayout{}
	for _, f := range s.Fields {
		l.kinds = append(l.kinds, f.Type.Kind)
	}
	return l
}

// blockColumns is the rows of a parsed block by column (columnLayout), with the line of each
// row. The rows of the lines that did not settle cleanly (a value that does not fit its column,
// a line that is not a JSON object, a last line cut short) are rows too, their unfit values
// NULL, and are also listed in the block's rows (lineBlock.rows, each lineRow's at giving the
// row, its row nil) for the source's mode to decide on (badRecords.take); a row it drops is
// taken out (compact). Its arrays are reused when the block is (blockPool).
type blockColumns struct {
	n     int
	words [][]int64  // per column: the words of a fixed-width column, nil for a STRING one
	strs  [][]string // per column: the strings of a STRING column, nil for the others
	nulls [][]bool   // per column
	lines []int64    // per row: its line number

	// scratch is the row a line the scanner does not settle is parsed into (lineReader.
	// parseDecoded) before add copies it into the columns, and slab the values put boxes on
	// their way (scanValue's): both reused line after line.
	scratch []any
	slab    *boxSlab
}

// reset empties c (nil: a new one) for a block of about n rows of layout l (each column's array
// non-nil, with room for n), of width values a row as parsed, wordCols and stringCols of them
// boxed in the slab (lineReader's counts), and returns it.
func (c *blockColumns) reset(l *columnLayout, n, width, wordCols, stringCols int) *blockColumns {
	if c == nil {
		c = &blockColumns{}
	}
	c.n = 0
	if len(c.nulls) != len(l.kinds) {
		c.words, c.strs, c.nulls = make([][]int64, len(l.kinds)), make([][]string, len(l.kinds)), make([][]bool, len(l.kinds))
	}
	for j, k := range l.kinds {
		if k == schema.String {
			c.strs[j], c.words[j] = grown(c.strs[j], n), nil
		} else {
			c.words[j], c.strs[j] = grown(c.words[j], n), nil
		}
		c.nulls[j] = grown(c.nulls[j], n)
	}
	c.lines = grown(c.lines, n)
	if cap(c.scratch) < width {
		c.scratch = make([]any, width)
	}
	if c.slab == nil || !c.slab.reset(wordCols, stringCols) {
		c.slab = newBoxSlab(wordCols, stringCols)
	}
	return c
}

// grown returns s emptied, with room for n values (s's own array when it has it).
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// row returns the scratch row for the next line: width NULLs, and the slab emptied.
func (c *blockColumns) row(width, wordCols, stringCols int) ([]any, *boxSlab) {
	row := c.scratch[:width]
	clear(row)
	c.slab.reset(wordCols, stringCols)
	return row, c.slab
}

// add appends row (the values of layout l, in the schema package's row form) with its line: a
// line the scanner does not settle (parsed as a row), or an element of an array of objects.
func (c *blockColumns) add(l *columnLayout, row []any, lineNo int64) {
	for j, k := range l.kinds {
		v := row[j]
		c.nulls[j] = append(c.nulls[j], v == nil)
		switch {
		case k == schema.String:
			s, _ := v.(string)
			c.strs[j] = append(c.strs[j], s)
		case v == nil:
			c.words[j] = append(c.words[j], 0)
		default:
			c.words[j] = append(c.words[j], word(k, v))
		}
	}
	c.lines = append(c.lines, lineNo)
	c.n++
}

// open appends a row of NULLs for a line scanned straight into the columns (lineReader.scanTo,
// which fills it with put) and returns its position; commit keeps it, with its line, and drop
// takes it out again.
func (c *blockColumns) open(wordCols, stringCols int) int {
	for j := range c.nulls {
		c.nulls[j] = append(c.nulls[j], true)
		if c.strs[j] != nil {
			c.strs[j] = append(c.strs[j], "")
		} else {
			c.words[j] = append(c.words[j], 0)
		}
	}
	c.slab.reset(wordCols, stringCols) // for the values put boxes on their way
	return c.n
}

// commit keeps the row open made, of line lineNo.
func (c *blockColumns) commit(lineNo int64) {
	c.lines = append(c.lines, lineNo)
	c.n++
}

// drop takes out the row open made.
func (c *blockColumns) drop() { c.truncate(c.n) }

// put reads the JSON value at s[i:] as scanValue does, for column col of type t, and stores it
// in row at of the columns as add would store scanValue's value: without boxing it for a BIGINT
// integer, a STRING string and a DECIMAL (of precision up to 18) number, the common values,
// else through scanValue (boxed in slab, then unboxed). Nothing is stored when the value does
// not fit (err) or is NULL (the row's NULL stays). end, decoded and err are scanValue's.
func (c *blockColumns) put(col int, t *schema.Type, s string, i, at int, slab *boxSlab) (end int, decoded any, err error) {
	if i < len(s) {
		switch ch := s[i]; {
		case ch == '"' && t.Kind == schema.String && !t.IsBinary():
			if str, end, ok := scanString(s, i); ok {
				c.strs[col][at], c.nulls[col][at] = str, false
				return end, nil, nil
			}
			return -1, nil, nil
		case ch == '-' || ch >= '0' && ch <= '9':
			switch {
			case t.Kind == schema.Long:
				if n, end, ok := scanSmallInt(s, i); ok {
					c.words[col][at], c.nulls[col][at] = n, false
					return end, nil, nil
				}
			case t.Kind == schema.DecimalKind && !t.WideDecimal():
				if end, _ := scanNumber(s, i); end >= 0 {
					d, err := schema.ParseDecimal(s[i:end], *t)
					if err != nil {
						return end, nil, err
					}
					c.words[col][at], c.nulls[col][at] = int64(d), false
					return end, nil, nil
				}
			}
		}
	}
	end, v, decoded, err := scanValue(t, s, i, slab)
	if end < 0 || err != nil || v == nil {
		return end, decoded, err
	}
	if t.Kind == schema.String {
		c.strs[col][at], _ = v.(string)
	} else {
		c.words[col][at] = word(t.Kind, v)
	}
	c.nulls[col][at] = false
	return end, decoded, err
}

// compact takes out the rows drop marks (drop has a value per row).
func (c *blockColumns) compact(drop []bool) {
	keep := 0
	for i := range c.n {
		if drop[i] {
			continue
		}
		for j := range c.nulls {
			c.nulls[j][keep] = c.nulls[j][i]
			if c.strs[j] != nil {
				c.strs[j][keep] = c.strs[j][i]
			} else {
				c.words[j][keep] = c.words[j][i]
			}
		}
		c.lines[keep] = c.lines[i]
		keep++
	}
	c.truncate(keep)
}

// truncate keeps the first n rows.
func (c *blockColumns) truncate(n int) {
	for j := range c.nulls {
		c.nulls[j] = c.nulls[j][:n]
		if c.strs[j] != nil {
			c.strs[j] = c.strs[j][:n]
		} else {
			c.words[j] = c.words[j][:n]
		}
	}
	c.lines = c.lines[:n]
	c.n = n
}

// rowBytes is rowBytes of row i as a row of values (what the rows of a chunk are bounded by).
func (c *blockColumns) rowBytes(i int) int {
	n := 24 + 16*len(c.nulls)
	for j, nulls := range c.nulls {
		switch {
		case nulls[i]:
		case c.strs[j] != nil:
			n += 16 + len(c.strs[j][i])
		default:
			n += 8
		}
	}
	return n
}

// settleColumns applies the source's mode to the rows of block b that did not settle cleanly
// (its rows, see blockColumns), read from file: a row the mode drops is taken out of the
// columns; failfast's error is returned.
func settleColumns(b *lineBlock, file string, bad *badRecords) error {
	var drop []bool
	for _, r := range b.rows {
		keep, err := bad.take(file, r.lineNo, r.parsed, r.bad)
		if err != nil {
			return err
		}
		if !keep {
			if drop == nil {
				drop = make([]bool, b.cols.n)
			}
			drop[r.at] = true
		}
	}
	if drop != nil {
		b.cols.compact(drop)
	}
	return nil
}

// chunkColumns is the rows of a chunk, runs of rows of blocks in order, as a delta.ColumnPart.
// starts[i] is the chunk's row of run i's first (a chunk of many small files has many runs:
// Column finds its first by a binary search).
type chunkColumns struct {
	runs   []blockRun
	starts []int
	n      int
}

// blockRun is rows [lo, hi) of a block's columns.
type blockRun struct {
	c      *blockColumns
	lo, hi int
}

// add appends rows [lo, hi) of c.
func (p *chunkColumns) add(c *blockColumns, lo, hi int) {
	p.runs = append(p.runs, blockRun{c, lo, hi})
	p.starts = append(p.starts, p.n)
	p.n += hi - lo
}

func (p *chunkColumns) Len() int { return p.n }

var _ delta.ColumnSlicer = (*chunkColumns)(nil)

// ColumnSlice gives column j of the rows from from on, up to to, that lie in the run holding
// row from, in place (delta.ColumnSlicer).
func (p *chunkColumns) ColumnSlice(j, from, to int) ([]bool, []int64, []string, bool) {
	k, _ := slices.BinarySearch(p.starts, from+1)
	k = max(k-1, 0)
	if k >= len(p.runs) || from >= p.n {
		return nil, nil, nil, false
	}
	r, at := p.runs[k], p.starts[k]
	lo, hi := r.lo+from-at, r.lo+min(to, at+r.hi-r.lo)-at
	if r.c.strs[j] != nil {
		return r.c.nulls[j][lo:hi], nil, r.c.strs[j][lo:hi], true
	}
	return r.c.nulls[j][lo:hi], r.c.words[j][lo:hi], nil, true
}

func (p *chunkColumns) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	// The last run starting at or before from.
	first, _ := slices.BinarySearch(p.starts, from+1)
	first = max(first-1, 0)
	for k, r := range p.runs[first:] {
		at := p.starts[first+k] // the chunk's row of the run's first
		if at >= to {
			return
		}
		n := r.hi - r.lo
		if lo, hi := max(from, at), min(to, at+n); lo < hi {
			out, in := lo-from, r.lo+lo-at
			copy(nulls[out:], r.c.nulls[j][in:in+hi-lo])
			if r.c.strs[j] != nil {
				copy(strs[out:], r.c.strs[j][in:in+hi-lo])
			} else {
				copy(words[out:], r.c.words[j][in:in+hi-lo])
			}
		}
	}
}
