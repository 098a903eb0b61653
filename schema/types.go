package schema

import (
	"fmt"
	"math"
	"strings"
)

// Kind is a column's primitive type, named after Spark SQL's type names.
type Kind int

// The supported kinds. The Go value of each (see the package invariant) is:
// Long int64, Integer int32, String string (for BINARY, Storage binary, a string of any bytes),
// Double float64, Boolean bool,
// Decimal Decimal (unscaled int64) for a precision up to MaxLongDecimalPrecision (18) and
// Decimal128 (unscaled 128-bit) above it, Date Date (days since 1970-01-01), Timestamp Timestamp
// (microseconds since the Unix epoch, UTC; for a TIMESTAMP_NTZ column, Storage timestamp_ntz,
// the wall-clock time read as if it were UTC).
const (
	Long Kind = iota + 1
	Integer
	String
	Double
	Boolean
	DecimalKind
	DateKind
	TimestampKind
	// StructKind is a STRUCT of named fields; its Go value is a []any in field order. The event
	// log's origin column (spec.md §3) is one; user schemas declare it as STRUCT<name: TYPE, ...>.
	StructKind
	// ArrayKind is an ARRAY<T> (Type.Elem is T); its Go value is a []any of the elements in
	// order, each nil (a NULL element) or a value of T. An empty array is an empty, non-nil
	// []any; a NULL array is nil.
	ArrayKind
	// MapKind is a MAP<K, V> (Type.Key is K, Type.Value is V); its Go value is a Map, its entries
	// in order. Keys are never NULL; values may be. An empty map is an empty, non-nil Map.
	MapKind
)

// MaxDecimalPrecision is the largest DECIMAL precision, Spark's DecimalType.MAX_PRECISION: 38
// digits, whose unscaled values fit in 128 bits (Decimal128).
const MaxDecimalPrecision = 38

// Type is a column type: a Kind plus, for decimals, precision and scale, and for nested kinds
// the types they hold. Array elements and map values may always be NULL (Spark's containsNull
// and valueContainsNull true, Delta PROTOCOL.md "Array Type" and "Map Type").
type Type struct {
	Kind      Kind
	Precision int     // DECIMAL only: total digits, 1..MaxDecimalPrecision
	Scale     int     // DECIMAL only: digits after the point, 0..Precision
	Struct    *Schema // STRUCT only: the fields
	Elem      *Type   // ARRAY only: the element type
	Key       *Type   // MAP only: the key type
	Value     *Type   // MAP only: the value type
	// Storage, when set, is the narrower Spark type of the column, its values held in a wider
	// kind: StorageByte or StorageShort (Integer, int32 values; DDL TINYINT, SMALLINT),
	// StorageFloat (Double, float64 values holding a float32; DDL FLOAT) or StorageBinary
	// (String, values holding the raw bytes; DDL BINARY, see Binary). StorageTimestampNTZ
	// (TimestampKind) marks a TIMESTAMP_NTZ column.
	Storage string
}

// The values of Type.Storage (Delta PROTOCOL.md, "Primitive Types").
const (
	StorageByte  = "byte"
	StorageShort = "short"
	StorageFloat = "float"
	// StorageBinary marks a String column as BINARY, Spark's BinaryType (Delta type binary): its
	// string values hold bytes, any bytes, not text.
	StorageBinary = "binary"
	// StorageTimestampNTZ marks a TimestampKind column as TIMESTAMP_NTZ, a timestamp without
	// time zone (Delta PROTOCOL.md, "Timestamp without timezone (TimestampNtz)"; Spark's
	// TimestampNTZType): its Timestamp values are a local date and wall-clock time, stored as the
	// microseconds since 1970-01-01 00:00:00 of that wall clock read as if it were UTC, and it is
	// written and shown without a zone or offset.
	StorageTimestampNTZ = "timestamp_ntz"
)

// TimestampNTZ is the TIMESTAMP_NTZ column type.
var TimestampNTZ = Type{Kind: TimestampKind, Storage: StorageTimestampNTZ}

// Binary is the BINARY column type, Spark's BinaryType: a String kind with Storage binary, whose
// Go values are strings holding the bytes as they are (not UTF-8 text), so that every path that
// moves, compares or keys strings moves binary values unchanged. It is written as a Parquet
// BYTE_ARRAY without logical type and Delta type binary (Delta PROTOCOL.md, "Primitive Types").
var Binary = Type{Kind: String, Storage: StorageBinary}

// IsBinary reports whether t is BINARY (a String kind with Storage binary).
func (t Type) IsBinary() bool { return t.Kind == String && t.Storage == StorageBinary }

// IntRange returns the range [lo, hi] of the values of an Integer column: INT's 32 bits, or
// SMALLINT's 16 and TINYINT's 8 when Storage says so (Delta PROTOCOL.md, "Primitive Types":
// integer, short, byte). It is INT's range for any other type.
func (t Type) IntRange() (lo, hi int64) {
	switch t.Storage {
	case StorageShort:
		return math.MinInt16, math.MaxInt16
	case StorageByte:
		return math.MinInt8, math.MaxInt8
	}
	return math.MinInt32, math.MaxInt32
}

// IsNTZ reports whether t is TIMESTAMP_NTZ (a TimestampKind with Storage timestamp_ntz).
func (t Type) IsNTZ() bool { return t.Kind == TimestampKind && t.Storage == StorageTimestampNTZ }

// HasNTZ reports whether t is TIMESTAMP_NTZ or holds one (a STRUCT field, ARRAY element or MAP
// key or value at any depth): a Delta table with such a column needs the timestampNtz table
// feature (Delta PROTOCOL.md, "Timestamp without timezone (TimestampNtz)").
func (t Type) HasNTZ() bool { return t.Holds(Type.IsNTZ) }

// HasNTZ reports whether any column of s is or holds a TIMESTAMP_NTZ (see Type.HasNTZ).
func (s Schema) HasNTZ() bool { return s.Holds(Type.IsNTZ) }

// Holds reports whether t satisfies is, or a type nested in it does: a STRUCT's fields, an
// ARRAY's elements, a MAP's keys and values, at any depth.
func (t Type) Holds(is func(Type) bool) bool {
	switch {
	case is(t):
		return true
	case t.Kind == StructKind && t.Struct != nil:
		return t.Struct.Holds(is)
	case t.Kind == ArrayKind && t.Elem != nil:
		return t.Elem.Holds(is)
	case t.Kind == MapKind && t.Key != nil && t.Value != nil:
		return t.Key.Holds(is) || t.Value.Holds(is)
	}
	return false
}

// Holds reports whether the type of any column of s holds a type that satisfies is (see
// Type.Holds).
func (s Schema) Holds(is func(Type) bool) bool {
	for _, f := range s.Fields {
		if f.Type.Holds(is) {
			return true
		}
	}
	return false
}

// Equal reports whether two types are the same, comparing STRUCT fields deeply.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind || t.Precision != o.Precision || t.Scale != o.Scale || t.Storage != o.Storage {
		return false
	}
	switch t.Kind {
	case StructKind:
		return t.Struct != nil && o.Struct != nil && t.Struct.Equal(*o.Struct)
	case ArrayKind:
		return t.Elem != nil && o.Elem != nil && t.Elem.Equal(*o.Elem)
	case MapKind:
		return t.Key != nil && o.Key != nil && t.Value != nil && o.Value != nil && t.Key.Equal(*o.Key) && t.Value.Equal(*o.Value)
	}
	return true
}

// ArrayOf returns the type ARRAY<elem>.
func ArrayOf(elem Type) Type { return Type{Kind: ArrayKind, Elem: &elem} }

// MapOf returns the type MAP<key, value>.
func MapOf(key, value Type) Type { return Type{Kind: MapKind, Key: &key, Value: &value} }

// Nested reports whether the type is a STRUCT, an ARRAY or a MAP.
func (t Type) Nested() bool { return t.Kind == StructKind || t.Kind == ArrayKind || t.Kind == MapKind }

// MapEntry is one entry of a MAP value: Key is never nil, Value is nil for a NULL value.
type MapEntry struct {
	Key, Value any
}

// Map is the Go value of a MAP column: its entries in the order they were written or read (the
// order of the key_value entries of a Parquet MAP, LogicalTypes.md "Maps"). Keys are distinct.
type Map []MapEntry

// Decimal is the value of a DECIMAL(p,s) column with p up to MaxLongDecimalPrecision: the
// unscaled integer (25.50 in DECIMAL(10,2) is 2550). A wider DECIMAL's values are Decimal128.
type Decimal int64

// Date is the value of a DATE column: days since 1970-01-01.
type Date int32

// Timestamp is the value of a TIMESTAMP column: microseconds since 1970-01-01T00:00:00Z.
type Timestamp int64

// Field is one column of a schema. Nullable is true for every column Tributary writes.
type Field struct {
	Name     string
	Type     Type
	Nullable bool
}

// Schema is an ordered list of columns.
type Schema struct {
	Fields []Field
}

// DDL returns the type in Spark DDL form: BIGINT, INT, STRING, BINARY, DOUBLE, BOOLEAN, DECIMAL(p,s),
// DATE, TIMESTAMP, TIMESTAMP_NTZ, STRUCT<a: INT, b: STRING>, ARRAY<INT>, MAP<STRING, BIGINT> (as Spark's
// DataType.sql prints them, with ": " between a field's name and type).
func (t Type) DDL() string {
	switch t.Storage {
	case StorageByte:
		return "TINYINT"
	case StorageShort:
		return "SMALLINT"
	case StorageFloat:
		return "FLOAT"
	case StorageBinary:
		return "BINARY"
	case StorageTimestampNTZ:
		return "TIMESTAMP_NTZ"
	}
	switch t.Kind {
	case Long:
		return "BIGINT"
	case Integer:
		return "INT"
	case String:
		return "STRING"
	case Double:
		return "DOUBLE"
	case Boolean:
		return "BOOLEAN"
	case DecimalKind:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case DateKind:
		return "DATE"
	case TimestampKind:
		return "TIMESTAMP"
	case StructKind:
		parts := make([]string, len(t.Struct.Fields))
		for i, f := range t.Struct.Fields {
			parts[i] = DDLName(f.Name) + ": " + f.Type.DDL()
		}
		return "STRUCT<" + strings.Join(parts, ", ") + ">"
	case ArrayKind:
		if t.Elem == nil {
			return "ARRAY<?>"
		}
		return "ARRAY<" + t.Elem.DDL() + ">"
	case MapKind:
		if t.Key == nil || t.Value == nil {
			return "MAP<?>"
		}
		return "MAP<" + t.Key.DDL() + ", " + t.Value.DDL() + ">"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int(t.Kind))
}

// SparkName returns the type's name in a Delta schemaString: long, integer, string, binary, double,
// boolean, decimal(p,s), date, timestamp, timestamp_ntz (Delta PROTOCOL.md, "Primitive Types"); struct, array
// and map for nested types, whose schemaString is a JSON object (see Schema.SparkJSON).
func (t Type) SparkName() string {
	if t.Storage != "" {
		return t.Storage
	}
	switch t.Kind {
	case Long:
		return "long"
	case Integer:
		return "integer"
	case String:
		return "string"
	case Double:
		return "double"
	case Boolean:
		return "boolean"
	case DecimalKind:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case DateKind:
		return "date"
	case TimestampKind:
		return "timestamp"
	case StructKind:
		return "struct"
	case ArrayKind:
		return "array"
	case MapKind:
		return "map"
	}
	return "unknown"
}

// Index returns the position of the column named name (exact, case-sensitive match), or -1.
func (s Schema) Index(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Names returns the column names in order.
func (s Schema) Names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// DDL returns the schema as a Spark DDL string ("a BIGINT, b STRING").
func (s Schema) DDL() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = DDLName(f.Name) + " " + f.Type.DDL()
	}
	return strings.Join(parts, ", ")
}

// DDLName returns a column name as DDL writes it: as it is when it is a plain identifier (a letter
// or _, then letters, digits or _), else in backticks (`Company Name`, a backtick doubled), as
// Spark SQL quotes names.
func DDLName(name string) string {
	plain := name != ""
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// Equal reports whether two schemas have the same column names and types in the same order.
func (s Schema) Equal(o Schema) bool {
	if len(s.Fields) != len(o.Fields) {
		return false
	}
	for i := range s.Fields {
		if s.Fields[i].Name != o.Fields[i].Name || !s.Fields[i].Type.Equal(o.Fields[i].Type) {
			return false
		}
	}
	return true
}

// Select returns the schema of the named columns, in the order given; an unknown name is an error.
func (s Schema) Select(names []string) (Schema, []int, error) {
	out := Schema{}
	idx := make([]int, 0, len(names))
	for _, n := range names {
		i := s.Index(n)
		if i < 0 {
			return Schema{}, nil, fmt.Errorf("schema: no column %q (columns: %s)", n, strings.Join(s.Names(), ", "))
		}
		out.Fields = append(out.Fields, s.Fields[i])
		idx = append(idx, i)
	}
	return out, idx, nil
}
