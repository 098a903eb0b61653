package delta

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// ColumnPart is a part of a data file's rows given column by column, its values unboxed, for
// Table.WriteFileFromColumns: rows 0 to Len()-1 of the part, each with a value for every field
// of the file's schema (which has only top-level columns of primitive types).
//
// Column fills, for rows [from, to) of column j (the schema's j-th field), nulls[i-from] with
// whether the value is NULL and, when it is not, words[i-from] with the value of a fixed-width
// column as a word or strs[i-from] with the value of a STRING column (the slices have exactly
// to-from elements; what Column leaves in them for a NULL is ignored). A word is, by type:
// BIGINT, INT, SMALLINT, TINYINT its value; DECIMAL of precision up to 18 its unscaled value;
// DATE its days since 1970-01-01; TIMESTAMP and TIMESTAMP_NTZ its microseconds since the epoch;
// DOUBLE and FLOAT math.Float64bits of its value; BOOLEAN 1 for true, 0 for false. These are the
// values of the row form (schema package) as words, so a file written from a ColumnPart is the
// file WriteFileFrom writes of the same rows. The bytes of the strings must not change until
// next (WriteFileFromColumns) is called again: the Parquet writer copies a batch's values while
// the part's next rows are converted.
type ColumnPart interface {
	Len() int
	Column(j, from, to int, nulls []bool, words []int64, strs []string)
}

// ColumnsWritable reports whether s can be written from ColumnParts (WriteFileFromColumns):
// every field a top-level BIGINT, INT, SMALLINT, TINYINT, DOUBLE, FLOAT, BOOLEAN, STRING,
// BINARY, DATE, TIMESTAMP, TIMESTAMP_NTZ or DECIMAL of precision up to 18.
func ColumnsWritable(s schema.Schema) bool {
	for _, f := range s.Fields {
		switch f.Type.Kind {
		case schema.Long, schema.Integer, schema.Double, schema.Boolean, schema.String, schema.DateKind, schema.TimestampKind:
		case schema.DecimalKind:
			if f.Type.WideDecimal() {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// WriteFileFromColumns is WriteFileFrom with each part given column by column: next returns the
// part that follows those it returned before, or nil (or an empty part) at the end. The file,
// its add action and its statistics are those WriteFileFrom writes of the same rows, without
// boxing a value. A schema ColumnsWritable rejects is an error before anything is written; a
// value out of its column's range (an INT word beyond 32 bits, a DECIMAL beyond its precision)
// is an error naming the row (counted from the file's first) and the column.
func (t *Table) WriteFileFromColumns(rel string, s schema.Schema, next func() (ColumnPart, error)) (Add, error) {
	if !ColumnsWritable(s) {
		return Add{}, fmt.Errorf("delta: write %s: the schema %s has a column that cannot be written from columns (nested, or a DECIMAL of precision above 18)", rel, s.DDL())
	}
	return t.writeFileParts(rel, s, func(pf *parquetFile) (bool, error) {
		part, err := next()
		if err != nil || part == nil || part.Len() == 0 {
			return false, err
		}
		return true, pf.addColumns(part)
	})
}

// addColumns is addPart for a part given column by column.
func (pf *parquetFile) addColumns(part ColumnPart) error {
	return pf.addRows(part.Len(), func(from, to int) error {
		return pf.rgw.writeColumns(pf.w.ColumnWriters(), part, from, to)
	})
}

// columnBatch is the scratch a ColumnPart fills for one column of a batch of rows.
type columnBatch struct {
	nulls []bool
	words []int64
	strs  []string
}

// convertColumns fills b with the values of rows [from, to) of part, folding them into the
// column statistics, as convert does for the same rows boxed; base is the position of row from
// in what writeColumns writes (for errors). A value that does not convert is a *columnError (the
// first in column order, then row order, of these rows).
func (w *rowGroupWriter) convertColumns(b *valueBatch, part ColumnPart, cb *columnBatch, from, to, base int) error {
	for j := range w.lvs {
		nulls, words, strs := cb.column(part, j, from, to)
		var err error
		if b.cols[j], err = w.convertColumn(b.cols[j][:0], j, &w.stats[j], nulls, words, strs, base); err != nil {
			return err
		}
	}
	return nil
}

// column fills cb with column j of rows [from, to) of part and returns its NULL flags, words and
// strings (ColumnPart.Column's).
func (cb *columnBatch) column(part ColumnPart, j, from, to int) ([]bool, []int64, []string) {
	n := to - from
	if cap(cb.nulls) < n {
		cb.nulls, cb.words, cb.strs = make([]bool, n), make([]int64, n), make([]string, n)
	}
	nulls, words, strs := cb.nulls[:n], cb.words[:n], cb.strs[:n]
	clear(nulls)
	part.Column(j, from, to, nulls, words, strs)
	return nulls, words, strs
}

// convertColumn returns buf (empty, reused when it has room) holding the Parquet values of leaf
// column j of a batch of rows, given as ColumnPart.Column gives them, folding them into st; base
// is the position of the batch's first row in what writeColumns writes (for errors). The values
// are written in place (a loop per kind, then the levels in one pass), not appended one call a
// value.
// A value out of its column's range is a *columnError naming its row.
func (w *rowGroupWriter) convertColumn(buf []parquet.Value, j int, st *colStats, nulls []bool, words []int64, strs []string, base int) ([]parquet.Value, error) {
	t := &w.lvs[j].typ
	n := len(nulls)
	if cap(buf) < n {
		buf = make([]parquet.Value, 0, n)
	}
	buf = buf[:n]
	for i := range n {
		if nulls[i] {
			st.nulls++
			buf[i] = parquet.NullValue()
		}
	}
	switch t.Kind {
	case schema.Long, schema.TimestampKind:
		for i, x := range words {
			if !nulls[i] {
				st.int(x)
				buf[i] = parquet.Int64Value(x)
			}
		}
	case schema.Integer:
		lo, hi := t.IntRange()
		for i, x := range words {
			if nulls[i] {
				continue
			}
			if x < lo || x > hi {
				return buf, &columnError{col: j, row: base + i, err: fmt.Errorf("%d does not fit %s", x, t.DDL())}
			}
			st.int(x)
			buf[i] = parquet.Int32Value(int32(x))
		}
	case schema.String:
		binary := t.Storage == schema.StorageBinary
		for i, s := range strs {
			if nulls[i] {
				continue
			}
			if !binary {
				st.str(s)
			}
			// The writer copies the bytes into its page buffer; s is never written through.
			buf[i] = parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(s), len(s)))
		}
	case schema.Double:
		float := t.Storage == schema.StorageFloat
		for i, x := range words {
			if nulls[i] {
				continue
			}
			f := math.Float64frombits(uint64(x))
			st.float(f)
			if float {
				buf[i] = parquet.FloatValue(float32(f))
			} else {
				buf[i] = parquet.DoubleValue(f)
			}
		}
	case schema.Boolean:
		for i, x := range words {
			if !nulls[i] {
				buf[i] = parquet.BooleanValue(x != 0)
			}
		}
	case schema.DecimalKind:
		limit := pow10[t.Precision]
		for i, x := range words {
			if nulls[i] {
				continue
			}
			if d := schema.Decimal(x); d >= limit || d <= -limit {
				return buf, &columnError{col: j, row: base + i, err: fmt.Errorf("%s does not fit %s", schema.FormatDecimal(d, t.Scale), t.DDL())}
			}
			st.int(x)
			if t.Precision <= 9 {
				buf[i] = parquet.Int32Value(int32(x))
			} else {
				buf[i] = parquet.Int64Value(x)
			}
		}
	case schema.DateKind:
		for i, x := range words {
			if nulls[i] {
				continue
			}
			if x < math.MinInt32 || x > math.MaxInt32 {
				return buf, &columnError{col: j, row: base + i, err: fmt.Errorf("%d days does not fit DATE", x)}
			}
			st.int(x)
			buf[i] = parquet.Int32Value(int32(x))
		}
	}
	// The levels, in one pass: a value's definition level is 1, a NULL's 0 (NullValue's).
	for i := range buf {
		if !nulls[i] {
			buf[i].SetDefinitionLevel(1)
		}
		buf[i].SetColumnIndex(j)
	}
	return buf, nil
}
