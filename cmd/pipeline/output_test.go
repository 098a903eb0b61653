package main

import (
	"strings"
	"testing"

	"tributary/schema"
)

// TestWriteRowsTable: the table format puts each value on one line, a line break as \n, a tab as
// \t and a backslash as \\, so that a value holding a backslash and an n reads apart from one
// holding a line break; columns line up by display width, a wide (East Asian) character taking
// two columns.
func TestWriteRowsTable(t *testing.T) {
	t.Parallel()
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "note", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "k", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
	rows := [][]any{
		{int64(1), "a\nb", "x"},
		{int64(2), `a\nb`, "y"},
		{int64(3), "日本", "z"},
		{int64(4), "t\tu", nil},
	}
	var b strings.Builder
	if err := writeRows(&b, "table", s, rows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`id | note  | k`,
		`---+-------+-----`,
		`1  | a\nb  | x`,
		`2  | a\\nb | y`,
		`3  | 日本  | z`,
		`4  | t\tu  | NULL`,
		`(4 row(s))`,
		``,
	}, "\n")
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}
