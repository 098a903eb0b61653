package expectations

import (
	"testing"

	"tributary/schema"
)

// TestEvalSeesEveryColumnItNames: Eval converts only the columns an expression names, so every
// way an expression can name a column must reach them: member access, closures of builtins,
// let, $env, nested fields, map and array columns, and the forms expr's optimizer rewrites
// (map over filter, first/last of filter, sum of map, count, in ranges and arrays).
func TestEvalSeesEveryColumnItNames(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("op STRING, id BIGINT, amount DECIMAL(10,2), status STRING, tags ARRAY<STRING>, addr STRUCT<city: STRING, zip: INT>, attrs MAP<STRING, BIGINT>, n INT, at TIMESTAMP, day DATE")
	if err != nil {
		t.Fatal(err)
	}
	row := []any{"U", int64(7), schema.Decimal(2550), "paid", []any{"a", "", "b"}, []any{"Oslo", int32(150)}, schema.Map{{Key: "k", Value: int64(3)}}, int32(2), schema.Timestamp(1_700_000_000_000_000), schema.Date(19000)}
	cases := []struct {
		name string
		code string
		want bool
	}{
		{"member access", `addr.city == "Oslo" and addr.zip == 150`, true},
		{"index access", `attrs["k"] == 3 and tags[0] == "a"`, true},
		{"closure over a column", `all(tags, {# != status})`, true},
		{"closure names another column", `any(tags, {# + status == "apaid"})`, true},
		{"let", `let x = amount; let y = id; x > 25.0 and y == 7`, true},
		{"let shadowing nothing", `let s = status + "!"; s == "paid!"`, true},
		{"env index", `$env["addr"].city == "Oslo"`, true},
		{"env member", `$env.status == "paid"`, true},
		{"map over filter names a column", `"a-paid" in map(filter(tags, # != ""), # + "-" + status)`, true},
		{"first of map over filter", `first(map(filter(tags, # != ""), # + status)) == "apaid"`, true},
		{"last of map over filter", `last(map(filter(tags, # != ""), # + status)) == "bpaid"`, true},
		{"count of filter naming a column", `count(tags, # == "" or # == op) == 1`, true},
		{"len of filter naming a column", `len(filter(tags, # != op)) == 3`, true},
		{"sum of map naming a column", `sum(map(tags, n)) == 6`, true},
		{"reduce naming a column", `reduce(tags, #acc + n, 0) == 6`, true},
		{"in range of columns", `id in n..10`, true},
		{"in array of columns", `status in [op, "paid"]`, true},
		{"ternary", `id > 5 ? status == "paid" : op == "D"`, true},
		{"timestamp and date", `at.Year() == 2023 and day == "2022-01-08"`, true},
		{"builtins", `upper(status) == "PAID" and abs(id) == 7 and len(tags) == 3`, true},
		{"optional chaining", `addr?.city == "Oslo"`, true},
		{"nil coalescing", `(status ?? "x") == "paid"`, true},
		{"string operators", `status startsWith "pa" and status contains "ai" and status matches "^p"`, true},
		{"pipe", `tags | filter(# != "") | map(# + status) | len() == 2`, true},
		{"group of sums", `sum(tags, len(#) * n) == 4`, true},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(c.code, s)
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second run reuses the environment and the machine.
			for i := range 2 {
				got, err := p.Eval(row)
				if got != c.want || err != nil {
					t.Fatalf("run %d: %s = %v, %v; want %v, nil", i, c.code, got, err, c.want)
				}
			}
		})
	}
}

// TestEvalAfterFailedRun: a run that fails inside a closure (a NULL element) leaves nothing in
// the reused machine that changes the next row's result.
func TestEvalAfterFailedRun(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("status STRING, tags ARRAY<STRING>, n INT")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(`all(tags, {any(tags, {# + status != ""}) and len(#) > n})`, s)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		row  []any
		want bool
		err  bool
	}{
		{[]any{"x", []any{"ab", "cd"}, int32(1)}, true, false},
		// The run fails on the NULL element: NULL, so a violation without an error.
		{[]any{"x", []any{"ab", nil}, int32(1)}, false, false},
		{[]any{nil, []any{"ab"}, int32(1)}, false, false},
		{[]any{"x", []any{"ab", "cd"}, int32(1)}, true, false},
		{[]any{"x", []any{"ab", "c"}, int32(1)}, false, false},
		{[]any{"x", []any{}, int32(1)}, true, false},
	} {
		got, err := p.Eval(c.row)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("row %d %v: %v, %v; want %v, error %v", i, c.row, got, err, c.want, c.err)
		}
	}
}
