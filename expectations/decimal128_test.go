package expectations

import (
	"strings"
	"testing"

	"tributary/schema"
)

// TestWideDecimalColumns: an expression that reads a DECIMAL of more than 18 digits (or a STRUCT
// holding one) is refused with the column and the fix, since a float would not hold its value
// exactly; an expression over the other columns of such a table compiles and runs.
func TestWideDecimalColumns(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("id BIGINT, amount DECIMAL(38,18), s STRUCT<x: DECIMAL(20,2)>")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ code, col string }{
		{"amount > 0", "column amount is DECIMAL(38,18)"},
		{"s.x != nil", "column s is STRUCT<x: DECIMAL(20,2)>"},
		{"len($env) > 0", "column amount is DECIMAL(38,18)"},
	} {
		_, err := Compile(c.code, s)
		if err == nil || !strings.Contains(err.Error(), c.col) || !strings.Contains(err.Error(), "check it in a SQL dataset instead") {
			t.Errorf("Compile(%q): %v, want an error saying %q and how to fix it", c.code, err, c.col)
		}
	}
	p, err := Compile("id > 1", s)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := schema.ParseDecimal128("12345678901234567890.123456789012345678", s.Fields[1].Type)
	set := &Set{Dataset: "d", Schema: s, Rules: []Rule{{Name: "big_id", OnViolation: Drop, Program: p}}}
	kept, _, err := set.Check([][]any{{int64(1), d, nil}, {int64(2), d, nil}})
	if err != nil || len(kept) != 1 || kept[0][1] != d {
		t.Errorf("kept %v, %v; want row 2 with its DECIMAL(38,18) value", kept, err)
	}
}
