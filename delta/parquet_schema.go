package delta

import (
	"errors"
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// ParquetSchema returns the columns of the Parquet file at path, typed as ReadFile reads them:
// INT64 BIGINT, INT32 INT (unsigned: UINT_32 BIGINT, UINT_64 DECIMAL(20,0)), DATE DATE, TIMESTAMP (any unit) and INT96 TIMESTAMP, DECIMAL(p,s)
// (p ≤ 38), DOUBLE and FLOAT DOUBLE, BOOLEAN, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY STRING, a
// LIST ARRAY, a MAP MAP, another group STRUCT (see columnType). A DECIMAL of precision above 38
// or a list or map of another shape is an error naming the column; so is a file that is not
// Parquet.
func ParquetSchema(path string) (s schema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = schema.Schema{}, fmt.Errorf("%s: the Parquet reader failed: %v", path, r)
		}
	}()
	f, pf, err := openParquet(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return schema.Schema{}, err // names the path already
		}
		return schema.Schema{}, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	return parquetFields(pf.Root().Columns(), "")
}

func parquetFields(cols []*parquet.Column, prefix string) (schema.Schema, error) {
	var out schema.Schema
	for _, c := range cols {
		t, err := columnType(c, prefix+c.Name(), false)
		if err != nil {
			return schema.Schema{}, err
		}
		out.Fields = append(out.Fields, schema.Field{Name: c.Name(), Type: t, Nullable: true})
	}
	return out, nil
}

// columnType types the file column c (named name, for errors): a LIST group (or a repeated field
// outside one, a legacy 2-level list) ARRAY of its element, a MAP group MAP of its key and value
// (Parquet LogicalTypes.md, "Lists" and "Maps"), another group STRUCT, a primitive as parquetType
// says. asElement types a repeated node that is itself the element of a list.
func columnType(c *parquet.Column, name string, asElement bool) (schema.Type, error) {
	switch {
	case c.Repeated() && !asElement:
		et, err := columnType(c, name, true)
		if err != nil {
			return schema.Type{}, err
		}
		return schema.ArrayOf(et), nil
	case logicalIs[*format.ListType](c):
		rep, elem, err := listParts(c)
		if err != nil {
			return schema.Type{}, fmt.Errorf("column %s %w", name, err)
		}
		et, err := columnType(elem, name+"."+rep.Name(), elem == rep)
		if err != nil {
			return schema.Type{}, err
		}
		return schema.ArrayOf(et), nil
	case logicalIs[*format.MapType](c):
		_, key, value, err := mapParts(c)
		if err != nil {
			return schema.Type{}, fmt.Errorf("column %s %w", name, err)
		}
		kt, err := columnType(key, name+".key", false)
		if err != nil {
			return schema.Type{}, err
		}
		vt, err := columnType(value, name+".value", false)
		if err != nil {
			return schema.Type{}, err
		}
		return schema.MapOf(kt, vt), nil
	case !c.Leaf():
		inner, err := parquetFields(c.Columns(), name+".")
		if err != nil {
			return schema.Type{}, err
		}
		return schema.Type{Kind: schema.StructKind, Struct: &inner}, nil
	}
	t, err := parquetType(c.Type())
	if err != nil {
		return schema.Type{}, fmt.Errorf("column %s: %w", name, err)
	}
	return t, nil
}

func parquetType(ft parquet.Type) (schema.Type, error) {
	var lt format.LogicalTypeValue
	if l := ft.LogicalType(); l != nil {
		lt = l.Value
	}
	switch x := lt.(type) {
	case *format.DecimalType:
		if x.Precision < 1 || x.Precision > schema.MaxDecimalPrecision || x.Scale < 0 || x.Scale > x.Precision {
			return schema.Type{}, fmt.Errorf("DECIMAL(%d,%d) is not a valid decimal: its precision must be 1..%d and its scale 0..precision", x.Precision, x.Scale, schema.MaxDecimalPrecision)
		}
		return schema.Type{Kind: schema.DecimalKind, Precision: int(x.Precision), Scale: int(x.Scale)}, nil
	case *format.DateType:
		return schema.Type{Kind: schema.DateKind}, nil
	case *format.TimestampType:
		return schema.Type{Kind: schema.TimestampKind}, nil
	case *format.TimeType:
		return schema.Type{}, fmt.Errorf("TIME is not supported")
	case *format.IntType:
		// Unsigned integers (UINT_8 to UINT_64, as pyarrow and DuckDB write uint columns) take
		// a type that holds every value, as Spark's Parquet reader types them: UINT_32 BIGINT,
		// UINT_64 DECIMAL(20,0) (UINT_8 and UINT_16 INT).
		if !x.IsSigned {
			switch {
			case x.BitWidth == 64:
				return schema.Type{Kind: schema.DecimalKind, Precision: 20}, nil
			case x.BitWidth == 32:
				return schema.Type{Kind: schema.Long}, nil
			}
		}
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
