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

// TestWriteRowsCSV: the csv format writes NULL as an empty field and the empty string as "", so
// that the two read apart (as Spark writes them, and as a csv `source:` reads them back); a
// field with a comma, a quote, a line end or leading white space is quoted, quotes doubled.
func TestWriteRowsCSV(t *testing.T) {
	t.Parallel()
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "note, text", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
	rows := [][]any{
		{int64(1), ""},
		{int64(2), nil},
		{nil, `say "hi", twice`},
		{int64(4), "a\nb"},
		{int64(5), " x"},
		{int64(6), "plain"},
	}
	var b strings.Builder
	if err := writeRows(&b, "csv", s, rows); err != nil {
		t.Fatal(err)
	}
	want := "id,\"note, text\"\n1,\"\"\n2,\n,\"say \"\"hi\"\", twice\"\n4,\"a\nb\"\n5,\" x\"\n6,plain\n"
	if b.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
}
