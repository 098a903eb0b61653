package spec

import (
	"strings"
	"testing"
)

// TestBinaryColumns: a source schema may declare BINARY columns, in every file format and for
// postgres, and a schema hint may pin one; a BINARY column cannot be a partition column (its
// value would be text in the Delta log), and the error says what to do instead.
func TestBinaryColumns(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "csv", "parquet"} {
		text := "name: p\ndatasets:\n  - name: e\n    source: {format: " + format + `, path: in, schema: "id BIGINT, payload BINARY"}` + "\n"
		p, err := Parse("p.yaml", []byte(text), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if f := p.Dataset("e").Schema.Fields[1]; !f.Type.IsBinary() {
			t.Errorf("%s: payload is %s, want BINARY", format, f.Type.DDL())
		}
	}
	hinted := "name: p\ndatasets:\n  - name: e\n    source: {format: json, path: in, schema_hints: \"payload BINARY\"}\n"
	p, err := Parse("p.yaml", []byte(hinted), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Dataset("e").Source.SchemaHints; len(h.Fields) != 1 || !h.Fields[0].Type.IsBinary() {
		t.Errorf("schema hints %s, want payload BINARY", h.DDL())
	}
	partitioned := `name: p
datasets:
  - name: e
    partition_by: [payload]
    source: {format: json, path: in, schema: "id BIGINT, payload BINARY"}
`
	_, err = Parse("p.yaml", []byte(partitioned), nil, nil)
	want := "p.yaml:4:20: datasets[0].partition_by[0]: column payload is BINARY, which cannot be a partition column"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "hint: partition by another column") {
		t.Errorf("err = %v, want %q with a hint", err, want)
	}
}

// TestRefusedTypesInSchema: CHAR(n) and VARCHAR(n) in a source schema are refused as Spark
// refuses them in a read schema, INTERVAL and VOID as a table cannot hold them; each error names
// file:line:column of the type and says what to write instead.
func TestRefusedTypesInSchema(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ddl, want string }{
		{"id BIGINT, name VARCHAR(20)", `p.yaml:4:63: datasets[0].source.schema: invalid schema: type VARCHAR(20) is not supported: declare the column STRING (Spark refuses CHAR and VARCHAR in a schema the data is read with, "char/varchar type can only be used in the table schema", and its readers see a table's CHAR and VARCHAR columns as STRING)`},
		{"id BIGINT, code CHAR(3)", `p.yaml:4:63: datasets[0].source.schema: invalid schema: type CHAR(3) is not supported`},
		{"id BIGINT, took INTERVAL", `p.yaml:4:63: datasets[0].source.schema: invalid schema: type INTERVAL is not supported`},
		{"id BIGINT, nothing VOID", `p.yaml:4:66: datasets[0].source.schema: invalid schema: type VOID is not supported`},
	} {
		text := "name: p\ndatasets:\n  - name: e\n    source: {format: json, path: in, schema: \"" + c.ddl + "\"}\n"
		_, err := Parse("p.yaml", []byte(text), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.ddl, err, c.want)
		}
	}
}
