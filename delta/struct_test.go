package delta

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"tributary/schema"
)

// structSchema is an event-log-like schema with a STRUCT column, and a STRUCT inside a STRUCT.
func structSchema() schema.Schema {
	inner := schema.Schema{Fields: []schema.Field{
		{Name: "x", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "at", Type: schema.Type{Kind: schema.TimestampKind}, Nullable: true},
	}}
	origin := schema.Schema{Fields: []schema.Field{
		{Name: "pipeline_name", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "inner", Type: schema.Type{Kind: schema.StructKind, Struct: &inner}, Nullable: true},
		{Name: "amount", Type: schema.Type{Kind: schema.DecimalKind, Precision: 10, Scale: 2}, Nullable: true},
	}}
	return schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "origin", Type: schema.Type{Kind: schema.StructKind, Struct: &origin}, Nullable: true},
		{Name: "msg", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
}

func structRows() [][]any {
	return [][]any{
		{int64(1), []any{"p1", []any{int64(7), ts("2024-01-31T10:00:00Z")}, schema.Decimal(-1250)}, "a"},
		{int64(2), []any{"p2", nil, nil}, "b"},                          // NULL inner struct
		{int64(3), nil, "c"},                                            // NULL struct
		{int64(4), []any{nil, []any{nil, nil}, schema.Decimal(5)}, nil}, // struct of NULLs
		{int64(5), []any{"zz", []any{int64(-1), nil}, nil}, "e"},
	}
}

func TestStructRoundTrip(t *testing.T) {
	t.Parallel()
	s := structSchema()
	tbl := New(t.TempDir())
	rows := structRows()
	a, err := tbl.WriteFile(s, rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tbl.ReadFile(a.Path, s)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, rows)

	// Delta PROTOCOL.md, "Per-file Statistics": nested statistics mirror the schema.
	want := `{"numRecords":5,` +
		`"minValues":{"id":1,"origin":{"pipeline_name":"p1","inner":{"x":-1,"at":"2024-01-31T10:00:00.000Z"},"amount":-12.50},"msg":"a"},` +
		`"maxValues":{"id":5,"origin":{"pipeline_name":"zz","inner":{"x":7,"at":"2024-01-31T10:00:00.000Z"},"amount":0.05},"msg":"e"},` +
		`"nullCount":{"id":0,"origin":{"pipeline_name":2,"inner":{"x":3,"at":4},"amount":3},"msg":1}}`
	if a.Stats != want {
		t.Errorf("stats\n got %s\nwant %s", a.Stats, want)
	}

	// A field missing from the file reads NULL; fields are matched by name.
	wider := structSchema()
	origin := *wider.Fields[1].Type.Struct
	origin.Fields = append([]schema.Field{{Name: "new", Type: schema.Type{Kind: schema.Integer}, Nullable: true}}, origin.Fields...)
	wider.Fields[1].Type.Struct = &origin
	got, err = tbl.ReadFile(a.Path, wider)
	if err != nil {
		t.Fatal(err)
	}
	if !sameValue(got[0][1], []any{nil, "p1", []any{int64(7), ts("2024-01-31T10:00:00Z")}, schema.Decimal(-1250)}) || got[2][1] != nil {
		t.Errorf("read with an added field: %v / %v", got[0][1], got[2][1])
	}

	// The Parquet schema: an OPTIONAL group with OPTIONAL fields, in schema order.
	f, err := os.Open(filepath.Join(tbl.Dir, a.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range pf.Root().Columns() {
		var walk func(c *parquet.Column)
		walk = func(c *parquet.Column) {
			if !c.Optional() {
				t.Errorf("column %v is not OPTIONAL", c.Path())
			}
			if c.Leaf() {
				paths = append(paths, strings.Join(c.Path(), "."))
			}
			for _, ch := range c.Columns() {
				walk(ch)
			}
		}
		walk(c)
	}
	if want := []string{"id", "origin.pipeline_name", "origin.inner.x", "origin.inner.at", "origin.amount", "msg"}; !slices.Equal(paths, want) {
		t.Errorf("leaf columns %v, want %v", paths, want)
	}
}

func TestStructErrors(t *testing.T) {
	t.Parallel()
	s := structSchema()
	tbl := New(t.TempDir())
	_, err := tbl.WriteFile(s, [][]any{{int64(1), []any{"only one field"}, "a"}})
	if err == nil || !strings.Contains(err.Error(), `column "origin.pipeline_name"`) || !strings.Contains(err.Error(), "STRUCT value of 3 fields") {
		t.Errorf("short struct value: %v", err)
	}
	_, err = tbl.WriteFile(s, [][]any{{int64(1), "not a struct", "a"}})
	if err == nil || !strings.Contains(err.Error(), "a string is not a STRUCT value") {
		t.Errorf("string for a struct: %v", err)
	}
	// A primitive column in the file cannot be read as a STRUCT.
	a, err := tbl.WriteFile(mustDDL(t, "origin STRING"), [][]any{{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.ReadFile(a.Path, schema.Schema{Fields: s.Fields[1:2]}); err == nil || !strings.Contains(err.Error(), "not a STRUCT") {
		t.Errorf("string read as a struct: %v", err)
	}
}

func TestStructTable(t *testing.T) {
	t.Parallel()
	s := structSchema()
	tbl := createTable(t, s)
	appendRows(t, tbl, structRows())
	snap := mustSnapshot(t, tbl, -1)
	if !snap.Metadata.Schema.Equal(s) {
		t.Errorf("schema read back %s, want %s", snap.Metadata.Schema.DDL(), s.DDL())
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, rows, structRows())
	_, changes, err := tbl.Changes(1, 1)
	if err != nil || len(changes) != 5 || !sameValue(changes[0][1], structRows()[0][1]) {
		t.Errorf("changes %v, %v", changes, err)
	}
	if os.Getenv("DELTACHECK") == "" {
		return
	}
	theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
	if got, want := canonical(s, theirs), canonical(s, rows); !slices.Equal(got, want) {
		t.Errorf("deltacheck rows:\n%s\nours:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
