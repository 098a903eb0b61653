package schema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

type sparkField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
	Metadata map[string]any  `json:"metadata"`
}

type sparkStruct struct {
	Type   string       `json:"type"`
	Fields []sparkField `json:"fields"`
}

// SparkJSON renders the schema as a Delta schemaString: a Spark StructType in JSON
// (Delta PROTOCOL.md, "Schema Serialization Format").
func (s Schema) SparkJSON() string {
	b, _ := json.Marshal(s.sparkStruct())
	return string(b)
}

func (s Schema) sparkStruct() sparkStruct {
	st := sparkStruct{Type: "struct", Fields: make([]sparkField, len(s.Fields))}
	for i, f := range s.Fields {
		tj, _ := json.Marshal(f.Type.sparkType())
		st.Fields[i] = sparkField{Name: f.Name, Type: tj, Nullable: f.Nullable, Metadata: map[string]any{}}
	}
	return st
}

// sparkArray and sparkMap are the schemaString forms of ARRAY and MAP (Delta PROTOCOL.md, "Array
// Type" and "Map Type"); field order is Spark's.
type sparkArray struct {
	Type         string `json:"type"`
	ElementType  any    `json:"elementType"`
	ContainsNull bool   `json:"containsNull"`
}

type sparkMap struct {
	Type              string `json:"type"`
	KeyType           any    `json:"keyType"`
	ValueType         any    `json:"valueType"`
	ValueContainsNull bool   `json:"valueContainsNull"`
}

// sparkType is the JSON value of the type in a schemaString: a name for a primitive type, an
// object for a nested one.
func (t Type) sparkType() any {
	switch t.Kind {
	case StructKind:
		return t.Struct.sparkStruct()
	case ArrayKind:
		return sparkArray{Type: "array", ElementType: t.Elem.sparkType(), ContainsNull: true}
	case MapKind:
		return sparkMap{Type: "map", KeyType: t.Key.sparkType(), ValueType: t.Value.sparkType(), ValueContainsNull: true}
	}
	return t.SparkName()
}

var decimalName = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// ParseSparkJSON reads a Delta schemaString, nested struct, array and map types included at any
// depth (Delta PROTOCOL.md, "Schema Serialization Format"; containsNull and valueContainsNull are
// read as true, since every value Tributary holds may be NULL). Unsupported types are an error
// naming the column and the type, so that a table Tributary cannot read is refused rather than
// read wrong.
func ParseSparkJSON(s string) (Schema, error) {
	var st sparkStruct
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return Schema{}, fmt.Errorf("schema: schemaString is not valid JSON: %w", err)
	}
	return fromSparkStruct(st, false)
}

// PhysicalNameKey is the field metadata key of a column's physical name: the name its values
// have in the table's data files when the table uses column mapping (Delta PROTOCOL.md, "Column
// Mapping").
const PhysicalNameKey = "delta.columnMapping.physicalName"

// ParsePhysicalSparkJSON reads a Delta schemaString as ParseSparkJSON does, but names every field,
// nested struct fields included (inside arrays and maps too), by its physical name: the
// PhysicalNameKey of its metadata, or its name when it has none (Delta PROTOCOL.md, "Column
// Mapping": a column-mapped table's data files, partition values and statistics name columns so).
// The result has the shape of ParseSparkJSON's, field for field.
func ParsePhysicalSparkJSON(s string) (Schema, error) {
	var st sparkStruct
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return Schema{}, fmt.Errorf("schema: schemaString is not valid JSON: %w", err)
	}
	return fromSparkStruct(st, true)
}

// fromSparkStruct reads the fields of a struct of a schemaString, by their physical names when
// physical is set (ParsePhysicalSparkJSON).
func fromSparkStruct(st sparkStruct, physical bool) (Schema, error) {
	if st.Type != "struct" {
		return Schema{}, fmt.Errorf("schema: schemaString has type %q, want \"struct\"", st.Type)
	}
	out := Schema{}
	for _, f := range st.Fields {
		t, err := typeFromSparkJSON(f.Type, physical)
		if err != nil {
			return Schema{}, fmt.Errorf("schema: column %q: %w", f.Name, err)
		}
		name := f.Name
		if pn, ok := f.Metadata[PhysicalNameKey].(string); physical && ok && pn != "" {
			name = pn
		}
		out.Fields = append(out.Fields, Field{Name: name, Type: t, Nullable: f.Nullable})
	}
	return out, nil
}

// typeFromSparkJSON reads the "type" of a schemaString field, array element or map key/value;
// physical: as fromSparkStruct.
func typeFromSparkJSON(raw json.RawMessage, physical bool) (Type, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return typeFromSparkName(name)
	}
	var head struct {
		Type         string          `json:"type"`
		ElementType  json.RawMessage `json:"elementType"`
		KeyType      json.RawMessage `json:"keyType"`
		ValueType    json.RawMessage `json:"valueType"`
		ContainsNull *bool           `json:"containsNull"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Type{}, fmt.Errorf("type %s is not a type name or a nested type object", string(raw))
	}
	switch head.Type {
	case "struct":
		var inner sparkStruct
		if err := json.Unmarshal(raw, &inner); err != nil {
			return Type{}, fmt.Errorf("struct type %s: %w", string(raw), err)
		}
		is, err := fromSparkStruct(inner, physical)
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: StructKind, Struct: &is}, nil
	case "array":
		if head.ElementType == nil {
			return Type{}, fmt.Errorf("array type %s has no elementType", string(raw))
		}
		et, err := typeFromSparkJSON(head.ElementType, physical)
		if err != nil {
			return Type{}, fmt.Errorf("array element: %w", err)
		}
		return ArrayOf(et), nil
	case "map":
		if head.KeyType == nil || head.ValueType == nil {
			return Type{}, fmt.Errorf("map type %s needs keyType and valueType", string(raw))
		}
		kt, err := typeFromSparkJSON(head.KeyType, physical)
		if err != nil {
			return Type{}, fmt.Errorf("map key: %w", err)
		}
		vt, err := typeFromSparkJSON(head.ValueType, physical)
		if err != nil {
			return Type{}, fmt.Errorf("map value: %w", err)
		}
		return MapOf(kt, vt), nil
	}
	return Type{}, fmt.Errorf("nested type %s is not supported", string(raw))
}

func typeFromSparkName(n string) (Type, error) {
	switch n {
	case "long":
		return Type{Kind: Long}, nil
	case "integer":
		return Type{Kind: Integer}, nil
	case "string":
		return Type{Kind: String}, nil
	case "double":
		return Type{Kind: Double}, nil
	case "boolean":
		return Type{Kind: Boolean}, nil
	case "date":
		return Type{Kind: DateKind}, nil
	case "timestamp":
		return Type{Kind: TimestampKind}, nil
	case StorageByte, StorageShort:
		return Type{Kind: Integer, Storage: n}, nil
	case StorageFloat:
		return Type{Kind: Double, Storage: n}, nil
	case StorageBinary:
		return Type{Kind: String, Storage: n}, nil
	case StorageTimestampNTZ:
		return TimestampNTZ, nil
	}
	if m := decimalName.FindStringSubmatch(n); m != nil {
		p, _ := strconv.Atoi(m[1])
		sc, _ := strconv.Atoi(m[2])
		if p < 1 || p > MaxDecimalPrecision || sc > p {
			return Type{}, fmt.Errorf("type %s is not a valid decimal: its precision must be 1..%d and its scale 0..precision (Spark's DecimalType)", n, MaxDecimalPrecision)
		}
		return Type{Kind: DecimalKind, Precision: p, Scale: sc}, nil
	}
	return Type{}, fmt.Errorf("type %q is not supported yet", n)
}
