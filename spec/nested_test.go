package spec

import (
	"strings"
	"testing"
)

// TestNestedColumns: a json source may declare ARRAY and MAP columns, nested in each other and
// in structs; a csv source may not, and none may be a partition column.
func TestNestedColumns(t *testing.T) {
	t.Parallel()
	ddl := "id BIGINT, op STRING, seq BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, ARRAY<STRUCT<x: INT>>>"
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#SCHEMA": `      schema: "` + ddl + `"`})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("bronze").Schema.DDL(); got != ddl {
		t.Fatalf("schema %s", got)
	}
	_, err = Parse("p.yaml", []byte(build(map[string]string{"#FORMAT": "      format: csv", "#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT, tags ARRAY<STRING>, m MAP<STRING, INT>"`})), nil, nil)
	for _, want := range []string{"column tags: ARRAY columns are not supported for format csv", "column m: MAP columns are not supported for format csv"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	spec := `name: p
datasets:
  - name: e
    partition_by: [tags]
    source: {format: json, path: in, schema: "id BIGINT, tags ARRAY<STRING>"}
`
	_, err = Parse("p.yaml", []byte(spec), nil, nil)
	if want := "p.yaml:4:20: datasets[0].partition_by[0]: column tags is of type ARRAY<STRING>, which cannot be a partition column"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
