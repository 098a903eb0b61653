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
	if err := checkReadable(snap); err != nil {
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
	rows, _, err = t.applyDV(a, rows)
	return rows, err
}

// readTableFile reads one data or change data file of a table into rows in table schema order,
// followed by the values of the extra columns (read from the file by name).
func (t *Table) readTableFile(m Metadata, path string, partValues map[string]string, extra []schema.Field) ([][]any, error) {
	if len(m.PartitionColumns) == 0 && len(extra) == 0 {
		return t.ReadFile(path, m.Schema)
	}
	// The file holds the non-partition columns (and the extra ones).
	var fileSchema schema.Schema
	var from []int // table column i comes from file column from[i], or -1 for a partition column
	isPart := map[string]bool{}
	for _, p := range m.PartitionColumns {
		isPart[p] = true
	}
	for _, f := range m.Schema.Fields {
		if isPart[f.Name] {
			from = append(from, -1)
			continue
		}
		from = append(from, len(fileSchema.Fields))
		fileSchema.Fields = append(fileSchema.Fields, f)
	}
	firstExtra := len(fileSchema.Fields)
	fileSchema.Fields = append(fileSchema.Fields, extra...)
	rows, err := t.ReadFile(path, fileSchema)
	if err != nil {
		return nil, err
	}
	pv := make([]any, len(m.Schema.Fields))
	for i, f := range m.Schema.Fields {
		if from[i] >= 0 {
			continue
		}
		s, ok := partValues[f.Name]
		if !ok {
			return nil, fmt.Errorf("delta: %s: no partition value for partition column %q", path, f.Name)
		}
		v, err := ParsePartitionValue(f.Type, s)
		if err != nil {
			return nil, fmt.Errorf("%w (file %s, partition column %q)", err, path, f.Name)
		}
		pv[i] = v
	}
	w := len(m.Schema.Fields) + len(extra)
	backing := make([]any, len(rows)*w)
	out := make([][]any, len(rows))
	for r, fr := range rows {
		row := backing[r*w : (r+1)*w : (r+1)*w]
		for i := range m.Schema.Fields {
			if from[i] < 0 {
				row[i] = pv[i]
			} else {
				row[i] = fr[from[i]]
			}
		}
		copy(row[len(m.Schema.Fields):], fr[firstExtra:])
		out[r] = row
	}
	return out, nil
}

// knownReaderFeatures are the reader table features whose tables this package reads correctly
// as long as checkReadable finds them unused.
var knownReaderFeatures = map[string]bool{
	"columnMapping": true, "deletionVectors": true, "timestampNtz": true,
	"v2Checkpoint": true, "vacuumProtocolCheck": true,
}

// checkReadable refuses tables whose data this package would read wrong (Delta PROTOCOL.md,
// "Reader Version Requirements", "Column Mapping"). Deletion vectors are applied by the
// readers.
func checkReadable(snap *Snapshot) error {
	if snap.Protocol.MinReaderVersion > 3 {
		return fmt.Errorf("delta: the table needs reader version %d; this reader supports up to 3", snap.Protocol.MinReaderVersion)
	}
	for _, f := range snap.ReaderFeatures {
		if !knownReaderFeatures[f] {
			return fmt.Errorf("delta: the table needs reader feature %q, which this reader does not support", f)
		}
	}
	if mode := snap.Metadata.Configuration["delta.columnMapping.mode"]; mode != "" && mode != "none" {
		return fmt.Errorf("delta: the table uses column mapping (mode %s), which this reader does not support", mode)
	}
	return nil
}

// FormatPartitionValue serializes v, the Go value of a column of type t, as a partition value
// (Delta PROTOCOL.md, "Partition Value Serialization"): NULL as "", numbers in decimal, DECIMAL
// with its scale, DATE "2024-01-31", TIMESTAMP as ISO 8601 in UTC with microseconds
// ("2024-01-31T10:00:00.000000Z"), BOOLEAN "true"/"false".
func FormatPartitionValue(t schema.Type, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case schema.Date:
		return schema.FormatDate(x)
	case schema.Timestamp:
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
// "2024-01-31 10:00:00[.ffffff]" (taken as UTC) or ISO 8601. A value that does not parse is an
// error.
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
		return schema.ParseDecimal(s, t)
	case schema.DateKind:
		return schema.ParseDate(s)
	case schema.TimestampKind:
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
			if ts, err := time.Parse(layout, s); err == nil {
				return schema.Timestamp(ts.UnixMicro()), nil
			}
		}
		return schema.ParseTimestamp(s)
	}
	return nil, fmt.Errorf("type %s is not supported", t.DDL())
}
