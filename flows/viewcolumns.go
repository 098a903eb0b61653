package flows

import (
	"fmt"
	"sync/atomic"

	"tributary/delta"
	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
)

// An APPLY CHANGES batch that reads a view over JSON-lines files and folds its events into
// typed columns (typedFold: an SCD type 1 target's batches; histColumns: an SCD type 2 target's
// first batch) reads the files by column, as an ingest does (ingestByColumns): each parsed
// block keeps its rows as unboxed column values (blockColumns), and the fold takes the key, the
// sequence and the data columns straight from them (columnFold), with no row, event or boxed
// value in between. The events, their order and every check are those the rows would give
// (TestViewColumnsEquivalence): a NULL key or sequence fails the batch naming the first's file
// and line, apply_as_deletes is evaluated on each row (a row of the columns it reads), and each
// event's origin is its file and line. On the bench's machine (2 cores), scd2 through a view took
// about 0.06 s less CPU of 1.1, and cdc-bulk through a view (10M events) about 0.15 s less of
// 6.3 (medians of 8 and 4 runs).

// viewColumnsOff turns reading a view by column off, so that tests can compare it with the rows
// of the same input.
var viewColumnsOff atomic.Bool

// viewColumnBatches counts the APPLY CHANGES batches that read a view by column, for tests.
var viewColumnBatches atomic.Int64

// columnFold is a batchFold that also folds events given by column: the rows of c in order, row
// i the event of arrival first+i (the next arrivals), a delete when dels[i] (dels nil: no
// delete), its key, sequence and data columns those of src. c's memory may be reused once
// addColumns returns.
type columnFold interface {
	batchFold
	addColumns(c *blockColumns, dels []bool, src *columnSource, first int)
}

// columnSource says where a columnFold finds an event's values in a block's columns: the key's
// column, the sequence's, and each data column's (indexes in the schema of the rows read: a
// view's, or a bronze table's when its ingest feeds a follower).
type columnSource struct {
	key, seq int
	data     []int
}

// viewColumnsFor returns the columns of view's rows the fold takes for a batch of d read from
// view by column, or nil when the batch is read by row: the view must read JSON lines (not
// multiline) into declared primitive columns with no rescued-data or metadata column and have no
// expectations (viewSet: a row path check), and columnSourceFor must take the batch. keyIdx,
// seqIdx and projIdx are the view schema's columns of the key, the sequence and d's data columns
// (dataSch), as readChangeBatch picks them.
func viewColumnsFor(fold batchFold, view *spec.Dataset, set, viewSet *expectations.Set, truncates bool, keyIdx, seqIdx, projIdx []int, b *changeBatch) *columnSource {
	if viewColumnsOff.Load() || b.view == nil {
		return nil
	}
	src := view.Source
	if src == nil || src.Format != "json" || src.Options[spec.JSONMultiline] == "true" || src.RescuedDataColumn != "" ||
		src.IncludeMetadata || viewSet != nil || !delta.ColumnsWritable(src.Schema) {
		return nil
	}
	// The rows the reader makes are the view's, column for column.
	if len(src.Schema.Fields) != len(view.Schema.Fields) {
		return nil
	}
	for i, f := range view.Schema.Fields {
		if g := src.Schema.Fields[i]; g.Name != f.Name || !g.Type.Equal(f.Type) {
			return nil
		}
	}
	return columnSourceFor(fold, view.Schema, set, truncates, keyIdx, seqIdx, projIdx, b.dataSch)
}

// columnSourceFor returns where the fold of an APPLY CHANGES batch finds its values in rows of
// schema sch read by column, or nil when the batch cannot be folded so: the fold must take
// columns (columnFold), the target may have no expectations (set: a row path check) nor
// apply_as_truncates, its key and sequence must be one column each, and each data column
// (dataSch) must have its source column's type. keyIdx, seqIdx and projIdx are sch's columns of
// the key, the sequence and the data columns, as readChangeBatch picks them.
func columnSourceFor(fold batchFold, sch schema.Schema, set *expectations.Set, truncates bool, keyIdx, seqIdx, projIdx []int, dataSch schema.Schema) *columnSource {
	if _, ok := fold.(columnFold); !ok || len(set.Rules) > 0 || truncates {
		return nil
	}
	if len(keyIdx) != 1 || len(seqIdx) != 1 || keyIdx[0] < 0 || seqIdx[0] < 0 {
		return nil
	}
	for i, j := range projIdx {
		if j < 0 || !sch.Fields[j].Type.Equal(dataSch.Fields[i].Type) {
			return nil
		}
	}
	return &columnSource{key: keyIdx[0], seq: seqIdx[0], data: projIdx}
}

// columnChecks checks the rows of blocks read by column (columnFold) as consumeAt checks rows:
// NULLs in the key and sequence columns are counted, the first's origin kept (nullCounts,
// nullAt, nullEmpty: the key's at 0, the sequence's at 1), and apply_as_deletes (del, nil for
// none) is evaluated on a row of only the columns it reads (expectations.Program.Columns), its
// errors added to delErrs.
type columnChecks struct {
	src     *columnSource
	layout  *columnLayout
	del     *expectations.Program
	delCols []int
	delRow  []any
	delSlab *boxSlab
	// delMatch answers apply_as_deletes on a STRING column's value that is not NULL, when it
	// compares that column (delCol) with string literals (expectations.Program.StringMatch).
	delCol     int
	delMatch   func(string) bool
	nullCounts []int64
	nullAt     []origin
	nullEmpty  []bool
	delErrs    *evalError
}

// newColumnChecks returns the checks of rows of sch (their columns: sch's fields) for a fold
// that takes src, with the counts and origins kept in nullCounts, nullAt and nullEmpty (of
// length 2 at least) and apply_as_deletes' errors in delErrs.
func newColumnChecks(sch schema.Schema, src *columnSource, del *expectations.Program, nullCounts []int64, nullAt []origin, nullEmpty []bool, delErrs *evalError) *columnChecks {
	k := &columnChecks{src: src, layout: newColumnLayout(sch), del: del, delSlab: newBoxSlab(0, 0),
		nullCounts: nullCounts, nullAt: nullAt, nullEmpty: nullEmpty, delErrs: delErrs}
	if del != nil {
		k.delCols, k.delRow = del.Columns(), make([]any, len(sch.Fields))
		if col, match, ok := del.StringMatch(); ok {
			k.delCol, k.delMatch = col, match
		}
	}
	return k
}

// events returns the buffer of the rows of c for a columnFold (eventBuf.cols): a buffer taken
// from free when one is there, the rows checked (check; row i from at(i)), arriving from first
// on, done called once they are folded.
func (k *columnChecks) events(c *blockColumns, free <-chan *eventBuf, first int, at func(i int) origin, done func()) *eventBuf {
	buf := &eventBuf{}
	select {
	case buf = <-free:
	default:
	}
	buf.dels = k.check(c, buf.dels, at)
	buf.cols, buf.src, buf.first, buf.done, buf.evs = c, k.src, first, done, buf.evs[:0]
	return buf
}

// check checks the c.n rows of c, row i from at(i), and returns their deletes appended to
// dels[:0] (nil without apply_as_deletes).
func (k *columnChecks) check(c *blockColumns, dels []bool, at func(i int) origin) []bool {
	n := c.n
	for j, col := range [2]int{k.src.key, k.src.seq} {
		for i, null := range c.nulls[col][:n] {
			if !null {
				continue
			}
			if k.nullCounts[j] == 0 {
				k.nullAt[j] = at(i)
				k.nullEmpty[j] = c.emptyAt(i)
			}
			k.nullCounts[j]++
		}
	}
	if k.del == nil {
		return nil
	}
	dels = dels[:0]
	for i := range n {
		if k.delMatch != nil && !c.nulls[k.delCol][i] {
			dels = append(dels, k.delMatch(c.strs[k.delCol][i]))
			continue
		}
		k.delSlab.reset(0, 0)
		c.rowOf(k.delRow, i, k.delCols, k.layout, k.delSlab)
		del, err := k.del.Eval(k.delRow)
		if err != nil {
			k.delErrs.add(err, at(i))
		}
		dels = append(dels, del)
	}
	return dels
}

// rowOf sets in row (of the view's width) the values of row i of c in the columns cols, boxed
// in slab, for an expression that reads only those (expectations.Program.Columns).
func (c *blockColumns) rowOf(row []any, i int, cols []int, l *columnLayout, slab *boxSlab) {
	for _, j := range cols {
		switch {
		case c.nulls[j][i]:
			row[j] = nil
		case c.strs[j] != nil:
			row[j] = slab.string(c.strs[j][i])
		default:
			row[j] = value(l.kinds[j], c.words[j][i], slab)
		}
	}
}

// emptyAt says whether row i of c has no value at all (emptyRow of a view with no rescued-data
// or metadata column).
func (c *blockColumns) emptyAt(i int) bool {
	for _, nulls := range c.nulls {
		if !nulls[i] {
			return false
		}
	}
	return true
}

// addColumns is addAll of the rows of bc (columnFold), which must come in arrival order (first is
// the number of events added before): a NULL key or sequence is kept as 0 (the batch fails on
// it before it is applied), a delete keeps no values.
func (c *histColumns) addColumns(bc *blockColumns, dels []bool, src *columnSource, first int) {
	if first != c.n {
		panic(fmt.Sprintf("rows of arrival %d on added as the %d-th on", first, c.n))
	}
	keys, seqs := bc.words[src.key][:bc.n], bc.words[src.seq][:bc.n]
	for i := range bc.n {
		del := dels != nil && dels[i]
		rec := c.next(keys[i], seqs[i], del)
		var nulls uint64
		for col, w := range c.wordAt {
			if w < 0 {
				continue
			}
			j := src.data[col]
			switch {
			case del || bc.nulls[j][i]:
				nulls |= 1 << col
			case c.strAt[col] >= 0:
				c.putString(rec, w, bc.strs[j][i])
			default:
				rec[w] = bc.words[j][i]
			}
		}
		rec[histNulls] = int64(nulls)
		c.n++
	}
}
