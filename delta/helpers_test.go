package delta

import (
	"math"
	"testing"

	"tributary/schema"
)

// mustDDL parses a DDL schema or fails the test.
func mustDDL(t testing.TB, ddl string) schema.Schema {
	t.Helper()
	s, err := schema.ParseDDL(ddl)
	if err != nil {
		t.Fatalf("ParseDDL(%q): %v", ddl, err)
	}
	return s
}

// createTable creates a table in a new temporary folder and returns it with its version 0.
func createTable(t testing.TB, s schema.Schema, partitionColumns ...string) *Table {
	t.Helper()
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s, PartitionColumns: partitionColumns})
	v, err := tx.Commit("CREATE TABLE", map[string]any{"partitionBy": partitionColumns})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	if v != 0 {
		t.Fatalf("create table: version %d, want 0", v)
	}
	return tbl
}

// appendRows writes rows as one file and commits it as a WRITE; it returns the version.
func appendRows(t testing.TB, tbl *Table, rows [][]any) (int64, Add) {
	t.Helper()
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	a, err := tbl.WriteFile(snap.Metadata.Schema, rows)
	if err != nil {
		t.Fatalf("write file: %v", err)
	}
	tx := tbl.Begin(snap)
	tx.Add(a)
	v, err := tx.Commit("WRITE", map[string]any{"mode": "Append"})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return v, a
}

// sameValue compares two row values, with NaN equal to NaN and STRUCT values ([]any) field by
// field.
func sameValue(a, b any) bool {
	if x, ok := a.([]any); ok {
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if _, ok := b.([]any); ok {
		return false
	}
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok && math.IsNaN(x) && math.IsNaN(y) {
			return true
		}
		if y, ok := b.(float64); ok {
			return x == y && math.Signbit(x) == math.Signbit(y)
		}
		return false
	}
	return schema.Equal(a, b) && (a == nil || b == nil || sameType(a, b))
}

func sameType(a, b any) bool {
	switch a.(type) {
	case int64:
		_, ok := b.(int64)
		return ok
	case int32:
		_, ok := b.(int32)
		return ok
	case string:
		_, ok := b.(string)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	case schema.Decimal:
		_, ok := b.(schema.Decimal)
		return ok
	case schema.Date:
		_, ok := b.(schema.Date)
		return ok
	case schema.Timestamp:
		_, ok := b.(schema.Timestamp)
		return ok
	}
	return false
}

// assertRows fails the test unless got and want hold the same rows in the same order.
func assertRows(t testing.TB, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("row %d: got %d values %v, want %d %v", i, len(got[i]), got[i], len(want[i]), want[i])
		}
		for j := range want[i] {
			if !sameValue(got[i][j], want[i][j]) {
				t.Errorf("row %d column %d: got %#v (%T), want %#v (%T)", i, j, got[i][j], got[i][j], want[i][j], want[i][j])
			}
		}
	}
}

func ts(s string) schema.Timestamp {
	v, err := schema.ParseTimestamp(s)
	if err != nil {
		panic(err)
	}
	return v
}

func date(s string) schema.Date {
	v, err := schema.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return v
}
