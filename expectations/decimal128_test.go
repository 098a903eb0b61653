package expectations

import (
	"strings"
	"testing"

	"tributary/schema"
)

// TestWideDecimalColumns: an expression may check a DECIMAL of more than 18 digits (a column, or
// one inside a STRUCT) for NULL and compare its exact text; comparing it with a number or
// computing with it is refused with the column and the fix, since a float would not hold its
// value exactly.
func TestWideDecimalColumns(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id BIGINT, amount DECIMAL(38,18), s STRUCT<x: DECIMAL(20,2)>")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ code, col string }{
		{"amount > 0", "amount DECIMAL(38,18)"},
		{"amount + 1 != nil", "amount DECIMAL(38,18)"},
		{"s.x == 3", "s STRUCT<x: DECIMAL(20,2)>"},
	} {
		_, err := Compile(c.code, s)
		if err == nil || !strings.Contains(err.Error(), "a DECIMAL of more than 18 digits ("+c.col+") can only be checked for NULL") ||
			!strings.Contains(err.Error(), "in a SQL dataset") {
			t.Errorf("Compile(%q): %v, want an error naming %q and how to fix it", c.code, err, c.col)
		}
	}
	d, _ := schema.ParseDecimal128("12345678901234567890.123456789012345678", s.Fields[1].Type)
	neg, _ := schema.ParseDecimal128("-0.000000000000000001", s.Fields[1].Type)
	x, _ := schema.ParseDecimal128("7.50", s.Fields[2].Type.Struct.Fields[0].Type)
	rows := [][]any{
		{int64(1), d, []any{x}},
		{int64(2), nil, []any{nil}},
		{int64(3), neg, nil},
	}
	for _, c := range []struct {
		code string
		want []int64 // the ids of the rows kept
	}{
		{"amount != nil", []int64{1, 3}},
		{"amount == nil", []int64{2}},
		{`string(amount) == "12345678901234567890.123456789012345678"`, []int64{1}},
		{`string(amount) == "-0.000000000000000001"`, []int64{3}},
		{"s?.x != nil", []int64{1}},
		{"id > 1", []int64{2, 3}},
	} {
		p, err := Compile(c.code, s)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.code, err)
			continue
		}
		set := &Set{Dataset: "d", Schema: s, Rules: []Rule{{Name: "r", OnViolation: Drop, Program: p}}}
		kept, _, err := set.Check(rows)
		if err != nil {
			t.Errorf("%s: %v", c.code, err)
			continue
		}
		var ids []int64
		for _, r := range kept {
			ids = append(ids, r[0].(int64))
		}
		if !slicesEqual(ids, c.want) {
			t.Errorf("%s kept ids %v, want %v", c.code, ids, c.want)
		}
	}
	// The rows keep their values: the expression sees text, the table the DECIMAL(38,18).
	p, _ := Compile("amount != nil", s)
	kept, _, _ := (&Set{Dataset: "d", Schema: s, Rules: []Rule{{Name: "r", OnViolation: Drop, Program: p}}}).Check(rows[:1])
	if len(kept) != 1 || kept[0][1] != d {
		t.Errorf("kept %v, want row 1 with its DECIMAL(38,18) value", kept)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
