package delta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// The conversions from Parquet values to the Go values of table columns (schema package
// invariant), for the encodings listed in Delta PROTOCOL.md, "Delta Data Type to Parquet Type
// Mappings".

// one converts a single non-NULL value, allocating its box.
func (c convertFunc) one(v parquet.Value) (any, error) {
	switch {
	case c.str:
		return string(v.ByteArray()), nil
	case c.fn64 != nil:
		x, err := c.fn64(v)
		if err != nil {
			return nil, err
		}
		switch c.typ {
		case typeInt64:
			return int64(x), nil
		case typeFloat64:
			return math.Float64frombits(x), nil
		case typeDecimal:
			return schema.Decimal(x), nil
		case typeTimestamp:
			return schema.Timestamp(x), nil
		}
	case c.fn32 != nil:
		x, err := c.fn32(v)
		if err != nil {
			return nil, err
		}
		switch c.typ {
		case typeInt32:
			return int32(x), nil
		case typeDate:
			return schema.Date(x), nil
		}
	case c.fnBool != nil:
		return c.fnBool(v), nil
	case c.fn128 != nil:
		x, err := c.fn128(v)
		if err != nil {
			return nil, err
		}
		return x, nil
	}
	return nil, errors.New("internal error: no conversion")
}

// convertFunc turns non-NULL Parquet values into the Go values of a column. Exactly one of
// fn64 (8-byte Go types: int64, float64 as bits, Decimal, Timestamp), fn32 (int32, Date), fnBool,
// fn128 (Decimal128) or str is set; typ is the type word of the column's Go type (see box).
type convertFunc struct {
	fn64   func(parquet.Value) (uint64, error)
	fn32   func(parquet.Value) (uint32, error)
	fn128  func(parquet.Value) (schema.Decimal128, error)
	fnBool func(parquet.Value) bool
	str    bool
	typ    unsafe.Pointer
	// raw is how the column's PLAIN pages may be read from their buffers (columnCursor.openPlain);
	// a rawDecimal column's unscaled values are below limit in magnitude, its scale and type (ddl)
	// named by the error of one that is not.
	raw   rawKind
	limit int64
	scale int
	ddl   string
}

// batch converts the values vals (one per row, NULL when below maxDef) into column j of rows,
// with one allocation for the whole batch rather than one per value. base is the file row of
// rows[0], for errors.
func (c convertFunc) batch(vals []parquet.Value, maxDef int, rows [][]any, j, base int, strs *[]byte) error {
	// The slabs have room for every value, NULLs included: counting the values first would
	// cost a pass over them.
	switch {
	case c.str:
		b := (*strs)[:0]
		nn := 0
		for _, v := range vals {
			if v.DefinitionLevel() == maxDef {
				b = append(b, v.ByteArray()...)
				nn++
			}
		}
		*strs = b
		if nn == 0 {
			return nil
		}
		all := string(b)
		slab := make([]string, nn)
		off, n := 0, 0
		for i, v := range vals {
			if v.DefinitionLevel() == maxDef {
				l := len(v.ByteArray())
				slab[n] = all[off : off+l]
				box(&rows[i][j], c.typ, unsafe.Pointer(&slab[n]))
				off += l
				n++
			}
		}
	case c.fn64 != nil:
		return boxBatch(vals, maxDef, rows, j, base, c.typ, c.fn64)
	case c.fn32 != nil:
		return boxBatch(vals, maxDef, rows, j, base, c.typ, c.fn32)
	case c.fn128 != nil:
		return boxBatch(vals, maxDef, rows, j, base, c.typ, c.fn128)
	default:
		for i, v := range vals {
			if v.DefinitionLevel() == maxDef {
				rows[i][j] = c.fnBool(v) // boxing a bool does not allocate
			}
		}
	}
	return nil
}

// eface is the layout of an interface value with no methods: a type word and a pointer to the
// value (the runtime's eface, unchanged since Go 1.4).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// typeWord returns the type word of the dynamic type of x.
func typeWord(x any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&x)).typ }

var (
	typeInt64      = typeWord(int64(0))
	typeInt32      = typeWord(int32(0))
	typeFloat64    = typeWord(float64(0))
	typeString     = typeWord("")
	typeDecimal    = typeWord(schema.Decimal(0))
	typeDecimal128 = typeWord(schema.Decimal128{})
	typeDate       = typeWord(schema.Date(0))
	typeTimestamp  = typeWord(schema.Timestamp(0))
)

// boxBatch converts the non-NULL values of vals (those at maxDef) with fn into column j of rows,
// as convertFunc.batch does: the results in one slab of T for the batch, each row's value an
// interface of type word typ pointing into it. base is the file row of rows[0], for errors.
func boxBatch[T any](vals []parquet.Value, maxDef int, rows [][]any, j, base int, typ unsafe.Pointer, fn func(parquet.Value) (T, error)) error {
	slab := make([]T, len(vals))
	n := 0
	for i, v := range vals {
		if v.DefinitionLevel() == maxDef {
			x, err := fn(v)
			if err != nil {
				return fmt.Errorf("row %d: %w", base+i, err)
			}
			slab[n] = x
			box(&rows[i][j], typ, unsafe.Pointer(&slab[n]))
			n++
		}
	}
	return nil
}

// box sets *dst to an interface of type typ whose value is the memory at p, as the compiler
// boxes a non-pointer value, but without allocating: p points into a slab shared by a batch of
// values. The slab must hold a value of exactly that type and never be written again.
func box(dst *any, typ, p unsafe.Pointer) {
	*(*eface)(unsafe.Pointer(dst)) = eface{typ: typ, data: p}
}

// converter picks the conversion from the file column type ft to the table column type t.
func converter(ft parquet.Type, t schema.Type) (convertFunc, error) {
	kind := ft.Kind()
	var lt format.LogicalTypeValue
	if l := ft.LogicalType(); l != nil {
		lt = l.Value
	}
	bad := func() (convertFunc, error) {
		desc := kind.String()
		if lt != nil {
			desc += " " + lt.String()
		}
		return convertFunc{}, fmt.Errorf("the file stores %s, which cannot be read as %s", desc, t.DDL())
	}
	if it, ok := lt.(*format.IntType); ok && !it.IsSigned && (kind == parquet.Int32 || kind == parquet.Int64) {
		return unsignedConverter(kind, t, bad)
	}
	switch t.Kind {
	case schema.Long:
		switch {
		case kind == parquet.Int64 && !isTemporal(lt):
			return convertFunc{typ: typeInt64, raw: rawInt64, fn64: func(v parquet.Value) (uint64, error) { return v.Uint64(), nil }}, nil
		case kind == parquet.Int32 && !isTemporal(lt):
			return convertFunc{typ: typeInt64, fn64: func(v parquet.Value) (uint64, error) { return uint64(int64(v.Int32())), nil }}, nil
		}
	case schema.Integer:
		if kind == parquet.Int32 && !isTemporal(lt) {
			if lo, hi, narrow := narrowRange(t); narrow {
				if it, ok := lt.(*format.IntType); !ok || int(it.BitWidth) > narrowBits(t) || !it.IsSigned {
					// A wider column read as SMALLINT or TINYINT: a value beyond the type's
					// range would be stored as what it cannot hold.
					return convertFunc{typ: typeInt32, fn32: func(v parquet.Value) (uint32, error) {
						if n := v.Int32(); n < lo || n > hi {
							return 0, fmt.Errorf("%d does not fit %s", n, t.DDL())
						}
						return v.Uint32(), nil
					}}, nil
				}
			}
			return convertFunc{typ: typeInt32, raw: rawInt32, fn32: func(v parquet.Value) (uint32, error) { return v.Uint32(), nil }}, nil
		}
	case schema.String:
		if kind == parquet.ByteArray {
			return convertFunc{typ: typeString, str: true, raw: rawString}, nil
		}
		if kind == parquet.FixedLenByteArray {
			return convertFunc{typ: typeString, str: true}, nil
		}
	case schema.Double:
		switch kind {
		case parquet.Double:
			if t.Storage == schema.StorageFloat { // a DOUBLE column read as FLOAT: rounded
				return convertFunc{typ: typeFloat64, fn64: func(v parquet.Value) (uint64, error) { return math.Float64bits(t.Float(v.Double())), nil }}, nil
			}
			return convertFunc{typ: typeFloat64, raw: rawDouble, fn64: func(v parquet.Value) (uint64, error) { return math.Float64bits(v.Double()), nil }}, nil
		case parquet.Float:
			return convertFunc{typ: typeFloat64, fn64: func(v parquet.Value) (uint64, error) { return math.Float64bits(float64(v.Float())), nil }}, nil
		}
	case schema.Boolean:
		if kind == parquet.Boolean {
			return convertFunc{fnBool: func(v parquet.Value) bool { return v.Boolean() }}, nil
		}
	case schema.DateKind:
		if kind == parquet.Int32 {
			if _, ok := lt.(*format.DateType); ok {
				return convertFunc{typ: typeDate, raw: rawInt32, fn32: func(v parquet.Value) (uint32, error) { return v.Uint32(), nil }}, nil
			}
		}
	case schema.TimestampKind:
		if ts, ok := lt.(*format.TimestampType); t.IsNTZ() && (kind != parquet.Int64 || !ok || ts.IsAdjustedToUTC) {
			// An instant (INT96, INT64 adjusted to UTC or without logical type) has no wall
			// clock of its own: Spark's Parquet reader refuses it for TIMESTAMP_NTZ too
			// (ParquetVectorUpdaterFactory, validateTimestampNTZType).
			c, err := bad()
			return c, fmt.Errorf("%w (it holds instants, not the wall clock without time zone of TIMESTAMP_NTZ, the logical type TIMESTAMP(isAdjustedToUTC=false)); declare the column TIMESTAMP", err)
		}
		return timestampConverter(kind, lt, bad)
	case schema.DecimalKind:
		return decimalConverter(kind, lt, t, bad)
	}
	return bad()
}

// unsignedConverter reads a column of unsigned integers (the logical type INT(bits, false): UINT_8
// to UINT_64, as pyarrow and DuckDB write uint columns) by their unsigned values, as Spark's
// Parquet reader does (a UINT_32 is a LongType, a UINT_64 a DecimalType(20, 0)), never as the
// signed integers of the same bits: UINT_64 12345678901234567890 is not -6101065172474983726. A
// value the column's type does not hold is an error naming it.
func unsignedConverter(kind parquet.Kind, t schema.Type, bad func() (convertFunc, error)) (convertFunc, error) {
	val := func(v parquet.Value) uint64 {
		if kind == parquet.Int32 {
			return uint64(v.Uint32())
		}
		return v.Uint64()
	}
	tooBig := func(u uint64) error { return fmt.Errorf("%d does not fit %s", u, t.DDL()) }
	switch t.Kind {
	case schema.Long:
		return convertFunc{typ: typeInt64, fn64: func(v parquet.Value) (uint64, error) {
			if u := val(v); u <= math.MaxInt64 {
				return u, nil
			} else {
				return 0, tooBig(u)
			}
		}}, nil
	case schema.Integer:
		hi := uint64(math.MaxInt32)
		if _, h, narrow := narrowRange(t); narrow {
			hi = uint64(h)
		}
		return convertFunc{typ: typeInt32, fn32: func(v parquet.Value) (uint32, error) {
			if u := val(v); u <= hi {
				return uint32(u), nil
			} else {
				return 0, tooBig(u)
			}
		}}, nil
	case schema.DecimalKind:
		if t.WideDecimal() {
			return convertFunc{typ: typeDecimal128, fn128: func(v parquet.Value) (schema.Decimal128, error) {
				u := val(v)
				d, ok := schema.Decimal128{Lo: u}.MulPow10(t.Scale)
				if !ok || !d.FitsPrecision(t.Precision) {
					return d, tooBig(u)
				}
				return d, nil
			}}, nil
		}
		whole := uint64(pow10[t.Precision-t.Scale]) // the column holds whole numbers below this
		scale := uint64(pow10[t.Scale])
		return convertFunc{typ: typeDecimal, fn64: func(v parquet.Value) (uint64, error) {
			if u := val(v); u < whole {
				return u * scale, nil
			} else {
				return 0, tooBig(u)
			}
		}}, nil
	}
	return bad()
}

// narrowRange returns the range of an INT column stored narrower (SMALLINT, TINYINT: Storage);
// narrow is false for INT.
func narrowRange(t schema.Type) (lo, hi int32, narrow bool) {
	l, h := t.IntRange()
	if h == math.MaxInt32 {
		return 0, 0, false
	}
	return int32(l), int32(h), true
}

// narrowBits returns the bits of an INT column stored narrower (16 or 8), 32 for INT.
func narrowBits(t schema.Type) int {
	switch t.Storage {
	case schema.StorageShort:
		return 16
	case schema.StorageByte:
		return 8
	}
	return 32
}

func isTemporal(lt format.LogicalTypeValue) bool {
	switch lt.(type) {
	case *format.DateType, *format.TimestampType, *format.TimeType, *format.DecimalType:
		return true
	}
	return false
}

// julianEpochDay is the Julian day number of 1970-01-01, the epoch of INT96 timestamps.
const julianEpochDay = 2440588

func timestampConverter(kind parquet.Kind, lt format.LogicalTypeValue, bad func() (convertFunc, error)) (convertFunc, error) {
	switch kind {
	case parquet.Int96:
		// 8 bytes of nanoseconds in the day, then 4 bytes of Julian day, little-endian
		// (the legacy Impala/Spark encoding).
		return convertFunc{typ: typeTimestamp, fn64: func(v parquet.Value) (uint64, error) {
			x := v.Int96()
			nanos := int64(uint64(x[1])<<32 | uint64(x[0]))
			day := int64(x[2]) - julianEpochDay
			return uint64(day*86_400_000_000 + floorDiv(nanos, 1000)), nil
		}}, nil
	case parquet.Int64:
		div, mul := int64(1), int64(1) // micros by default (no logical type)
		if ts, ok := lt.(*format.TimestampType); ok {
			switch ts.Unit.Value.(type) {
			case *format.MilliSeconds:
				mul = 1000
			case *format.NanoSeconds:
				div = 1000
			}
		} else if lt != nil {
			return bad()
		}
		raw := rawNone
		if mul == 1 && div == 1 {
			raw = rawInt64 // µs, as the column holds them
		}
		return convertFunc{typ: typeTimestamp, raw: raw, fn64: func(v parquet.Value) (uint64, error) {
			x := v.Int64()
			if mul != 1 {
				if x > math.MaxInt64/mul || x < math.MinInt64/mul {
					return 0, fmt.Errorf("timestamp %d ms is out of range", x)
				}
				return uint64(x * mul), nil
			}
			return uint64(floorDiv(x, div)), nil
		}}, nil
	}
	return bad()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func decimalConverter(kind parquet.Kind, lt format.LogicalTypeValue, t schema.Type, bad func() (convertFunc, error)) (convertFunc, error) {
	fileScale := 0
	if d, ok := lt.(*format.DecimalType); ok {
		fileScale = int(d.Scale)
	} else if lt != nil || (kind != parquet.Int32 && kind != parquet.Int64) {
		return bad()
	}
	if fileScale < 0 { // a malformed file: Parquet's DECIMAL scale is 0 or more
		return bad()
	}
	if t.WideDecimal() {
		return decimal128Converter(kind, fileScale, t, bad)
	}
	limit := int64(pow10[t.Precision])
	rescale := func(u int64) (uint64, error) {
		switch {
		case fileScale < t.Scale:
			for k := fileScale; k < t.Scale; k++ {
				if u > math.MaxInt64/10 || u < math.MinInt64/10 {
					return 0, fmt.Errorf("decimal does not fit %s", t.DDL())
				}
				u *= 10
			}
		case fileScale > t.Scale:
			d := int64(pow10[fileScale-t.Scale])
			if u%d != 0 {
				return 0, fmt.Errorf("decimal %s has more than %d digits after the point for %s", schema.FormatDecimal(schema.Decimal(u), fileScale), t.Scale, t.DDL())
			}
			u /= d
		}
		if u >= limit || u <= -limit {
			return 0, fmt.Errorf("decimal %s does not fit %s", schema.FormatDecimal(schema.Decimal(u), t.Scale), t.DDL())
		}
		return uint64(u), nil
	}
	if fileScale > 18 {
		return bad()
	}
	raw := rawNone
	if fileScale == t.Scale {
		raw = rawDecimal // only the range to check
	}
	switch kind {
	case parquet.Int32:
		return convertFunc{typ: typeDecimal, raw: raw, limit: limit, scale: t.Scale, ddl: t.DDL(), fn64: func(v parquet.Value) (uint64, error) { return rescale(int64(v.Int32())) }}, nil
	case parquet.Int64:
		return convertFunc{typ: typeDecimal, raw: raw, limit: limit, scale: t.Scale, ddl: t.DDL(), fn64: func(v parquet.Value) (uint64, error) { return rescale(v.Int64()) }}, nil
	case parquet.FixedLenByteArray, parquet.ByteArray:
		// Big-endian two's complement (Parquet LogicalTypes.md, DECIMAL).
		return convertFunc{typ: typeDecimal, fn64: func(v parquet.Value) (uint64, error) {
			b := v.ByteArray()
			u, ok := bigEndianInt64(b)
			if !ok {
				return 0, fmt.Errorf("decimal of %d bytes does not fit %s", len(b), t.DDL())
			}
			return rescale(u)
		}}, nil
	}
	return bad()
}

// bigEndianInt64 decodes a big-endian two's complement integer of any length if it fits in an
// int64.
func bigEndianInt64(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0]&0x80 != 0
	for len(b) > 8 { // leading bytes must be pure sign extension
		if (neg && b[0] != 0xff) || (!neg && b[0] != 0) {
			return 0, false
		}
		b = b[1:]
	}
	if len(b) == 8 && (b[0]&0x80 != 0) != neg {
		return 0, false
	}
	var buf [8]byte
	if neg {
		buf = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	copy(buf[8-len(b):], b)
	return int64(binary.BigEndian.Uint64(buf[:])), true
}
