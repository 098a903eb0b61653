package delta

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"tributary/schema"
)

// Rows returns every row of the snapshot: the rows of each file of snap.Files in order, each in
// the column order of snap.Metadata.Schema, with partition columns filled from the file's
// PartitionValues (typed; "" is NULL), without the rows their deletion vectors delete (Delta
// PROTOCOL.md, "Reader Requirements for Deletion Vectors"). Files are read concurrently. A table
// this package cannot read correctly is an error rather than wrong rows: column mapping, reader
// features it does not know.
func (t *Table) Rows(snap *Snapshot) ([][]any, error) {
	if err := CheckReadable(snap); err != nil {
		return nil, err
	}
	parts := make([][][]any, len(snap.Files))
	errs := make([]error, len(snap.Files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, f := range snap.Files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			parts[i], errs[i] = t.FileRows(snap.Metadata, f)
		}()
	}
	wg.Wait()
	n := 0
	for i, err := range errs {
		if err != nil {
			return nil, err
		}
		n += len(parts[i])
	}
	out := make([][]any, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// FileRows returns the rows of one data file of a table whose metadata is m (an add action of
// one of its versions): in the column order of m.Schema, partition columns filled from the
// file's partition values, without the rows a.DeletionVector deletes.
func (t *Table) FileRows(m Metadata, a Add) ([][]any, error) {
	rows, err := t.readTableFile(m, a.Path, a.PartitionValues, nil)
	if err != nil || a.DeletionVector == nil {
		return rows, err
	}
	rows, _, err = t.applyDV(a, rows, false)
	return rows, err
}

// FileRowGroups reads the rows of one data file of a table whose metadata is m, as FileRows
// does (table column order, partition columns from a's partition values, the rows a's deletion
// vector deletes left out), one Parquet row group at a time: fn gets each group's rows in file
// order and may keep them. The reader holds at most two row groups' rows at once (fn's, and the
// next one, decoded meanwhile). An error of fn stops the read and is returned as it is.
func (t *Table) FileRowGroups(m Metadata, a Add, fn func(rows [][]any) error) error {
	return t.fileRowGroups(m, a, false, fn)
}

// FileRowGroupsReused is FileRowGroups for a caller done with each group's rows when fn
// returns: fn may not keep the rows (the slices), which the groups after reuse; the values in
// them are its own. The next group is decoded while fn takes one, into the memory of the group
// before: a file of many row groups takes the memory of two.
func (t *Table) FileRowGroupsReused(m Metadata, a Add, fn func(rows [][]any) error) error {
	return t.fileRowGroups(m, a, true, fn)
}

// FileRowGroupsPooled is FileRowGroups for a caller that copies what it keeps of each group,
// maybe on another goroutine: each group is decoded into the memory of pool (rows and values),
// and fn gets, with the group's rows, the release that gives that memory back to the pool. Until
// release is called (once; later calls do nothing), from any goroutine, before or after fn
// returns, the rows and their values stay as they are; after it, neither may be used. Reading
// waits for a released group when the pool has none free, so the caller must release each
// group it was given; a pool of n groups lets n-1 be held while the next is decoded.
func (t *Table) FileRowGroupsPooled(m Metadata, a Add, pool *RowGroupPool, fn func(rows [][]any, release func()) error) error {
	return t.fileRowGroupsIn(m, a, groupMemory{pool: pool}, fn)
}

func (t *Table) fileRowGroups(m Metadata, a Add, reuse bool, fn func(rows [][]any) error) error {
	return t.fileRowGroupsIn(m, a, groupMemory{reuse: reuse}, func(rows [][]any, _ func()) error { return fn(rows) })
}

func (t *Table) fileRowGroupsIn(m Metadata, a Add, mem groupMemory, fn func(rows [][]any, release func()) error) error {
	l, err := newFileLayout(m, a.Path, a.PartitionValues, nil)
	if err != nil {
		return err
	}
	deleted, err := t.ReadDeletionVector(a.DeletionVector)
	if err != nil {
		return fmt.Errorf("%w (data file %s)", err, a.Path)
	}
	var at uint64 // the file position of the group's first row
	var fnErr error
	err = t.readFileGroupsIn(a.Path, l.fileSchema, mem, func(rows [][]any, release func()) error {
		var live [][]any
		live, _, deleted = dropDeleted(l.widen(rows), deleted, at, false)
		at += uint64(len(rows))
		fnErr = fn(live, release)
		return fnErr
	})
	if err != nil {
		return err
	}
	if len(deleted) > 0 {
		return fmt.Errorf("delta: the deletion vector of %s deletes row %d, but the file has %d rows", a.Path, deleted[len(deleted)-1], at)
	}
	return nil
}

// readTableFile reads one data or change data file of a table into rows in table schema order,
// followed by the values of the extra columns (read from the file by name).
func (t *Table) readTableFile(m Metadata, path string, partValues map[string]string, extra []schema.Field) ([][]any, error) {
	l, err := newFileLayout(m, path, partValues, extra)
	if err != nil {
		return nil, err
	}
	rows, err := t.ReadFile(path, l.fileSchema)
	if err != nil {
		return nil, err
	}
	return l.widen(rows), nil
}

// fileLayout maps the rows of a data or change data file (its columns fileSchema: the table's
// columns but the partition columns, then the extra ones) to rows in table schema order followed
// by the extra values, the partition columns filled from the file's partition values.
type fileLayout struct {
	fileSchema schema.Schema
	direct     bool  // the file's rows are already in that order: no partition column, no extra
	from       []int // table column i comes from file column from[i], or -1 for a partition column
	pv         []any // the partition values, at their table column
	firstExtra int   // the first extra column in fileSchema
	nTable     int   // the table's columns
	width      int   // table and extra columns
}

func newFileLayout(m Metadata, path string, partValues map[string]string, extra []schema.Field) (*fileLayout, error) {
	// Under column mapping, the file's columns and the partition values go by physical names.
	fileSch := m.fileSchema()
	if len(m.PartitionColumns) == 0 && len(extra) == 0 {
		return &fileLayout{fileSchema: fileSch, direct: true}, nil
	}
	l := &fileLayout{nTable: len(m.Schema.Fields), width: len(m.Schema.Fields) + len(extra)}
	isPart := map[string]bool{}
	for _, p := range m.PartitionColumns {
		isPart[p] = true
	}
	for i, f := range m.Schema.Fields {
		if isPart[f.Name] {
			l.from = append(l.from, -1)
			continue
		}
		l.from = append(l.from, len(l.fileSchema.Fields))
		l.fileSchema.Fields = append(l.fileSchema.Fields, fileSch.Fields[i])
	}
	l.firstExtra = len(l.fileSchema.Fields)
	l.fileSchema.Fields = append(l.fileSchema.Fields, extra...)
	l.pv = make([]any, len(m.Schema.Fields))
	for i, f := range m.Schema.Fields {
		if l.from[i] >= 0 {
			continue
		}
		s, ok := partValues[fileSch.Fields[i].Name]
		if !ok {
			return nil, fmt.Errorf("delta: %s: no partition value for partition column %q", path, f.Name)
		}
		v, err := ParsePartitionValue(f.Type, s)
		if err != nil {
			return nil, fmt.Errorf("%w (file %s, partition column %q)", err, path, f.Name)
		}
		l.pv[i] = v
	}
	return l, nil
}

// widen maps rows read with l.fileSchema to table order (rows themselves when direct).
func (l *fileLayout) widen(rows [][]any) [][]any {
	if l.direct {
		return rows
	}
	w := l.width
	backing := make([]any, len(rows)*w)
	out := make([][]any, len(rows))
	for r, fr := range rows {
		row := backing[r*w : (r+1)*w : (r+1)*w]
		for i := 0; i < l.nTable; i++ {
			if l.from[i] < 0 {
				row[i] = l.pv[i]
			} else {
				row[i] = fr[l.from[i]]
			}
		}
		copy(row[l.nTable:], fr[l.firstExtra:])
		out[r] = row
	}
	return out
}

// knownReaderFeatures are the reader table features whose tables this package reads correctly
// as long as CheckReadable finds them unused.
var knownReaderFeatures = map[string]bool{
	"columnMapping": true, "deletionVectors": true, "timestampNtz": true,
	"v2Checkpoint": true, "vacuumProtocolCheck": true,
}

// CheckReadable refuses tables whose data this package would read wrong (Delta PROTOCOL.md,
// "Reader Version Requirements", "Column Mapping"). Deletion vectors are applied by the
// readers.
func CheckReadable(snap *Snapshot) error {
	if snap.Protocol.MinReaderVersion > 3 {
		return fmt.Errorf("delta: the table needs reader version %d; this reader supports up to 3", snap.Protocol.MinReaderVersion)
	}
	for _, f := range snap.ReaderFeatures {
		if !knownReaderFeatures[f] {
			return fmt.Errorf("delta: the table needs reader feature %q, which this reader does not support", f)
		}
	}
	switch mode := snap.Metadata.ColumnMappingMode(); mode {
	case "none", "name":
	case "id":
		return fmt.Errorf("delta: the table uses column mapping by field id (delta.columnMapping.mode = id), which this reader does not support (it reads column mapping by name)")
	default:
		return fmt.Errorf("delta: the table's delta.columnMapping.mode is %q, which is not a column mapping mode (none, name, id)", mode)
	}
	return nil
}

// FormatPartitionValue serializes v, the Go value of a column of type t, as a partition value
// (Delta PROTOCOL.md, "Partition Value Serialization"): NULL as "", numbers in decimal, DECIMAL
// with its scale, DATE "2024-01-31", TIMESTAMP as ISO 8601 in UTC with microseconds
// ("2024-01-31T10:00:00.000000Z"), TIMESTAMP_NTZ without zone as the protocol spells it
// ("2024-01-31 10:00:00", or "2024-01-31 10:00:00.123456" when the fraction is not zero),
// BOOLEAN "true"/"false".
func FormatPartitionValue(t schema.Type, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case schema.Date:
		return schema.FormatDate(x)
	case schema.Timestamp:
		if t.IsNTZ() {
			layout := "2006-01-02 15:04:05"
			if x%1_000_000 != 0 {
				layout += ".000000"
			}
			return time.UnixMicro(int64(x)).UTC().Format(layout)
		}
		return schema.FormatTimestamp(x)
	case float64:
		if t.Storage == schema.StorageFloat {
			return strconv.FormatFloat(x, 'g', -1, 32)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return schema.Text(t, v)
}

// ParsePartitionValue reads a serialized partition value of a column of type t (Delta
// PROTOCOL.md, "Partition Value Serialization"): "" is NULL; a TIMESTAMP may be
// "2024-01-31 10:00:00[.ffffff]" (taken as UTC) or ISO 8601; a TIMESTAMP_NTZ is
// "2024-01-31 10:00:00[.ffffff]" or the same with T, without zone (schema.ParseTimestampNTZ).
// A value that does not parse is an error.
func ParsePartitionValue(t schema.Type, s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	v, err := parsePartitionValue(t, s)
	if err != nil {
		return nil, fmt.Errorf("delta: partition value %q is not a %s: %w", s, t.DDL(), err)
	}
	return v, nil
}

func parsePartitionValue(t schema.Type, s string) (any, error) {
	switch t.Kind {
	case schema.Long:
		return strconv.ParseInt(s, 10, 64)
	case schema.Integer:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case schema.String:
		return s, nil
	case schema.Double:
		if t.Storage == schema.StorageFloat {
			f, err := strconv.ParseFloat(s, 32)
			return float64(float32(f)), err
		}
		return strconv.ParseFloat(s, 64)
	case schema.Boolean:
		return strconv.ParseBool(strings.ToLower(s))
	case schema.DecimalKind:
		return schema.ParseDecimalValue(s, t)
	case schema.DateKind:
		return schema.ParseDate(s)
	case schema.TimestampKind:
		if t.IsNTZ() {
			return schema.ParseTimestampNTZ(s)
		}
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
			if ts, err := time.Parse(layout, s); err == nil {
				return schema.Timestamp(ts.UnixMicro()), nil
			}
		}
		return schema.ParseTimestamp(s)
	}
	return nil, fmt.Errorf("type %s is not supported", t.DDL())
}
