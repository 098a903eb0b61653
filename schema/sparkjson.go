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
		var tj []byte
		if f.Type.Kind == StructKind {
			tj, _ = json.Marshal(f.Type.Struct.sparkStruct())
		} else {
			tj, _ = json.Marshal(f.Type.SparkName())
		}
		st.Fields[i] = sparkField{Name: f.Name, Type: tj, Nullable: f.Nullable, Metadata: map[string]any{}}
	}
	return st
}

var decimalName = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// ParseSparkJSON reads a Delta schemaString. Nested or unsupported types are an error naming the
// column and the type, so that a table Tributary cannot read is refused rather than read wrong.
func ParseSparkJSON(s string) (Schema, error) {
	var st sparkStruct
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return Schema{}, fmt.Errorf("schema: schemaString is not valid JSON: %w", err)
	}
	return fromSparkStruct(st)
}

func fromSparkStruct(st sparkStruct) (Schema, error) {
	if st.Type != "struct" {
		return Schema{}, fmt.Errorf("schema: schemaString has type %q, want \"struct\"", st.Type)
	}
	out := Schema{}
	for _, f := range st.Fields {
		var name string
		if err := json.Unmarshal(f.Type, &name); err != nil {
			var inner sparkStruct
			if json.Unmarshal(f.Type, &inner) == nil && inner.Type == "struct" {
				is, err := fromSparkStruct(inner)
				if err != nil {
					return Schema{}, fmt.Errorf("schema: column %q: %w", f.Name, err)
				}
				out.Fields = append(out.Fields, Field{Name: f.Name, Type: Type{Kind: StructKind, Struct: &is}, Nullable: f.Nullable})
				continue
			}
			return Schema{}, fmt.Errorf("schema: column %q has a nested type (%s), which is not supported yet", f.Name, string(f.Type))
		}
		t, err := typeFromSparkName(name)
		if err != nil {
			return Schema{}, fmt.Errorf("schema: column %q: %w", f.Name, err)
		}
		out.Fields = append(out.Fields, Field{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return out, nil
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
	}
	if m := decimalName.FindStringSubmatch(n); m != nil {
		p, _ := strconv.Atoi(m[1])
		sc, _ := strconv.Atoi(m[2])
		if p > MaxDecimalPrecision {
			return Type{}, fmt.Errorf("type %s is not supported yet (precision above %d)", n, MaxDecimalPrecision)
		}
		return Type{Kind: DecimalKind, Precision: p, Scale: sc}, nil
	}
	if n == "timestamp_ntz" {
		return Type{}, fmt.Errorf("type %q (the timestampNtz table feature) is not supported yet", n)
	}
	return Type{}, fmt.Errorf("type %q is not supported yet", n)
}
