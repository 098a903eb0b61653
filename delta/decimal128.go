package delta

import (
	"bytes"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// The Parquet side of DECIMAL columns of precision 19 to 38 (schema.Decimal128 values).
//
// Spark writes them as FIXED_LEN_BYTE_ARRAY of schema.DecimalBytes(precision) bytes, the
// unscaled value in big-endian two's complement, with the DECIMAL logical type (Parquet
// LogicalTypes.md, DECIMAL; Spark's ParquetWriteSupport). The sort order of such a column is
// signed (Parquet LogicalTypes.md, "Sort Order": DECIMAL is signed comparison of the represented
// value), while parquet-go orders fixed-length byte arrays as unsigned bytes: its bounds would
// put -1 (ff..ff) above 1 (00..01), and a reader that prunes row groups or pages by them would
// skip rows it must read. wideDecimalType gives the column signed bounds, statistics and column
// index.

// wideDecimalNode returns the Parquet leaf of a DECIMAL(p,s) column with p above
// schema.MaxLongDecimalPrecision: FIXED_LEN_BYTE_ARRAY(DecimalBytes(p)), DECIMAL(p,s), PLAIN.
func wideDecimalNode(t schema.Type) parquet.Node {
	base := parquet.Decimal(t.Scale, t.Precision, parquet.FixedLenByteArrayType(schema.DecimalBytes(t.Precision))).Type()
	return parquet.Encoded(parquet.Leaf(wideDecimalType{base}), &parquet.Plain)
}

// wideDecimalType is a FIXED_LEN_BYTE_ARRAY DECIMAL whose values order as signed integers.
type wideDecimalType struct{ parquet.Type }

// Compare orders two values as big-endian two's complement integers of the same length.
func (t wideDecimalType) Compare(a, b parquet.Value) int {
	return compareSigned(a.ByteArray(), b.ByteArray())
}

// NewColumnBuffer returns the type's buffer, whose pages have signed bounds.
func (t wideDecimalType) NewColumnBuffer(columnIndex, numValues int) parquet.ColumnBuffer {
	return signedBuffer{t.Type.NewColumnBuffer(columnIndex, numValues)}
}

// NewColumnIndexer returns a column indexer of signed bounds.
func (t wideDecimalType) NewColumnIndexer(sizeLimit int) parquet.ColumnIndexer {
	return &signedIndexer{}
}

// compareSigned compares big-endian two's complement integers of the same length.
func compareSigned(a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return bytes.Compare(a, b)
	}
	if sa, sb := int8(a[0]), int8(b[0]); sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	return bytes.Compare(a[1:], b[1:])
}

// signedBuffer is a column buffer whose pages have signed bounds.
type signedBuffer struct{ parquet.ColumnBuffer }

func (b signedBuffer) Page() parquet.Page          { return signedPage{b.ColumnBuffer.Page()} }
func (b signedBuffer) Clone() parquet.ColumnBuffer { return signedBuffer{b.ColumnBuffer.Clone()} }

// signedPage is a page of big-endian two's complement values with signed bounds.
type signedPage struct{ parquet.Page }

func (p signedPage) Slice(i, j int64) parquet.Page { return signedPage{p.Page.Slice(i, j)} }

// Bounds returns the least and the greatest value of the page as signed integers.
func (p signedPage) Bounds() (min, max parquet.Value, ok bool) {
	data := p.Data()
	b, size := data.FixedLenByteArray()
	if size <= 0 || len(b) < size {
		return min, max, false
	}
	lo, hi := b[:size], b[:size]
	for off := size; off+size <= len(b); off += size {
		v := b[off : off+size]
		if compareSigned(v, lo) < 0 {
			lo = v
		} else if compareSigned(v, hi) > 0 {
			hi = v
		}
	}
	return parquet.FixedLenByteArrayValue(lo), parquet.FixedLenByteArrayValue(hi), true
}

// signedIndexer builds the column index (Parquet PageIndex.md) of a wide decimal column: the
// bounds of each page as signedPage gives them, and the boundary order of signed comparison.
type signedIndexer struct {
	nullPages  []bool
	nullCounts []int64
	mins, maxs [][]byte
}

func (x *signedIndexer) Reset() { *x = signedIndexer{} }

func (x *signedIndexer) IndexPage(numValues, numNulls int64, min, max parquet.Value) {
	x.nullPages = append(x.nullPages, numValues == numNulls)
	x.nullCounts = append(x.nullCounts, numNulls)
	// A page of NULLs only has empty bounds (Parquet PageIndex.md: null_pages).
	x.mins = append(x.mins, bytes.Clone(min.ByteArray()))
	x.maxs = append(x.maxs, bytes.Clone(max.ByteArray()))
}

func (x *signedIndexer) ColumnIndex() format.ColumnIndex {
	asc, desc := true, true
	prevMin, prevMax := -1, -1
	for i := range x.mins {
		if x.nullPages[i] {
			continue
		}
		if prevMin >= 0 {
			cMin, cMax := compareSigned(x.mins[prevMin], x.mins[i]), compareSigned(x.maxs[prevMax], x.maxs[i])
			asc = asc && cMin <= 0 && cMax <= 0
			desc = desc && cMin >= 0 && cMax >= 0
		}
		prevMin, prevMax = i, i
	}
	order := format.Unordered
	switch {
	case asc:
		order = format.Ascending
	case desc:
		order = format.Descending
	}
	return format.ColumnIndex{NullPages: x.nullPages, NullCounts: x.nullCounts, MinValues: x.mins, MaxValues: x.maxs, BoundaryOrder: order}
}

// decimal128Converter reads a DECIMAL(p,s) column with p above schema.MaxLongDecimalPrecision
// from INT32, INT64, FIXED_LEN_BYTE_ARRAY or BINARY values with the DECIMAL logical type of
// scale fileScale (Parquet LogicalTypes.md, DECIMAL), rescaled to the column's scale: more
// digits after the point than the column keeps, or more digits in all than its precision, is an
// error naming the value.
func decimal128Converter(kind parquet.Kind, fileScale int, t schema.Type, bad func() (convertFunc, error)) (convertFunc, error) {
	if fileScale > schema.MaxDecimalPrecision {
		return bad()
	}
	rescale := func(d schema.Decimal128) (schema.Decimal128, error) {
		switch {
		case fileScale < t.Scale:
			m, ok := d.MulPow10(t.Scale - fileScale)
			if !ok {
				return d, fmt.Errorf("decimal %s does not fit %s", schema.FormatDecimal128(d, fileScale), t.DDL())
			}
			d = m
		case fileScale > t.Scale:
			q, exact := d.QuoPow10(fileScale - t.Scale)
			if !exact {
				return d, fmt.Errorf("decimal %s has more than %d digits after the point for %s", schema.FormatDecimal128(d, fileScale), t.Scale, t.DDL())
			}
			d = q
		}
		if !d.FitsPrecision(t.Precision) {
			return d, fmt.Errorf("decimal %s does not fit %s", schema.FormatDecimal128(d, t.Scale), t.DDL())
		}
		return d, nil
	}
	var fn func(parquet.Value) (schema.Decimal128, error)
	switch kind {
	case parquet.Int32:
		fn = func(v parquet.Value) (schema.Decimal128, error) {
			return rescale(schema.Decimal128FromInt64(int64(v.Int32())))
		}
	case parquet.Int64:
		fn = func(v parquet.Value) (schema.Decimal128, error) {
			return rescale(schema.Decimal128FromInt64(v.Int64()))
		}
	case parquet.FixedLenByteArray, parquet.ByteArray:
		fn = func(v parquet.Value) (schema.Decimal128, error) {
			b := v.ByteArray()
			d, ok := schema.Decimal128FromBytes(b)
			if !ok {
				return d, fmt.Errorf("decimal of %d bytes does not fit %s", len(b), t.DDL())
			}
			return rescale(d)
		}
	default:
		return bad()
	}
	return convertFunc{typ: typeDecimal128, fn128: fn}, nil
}

// wideDecimalValue returns the Parquet value of v, a Decimal128 of the wide DECIMAL column t, and
// folds it into the column's statistics. A value of another Go type, or of more digits than the
// precision, is an error. The value's bytes are appended to *arena, a chunk allocated for the
// left values still to convert when it has no room: the column writer copies them only when the
// batch is written, after this returns, so a chunk is never reused, only dropped.
func wideDecimalValue(t *schema.Type, v any, st *colStats, arena *[]byte, left int) (parquet.Value, error) {
	x, ok := v.(schema.Decimal128)
	if !ok {
		return parquet.Value{}, typeError(t, v)
	}
	if !x.FitsPrecision(t.Precision) {
		return parquet.Value{}, fmt.Errorf("%s does not fit %s", schema.FormatDecimal128(x, t.Scale), t.DDL())
	}
	st.dec128(x)
	n := schema.DecimalBytes(t.Precision)
	if cap(*arena)-len(*arena) < n {
		*arena = make([]byte, 0, n*max(left, 1))
	}
	start := len(*arena)
	*arena = x.AppendBytes(*arena, n)
	return parquet.FixedLenByteArrayValue((*arena)[start:len(*arena):len(*arena)]), nil
}
