package delta

import (
	"fmt"
	"maps"
	"math"
	"os"

	"tributary/schema"
)

// maxOpenFiles bounds the files a DataWriter keeps open at once (a variable for tests). Between
// writes an open file holds its 1 MiB write buffer and the Parquet writer's column buffers:
// about 1.2 MiB a file for 32 partitions of a table of 8 columns (50 MiB in all, measured with
// runtime.MemStats after 1M rows), more for files of large row groups. When rows arrive for a
// partition with no open file while this many are open, the file written to least recently is
// finished first, below the target size.
var maxOpenFiles = 32

// DataWriter writes the data files of one batch of a table: rows come in with Write, in as many
// calls as the caller likes, and each call's rows are written at once as row groups of files
// that stay open across calls, one per partition (an unpartitioned table has one), so a batch
// of many calls makes files of the table's target size (delta.targetFileSize,
// Metadata.TargetFileSize, default 128 MiB) rather than a file per call: the "optimized writes"
// of Delta Lake on Databricks, done as the rows are written instead of by shuffling them first.
//
// A file is finished, and the partition's next rows go to a new file, once it holds at least the
// target size. Rows are written in pieces so that a file ends close to the target: a piece is as
// many rows as the bytes the file still lacks (plus 1/32 of the target) take at the bytes per
// row the file, or else the writer, has written so far, or else at the plain-encoded size of a
// sample of the rows. Every file but the last of a partition is therefore at least the target
// size and larger by at most about one piece. Rows are not kept between calls: memory holds one
// call's rows (the caller's, plus for a partitioned table a copy of their data columns) and, per
// open file, its buffers (maxOpenFiles bounds how many are open).
//
// Files are written under temporary names and renamed into place when finished; none is
// referenced until the caller commits the adds Close returns, so a crash leaves only files no
// commit names (VACUUM removes them). The files are laid out, typed and given statistics as
// WriteData and WriteFile describe. Not safe for concurrent use: one call at a time, though
// successive calls may come from different goroutines when they are ordered (a channel or a
// mutex between them).
type DataWriter struct {
	t      *Table
	part   *partitioner
	target int64                // bytes
	files  []*dataFile          // every file of the writer, in the order they were opened
	open   map[string]*dataFile // the open file of each partition, by partGroup.key
	tick   int64                // counts pieces written, to find the least recently written file
	bytes  int64                // bytes written so far, over every file
	rows   int64                // rows written so far, over every file
	err    error                // the first error: the writer takes no more rows
	done   bool                 // Close succeeded or Abort ran
}

// dataFile is one file of a DataWriter: open while pf is not nil, finished (add set) after.
type dataFile struct {
	key    string
	rel    string // slash-separated, relative to the table folder
	final  string // its path
	values map[string]string
	pf     *parquetFile
	used   int64 // DataWriter.tick of its last piece
	add    Add
}

// NewDataWriter returns a writer of the data files of one batch of the table, whose metadata
// (schema, partition columns, delta.targetFileSize) is m; rows given to Write are in the column
// order of m.Schema. A partition column that is not a column of m.Schema is an error.
func (t *Table) NewDataWriter(m Metadata) (*DataWriter, error) {
	p, err := newPartitioner(t.Dir, m)
	if err != nil {
		return nil, err
	}
	return &DataWriter{t: t, part: p, target: m.TargetFileSize(), open: map[string]*dataFile{}}, nil
}

// Write writes rows (each a []any in the column order of the metadata's schema, typed per the
// schema package invariant) to the open files of their partitions before it returns, opening
// and finishing files as the target size says; the caller may reuse rows afterwards. A row of
// the wrong length is an error naming the row (0-based in this call); a value that does not
// convert, or a failed write, is an error naming the file and the row in it. After an error the
// writer takes nothing more (Write and Close return the error): Abort it.
func (w *DataWriter) Write(rows [][]any) error {
	if w.done {
		return fmt.Errorf("delta: write %s: the data writer is closed; start a new one", w.t.Dir)
	}
	if w.err != nil {
		return w.err
	}
	groups, err := w.part.split(rows)
	if err != nil {
		w.err = err
		return err
	}
	for _, g := range groups {
		if err := w.writeGroup(g); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// WriteColumns is Write with the rows given column by column (a ColumnPart, as
// Table.WriteFileFromColumns takes them), for a table without partition columns whose schema
// ColumnsWritable accepts, without a boxed value: the files, their row groups and their
// statistics are those Write makes of the same rows in the same calls, byte for byte. A file
// opened by Write is finished before WriteColumns writes, and the other way round. The strings
// of part must stay unchanged until WriteColumns returns. A partitioned table, or a schema
// ColumnsWritable rejects, is an error before anything is written; a value out of its column's
// range is an error naming the file, the row in it and the column. After an error the writer
// takes nothing more: Abort it.
func (w *DataWriter) WriteColumns(part ColumnPart) error {
	if w.done {
		return fmt.Errorf("delta: write %s: the data writer is closed; start a new one", w.t.Dir)
	}
	if w.err != nil {
		return w.err
	}
	if len(w.part.pidx) > 0 || !ColumnsWritable(w.part.data) {
		w.err = fmt.Errorf("delta: write %s: rows given by column need a table without partition columns whose columns are all primitive (not %s, partitioned by %v); write them as rows", w.t.Dir, w.part.m.Schema.DDL(), w.part.m.PartitionColumns)
		return w.err
	}
	g := &partGroup{values: map[string]string{}}
	for at, n := 0, part.Len(); at < n; {
		f := w.open[g.key]
		if f != nil && f.pf.flat == nil {
			// Opened by Write, it takes no rows by column.
			if err := w.finish(f); err != nil {
				w.err = err
				return err
			}
			f = nil
		}
		if f == nil {
			var err error
			if f, err = w.openFile(g, true); err != nil {
				w.err = err
				return err
			}
		}
		piece := partWindow{part: part, from: at, n: w.pieceRowsOf(f, n-at, func() float64 { return sampleColumnBytes(w.part.data, part, at, n) })}
		before := f.pf.size()
		err := f.pf.addColumns(piece)
		if err == nil {
			// A row group per call, as add makes them.
			err = f.pf.flushGroup()
		}
		if err != nil {
			w.err = err
			return err
		}
		w.tick++
		f.used = w.tick
		w.bytes += f.pf.size() - before
		w.rows += int64(piece.n)
		at += piece.n
		if f.pf.size() >= w.target {
			if err := w.finish(f); err != nil {
				w.err = err
				return err
			}
		}
	}
	return nil
}

// partWindow is rows [from, from+n) of a ColumnPart, as a ColumnPart of its own.
type partWindow struct {
	part    ColumnPart
	from, n int
}

func (p partWindow) Len() int { return p.n }

func (p partWindow) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	p.part.Column(j, p.from+from, p.from+to, nulls, words, strs)
}

// ColumnSlice is the part's own, when it is a ColumnSlicer (ok false otherwise).
func (p partWindow) ColumnSlice(j, from, to int) ([]bool, []int64, []string, bool) {
	if cs, ok := p.part.(ColumnSlicer); ok {
		return cs.ColumnSlice(j, p.from+from, p.from+to)
	}
	return nil, nil, nil, false
}

// sampleColumnBytes is sampleRowBytes of rows [from, to) of part (of schema s): the
// plain-encoded size of at most 64 rows spread over them, per row, by plainBytes' measure of
// each value's row form.
func sampleColumnBytes(s schema.Schema, part ColumnPart, from, to int) float64 {
	n := min(to-from, 64)
	if n == 0 {
		return 0
	}
	nulls, words, strs := make([]bool, 1), make([]int64, 1), make([]string, 1)
	var total int
	for i := range n {
		r := from + i*(to-from)/n
		for j, f := range s.Fields {
			nulls[0], strs[0] = false, ""
			part.Column(j, r, r+1, nulls, words, strs)
			switch {
			case nulls[0]:
				total++
			case f.Type.Kind == schema.String:
				total += 5 + len(strs[0])
			case f.Type.Kind == schema.Boolean:
				total += 2
			case f.Type.Kind == schema.DateKind, f.Type.Kind == schema.Integer:
				total += 5
			default:
				total += 9
			}
		}
	}
	return float64(total) / float64(n)
}

// writeGroup writes the rows of one partition, in pieces that fill its open file up to the
// target size.
func (w *DataWriter) writeGroup(g *partGroup) error {
	rows := g.rows
	for len(rows) > 0 {
		f := w.open[g.key]
		if f != nil && f.pf.flat != nil {
			// Opened by WriteColumns, it takes no boxed rows.
			if err := w.finish(f); err != nil {
				return err
			}
			f = nil
		}
		if f == nil {
			var err error
			if f, err = w.openFile(g, false); err != nil {
				return err
			}
		}
		n := w.pieceRows(f, rows)
		before := f.pf.size()
		if err := f.pf.add(rows[:n], nil); err != nil {
			return err
		}
		w.tick++
		f.used = w.tick
		w.bytes += f.pf.size() - before
		w.rows += int64(n)
		rows = rows[n:]
		if f.pf.size() >= w.target {
			if err := w.finish(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// openFile opens a new file for the partition of g, to take rows by column (WriteColumns) when
// byColumns is set, or else boxed rows (Write), first finishing the least recently written open
// file when maxOpenFiles are open.
func (w *DataWriter) openFile(g *partGroup, byColumns bool) (*dataFile, error) {
	if len(w.open) >= max(maxOpenFiles, 1) {
		var lru *dataFile
		for _, f := range w.open {
			if lru == nil || f.used < lru.used {
				lru = f
			}
		}
		if err := w.finish(lru); err != nil {
			return nil, err
		}
	}
	rel := NewDataFileName()
	if g.dir != "" {
		rel = g.dir + "/" + rel
	}
	pf, err := w.t.createParquet(rel, w.part.data, false, byColumns)
	if err != nil {
		return nil, err
	}
	f := &dataFile{key: g.key, rel: rel, final: pf.final, values: maps.Clone(g.values), pf: pf}
	w.files = append(w.files, f)
	w.open[g.key] = f
	return f, nil
}

// pieceRows is how many of rows (at least one) to write to f next: as many as take the bytes f
// lacks to reach the target, plus 1/32 of the target so that an estimate a little low does not
// leave a sliver of a row group to follow, at the bytes per row f has written, or else the
// writer, or else the plain-encoded size of a sample of rows (which compression only shrinks).
func (w *DataWriter) pieceRows(f *dataFile, rows [][]any) int {
	return w.pieceRowsOf(f, len(rows), func() float64 { return sampleRowBytes(rows) })
}

// pieceRowsOf is pieceRows of n rows whose sample size (when f and the writer have written
// nothing yet) is sample's.
func (w *DataWriter) pieceRowsOf(f *dataFile, n int, sample func() float64) int {
	want := float64(w.target-f.pf.size()) + float64(w.target)/32
	var perRow float64
	switch {
	case f.pf.rows > 0:
		perRow = float64(f.pf.size()) / float64(f.pf.rows)
	case w.rows > 0:
		perRow = float64(w.bytes) / float64(w.rows)
	default:
		perRow = sample()
	}
	if perRow <= 0 || want/perRow >= float64(n) {
		return n
	}
	return max(int(math.Ceil(want/perRow)), 1)
}

// sampleRowBytes estimates the plain-encoded size of a row of rows, in bytes, from at most 64
// rows spread over them: see plainBytes.
func sampleRowBytes(rows [][]any) float64 {
	n := min(len(rows), 64)
	if n == 0 {
		return 0
	}
	var total int
	for i := range n {
		for _, v := range rows[i*len(rows)/n] {
			total += plainBytes(v)
		}
	}
	return float64(total) / float64(n)
}

// plainBytes is the size of a value in Parquet's PLAIN encoding before compression: 4 bytes of
// length and the bytes of a string, 1 byte for a BOOLEAN (bit-packed into less), 4 for a DATE or
// INT, 8 for the other primitives, the sum of the parts of a STRUCT, ARRAY or MAP, and one byte
// of levels for every value, NULL included.
func plainBytes(v any) int {
	switch x := v.(type) {
	case nil:
		return 1
	case string:
		return 5 + len(x)
	case bool:
		return 2
	case int32, schema.Date:
		return 5
	case []any:
		n := 1
		for _, e := range x {
			n += plainBytes(e)
		}
		return n
	case schema.Map:
		n := 1
		for _, e := range x {
			n += plainBytes(e.Key) + plainBytes(e.Value)
		}
		return n
	}
	return 9
}

// finish closes the open file f and records its add action.
func (w *DataWriter) finish(f *dataFile) error {
	pf := f.pf
	f.pf = nil
	delete(w.open, f.key)
	size, mtime, stats, err := pf.close()
	if err != nil {
		return err
	}
	f.add = Add{
		Path: EscapePath(f.rel), PartitionValues: f.values, Size: size,
		ModificationTime: mtime, DataChange: true, Stats: stats,
	}
	return nil
}

// Close finishes every open file and returns the add actions of all the writer's files, in the
// order the files were opened: partitions in the order their rows first came, a partition's
// files in the order of its rows. A writer given no rows returns none. After an error (of Close
// or of an earlier Write) every file of the writer is removed and the error returned. The files
// are then the caller's to commit: Abort after a successful Close does nothing.
func (w *DataWriter) Close() ([]Add, error) {
	if w.done {
		return nil, fmt.Errorf("delta: write %s: the data writer is already closed", w.t.Dir)
	}
	if w.err != nil {
		w.Abort()
		return nil, w.err
	}
	for _, f := range w.files {
		if f.pf != nil {
			if err := w.finish(f); err != nil {
				w.err = err
				w.Abort()
				return nil, err
			}
		}
	}
	adds := make([]Add, len(w.files))
	for i, f := range w.files {
		adds[i] = f.add
	}
	w.done = true
	return adds, nil
}

// Abort removes every file of the writer, open or finished, and ends it. It does nothing after
// a successful Close, or a second time.
func (w *DataWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	for _, f := range w.files {
		if f.pf != nil {
			f.pf.abort()
			f.pf = nil
			continue
		}
		// A finished file, or one whose close failed after its rename. One that cannot be
		// removed is left for VACUUM: no commit names it.
		os.Remove(f.final)
	}
	w.open = nil
}
