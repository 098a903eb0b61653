package expectations

import (
	"testing"

	"tributary/schema"
)

// TestStrMatchAgreesWithMachine: every expression of strMatch's shapes is recognised, and its
// answer equals the virtual machine's for strings, the empty string, near misses and NULL; other
// shapes are left to the machine.
func TestStrMatchAgreesWithMachine(t *testing.T) {
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "op", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "name", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
	fast := []string{`op == "D"`, `"D" == op`, `op != "D"`, `op in ["I", "U", "D"]`, `op not in ["I", "U"]`, `not (op in ["T"])`, `op in []`, `name == ""`}
	slow := []string{`op == "D" and id > 0`, `lower(op) == "d"`, `op == name`, `id == 1`, `op in ["I", name]`, `not (op == "D")`}
	values := []any{"D", "I", "U", "T", "", "d", "DD", "é", nil}
	for _, code := range append(fast, slow...) {
		p, err := Compile(code, s)
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		isFast := false
		for _, f := range fast {
			isFast = isFast || f == code
		}
		if (p.match != nil) != isFast {
			t.Errorf("%s: fast path %v, want %v", code, p.match != nil, isFast)
		}
		machine := *p
		machine.match = nil
		col, match, ok := p.StringMatch()
		if ok != isFast {
			t.Errorf("%s: StringMatch ok %v, want %v", code, ok, isFast)
		}
		for _, v := range values {
			row := []any{int64(3), v, v}
			got, gerr := p.Eval(row)
			want, werr := machine.Eval(row)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Errorf("%s on %#v: %v (%v), the machine says %v (%v)", code, v, got, gerr, want, werr)
			}
			// StringMatch answers for the column it names, on a value that is not NULL.
			if s, isStr := v.(string); ok && isStr {
				at := []any{int64(3), nil, nil}
				at[col] = s
				want, _ := machine.Eval(at)
				if match(s) != want {
					t.Errorf("%s: StringMatch on column %d with %q says %v, the machine %v", code, col, s, match(s), want)
				}
			}
		}
	}
}
