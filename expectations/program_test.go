package expectations

import (
	"testing"

	"tributary/schema"
)

func TestCompileAndEval(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("op STRING, id BIGINT, amount DECIMAL(10,2), status STRING")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		code string
		row  []any
		want bool
	}{
		{"in list", `op in ["I", "U", "D"]`, []any{"U", int64(1), schema.Decimal(2550), "paid"}, true},
		{"not in list", `op in ["I", "U", "D"]`, []any{"X", int64(1), nil, nil}, false},
		{"decimal compare", `amount > 25.0`, []any{"I", int64(1), schema.Decimal(2550), nil}, true},
		{"null is violation", `amount > 25.0`, []any{"I", int64(1), nil, nil}, false},
		{"nil check", `status != nil`, []any{"I", int64(1), nil, nil}, false},
		{"nil check passes", `status != nil`, []any{"I", int64(1), nil, "x"}, true},
		{"key", `id == 7`, []any{"I", int64(7), nil, nil}, true},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(c.code, s)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := p.Eval(c.row)
			if got != c.want {
				t.Fatalf("%s on %v = %v, want %v", c.code, c.row, got, c.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	s, _ := schema.ParseDDL("op STRING, id BIGINT")
	for _, code := range []string{`opp == "D"`, `op == `, `op + `, ``} {
		if _, err := Compile(code, s); err == nil {
			t.Errorf("Compile(%q) succeeded, want an error", code)
		}
	}
}

func TestSetCheck(t *testing.T) {
	t.Parallel()
	s, _ := schema.ParseDDL("op STRING, id BIGINT")
	mk := func(name, code, on string) Rule {
		p, err := Compile(code, s)
		if err != nil {
			t.Fatal(err)
		}
		return Rule{Name: name, OnViolation: on, Program: p}
	}
	rows := [][]any{{"I", int64(1)}, {"X", int64(2)}, {"U", nil}, {"D", int64(4)}}
	set := &Set{Dataset: "d", Schema: s, Rules: []Rule{mk("valid_op", `op in ["I","U","D"]`, Drop), mk("has_id", `id != nil`, Warn)}}
	kept, q, err := set.Check(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 || q.DroppedRecords != 1 {
		t.Fatalf("kept %d dropped %d, want 3 and 1", len(kept), q.DroppedRecords)
	}
	if q.Expectations[0].PassedRecords != 3 || q.Expectations[0].FailedRecords != 1 || q.Expectations[1].PassedRecords != 3 || q.Expectations[1].FailedRecords != 1 {
		t.Fatalf("metrics = %+v", q.Expectations)
	}
	failSet := &Set{Dataset: "d", Schema: s, Rules: []Rule{mk("has_id", `id != nil`, Fail)}}
	_, _, err = failSet.Check(rows)
	fe, ok := err.(*FailError)
	if !ok || fe.Expectation != "has_id" || fe.Row != `{"op": "U", "id": null}` || fe.Failed != 1 {
		t.Fatalf("fail error = %#v", err)
	}
}
