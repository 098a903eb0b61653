package expectations

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
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
		{"and with a null operand", `id > 0 and amount > 25.0`, []any{"I", int64(1), nil, nil}, false},
		{"or short-circuits a null operand", `id > 0 or amount > 25.0`, []any{"I", int64(1), nil, nil}, true},
		{"not", `not (op in ["D"])`, []any{"I", int64(1), nil, nil}, true},
		{"nil result is a violation", `id > 5 ? true : nil`, []any{"I", int64(1), nil, nil}, false},
		{"function on null", `len(status) > 1`, []any{"I", int64(1), nil, nil}, false},
		{"the whole environment", `$env["status"] == "paid" and $env["id"] == 1`, []any{"I", int64(1), nil, "paid"}, true},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(c.code, s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Eval(c.row)
			if got != c.want || err != nil {
				t.Fatalf("%s on %v = %v, %v; want %v, nil", c.code, c.row, got, err, c.want)
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

// TestCompileNotBoolean checks that an expression must give true or false: any other type is a
// compile error naming what it gives, while boolean forms, nil checks and untyped results compile.
func TestCompileNotBoolean(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("op STRING, id BIGINT, amount DECIMAL(10,2), at TIMESTAMP, day DATE")
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct{ code, want string }{
		{`id + 1`, "the expression must be true or false, but `id + 1` gives an int"},
		{`amount * 2`, "the expression must be true or false, but `amount * 2` gives a float"},
		{`op`, "the expression must be true or false, but `op` gives a string"},
		{`at`, "the expression must be true or false, but `at` gives a timestamp"},
		{`[id]`, "the expression must be true or false, but `[id]` gives a list"},
		{`nil`, "the expression must be true or false, but `nil` is always nil"},
	}
	for _, c := range bad {
		_, err := Compile(c.code, s)
		if !errors.Is(err, ErrNotBool) || err.Error() != c.want {
			t.Errorf("Compile(%q) = %v, want %q", c.code, err, c.want)
		}
	}
	for _, code := range []string{
		`op != nil`, `nil == op`, `op in ["I", "U"]`, `not (id in [1, 2])`, `id > 1 and op == "U" or amount < 0.5`,
		`!(op == "D")`, `true`, `op startsWith "I"`, `day >= "2024-01-01"`, `id > 0 ? true : nil`,
	} {
		if _, err := Compile(code, s); err != nil {
			t.Errorf("Compile(%q): %v", code, err)
		}
	}
}

// TestCompileUnknownType checks a column of unknown type (the zero schema.Type): expressions may
// name it and are not type-checked on it, but unknown names and the other columns' types are
// still checked.
func TestCompileUnknownType(t *testing.T) {
	t.Parallel()
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "amount", Nullable: true}, // its declared type was invalid
	}}
	for _, code := range []string{`amount > 25.0`, `amount`, `amount + 1 > id`, `amount == "x"`, `amount != nil and id > 0`} {
		if _, err := Compile(code, s); err != nil {
			t.Errorf("Compile(%q): %v", code, err)
		}
	}
	for _, code := range []string{`amout > 1`, `id + "x" > 0`, `id + 1`} {
		if _, err := Compile(code, s); err == nil {
			t.Errorf("Compile(%q) succeeded, want an error", code)
		}
	}
}

// TestEvalRowAfterRow: one program evaluated on row after row sees each row's own values (Eval
// sets only the columns the expression names, and sets them for every row).
func TestEvalRowAfterRow(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("op STRING, id BIGINT, amount DECIMAL(10,2), status STRING")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(`op == "D" and id > 2`, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		row  []any
		want bool
	}{
		{[]any{"D", int64(3), nil, nil}, true},
		{[]any{"U", int64(3), nil, nil}, false},
		{[]any{"D", int64(1), schema.Decimal(5), "x"}, false},
		{[]any{"D", nil, nil, nil}, false},
		{[]any{"D", int64(9), nil, nil}, true},
	} {
		if got, err := p.Eval(c.row); got != c.want || err != nil {
			t.Errorf("on %v: %v, %v; want %v, nil", c.row, got, err, c.want)
		}
	}
}

// TestEvalReadsOnlyNamedColumns: Eval converts only the columns an expression names, and that
// changes no result: row after row, each answer is that row's, whether the expression names one
// column, several, or reads them through $env.
func TestEvalReadsOnlyNamedColumns(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("op STRING, id BIGINT, name STRING, amount DECIMAL(10,2)")
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{
		{"D", int64(1), "a", schema.Decimal(150)},
		{"U", int64(2), nil, schema.Decimal(250)},
		{"D", int64(3), "c", nil},
		{nil, int64(4), "d", schema.Decimal(50)},
	}
	for _, tc := range []struct {
		code string
		want []bool
	}{
		{`op == "D"`, []bool{true, false, true, false}},
		{`op == "D" && amount > 1.0`, []bool{true, false, false, false}},
		{`$env["op"] == "D"`, []bool{true, false, true, false}},
		{`$env.name == "c" || id == 4`, []bool{false, false, true, true}},
		{`true`, []bool{true, true, true, true}},
	} {
		p, err := Compile(tc.code, s)
		if err != nil {
			t.Fatalf("%s: %v", tc.code, err)
		}
		for i, r := range rows {
			if got, _ := p.Eval(r); got != tc.want[i] {
				t.Errorf("%s on row %d: %v, want %v", tc.code, i, got, tc.want[i])
			}
		}
	}
}

// A DECIMAL is seen by an expression as the double nearest its value, the double a literal or a
// DOUBLE column of the same digits holds (Spark: CAST(decimal AS DOUBLE)). Every value from
// -99.99 to 999.99 at scale 2, and a sample at scale 4, compares equal to the DOUBLE of its text;
// `amount >= 0.07` holds for 0.07 (it was 0.06999999999999999, and the row failed the check).
func TestDecimalIsTheDoubleOfItsDigits(t *testing.T) {
	for _, scale := range []int{2, 4} {
		s := schema.Schema{Fields: []schema.Field{
			{Name: "amount", Type: schema.Type{Kind: schema.DecimalKind, Precision: 10, Scale: scale}},
			{Name: "price", Type: schema.Type{Kind: schema.Double}},
		}}
		p, err := Compile("amount == price", s)
		if err != nil {
			t.Fatal(err)
		}
		step := int64(1)
		if scale == 4 {
			step = 7
		}
		for n := int64(-9999); n < 100000*step; n += step {
			neg, a := "", n
			if n < 0 {
				neg, a = "-", -n
			}
			text := fmt.Sprintf("%s%d.%0*d", neg, a/pow(scale), scale, a%pow(scale))
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := p.Eval([]any{schema.Decimal(n), f}); err != nil || !ok {
				t.Fatalf("DECIMAL(10,%d) %s == DOUBLE %v: %v, %v; want true", scale, text, f, ok, err)
			}
		}
	}
	amount := schema.Schema{Fields: []schema.Field{{Name: "amount", Type: schema.Type{Kind: schema.DecimalKind, Precision: 18, Scale: 2}}}}
	for _, c := range []struct {
		code string
		v    int64
		want bool
	}{
		{"amount >= 0.07", 7, true},
		{"amount < 0.07", 7, false},
		{"amount == 0.29", 29, true},
		{"amount > 0.14", 14, false},
		{"amount == 1.15", 115, true},
		// Beyond 2^53 the value goes through its text: still the double nearest it.
		{"amount == 123456789012345.67", 12345678901234567, true},
		{"amount > 123456789012345.6", 12345678901234567, true},
	} {
		p, err := Compile(c.code, amount)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := p.Eval([]any{schema.Decimal(c.v)}); err != nil || ok != c.want {
			t.Errorf("%s with amount %s: %v, %v; want %v", c.code, schema.FormatDecimal(schema.Decimal(c.v), 2), ok, err, c.want)
		}
	}
}

// pow returns 10^n.
func pow(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// TestNullInsideAndOrNot checks that a NULL met inside and, or and not is decided by SQL's
// three-valued logic, as Spark evaluates a DLT expectation: NULL OR TRUE is TRUE whichever side
// the NULL is on, NULL OR FALSE and NULL AND TRUE are NULL (a violation), NULL AND FALSE is
// FALSE, so NOT (NULL AND FALSE) is TRUE, and NOT NULL is NULL.
func TestNullInsideAndOrNot(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("a BIGINT, b BIGINT, s STRING, d DOUBLE, ok BOOLEAN")
	if err != nil {
		t.Fatal(err)
	}
	row := []any{nil, int64(2), nil, nil, nil} // a, s, d and ok NULL; b is 2
	cases := []struct {
		code string
		want bool
	}{
		{`a != 1 or b == 2`, true},
		{`b == 2 or a != 1`, true},
		{`a > 1 || b == 2`, true},
		{`s == "x" or b == 2`, true},
		{`d > 1.0 or b == 2`, true},
		{`ok or b == 2`, true},
		{`(a > 1 and b == 2) or b == 2`, true},
		{`not (a > 1 and b == 3)`, true},
		{`!(b == 3 && s == "x")`, true},
		{`a > 1 or b == 3`, false},
		{`a > 1 and b == 2`, false},
		{`not (a > 1 and b == 2)`, false},
		{`not (a > 1)`, false},
		{`not ok`, false},
		{`a != 1 or s != "x"`, false},
		{`a == nil or a > 5`, true},
		{`a != nil and a > 5`, false},
	}
	for _, c := range cases {
		p, err := Compile(c.code, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Eval(row)
		if got != c.want || err != nil {
			t.Errorf("%s on a NULL a, s, d, ok and b = 2: %v, %v; want %v, nil", c.code, got, err, c.want)
		}
	}
}

// TestDivisionByZeroIsNeverTrue: Spark's `/` gives NULL for a zero divisor (an error under ANSI
// mode), of integers and of floating-point numbers alike, so an expectation that divides by a
// zero column is violated, not decided by an infinity (5 / 0 > 1) or a NaN; `/` still gives a
// float otherwise (7 / 2 is 3.5), and a NULL operand is still NULL.
func TestDivisionByZeroIsNeverTrue(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("a BIGINT, b BIGINT, d DOUBLE, m DECIMAL(10,2)")
	if err != nil {
		t.Fatal(err)
	}
	zero := []any{int64(5), int64(0), 0.0, schema.Decimal(0)}
	null := []any{nil, int64(2), nil, nil}
	cases := []evalCase{
		{`a / b > 1`, zero, false},
		{`not (a / b < 1)`, zero, false},
		{`a / d > 1`, zero, false},
		{`-a / d < 0`, zero, false},
		{`a / m > 1`, zero, false},
		{`d / d != 1`, zero, false},
		{`b == 0 or a / b > 1`, zero, true},
		{`a / 2 == 2.5`, zero, true},
		{`7 / 2 == 3.5`, zero, true},
		{`a / 2.0 == 2.5`, zero, true},
		{`a / b == a / b`, null, false},
		{`a / 2 < 1`, null, false},
		{`a == nil or a / b > 1`, null, true},
	}
	checkEvals(t, s, cases)
}

// TestEqualityOfFloatsAndTimesWithNull: `!=` and `==` of a DOUBLE, DECIMAL or TIMESTAMP that is
// NULL are NULL, as Spark's <> and = give, so `amount != 0` is violated by a NULL amount (as the
// same comparison of a BIGINT or STRING already was) while `amount == nil` still checks for
// NULL; and NaN equals NaN, as in Spark's NaN semantics.
func TestEqualityOfFloatsAndTimesWithNull(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("d DOUBLE, e DOUBLE, m DECIMAL(5,2), a BIGINT, ts TIMESTAMP, ts2 TIMESTAMP")
	if err != nil {
		t.Fatal(err)
	}
	null := []any{nil, 1.0, nil, nil, nil, schema.Timestamp(1_700_000_000_000_000)}
	nan := []any{math.NaN(), 1.0, schema.Decimal(150), int64(3), schema.Timestamp(5), schema.Timestamp(5)}
	cases := []evalCase{
		{`d != 1.0`, null, false},
		{`d != e`, null, false},
		{`m != 0`, null, false},
		{`a != 1.5`, null, false},
		{`ts != ts2`, null, false},
		{`not (d == 1.0)`, null, false},
		{`d == nil`, null, true},
		{`m == nil and e != 2`, null, true},
		{`d != 1.0 or e == 1`, null, true},
		{`d == d`, nan, true},
		{`d != d`, nan, false},
		{`d != e`, nan, true},
		{`m == 1.5 and a != 3.5 and ts == ts2`, nan, true},
	}
	checkEvals(t, s, cases)
}

// TestNaNOrderAsInSpark: a NaN DOUBLE is above every other value, infinities included, and equal
// to itself, as in Spark's NaN semantics, so `score > 100.0` holds and `score < 1e308` does not;
// other floats and integers compare as numbers, and a NULL still makes the comparison NULL.
func TestNaNOrderAsInSpark(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("d DOUBLE, e DOUBLE, a BIGINT")
	if err != nil {
		t.Fatal(err)
	}
	nan := []any{math.NaN(), math.Inf(1), int64(3)}
	plain := []any{-0.0, 2.5, int64(3)}
	null := []any{nil, 2.5, int64(3)}
	cases := []evalCase{
		{`d > 100.0`, nan, true},
		{`d > e`, nan, true},
		{`d >= d`, nan, true},
		{`d <= d`, nan, true},
		{`d < 1e308`, nan, false},
		{`e < d`, nan, true},
		{`a < d`, nan, true},
		{`d > a`, nan, true},
		{`d >= 0`, plain, true},
		{`d < e and e < a and a > e`, plain, true},
		{`e <= 2.5 and e >= 2.5 and not (e < 2.5)`, plain, true},
		{`d > 1.0`, null, false},
		{`not (d < 1.0)`, null, false},
		{`d < 1.0 or e > 2`, null, true},
	}
	checkEvals(t, s, cases)
}

// TestFastMachineAgrees: on rows without NULLs, NaNs or infinities, the machine Eval runs with
// expr's own comparisons (fast) decides as the one with Spark's (Program.prog), for comparisons
// of every kind of operand; a row with one of those values runs on the latter.
func TestFastMachineAgrees(t *testing.T) {
	s := schema.Schema{Fields: []schema.Field{
		{Name: "d", Type: schema.Type{Kind: schema.Double}},
		{Name: "m", Type: schema.Type{Kind: schema.DecimalKind, Precision: 10, Scale: 2}},
		{Name: "n", Type: schema.Type{Kind: schema.Long}},
		{Name: "ts", Type: schema.Type{Kind: schema.TimestampKind}},
		{Name: "ts2", Type: schema.Type{Kind: schema.TimestampKind}},
	}}
	codes := []string{"d == m", "d != n", "d < m", "d <= n", "m > n", "m >= d", "n == d",
		"ts == ts2", "ts != ts2", "d / n > m", "not (d > 1.5 and m < 2) or n == 3", "d == 0.5 or m != 1.25"}
	values := []float64{-2, -1.5, 0, 0.5, 1, 1.25, 1.5, 2, 3}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, code := range codes {
		p, err := Compile(code, s)
		if err != nil {
			t.Fatal(err)
		}
		if p.fast == nil {
			t.Fatalf("%s: no fast machine", code)
		}
		strict := *p
		strict.fast = nil
		for range 500 {
			row := []any{
				values[rng.IntN(len(values))],
				schema.Decimal(int64(values[rng.IntN(len(values))] * 100)),
				int64(rng.IntN(4)),
				schema.Timestamp(rng.Int64N(3)),
				schema.Timestamp(rng.Int64N(3)),
			}
			got, gerr := p.Eval(row)
			want, werr := strict.Eval(row)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Fatalf("%s on %v: fast %v, %v; Spark comparisons %v, %v", code, row, got, gerr, want, werr)
			}
		}
	}
	// A NaN or a NULL takes the Spark comparisons: a NaN equals itself, a NULL is not unequal.
	for _, c := range []struct {
		code string
		row  []any
		want bool
	}{
		{"d == d", []any{math.NaN(), nil, nil, nil, nil}, true},
		{"d > 100.0", []any{math.NaN(), nil, nil, nil, nil}, true},
		{"d != 1.0", []any{nil, nil, nil, nil, nil}, false},
		{"d > 1e308", []any{math.Inf(1), nil, nil, nil, nil}, true},
	} {
		p, err := Compile(c.code, s)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Eval(c.row); got != c.want || err != nil {
			t.Errorf("%s on %v: %v, %v; want %v", c.code, c.row, got, err, c.want)
		}
	}
}

// evalCase is an expression, a row and whether the row passes it.
type evalCase struct {
	code string
	row  []any
	want bool
}

// checkEvals compiles each case's expression over s and checks its result on the case's row.
func checkEvals(t *testing.T, s schema.Schema, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		p, err := Compile(c.code, s)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := p.Eval(c.row); got != c.want {
			t.Errorf("%s on %v = %v; want %v", c.code, c.row, got, c.want)
		}
	}
}

// TestNullOperandIsNull: Spark's `x IN (...)`, `array_contains`, `RLIKE`, `LIKE`,
// `startswith`, `endswith`, `contains` and `=` / `<>` of a BOOLEAN are NULL for a NULL operand,
// so `NOT (op IN ('D'))`, `op NOT IN ('D')`, `NOT (s LIKE 'a%')` (`not (s startsWith "a")`) and
// `flag <> true` are violated by a NULL, as `op in ["D"]` is; a NULL inside an or is still
// decided by the other side, and `== nil` still checks for NULL.
func TestNullOperandIsNull(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL("op STRING, a BIGINT, b BIGINT, flag BOOLEAN, tags ARRAY<STRING>")
	if err != nil {
		t.Fatal(err)
	}
	null := []any{nil, nil, int64(2), nil, nil}
	set := []any{"I", int64(5), int64(2), false, []any{"y"}}
	checkEvals(t, s, []evalCase{
		{`op in ["D"]`, null, false},
		{`not (op in ["D"])`, null, false},
		{`op not in ["D"]`, null, false},
		{`a not in [5, 6]`, null, false},
		{`op not in ["D"] or b == 3`, null, false},
		{`op not in ["D"] or b == 2`, null, true},
		{`op == nil or op not in ["D"]`, null, true},
		{`not (op startsWith "D")`, null, false},
		{`not (op endsWith "D")`, null, false},
		{`not (op contains "D")`, null, false},
		{`not (op matches "^D")`, null, false},
		{`not ("x" in tags)`, null, false},
		{`flag != true`, null, false},
		{`true != flag`, null, false},
		{`flag == nil and not (flag != nil)`, null, true},
		{`op not in ["D"]`, set, true},
		{`a not in [5, 6]`, set, false},
		{`not (op startsWith "D") and not (op matches "^D")`, set, true},
		{`not ("x" in tags)`, set, true},
		{`flag != true and flag == false`, set, true},
	})
	nested, err := schema.ParseDDL("addr STRUCT<city: STRING>, tags ARRAY<STRING>")
	if err != nil {
		t.Fatal(err)
	}
	checkEvals(t, nested, []evalCase{
		{`addr.city not in ["Oslo"]`, []any{[]any{nil}, []any{"x", nil}}, false},
		{`any(tags, # in ["x"])`, []any{[]any{nil}, []any{"x", nil}}, true},
		{`addr.city in ["Oslo"] and "x" in tags`, []any{[]any{"Oslo"}, []any{"x"}}, true},
	})
}
