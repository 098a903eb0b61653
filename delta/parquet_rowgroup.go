package delta

import (
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// columnError is an error writing the leaf column col of a row group: of the value of row row
// (0-based within the row group), or, with row -1, of the column writer.
type columnError struct {
	col, row int
	err      error
}

func (e *columnError) Error() string { return e.err.Error() }
func (e *columnError) Unwrap() error { return e.err }

// valueBatch is the Parquet values of one batch of at most writeBatch rows: cols[j] holds the
// values of leaf column j, with their levels, in the order WriteRowValues takes them.
type valueBatch struct {
	cols [][]parquet.Value
}

// rowGroupWriter writes the rows of one row group to the column writers of a file in two
// stages that run at once: the calling goroutine converts a batch of rows to Parquet values
// (appendValues, folding them into the column statistics), while a second goroutine hands the
// batch before to parquet-go, which encodes, compresses and buffers the pages. Two batches of
// values circulate between the stages, so memory stays bounded by two batches whatever the
// size of the row group; they come from a pool for each call of write and go back to it after,
// so a file kept open between calls (DataWriter) holds none. Each column writer is used by the
// second goroutine only, and each receives the same values in the same calls as a
// column-by-column loop would give it, so the file is the same. Not safe for concurrent use.
type rowGroupWriter struct {
	lvs   []leaf
	stats []colStats // of the leaves, across row groups
	ncols int        // leaf columns, and _change_type
	slots []slot     // appendRepeated's scratch
}

func newRowGroupWriter(lvs []leaf, stats []colStats, extraChange bool) *rowGroupWriter {
	n := len(lvs)
	if extraChange {
		n++
	}
	return &rowGroupWriter{lvs: lvs, stats: stats, ncols: n}
}

// valueBatches is the number of batches of values that circulate between the stages of write.
const valueBatches = 2

// valueBatchPool holds the batches of values that writeBatches calls are done with, so that the
// next call (of this file or another) reuses them rather than new memory: a call writes at most
// a part of a row group (a DataWriter's part, one flush of WriteFileFrom), and while a batch is
// applied the collector may not run for hundreds of MB (relaxGC), so batches allocated for every
// call would each take fresh pages (16 of 1.2 MB for 1M SCD type 2 rows written in parts).
var valueBatchPool sync.Pool

// getValueBatch returns a batch of ncols empty columns, each with room for at least rows values.
func getValueBatch(ncols, rows int) *valueBatch {
	b, _ := valueBatchPool.Get().(*valueBatch)
	if b == nil {
		b = &valueBatch{}
	}
	if cap(b.cols) < ncols {
		b.cols = append(b.cols[:cap(b.cols)], make([][]parquet.Value, ncols-cap(b.cols))...)
	}
	b.cols = b.cols[:ncols]
	for j := range b.cols {
		if cap(b.cols[j]) < rows {
			b.cols[j] = make([]parquet.Value, 0, rows)
		}
		b.cols[j] = b.cols[j][:0]
	}
	return b
}

// putValueBatch gives b back to the pool, its values cleared (they may point into rows the
// caller is about to drop, or reuse).
func putValueBatch(b *valueBatch) {
	for j := range b.cols {
		clear(b.cols[j][:cap(b.cols[j])])
	}
	valueBatchPool.Put(b)
}

// write writes rows (and, when non-nil, their change types as the last column) to cws, the
// column writers of the current row group; it does not flush the row group. A value that does
// not convert is a *columnError with its row; when several do, it is the one of the lowest
// column and, in it, of the lowest row, as writing the columns one after the other would find.
// An error of a column writer is a *columnError with row -1.
func (w *rowGroupWriter) write(cws []*parquet.ColumnWriter, rows [][]any, changeTypes []string) error {
	err := w.writeBatches(cws, len(rows), func(b *valueBatch, start, end int) error {
		return w.convert(b, rows[start:end], changeTypes, start, end)
	})
	if ce := (*columnError)(nil); errors.As(err, &ce) && ce.row >= 0 {
		// Later batches of lower columns may hold errors too: find the first in column order.
		return w.firstError(rows, err)
	}
	return err
}

// writeBatches writes n rows to cws in batches of writeBatch rows, in two stages that run at
// once: convert fills a batch with the values of rows [start, end) on the calling goroutine,
// while a second goroutine hands the batch before to the column writers. It returns the first
// error of convert (the later batches are not converted) or else of the column writers.
func (w *rowGroupWriter) writeBatches(cws []*parquet.ColumnWriter, n int, convert func(b *valueBatch, start, end int) error) error {
	full := make(chan *valueBatch, valueBatches)
	free := make(chan *valueBatch, valueBatches)
	for range valueBatches {
		free <- getValueBatch(w.ncols, min(n, writeBatch))
	}
	done := make(chan error, 1)
	var failed atomic.Bool
	go func() {
		var err error
		for b := range full {
			if err == nil {
				if err = writeBatchValues(cws, b); err != nil {
					failed.Store(true)
				}
			}
			free <- b
		}
		done <- err
	}()
	var convErr error
	for start := 0; start < n && !failed.Load(); start += writeBatch {
		end := min(start+writeBatch, n)
		b := <-free
		if convErr = convert(b, start, end); convErr != nil {
			free <- b
			break
		}
		full <- b
	}
	close(full)
	werr := <-done
	// Every batch is back in free now. (Not deferred: after a panic of convert, one is not, and
	// waiting for it would hang the panic's way up; the pool then lacks it.)
	for range valueBatches {
		putValueBatch(<-free)
	}
	if convErr != nil {
		return convErr
	}
	return werr
}

// convert fills b with the values of rows, rows start to end of the row group, and of their
// change types (changeTypes[start:end], when changeTypes is not nil). A value that does not
// convert is a *columnError.
func (w *rowGroupWriter) convert(b *valueBatch, rows [][]any, changeTypes []string, start, end int) error {
	var err error
	for j, l := range w.lvs {
		if b.cols[j], w.slots, err = appendValues(b.cols[j][:0], w.slots[:0], l, rows, j, &w.stats[j]); err != nil {
			return valueError(j, start, err)
		}
	}
	if changeTypes != nil {
		j := len(w.lvs)
		buf := b.cols[j][:0]
		for _, ct := range changeTypes[start:end] {
			// The writer copies the bytes into its page buffer; ct is never written through.
			buf = appendLeveled(buf, parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(ct), len(ct))), 0, 1, j)
		}
		b.cols[j] = buf
	}
	return nil
}

// firstError converts rows leaf by leaf, as write does but discarding the values, and returns
// the error of the first value in column order that does not convert, or found, the error
// convert found, when none comes before it.
func (w *rowGroupWriter) firstError(rows [][]any, found error) error {
	var buf []parquet.Value
	var scratch colStats
	var err error
	for j, l := range w.lvs {
		for start := 0; start < len(rows); start += writeBatch {
			end := min(start+writeBatch, len(rows))
			if buf, w.slots, err = appendValues(buf[:0], w.slots[:0], l, rows[start:end], j, &scratch); err != nil {
				return valueError(j, start, err)
			}
		}
	}
	return found
}

// valueError is err, an error of appendValues for leaf column j of the batch of rows from row
// start of the row group, as a *columnError.
func valueError(j, start int, err error) error {
	row := 0
	if re := (*rowError)(nil); errors.As(err, &re) {
		row, err = re.Row, re.Err
	}
	return &columnError{col: j, row: start + row, err: err}
}

// writeBatchValues hands each column of b to its column writer.
func writeBatchValues(cws []*parquet.ColumnWriter, b *valueBatch) error {
	for j, vs := range b.cols {
		if _, err := cws[j].WriteRowValues(vs); err != nil {
			return &columnError{col: j, row: -1, err: err}
		}
	}
	return nil
}
