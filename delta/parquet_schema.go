package delta

import (
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// ParquetSchema returns the columns of the Parquet file at path, typed as ReadFile reads them:
// INT64 BIGINT, INT32 INT, DATE DATE, TIMESTAMP (any unit) and INT96 TIMESTAMP, DECIMAL(p,s)
// (p ≤ 18), DOUBLE and FLOAT DOUBLE, BOOLEAN, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY STRING, a
// group STRUCT. A repeated column (a list or a map) or a wider DECIMAL is an error naming it; so
// is a file that is not Parquet.
func ParquetSchema(path string) (s schema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = schema.Schema{}, fmt.Errorf("%s: the Parquet reader failed: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return schema.Schema{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return schema.Schema{}, err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return schema.Schema{}, fmt.Errorf("%s: %w", path, err)
	}
	return parquetFields(pf.Root().Columns(), "")
}

func parquetFields(cols []*parquet.Column, prefix string) (schema.Schema, error) {
	var out schema.Schema
	for _, c := range cols {
		name := prefix + c.Name()
		if c.Repeated() {
			return schema.Schema{}, fmt.Errorf("column %s is repeated (a list or a map), which is not supported yet", name)
		}
		if !c.Leaf() {
			inner, err := parquetFields(c.Columns(), name+".")
			if err != nil {
				return schema.Schema{}, err
			}
			out.Fields = append(out.Fields, schema.Field{Name: c.Name(), Type: schema.Type{Kind: schema.StructKind, Struct: &inner}, Nullable: true})
			continue
		}
		t, err := parquetType(c.Type())
		if err != nil {
			return schema.Schema{}, fmt.Errorf("column %s: %w", name, err)
		}
		out.Fields = append(out.Fields, schema.Field{Name: c.Name(), Type: t, Nullable: true})
	}
	return out, nil
}

func parquetType(ft parquet.Type) (schema.Type, error) {
	var lt format.LogicalTypeValue
	if l := ft.LogicalType(); l != nil {
		lt = l.Value
	}
	switch x := lt.(type) {
	case *format.DecimalType:
		if x.Precision < 1 || x.Precision > schema.MaxDecimalPrecision || x.Scale < 0 || x.Scale > x.Precision {
			return schema.Type{}, fmt.Errorf("DECIMAL(%d,%d) is not supported yet (precision above %d)", x.Precision, x.Scale, schema.MaxDecimalPrecision)
		}
		return schema.Type{Kind: schema.DecimalKind, Precision: int(x.Precision), Scale: int(x.Scale)}, nil
	case *format.DateType:
		return schema.Type{Kind: schema.DateKind}, nil
	case *format.TimestampType:
		return schema.Type{Kind: schema.TimestampKind}, nil
	case *format.TimeType:
		return schema.Type{}, fmt.Errorf("TIME is not supported")
	}
	switch ft.Kind() {
	case parquet.Int64:
		return schema.Type{Kind: schema.Long}, nil
	case parquet.Int32:
		return schema.Type{Kind: schema.Integer}, nil
	case parquet.Int96:
		return schema.Type{Kind: schema.TimestampKind}, nil
	case parquet.Double, parquet.Float:
		return schema.Type{Kind: schema.Double}, nil
	case parquet.Boolean:
		return schema.Type{Kind: schema.Boolean}, nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return schema.Type{Kind: schema.String}, nil
	}
	return schema.Type{}, fmt.Errorf("the Parquet type %s is not supported", ft.Kind())
}
