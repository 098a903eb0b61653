package delta

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"tributary/internal/writeback"
	"tributary/schema"
)

// ChangeTypeColumn is the extra column of change data files (Delta PROTOCOL.md, "Change Data
// Files"); its values are the ChangeInsert, ChangeUpdatePreimage, ChangeUpdatePostimage and
// ChangeDelete constants.
const ChangeTypeColumn = "_change_type"

// The values of the _change_type column.
const (
	ChangeInsert          = "insert"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
	ChangeDelete          = "delete"
)

// ChangeDataDir is the folder of change data files inside a table folder.
const ChangeDataDir = "_change_data"

// writeBatch is the number of rows converted and handed to the column writers at once (a
// variable for tests); a page is closed, when full, only at the end of a batch.
var writeBatch = 4096

// rowGroupRows is the number of rows per Parquet row group (a variable for tests). parquet-go
// holds a row group's compressed pages in memory until it is flushed, so this bounds what a file
// being written holds: 131,072 rows, near DuckDB's 122,880 (arrow-rs writes 1M, Spark 128 MB).
// At 1M rows, the two 14 MB files of 1M SCD type 2 versions written at once held 28 MB of pages
// (18 MB more peak, no faster), and readers that split a file by row group had one to split.
var rowGroupRows = 1 << 17

// WriteFile writes rows (each a []any of len(s.Fields) values, typed per the schema package
// invariant) as one Parquet data file "part-00000-<uuid>.c000.snappy.parquet" in the table
// folder and returns its add action: relative URL-encoded Path, Size in bytes, ModificationTime
// in ms, DataChange true, and Stats (numRecords, minValues, maxValues, nullCount; see
// Delta PROTOCOL.md "Per-file Statistics"). The file has Snappy-compressed data pages (v1) and
// all columns OPTIONAL, typed as Delta PROTOCOL.md "Delta Data Type to Parquet Type Mappings"
// asks: BIGINT INT64, INT INT32, STRING BYTE_ARRAY (String), DOUBLE, BOOLEAN, DECIMAL(p,s) INT32
// (p <= 9) or INT64 with the DECIMAL logical type, DATE INT32 (Date), TIMESTAMP INT64
// TIMESTAMP(isAdjustedToUTC=true, MICROS), STRUCT an OPTIONAL group of its fields (its value is
// a []any in field order), ARRAY the 3-level LIST and MAP the key_value MAP layouts of Parquet
// LogicalTypes.md (values []any and schema.Map; see parquetTypeNode), at any depth; ARRAY and
// MAP columns get no min/max statistics, only their nullCount. The file is written under a
// temporary name, synced,
// and renamed. A value of the wrong Go type, a row of the wrong length or a DECIMAL beyond its
// precision is an error naming the row and the column; nothing is left behind on error.
// PartitionValues is left empty: a caller writing a partitioned table sets it.
func (t *Table) WriteFile(s schema.Schema, rows [][]any) (Add, error) {
	return t.WriteFileNamed(NewDataFileName(), s, rows)
}

// NewDataFileName returns the name of a new data file, "part-00000-<uuid>.c000.snappy.parquet"
// (relative to the table's folder), as WriteFile names its files: for a caller that must know
// a file's path before it is written (WriteFileNamed). The add action's path is
// EscapePath(name).
func NewDataFileName() string {
	return fmt.Sprintf("part-00000-%s.c000.snappy.parquet", uuid.NewString())
}

// WriteFileNamed is WriteFile writing the file under rel, a name from NewDataFileName, with the
// same errors; it returns the file's add action.
func (t *Table) WriteFileNamed(rel string, s schema.Schema, rows [][]any) (Add, error) {
	size, mtime, stats, err := t.writeParquet(rel, s, rows, nil)
	return dataAdd(rel, size, mtime, stats, err)
}

// dataAdd is the add action of the unpartitioned data file at rel from what writing it returned
// (its size in bytes, modification time in ms since the epoch, and statistics JSON), or err.
func dataAdd(rel string, size, mtime int64, stats string, err error) (Add, error) {
	if err != nil {
		return Add{}, err
	}
	return Add{
		Path: EscapePath(rel), PartitionValues: map[string]string{}, Size: size,
		ModificationTime: mtime, DataChange: true, Stats: stats,
	}, nil
}

// WriteFileFrom is WriteFileNamed with the rows handed over in parts: next returns the rows
// that follow those it returned before, or no rows at the end; the rows of a part (and their
// values) may be reused once next is called again. The parts form row groups of rowGroupRows
// rows, whatever their sizes, so the file is the one WriteFileNamed writes of all the rows;
// errors are WriteFileNamed's, a row counted from the file's first, and next's own. Only one
// part of the rows is held at once.
func (t *Table) WriteFileFrom(rel string, s schema.Schema, next func() ([][]any, error)) (Add, error) {
	return t.writeFileParts(rel, s, false, func(pf *parquetFile) (bool, error) {
		rows, err := next()
		if err != nil || len(rows) == 0 {
			return false, err
		}
		return true, pf.addPart(rows)
	})
}

// writeFileParts writes the data file rel of schema s from parts: part adds the next one to pf
// and says whether there was one. The open row group is flushed after the last, and the file
// closed; on an error it is removed.
func (t *Table) writeFileParts(rel string, s schema.Schema, byColumns bool, part func(pf *parquetFile) (bool, error)) (Add, error) {
	pf, err := t.createParquet(rel, s, false, byColumns)
	if err != nil {
		return Add{}, err
	}
	for {
		more, err := part(pf)
		if err != nil {
			pf.abort()
			return Add{}, err
		}
		if !more {
			break
		}
	}
	if err := pf.flushGroup(); err != nil {
		pf.abort()
		return Add{}, err
	}
	size, mtime, stats, err := pf.close()
	return dataAdd(rel, size, mtime, stats, err)
}

// WriteCDCFile writes a change data file "_change_data/cdc-00000-<uuid>.c000.snappy.parquet"
// (Delta PROTOCOL.md, "Change Data Files"): the columns of s, typed as WriteFile types them,
// plus `_change_type` STRING holding changeTypes[i] for rows[i] (one of ChangeInsert,
// ChangeUpdatePreimage, ChangeUpdatePostimage, ChangeDelete). It returns the cdc action with
// DataChange false. len(changeTypes) != len(rows), an unknown change type, or a column named
// _change_type in s is an error.
func (t *Table) WriteCDCFile(s schema.Schema, rows [][]any, changeTypes []string) (CDC, error) {
	if len(changeTypes) != len(rows) {
		return CDC{}, fmt.Errorf("delta: write change data: %d rows but %d change types", len(rows), len(changeTypes))
	}
	if s.Index(ChangeTypeColumn) >= 0 {
		return CDC{}, fmt.Errorf("delta: write change data: the schema already has a column %s", ChangeTypeColumn)
	}
	for i, ct := range changeTypes {
		switch ct {
		case ChangeInsert, ChangeUpdatePreimage, ChangeUpdatePostimage, ChangeDelete:
		default:
			return CDC{}, fmt.Errorf("delta: write change data: row %d: change type %q is not one of insert, update_preimage, update_postimage, delete", i, ct)
		}
	}
	rel := ChangeDataDir + "/" + fmt.Sprintf("cdc-00000-%s.c000.snappy.parquet", uuid.NewString())
	size, _, _, err := t.writeParquet(rel, s, rows, changeTypes)
	if err != nil {
		return CDC{}, err
	}
	return CDC{Path: EscapePath(rel), PartitionValues: map[string]string{}, Size: size}, nil
}

// parquetSchema maps a table schema to the Parquet schema of its data files; with extraChange,
// the _change_type column is appended.
func parquetSchema(s schema.Schema, extraChange bool) (*parquet.Schema, error) {
	g, err := parquetGroup(s)
	if err != nil {
		return nil, err
	}
	if extraChange {
		n, _ := parquetNode(schema.Type{Kind: schema.String})
		g.add(ChangeTypeColumn, parquet.Optional(n))
	}
	return parquet.NewSchema("spark_schema", g), nil
}

// parquetGroup maps the fields of s to an ordered group of OPTIONAL fields; a STRUCT field
// becomes an OPTIONAL group of its fields, an ARRAY or MAP field the layouts of parquetTypeNode.
func parquetGroup(s schema.Schema) (*orderedGroup, error) {
	g := &orderedGroup{Group: parquet.Group{}}
	for _, f := range s.Fields {
		n, err := parquetTypeNode(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		g.add(f.Name, parquet.Optional(n))
	}
	return g, nil
}

// parquetTypeNode maps a type to its Parquet node (the caller sets its repetition): a primitive
// as parquetNode says, a STRUCT a group of OPTIONAL fields, an ARRAY the 3-level LIST layout
// `(LIST) { repeated group list { optional element } }` and a MAP the layout `(MAP) { repeated
// group key_value { required key; optional value } }` (Parquet LogicalTypes.md, "Lists" and
// "Maps"), as Spark writes them.
func parquetTypeNode(t schema.Type) (parquet.Node, error) {
	switch t.Kind {
	case schema.StructKind:
		if t.Struct == nil || len(t.Struct.Fields) == 0 {
			return nil, fmt.Errorf("a STRUCT needs fields")
		}
		return parquetGroup(*t.Struct)
	case schema.ArrayKind:
		if t.Elem == nil {
			return nil, fmt.Errorf("an ARRAY needs an element type")
		}
		e, err := parquetTypeNode(*t.Elem)
		if err != nil {
			return nil, fmt.Errorf("element: %w", err)
		}
		return parquet.List(parquet.Optional(e)), nil
	case schema.MapKind:
		if t.Key == nil || t.Value == nil {
			return nil, fmt.Errorf("a MAP needs key and value types")
		}
		k, err := parquetTypeNode(*t.Key)
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		v, err := parquetTypeNode(*t.Value)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		return parquet.Map(k, parquet.Optional(v)), nil
	}
	return parquetNode(t)
}

// leaf is one primitive column of a data file: a top-level column, or a field, element, key or
// value inside nested columns. steps lead from the top-level column path[0] to the leaf. While
// no ARRAY or MAP is on the way (repeated is false), path[1:] are the field indexes inside the
// structs and widths[i] the number of fields of the struct at depth i.
type leaf struct {
	path     []int
	widths   []int
	steps    []step
	repeated bool   // under an ARRAY or a MAP: the column has repetition levels
	name     string // dotted, for errors
	typ      schema.Type
}

// leaves lists the primitive columns of s depth-first, in the order of the Parquet leaf
// columns (a MAP's key before its value).
func leaves(s schema.Schema) []leaf {
	var out []leaf
	var walk func(t schema.Type, l leaf)
	walk = func(t schema.Type, l leaf) {
		into := func(st step, name string) leaf {
			n := l
			n.steps = append(append([]step(nil), l.steps...), st)
			n.name += name
			if st.kind != stepField {
				n.repeated = true
			} else {
				n.path = append(append([]int(nil), l.path...), st.idx)
				n.widths = append(append([]int(nil), l.widths...), st.width)
			}
			return n
		}
		switch t.Kind {
		case schema.StructKind:
			if t.Struct == nil {
				break
			}
			for i, f := range t.Struct.Fields {
				walk(f.Type, into(step{kind: stepField, idx: i, width: len(t.Struct.Fields), name: f.Name}, "."+f.Name))
			}
			return
		case schema.ArrayKind:
			if t.Elem != nil {
				walk(*t.Elem, into(step{kind: stepElem}, ".element"))
				return
			}
		case schema.MapKind:
			if t.Key != nil && t.Value != nil {
				walk(*t.Key, into(step{kind: stepKey}, ".key"))
				walk(*t.Value, into(step{kind: stepValue}, ".value"))
				return
			}
		}
		l.typ = t
		out = append(out, l)
	}
	for i, f := range s.Fields {
		walk(f.Type, leaf{path: []int{i}, name: f.Name})
	}
	return out
}

// value returns the value of the leaf in row r and, when it is NULL, its Parquet definition
// level: the number of enclosing structs that are not NULL. Only for leaves that are not repeated.
func (l leaf) value(r []any) (v any, def int, err error) {
	v = r[l.path[0]]
	for d, idx := range l.path[1:] {
		if v == nil {
			return nil, d, nil
		}
		sv, ok := v.([]any)
		if !ok || len(sv) != l.widths[d] {
			return nil, 0, fmt.Errorf("a %T is not a STRUCT value of %d fields ([]any)", v, l.widths[d])
		}
		v = sv[idx]
	}
	return v, len(l.path) - 1, nil
}

func parquetNode(t schema.Type) (parquet.Node, error) {
	switch t.Storage {
	case schema.StorageByte:
		return parquet.Int(8), nil
	case schema.StorageShort:
		return parquet.Int(16), nil
	case schema.StorageFloat:
		return parquet.Leaf(parquet.FloatType), nil
	case schema.StorageBinary:
		return parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), &parquet.Plain), nil
	case schema.StorageTimestampNTZ:
		return parquet.Leaf(localTimestampType{parquet.TimestampAdjusted(parquet.Microsecond, false).Type()}), nil
	case "":
	default:
		return nil, fmt.Errorf("type %s is not supported", t.DDL())
	}
	switch t.Kind {
	case schema.Long:
		return parquet.Leaf(parquet.Int64Type), nil
	case schema.Integer:
		return parquet.Leaf(parquet.Int32Type), nil
	case schema.String:
		// PLAIN rather than parquet-go's default DELTA_LENGTH_BYTE_ARRAY, which readers before
		// Spark 3.3 do not decode.
		return parquet.Encoded(parquet.String(), &parquet.Plain), nil
	case schema.Double:
		return parquet.Leaf(parquet.DoubleType), nil
	case schema.Boolean:
		return parquet.Leaf(parquet.BooleanType), nil
	case schema.DecimalKind:
		if t.Precision < 1 || t.Precision > schema.MaxDecimalPrecision || t.Scale < 0 || t.Scale > t.Precision {
			return nil, fmt.Errorf("type %s is not supported", t.DDL())
		}
		if t.WideDecimal() {
			return wideDecimalNode(t), nil
		}
		if t.Precision <= 9 {
			return parquet.Decimal(t.Scale, t.Precision, parquet.Int32Type), nil
		}
		return parquet.Decimal(t.Scale, t.Precision, parquet.Int64Type), nil
	case schema.DateKind:
		return parquet.Date(), nil
	case schema.TimestampKind:
		return parquet.Timestamp(parquet.Microsecond), nil
	}
	return nil, fmt.Errorf("type %s is not supported", t.DDL())
}

// localTimestampType is the Parquet type of a TIMESTAMP_NTZ column: INT64 with the logical type
// TIMESTAMP(isAdjustedToUTC=false, unit=MICROS) (Delta PROTOCOL.md, "Timestamp without timezone
// (TimestampNtz)") and no converted type: the converted type TIMESTAMP_MICROS means
// isAdjustedToUTC=true (Parquet LogicalTypes.md, "Timestamp"), which parquet-go writes for either.
type localTimestampType struct{ parquet.Type }

// ConvertedType is nil: see localTimestampType.
func (localTimestampType) ConvertedType() *deprecated.ConvertedType { return nil }

// orderedGroup is a Parquet group whose fields keep the order of the table schema
// (parquet.Group orders them by name).
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func (g *orderedGroup) add(name string, n parquet.Node) {
	g.Group[name] = n
	g.fields = append(g.fields, namedField{Node: n, name: name})
}

func (g *orderedGroup) Fields() []parquet.Field { return g.fields }

type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string                           { return f.name }
func (f namedField) Value(base reflect.Value) reflect.Value { return reflect.Value{} }

// writeParquet writes rows to rel (slash-separated, relative to the table folder) and returns
// the file size, its modification time in ms and, for data files, the stats JSON.
func (t *Table) writeParquet(rel string, s schema.Schema, rows [][]any, changeTypes []string) (size, mtime int64, stats string, err error) {
	pf, err := t.createParquet(rel, s, changeTypes != nil, false)
	if err != nil {
		return 0, 0, "", err
	}
	if err := pf.add(rows, changeTypes); err != nil {
		pf.abort()
		return 0, 0, "", err
	}
	return pf.close()
}

// parquetFile is a Parquet file being written under a temporary name: rows go in with add, in
// as many calls as the caller likes (each call's rows form whole row groups of at most
// rowGroupRows rows), size tells how large it has grown, and close syncs it, renames it into
// place and returns its size, modification time (ms) and statistics (Delta PROTOCOL.md
// "Per-file Statistics", over every row added). abort removes it. Not safe for concurrent use.
type parquetFile struct {
	what, tmp, final string
	s                schema.Schema
	change           bool // the file has the _change_type column
	f                *os.File
	bw               *bufio.Writer
	cw               *countingWriter // between the Parquet writer and bw
	w                *parquet.Writer
	lvs              []leaf
	cols             []colStats
	rgw              *rowGroupWriter
	flat             *flatFile // set for a file written by column (addColumns), w nil
	rows             int64
	open             int // rows addPart wrote to the row group not yet flushed
}

// countingWriter passes writes on to w and counts their bytes.
type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// createParquet opens the file rel (slash-separated, relative to the table folder) for rows of
// s, plus _change_type when change is set, creating its folder. A file opened byColumns takes
// rows by column only (addColumns, through a flatFile; s must be ColumnsWritable and change
// unset); another takes boxed rows only (add, addPart).
func (t *Table) createParquet(rel string, s schema.Schema, change, byColumns bool) (*parquetFile, error) {
	what := "write " + rel
	ps, err := parquetSchema(s, change)
	if err != nil {
		return nil, fmt.Errorf("delta: %s: %w", what, err)
	}
	final := filepath.Join(t.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, fmt.Errorf("delta: %s: %w", what, err)
	}
	tmp := filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("delta: %s: %w", what, err)
	}
	// The file's pages are written back as it grows (writeback), so that close's fsync waits
	// for its last few megabytes only.
	bw := bufio.NewWriterSize(writeback.New(f), 1<<20)
	cw := &countingWriter{w: bw}
	lvs := leaves(s)
	cols := make([]colStats, len(lvs))
	if byColumns {
		ff, err := newFlatFile(cw, ps, lvs, cols)
		if err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, fmt.Errorf("delta: %s: %w", what, err)
		}
		return &parquetFile{
			what: what, tmp: tmp, final: final, s: s, f: f, bw: bw, cw: cw, lvs: lvs, cols: cols, flat: ff,
		}, nil
	}
	w := parquet.NewWriter(cw, ps,
		parquet.Compression(dataFileCodec),
		parquet.DataPageVersion(1),
		// No statistics in each data page's header: readers take a page's bounds from the
		// column index, which the writer keeps (and the column chunk's from its metadata), so
		// the header's copy cost a second pass over every page's values for nothing.
		parquet.DataPageStatistics(false),
		parquet.CreatedBy("tributary", "", ""),
		// Small, so that the bytes the writer holds back (which size does not count) are few:
		// bw buffers the file's writes.
		parquet.WriteBufferSize(parquetWriteBuffer),
		parquet.PageBufferSize(pageBufferSize),
	)
	return &parquetFile{
		what: what, tmp: tmp, final: final, s: s, change: change, f: f, bw: bw, cw: cw, w: w,
		lvs: lvs, cols: cols, rgw: newRowGroupWriter(lvs, cols, change),
	}, nil
}

// add writes rows (and their change types, when the file has the _change_type column) as row
// groups of at most rowGroupRows rows. A row of the wrong length, or a value that does not
// convert, is an error naming the row (counted from the file's first row) and the column; the
// file is then to be aborted.
func (pf *parquetFile) add(rows [][]any, changeTypes []string) error {
	if pf.flat != nil {
		return fmt.Errorf("delta: %s: the file takes rows by column only", pf.what)
	}
	for i, r := range rows {
		if len(r) != len(pf.s.Fields) {
			return fmt.Errorf("delta: %s: row %d has %d values, the schema %d columns (%s)", pf.what, pf.rows+int64(i), len(r), len(pf.s.Fields), pf.s.DDL())
		}
	}
	for start := 0; start < len(rows); start += rowGroupRows {
		end := min(start+rowGroupRows, len(rows))
		var cts []string
		if pf.change {
			cts = changeTypes[start:end]
		}
		if err := pf.rgw.write(pf.w.ColumnWriters(), rows[start:end], cts); err != nil {
			ce := (*columnError)(nil)
			if !errors.As(err, &ce) {
				return fmt.Errorf("delta: %s: %w", pf.what, err)
			}
			name := ChangeTypeColumn
			if ce.col < len(pf.lvs) {
				name = strconv.Quote(pf.lvs[ce.col].name)
			}
			if ce.row >= 0 {
				return fmt.Errorf("delta: %s: row %d: column %s: %w", pf.what, pf.rows+int64(start+ce.row), name, ce.err)
			}
			return fmt.Errorf("delta: %s: column %s: %w", pf.what, name, ce.err)
		}
		if err := pf.w.Flush(); err != nil {
			return fmt.Errorf("delta: %s: %w", pf.what, err)
		}
	}
	pf.rows += int64(len(rows))
	return nil
}

// addPart writes rows (of a data file: no change types) into the open row group, which is
// flushed whenever it reaches rowGroupRows rows (flushGroup flushes the last one): unlike add,
// the row groups do not depend on how the rows were split between calls.
func (pf *parquetFile) addPart(rows [][]any) error {
	if pf.flat != nil {
		return fmt.Errorf("delta: %s: the file takes rows by column only", pf.what)
	}
	for i, r := range rows {
		if len(r) != len(pf.s.Fields) {
			return fmt.Errorf("delta: %s: row %d has %d values, the schema %d columns (%s)", pf.what, pf.rows+int64(i), len(r), len(pf.s.Fields), pf.s.DDL())
		}
	}
	return pf.addRows(len(rows), func(from, to int) error {
		return pf.rgw.write(pf.w.ColumnWriters(), rows[from:to], nil)
	})
}

// addRows adds n rows to the open row group, flushing it whenever it reaches rowGroupRows rows:
// write writes rows [from, to) of the n to the row group's column writers. A *columnError of
// write becomes an error naming the row (counted from the file's first) and the column.
func (pf *parquetFile) addRows(n int, write func(from, to int) error) error {
	for from := 0; from < n; {
		to := from + min(n-from, rowGroupRows-pf.open)
		if err := write(from, to); err != nil {
			ce := (*columnError)(nil)
			if !errors.As(err, &ce) {
				return fmt.Errorf("delta: %s: %w", pf.what, err)
			}
			name := strconv.Quote(pf.lvs[ce.col].name)
			if ce.row >= 0 {
				return fmt.Errorf("delta: %s: row %d: column %s: %w", pf.what, pf.rows+int64(ce.row), name, ce.err)
			}
			return fmt.Errorf("delta: %s: column %s: %w", pf.what, name, ce.err)
		}
		pf.rows += int64(to - from)
		pf.open += to - from
		from = to
		if pf.open == rowGroupRows {
			if err := pf.flushGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushGroup ends the row group addPart has open, if it holds rows.
func (pf *parquetFile) flushGroup() error {
	if pf.open == 0 {
		return nil
	}
	pf.open = 0
	if pf.flat != nil {
		if err := pf.flat.endGroup(); err != nil {
			return fmt.Errorf("delta: %s: %w", pf.what, err)
		}
		return nil
	}
	if err := pf.w.Flush(); err != nil {
		return fmt.Errorf("delta: %s: %w", pf.what, err)
	}
	return nil
}

// parquetWriteBuffer is the size of the Parquet writer's own output buffer, in bytes.
const parquetWriteBuffer = 512

// size is the number of bytes of the file so far: the bytes the Parquet writer has handed on
// (to the file, or to the buffer in front of it). After add it covers every row group added,
// short of at most the parquetWriteBuffer bytes the Parquet writer holds back; close adds the
// footer (the page index and the file metadata). A file written by column (flatFile) writes
// through a buffer as parquet-go does, in the same calls, so that a DataWriter ends its files at
// the same rows either way.
func (pf *parquetFile) size() int64 { return pf.cw.n }

// close finishes the file: footer, sync, rename into place, sync of the folder. stats is ""
// for a change data file. On error nothing is left behind.
func (pf *parquetFile) close() (size, mtime int64, stats string, err error) {
	fail := func(err error) (int64, int64, string, error) {
		pf.abort()
		return 0, 0, "", fmt.Errorf("delta: %s: %w", pf.what, err)
	}
	if pf.flat != nil {
		if err := pf.flat.close(); err != nil {
			return fail(err)
		}
	} else if err := pf.w.Close(); err != nil {
		return fail(err)
	}
	if err := pf.bw.Flush(); err != nil {
		return fail(err)
	}
	if err := pf.f.Sync(); err != nil {
		return fail(err)
	}
	st, err := pf.f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := pf.f.Close(); err != nil {
		os.Remove(pf.tmp)
		return 0, 0, "", fmt.Errorf("delta: %s: %w", pf.what, err)
	}
	if err := os.Rename(pf.tmp, pf.final); err != nil {
		os.Remove(pf.tmp)
		return 0, 0, "", fmt.Errorf("delta: %s: %w", pf.what, err)
	}
	if err := syncDir(filepath.Dir(pf.final)); err != nil {
		return 0, 0, "", fmt.Errorf("delta: %s: %w", pf.what, err)
	}
	if !pf.change {
		stats = statsJSON(pf.s, pf.rows, pf.cols)
	}
	return st.Size(), st.ModTime().UnixMilli(), stats, nil
}

// abort closes and removes the unfinished file.
func (pf *parquetFile) abort() {
	pf.f.Close()
	os.Remove(pf.tmp)
}

// slot is one value of a leaf column before conversion: v (nil for NULL), its repetition and
// definition levels, and the row of the batch it belongs to (for errors).
type slot struct {
	v        any
	rep, def int32
	row      int32
}

// appendValues appends the Parquet values of leaf l of rows, the j-th leaf column, to buf and
// folds them into the column's statistics; slots is scratch space, returned for reuse. A value
// has the definition level of its depth (1 for a top-level column), a NULL the number of
// enclosing structs that are not NULL; leaves under an ARRAY or MAP take their values and levels
// from appendRepeated, and keep no bounds. A value of the wrong Go type, or beyond its type's
// range, is a *rowError.
func appendValues(buf []parquet.Value, slots []slot, l leaf, rows [][]any, j int, st *colStats) ([]parquet.Value, []slot, error) {
	t := &l.typ
	n := len(rows)
	if l.repeated {
		var err error
		if slots, err = appendRepeated(slots, l, rows, st); err != nil {
			return buf, slots, err
		}
		n = len(slots)
		st = &colStats{} // no bounds for the leaves of an ARRAY or a MAP
	}
	top, maxDef := l.path[0], len(l.path)
	var arena []byte // the bytes of wide DECIMAL values (wideDecimalValue)
	for i := range n {
		var v any
		rep, def, row := 0, maxDef, i
		if l.repeated {
			sl := slots[i]
			v, rep, def, row = sl.v, int(sl.rep), int(sl.def), int(sl.row)
		} else if v = rows[i][top]; maxDef > 1 {
			x, d, err := l.value(rows[i])
			if err != nil {
				return buf, slots, &rowError{Row: i, Err: err}
			}
			if v = x; v == nil {
				def = d
			}
		} else if v == nil {
			def = 0
		}
		if v == nil {
			st.nulls++
			buf = appendLeveled(buf, parquet.NullValue(), rep, def, j)
			continue
		}
		var pv parquet.Value
		var err error
		switch t.Kind {
		case schema.Long:
			x, ok := v.(int64)
			if !ok {
				err = typeError(t, v)
				break
			}
			st.int(x)
			pv = parquet.Int64Value(x)
		case schema.Integer:
			x, ok := v.(int32)
			if !ok {
				err = typeError(t, v)
				break
			}
			if (t.Storage == schema.StorageShort && int32(int16(x)) != x) || (t.Storage == schema.StorageByte && int32(int8(x)) != x) {
				err = fmt.Errorf("%d does not fit %s", x, t.DDL())
				break
			}
			st.int(int64(x))
			pv = parquet.Int32Value(x)
		case schema.String:
			x, ok := v.(string)
			if !ok {
				err = typeError(t, v)
				break
			}
			if t.Storage != schema.StorageBinary {
				st.str(x)
			}
			// The writer copies the bytes into its page buffer; x is never written through.
			pv = parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(x), len(x)))
		case schema.Double:
			x, ok := v.(float64)
			if !ok {
				err = typeError(t, v)
				break
			}
			st.float(x)
			if t.Storage == schema.StorageFloat {
				pv = parquet.FloatValue(float32(x))
			} else {
				pv = parquet.DoubleValue(x)
			}
		case schema.Boolean:
			x, ok := v.(bool)
			if !ok {
				err = typeError(t, v)
				break
			}
			pv = parquet.BooleanValue(x)
		case schema.DecimalKind:
			if t.WideDecimal() {
				pv, err = wideDecimalValue(t, v, st, &arena, n-i)
				break
			}
			x, ok := v.(schema.Decimal)
			if !ok {
				err = typeError(t, v)
				break
			}
			if x >= pow10[t.Precision] || x <= -pow10[t.Precision] {
				err = fmt.Errorf("%s does not fit %s", schema.FormatDecimal(x, t.Scale), t.DDL())
				break
			}
			st.int(int64(x))
			if t.Precision <= 9 {
				pv = parquet.Int32Value(int32(x))
			} else {
				pv = parquet.Int64Value(int64(x))
			}
		case schema.DateKind:
			x, ok := v.(schema.Date)
			if !ok {
				err = typeError(t, v)
				break
			}
			st.int(int64(x))
			pv = parquet.Int32Value(int32(x))
		case schema.TimestampKind:
			x, ok := v.(schema.Timestamp)
			if !ok {
				err = typeError(t, v)
				break
			}
			st.int(int64(x))
			pv = parquet.Int64Value(int64(x))
		default:
			err = fmt.Errorf("type %s is not supported", t.DDL())
		}
		if err != nil {
			return buf, slots, &rowError{Row: row, Err: err}
		}
		buf = appendLeveled(buf, pv, rep, def, j)
	}
	return buf, slots, nil
}

// appendLeveled appends v to buf with repetition level rep, definition level def and column
// index j. It sets the levels in place, which costs less than copying v through Value.Level.
func appendLeveled(buf []parquet.Value, v parquet.Value, rep, def, j int) []parquet.Value {
	buf = append(buf, v)
	p := &buf[len(buf)-1]
	p.SetRepetitionLevel(rep)
	p.SetDefinitionLevel(def)
	p.SetColumnIndex(j)
	return buf
}

var pow10 = func() [19]schema.Decimal {
	var p [19]schema.Decimal
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

func typeError(t *schema.Type, v any) error {
	return fmt.Errorf("a %T is not a value of %s", v, t.DDL())
}
