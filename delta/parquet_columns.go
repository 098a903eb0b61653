package delta

import (
	"fmt"

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
// file WriteFileFrom writes of the same rows. The bytes of the strings need not outlive the
// call that takes the part: the writer copies each value into its page as it reads it.
type ColumnPart interface {
	Len() int
	Column(j, from, to int, nulls []bool, words []int64, strs []string)
}

// ColumnSlicer is a ColumnPart that can also give a column's values in place, for the writer to
// read without copying them: ColumnSlice returns column j of the rows from from on that the part
// holds contiguously, at most to-from of them and at least one, as slices of its own memory (the
// same number of elements each: words for a column of words and nil strs, or strs for a STRING
// or BINARY column and nil words; a NULL's word or string is ignored), with ok true; or ok false
// when it
// holds row from in no such way, in which case the writer calls Column. The slices are only
// read, and only until the call that took the part returns.
type ColumnSlicer interface {
	ColumnPart
	ColumnSlice(j, from, to int) (nulls []bool, words []int64, strs []string, ok bool)
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
// part that follows those it returned before, or nil (or an empty part) at the end. The file
// (byte for byte), its add action and its statistics are those WriteFileFrom writes of the same
// rows in the same parts, without boxing a value: the values go straight into the pages
// (flatFile). A schema ColumnsWritable rejects is an error before anything is written; a
// value out of its column's range (an INT word beyond 32 bits, a DECIMAL beyond its precision)
// is an error naming the row (counted from the file's first) and the column.
func (t *Table) WriteFileFromColumns(rel string, s schema.Schema, next func() (ColumnPart, error)) (Add, error) {
	if !ColumnsWritable(s) {
		return Add{}, fmt.Errorf("delta: write %s: the schema %s has a column that cannot be written from columns (nested, or a DECIMAL of precision above 18)", rel, s.DDL())
	}
	return t.writeFileParts(rel, s, true, func(pf *parquetFile) (bool, error) {
		part, err := next()
		if err != nil || part == nil || part.Len() == 0 {
			return false, err
		}
		return true, pf.addColumns(part)
	})
}

// addColumns is addPart for a part given column by column.
func (pf *parquetFile) addColumns(part ColumnPart) error {
	if pf.flat == nil {
		return fmt.Errorf("delta: %s: the file takes boxed rows only", pf.what)
	}
	return pf.addRows(part.Len(), func(from, to int) error {
		return pf.flat.add(part, from, to, 0)
	})
}

// columnBatch is the scratch a ColumnPart fills for one column of a batch of rows.
type columnBatch struct {
	nulls []bool
	words []int64
	strs  []string
}

// column returns the NULL flags, words and strings (ColumnPart.Column's) of column j of rows
// [from, from+len(nulls)) of part, at least one and at most to-from rows: in place when part is a
// ColumnSlicer that holds the rows from from on contiguously (as many as it holds so), or else
// all to-from filled into cb.
func (cb *columnBatch) column(part ColumnPart, j, from, to int) ([]bool, []int64, []string) {
	if cs, ok := part.(ColumnSlicer); ok {
		if nulls, words, strs, ok := cs.ColumnSlice(j, from, to); ok && len(nulls) > 0 && len(nulls) <= to-from &&
			(len(words) == len(nulls) || len(strs) == len(nulls)) {
			return nulls, words, strs
		}
	}
	n := to - from
	if cap(cb.nulls) < n {
		cb.nulls, cb.words, cb.strs = make([]bool, n), make([]int64, n), make([]string, n)
	}
	nulls, words, strs := cb.nulls[:n], cb.words[:n], cb.strs[:n]
	clear(nulls)
	part.Column(j, from, to, nulls, words, strs)
	return nulls, words, strs
}
