package flows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"tributary/schema"
)

// Tags of the value encoding of the CDC state (appendValues). The encoding is part of the state's
// on-disk format (stateFormatBinary segments): a tag may be added, never renumbered.
const (
	tagNull      = 0
	tagLong      = 1 // int64, zigzag uvarint
	tagInt       = 2 // int32, zigzag uvarint
	tagString    = 3 // uvarint length, then the bytes
	tagDouble    = 4 // float64, its IEEE 754 bits little-endian (8 bytes)
	tagFalse     = 5
	tagTrue      = 6
	tagDecimal   = 7  // schema.Decimal (unscaled), zigzag uvarint
	tagDate      = 8  // schema.Date, zigzag uvarint
	tagTimestamp = 9  // schema.Timestamp, zigzag uvarint
	tagStruct    = 10 // uvarint field count, then each field
	tagMap       = 11 // uvarint entry count, then each entry's key and value
	// tagDecimal128 is a schema.Decimal128 (DECIMAL of precision above 18): its Hi then its Lo,
	// 8 bytes each, big-endian.
	tagDecimal128 = 12
)

// errStateValue is returned by decodeValues for bytes that appendValues did not write.
var errStateValue = errors.New("malformed value encoding")

// appendValues appends the encoding of vals (values of the schema package's Go types: nil,
// int64, int32, string, float64, bool, Decimal, Decimal128, Date, Timestamp, []any for a STRUCT or an ARRAY,
// schema.Map for a MAP) to buf.
// It is canonical: two lists encode to equal bytes exactly when they hold the same Go values in
// the same order (a double by its bits, as schema.AppendKey does), so an encoded key is a map key.
// decodeValues reads it back. It panics on a value of another type, as schema.AppendKey does.
func appendValues(buf []byte, vals []any) []byte {
	for _, v := range vals {
		buf = appendValue(buf, v)
	}
	return buf
}

// appendPicked is appendValues of the values of r at positions idx, without building the list.
func appendPicked(buf []byte, r []any, idx []int) []byte {
	for _, j := range idx {
		buf = appendValue(buf, r[j])
	}
	return buf
}

// appendLong is appendValue of a BIGINT, without boxing it.
func appendLong(buf []byte, x int64) []byte {
	return binary.AppendUvarint(append(buf, tagLong), zigzag(x))
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func appendValue(buf []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(buf, tagNull)
	case int64:
		return appendLong(buf, x)
	case int32:
		return binary.AppendUvarint(append(buf, tagInt), zigzag(int64(x)))
	case string:
		buf = binary.AppendUvarint(append(buf, tagString), uint64(len(x)))
		return append(buf, x...)
	case float64:
		return binary.LittleEndian.AppendUint64(append(buf, tagDouble), math.Float64bits(x))
	case bool:
		if x {
			return append(buf, tagTrue)
		}
		return append(buf, tagFalse)
	case schema.Decimal:
		return binary.AppendUvarint(append(buf, tagDecimal), zigzag(int64(x)))
	case schema.Decimal128:
		buf = binary.BigEndian.AppendUint64(append(buf, tagDecimal128), uint64(x.Hi))
		return binary.BigEndian.AppendUint64(buf, x.Lo)
	case schema.Date:
		return binary.AppendUvarint(append(buf, tagDate), zigzag(int64(x)))
	case schema.Timestamp:
		return binary.AppendUvarint(append(buf, tagTimestamp), zigzag(int64(x)))
	case []any:
		buf = binary.AppendUvarint(append(buf, tagStruct), uint64(len(x)))
		return appendValues(buf, x)
	case schema.Map:
		buf = binary.AppendUvarint(append(buf, tagMap), uint64(len(x)))
		for _, e := range x {
			buf = appendValue(appendValue(buf, e.Key), e.Value)
		}
		return buf
	}
	panic(fmt.Sprintf("flows: the CDC state cannot hold a value of type %T", v))
}

// decodeValues reads the values appendValues wrote into b, which must hold exactly them; it
// returns errStateValue for anything else.
func decodeValues(b []byte) ([]any, error) {
	var out []any
	for len(b) > 0 {
		v, n, err := decodeValue(b)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

// decodeValue reads one value at the start of b and returns it and the bytes it took.
func decodeValue(b []byte) (any, int, error) {
	if len(b) == 0 {
		return nil, 0, errStateValue
	}
	tag, rest := b[0], b[1:]
	switch tag {
	case tagNull:
		return nil, 1, nil
	case tagFalse:
		return false, 1, nil
	case tagTrue:
		return true, 1, nil
	case tagDouble:
		if len(rest) < 8 {
			return nil, 0, errStateValue
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(rest)), 9, nil
	case tagDecimal128:
		if len(rest) < 16 {
			return nil, 0, errStateValue
		}
		return schema.Decimal128{Hi: int64(binary.BigEndian.Uint64(rest)), Lo: binary.BigEndian.Uint64(rest[8:])}, 17, nil
	}
	u, n := binary.Uvarint(rest)
	if n <= 0 {
		return nil, 0, errStateValue
	}
	switch tag {
	case tagLong:
		return unzigzag(u), 1 + n, nil
	case tagInt:
		return int32(unzigzag(u)), 1 + n, nil
	case tagDecimal:
		return schema.Decimal(unzigzag(u)), 1 + n, nil
	case tagDate:
		return schema.Date(unzigzag(u)), 1 + n, nil
	case tagTimestamp:
		return schema.Timestamp(unzigzag(u)), 1 + n, nil
	case tagString:
		if u > uint64(len(rest)-n) {
			return nil, 0, errStateValue
		}
		return string(rest[n : n+int(u)]), 1 + n + int(u), nil
	case tagStruct:
		used := 1 + n
		if u > uint64(len(b)) {
			return nil, 0, errStateValue
		}
		fields := make([]any, u)
		for i := range fields {
			v, m, err := decodeValue(b[used:])
			if err != nil {
				return nil, 0, err
			}
			fields[i], used = v, used+m
		}
		return fields, used, nil
	case tagMap:
		used := 1 + n
		if u > uint64(len(b)) {
			return nil, 0, errStateValue
		}
		entries := make(schema.Map, u)
		for i := range entries {
			k, m, err := decodeValue(b[used:])
			if err != nil {
				return nil, 0, err
			}
			v, m2, err := decodeValue(b[used+m:])
			if err != nil {
				return nil, 0, err
			}
			entries[i], used = schema.MapEntry{Key: k, Value: v}, used+m+m2
		}
		return entries, used, nil
	}
	return nil, 0, errStateValue
}
