package expectations

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"

	"tributary/schema"
)

// Program is a compiled row expression over the columns of one schema. Its Eval reuses one
// environment and one expr machine, so a Program is not safe for concurrent use.
type Program struct {
	Source string
	// prog compiles the comparisons of floats and times to Spark's (compileOptions): a NULL
	// operand makes them NULL, a NaN is equal to itself and above every other value. fast
	// compiles them to expr's own, which give the same on values that are neither NULL nor a
	// NaN nor an infinity (Eval runs it on rows whose columns are all such); nil when it does
	// not compile.
	prog  *vm.Program
	fast  *vm.Program
	cols  schema.Schema
	env   map[string]any
	reads []int // the columns (indexes in cols) the expression names
	// setCols are the columns Eval puts in env: those the expression names or, when it reads
	// the whole environment ($env), every column.
	setCols []int
	vm      vm.VM // reused by every Eval: expr.Run makes a machine, and its stack, per call
	match   *strMatch
	// logic is the expression's and/or/not structure with its other parts compiled one by
	// one, for a row on which the whole expression meets a NULL (see Eval); nil when the
	// expression has no and, or, not at its top.
	logic *logicNode
}

// logicNode is a part of an expression: an and, or or not of other parts, or a leaf (any other
// expression, compiled alone).
type logicNode struct {
	op    string // "and", "or", "not", or "" for a leaf
	l, r  *logicNode
	prog  *vm.Program // a leaf's
	reads []int       // the columns a leaf names
}

// truth is a value of SQL's three-valued logic.
type truth int8

const (
	tFalse truth = iota
	tTrue
	tUnknown
)

// logicOf returns the and/or/not structure of node, each leaf compiled over s; nil when node is a
// leaf itself or a leaf does not compile alone.
func logicOf(node ast.Node, s schema.Schema) *logicNode {
	n := logicTree(node, s)
	if n == nil || n.op == "" {
		return nil
	}
	return n
}

func logicTree(node ast.Node, s schema.Schema) *logicNode {
	switch x := node.(type) {
	case *ast.BinaryNode:
		op := map[string]string{"and": "and", "&&": "and", "or": "or", "||": "or"}[x.Operator]
		if op != "" {
			l, r := logicTree(x.Left, s), logicTree(x.Right, s)
			if l == nil || r == nil {
				return nil
			}
			return &logicNode{op: op, l: l, r: r}
		}
	case *ast.UnaryNode:
		if x.Operator == "not" || x.Operator == "!" {
			l := logicTree(x.Node, s)
			if l == nil {
				return nil
			}
			return &logicNode{op: "not", l: l}
		}
	}
	code := node.String()
	p, err := expr.Compile(code, append(compileOptions(s), expr.AllowUndefinedVariables())...)
	if err != nil {
		return nil
	}
	r, whole := reads(code, p, s)
	if whole {
		return nil
	}
	return &logicNode{prog: p, reads: r}
}

// eval gives the node's value on row under SQL's three-valued logic: a leaf that fails where a
// column it names is NULL, or gives nil, is unknown; TRUE or unknown is TRUE, FALSE and unknown
// is FALSE, not unknown is unknown. A leaf that fails otherwise returns its error.
func (n *logicNode) eval(p *Program, row []any) (truth, error) {
	switch n.op {
	case "not":
		v, err := n.l.eval(p, row)
		if err != nil || v == tUnknown {
			return v, err
		}
		return 1 - v, nil
	case "and", "or":
		stop := tFalse // the value that decides an and
		if n.op == "or" {
			stop = tTrue
		}
		l, err := n.l.eval(p, row)
		if err != nil || l == stop {
			return l, err
		}
		r, err := n.r.eval(p, row)
		if err != nil || r == stop {
			return r, err
		}
		if l == tUnknown || r == tUnknown {
			return tUnknown, nil
		}
		return l, nil
	}
	out, err := p.vm.Run(n.prog, p.env)
	if err != nil {
		for _, i := range n.reads {
			if hasNull(row[i]) {
				return tUnknown, nil
			}
		}
		return tUnknown, err
	}
	b, ok := out.(bool)
	switch {
	case !ok:
		return tUnknown, nil
	case b:
		return tTrue, nil
	}
	return tFalse, nil
}

// exactDecimal is what an expression sees of a DECIMAL of more than 18 digits, which a float
// would not hold: its exact text (schema.FormatDecimal128), which `string(x)` gives, and which
// `x == nil` and `x != nil` check for NULL; comparing it with a number or computing with it does
// not compile (Compile says to do it in SQL).
type exactDecimal struct{ text string }

// String returns the value's exact text ("12345678901234567890.50"), for `string(x)`.
func (d exactDecimal) String() string { return d.text }

// exactDecimalName is how expr names exactDecimal in its type errors ("expectations.exactDecimal").
var exactDecimalName = reflect.TypeOf(exactDecimal{}).String()

// sample returns a value of the Go type an expression sees for a column of type t.
// DECIMAL and DOUBLE are float64 (a DECIMAL of more than 18 digits an exactDecimal: a float
// would not hold it exactly), BIGINT and INT are int, DATE is a "YYYY-MM-DD" string,
// TIMESTAMP is a time.Time, STRUCT a map of its fields, ARRAY a slice of its elements, MAP a map
// from its keys' text to its values.
func sample(t schema.Type) any {
	switch t.Kind {
	case schema.Long, schema.Integer:
		return 0
	case schema.Double, schema.DecimalKind:
		if t.WideDecimal() {
			return exactDecimal{}
		}
		return 0.0
	case schema.Boolean:
		return false
	case schema.TimestampKind:
		return time.Time{}
	case schema.StructKind, schema.MapKind:
		return map[string]any{}
	case schema.ArrayKind:
		return []any{}
	}
	return ""
}

// ExprValue converts a row value of type t to what expressions see (see sample).
func ExprValue(t schema.Type, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		return int(x)
	case int32:
		return int(x)
	case schema.Decimal:
		return decimalFloat(x, t.Scale)
	case schema.Decimal128: // its exact text, never a float
		return exactDecimal{schema.FormatDecimal128(x, t.Scale)}
	case schema.Date:
		return schema.FormatDate(x)
	case schema.Timestamp:
		return time.UnixMicro(int64(x)).UTC()
	case []any: // a STRUCT: a map of its fields, each as expressions see it (`addr.city`)
		if t.Kind == schema.ArrayKind && t.Elem != nil { // an ARRAY: its elements (`len(tags) > 0`)
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = ExprValue(*t.Elem, e)
			}
			return out
		}
		if t.Kind != schema.StructKind || t.Struct == nil {
			return v
		}
		m := make(map[string]any, len(x))
		for i, f := range t.Struct.Fields {
			m[f.Name] = ExprValue(f.Type, x[i])
		}
		return m
	case schema.Map: // a MAP: keys as text (`attrs["color"]`), values as expressions see them
		if t.Kind != schema.MapKind || t.Key == nil || t.Value == nil {
			return v
		}
		m := make(map[string]any, len(x))
		for _, e := range x {
			m[schema.Text(*t.Key, e.Key)] = ExprValue(*t.Value, e.Value)
		}
		return m
	}
	return v
}

// decimalFloat returns the float64 nearest to the DECIMAL value x·10^-scale, as Spark's
// CAST(decimal AS DOUBLE) gives it and as a number literal of the same digits parses, so that
// `amount >= 0.07` holds for the DECIMAL 0.07. An unscaled value of at most 2^53 and a power of
// ten up to 10^22 are exact in a float64, and one IEEE division of the two rounds correctly;
// larger values go through their exact text. (Dividing by 10 once per digit of scale rounds at
// each step: 7 at scale 2 became 0.06999999999999999.)
func decimalFloat(x schema.Decimal, scale int) float64 {
	if scale >= 0 && scale < len(exactPow10) && x >= -1<<53 && x <= 1<<53 {
		return float64(x) / exactPow10[scale]
	}
	f, _ := strconv.ParseFloat(schema.FormatDecimal(x, scale), 64)
	return f
}

// exactPow10 holds the powers of ten a float64 holds exactly: 10^0 to 10^22.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// finite reports whether v, a row's value, is neither NULL nor a floating-point NaN or infinity:
// on such values a Program's fast machine and its Spark comparisons agree.
func finite(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	}
	return true
}

// ErrNotBool is the error (wrapped, with the type the expression gives) of Compile for an
// expression whose result is not a boolean, such as `id + 1`.
var ErrNotBool = errors.New("the expression must be true or false")

// Compile type-checks code against the columns of s. Column names are variables; an unknown name,
// a syntax error or a type error is returned with expr's message (which carries the position in
// the expression). The result must be a boolean: an expression of another type fails with
// ErrNotBool (nil, a comparison with nil and an expression over columns of unknown type are
// accepted; at run time anything but true counts as a violation).
//
// A column whose Type is the zero schema.Type (Kind 0) has an unknown type: spec validation uses
// it for a column whose declaration is invalid, so that expressions may still name it. The
// expression is then not type-checked where it uses that column.
func Compile(code string, s schema.Schema) (*Program, error) {
	if strings.TrimSpace(code) == "" {
		return nil, fmt.Errorf("the expression is empty")
	}
	p, err := expr.Compile(code, append(compileOptions(s), expr.AllowUndefinedVariables())...)
	if err != nil {
		return nil, wideDecimalError(err, code, s)
	}
	if err := checkNames(code, s); err != nil {
		return nil, err
	}
	if err := checkBool(p, code); err != nil {
		return nil, err
	}
	r, whole := reads(code, p, s)
	set := r
	if whole {
		set = make([]int, len(s.Fields))
		for i := range set {
			set[i] = i
		}
	}
	prog := &Program{Source: code, prog: p, cols: s, env: make(map[string]any, len(s.Fields)), reads: r, setCols: set, match: matchOf(code, s)}
	if fast, err := expr.Compile(code, append(plainOptions(s), expr.AllowUndefinedVariables())...); err == nil {
		prog.fast = fast
	}
	if !whole {
		if tree, err := parser.Parse(code); err == nil {
			prog.logic = logicOf(tree.Node, s)
		}
	}
	return prog, nil
}

// divideName is the function a division of numbers compiles to (divide). No expression can name
// it: it is not an identifier.
const divideName = "divide by"

// ErrDivideByZero is the evaluation error of a division by zero in a row expression.
var ErrDivideByZero = errors.New("division by zero")

// divide is x / y of two numbers, as expr's `/` gives it (a float), but a zero divisor is
// ErrDivideByZero rather than an infinity or NaN: Spark's `/` gives NULL for it (an error under
// ANSI mode), so `amount / qty > 2` is never true when qty is 0.
// An operand that is not a number (a NULL) is an error, as it is for expr's `/`.
func divide(args ...any) (any, error) {
	x, okx := toFloat(args[0])
	y, oky := toFloat(args[1])
	switch {
	case !okx || !oky:
		return nil, fmt.Errorf("invalid operation: %T / %T", args[0], args[1])
	case y == 0:
		return nil, ErrDivideByZero
	}
	return x / y, nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// equalName and notEqualName are the functions `==` and `!=` of floats and of times compile to
// (equal). No expression can name them: they are not identifiers.
const (
	equalName    = "equal to"
	notEqualName = "not equal to"
)

// equal is x == y of two numbers (one of them a float: DOUBLE, FLOAT, DECIMAL) or of two
// TIMESTAMPs, as Spark's = compares them: a NULL operand is an error, so that the comparison is
// NULL (Eval: `amount != 0` is not true on a NULL amount, as it is not in Spark, where expr's own
// == would give nil != 0, true), and NaN equals NaN (Spark's NaN semantics). `== nil` and
// `!= nil` are not compiled to it: they check for NULL.
func equal(args ...any) (any, error) {
	if t, ok := args[0].(time.Time); ok {
		if u, ok := args[1].(time.Time); ok {
			return t.Equal(u), nil
		}
	}
	x, okx := toFloat(args[0])
	y, oky := toFloat(args[1])
	if !okx || !oky {
		return nil, fmt.Errorf("invalid operation: %T == %T", args[0], args[1])
	}
	return x == y || (math.IsNaN(x) && math.IsNaN(y)), nil
}

// order returns -1, 0 or 1 as x is below, equal to or above y, two numbers one of which is a
// float, in Spark's order of floats: NaN above every other value (an infinity too) and equal to
// itself. A NULL operand is an error, so that the comparison is NULL.
func order(op string, args []any) (int, error) {
	x, okx := toFloat(args[0])
	y, oky := toFloat(args[1])
	switch {
	case !okx || !oky:
		return 0, fmt.Errorf("invalid operation: %T %s %T", args[0], op, args[1])
	case math.IsNaN(x) && math.IsNaN(y), x == y:
		return 0, nil
	case math.IsNaN(x), x > y:
		return 1, nil
	}
	return -1, nil
}

// nonNullName is the function a column is wrapped in where a NULL makes the operator NULL
// (nullOperands). No expression can name it: it is not an identifier.
const nonNullName = "non-null"

// nonNull returns its argument, or an error when it is nil, which Eval reads as NULL under
// SQL's three-valued logic (nullOperands).
func nonNull(args ...any) (any, error) {
	if args[0] == nil {
		return nil, errors.New("a NULL operand")
	}
	return args[0], nil
}

// hasNull says whether v is NULL or holds a NULL: a field of a STRUCT, an element of an ARRAY,
// a value of a MAP, at any depth. An expression that fails on such a value failed on a NULL
// (`addr.geo.lat > 1.5` where addr.geo is NULL), which SQL's three-valued logic reads as NULL.
func hasNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		for _, e := range x {
			if hasNull(e) {
				return true
			}
		}
	case schema.Map:
		for _, e := range x {
			if hasNull(e.Value) {
				return true
			}
		}
	}
	return false
}

// nullFields makes a field of a STRUCT (`addr.zip`, `.x` of an array's element) and a key of a
// MAP (`attrs["color"]`) nil when the value they are taken from is nil, as `?.` does: Spark's
// GetStructField and element_at of a NULL struct or map are NULL, so that `addr.zip == nil` holds
// when addr is NULL (SQL's `addr.zip IS NULL`) and `addr.geo.lat > 1.5` is not true, where expr
// would fail the row with "cannot fetch zip from <nil>". Each such member is wrapped in a chain of
// its own, which turns the nil it meets into the member's value.
type nullFields struct{}

// Visit makes the member at node optional (see nullFields).
func (nullFields) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok || m.Optional {
		return
	}
	if _, ok := m.Property.(*ast.StringNode); !ok {
		return // an array's index: out of range stays an error
	}
	m.Optional = true
	*node = &ast.ChainNode{Node: m} // typed by the check that follows the patches
}

// nullOperands wraps in nonNull the columns (or fields of columns) that are operands of `in`,
// `matches`, `startsWith`, `endsWith` and `contains`, and a BOOLEAN column compared with `==` or
// `!=` to anything but nil, where expr would give false (or true) for a nil: Spark's `x IN
// (...)`, `array_contains`, `RLIKE`, `LIKE`, `startswith`, `contains` and `=` / `<>` are NULL for
// a NULL operand, so that `not (op in ["D"])`, `op not in ["D"]`, `not (s startsWith "a")` and
// `flag != true` are violated by a NULL. An element of a closure (`#`) and literals are left as
// they are.
type nullOperands struct{ s schema.Schema }

var nullOperators = map[string]bool{"in": true, "matches": true, "startsWith": true, "endsWith": true, "contains": true}

func (v nullOperands) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok {
		return
	}
	wrap := func(n *ast.Node) {
		switch (*n).(type) {
		case *ast.IdentifierNode, *ast.MemberNode, *ast.ChainNode:
			*n = &ast.CallNode{Callee: &ast.IdentifierNode{Value: nonNullName}, Arguments: []ast.Node{*n}}
		}
	}
	boolColumn := func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		if !ok {
			return false
		}
		i := v.s.Index(id.Value)
		return i >= 0 && v.s.Fields[i].Type.Kind == schema.Boolean
	}
	_, nilL := b.Left.(*ast.NilNode)
	_, nilR := b.Right.(*ast.NilNode)
	switch {
	case nullOperators[b.Operator]:
		wrap(&b.Left)
		wrap(&b.Right)
	case (b.Operator == "==" || b.Operator == "!=") && !nilL && !nilR:
		if boolColumn(b.Left) {
			wrap(&b.Left)
		}
		if boolColumn(b.Right) {
			wrap(&b.Right)
		}
	}
}

// orderings are the functions `<`, `<=`, `>` and `>=` of floats compile to, by operator: Spark's
// order of floats (order), so that a NaN DOUBLE is above 100.0, as in Spark.
var orderings = map[string]func(int) bool{
	"<":  func(c int) bool { return c < 0 },
	"<=": func(c int) bool { return c <= 0 },
	">":  func(c int) bool { return c > 0 },
	">=": func(c int) bool { return c >= 0 },
}

func notEqual(args ...any) (any, error) {
	eq, err := equal(args...)
	if err != nil {
		return nil, err
	}
	return !eq.(bool), nil
}

// plainOptions are the options of a Program's fast machine (see Program): the columns' types,
// `/` of two numbers as divide and a NULL operand of `in`, `matches`, ... as an error
// (nullOperands), with expr's own comparisons, which cost a function call less each.
func plainOptions(s schema.Schema) []expr.Option {
	return []expr.Option{
		expr.Env(envTypes(s)),
		expr.Function(divideName, divide,
			new(func(int, int) float64), new(func(int, float64) float64),
			new(func(float64, int) float64), new(func(float64, float64) float64)),
		expr.Operator("/", divideName),
		expr.Function(nonNullName, nonNull),
		expr.Patch(nullFields{}),
		expr.Patch(nullOperands{s}),
	}
}

// compileOptions are the options every compilation of a row expression over s uses: the
// columns' types, `/` of two numbers as divide, `==` and `!=` of floats and times as equal, and
// `<`, `<=`, `>`, `>=` of floats in Spark's order (order).
func compileOptions(s schema.Schema) []expr.Option {
	comparisons := []any{new(func(float64, float64) bool), new(func(int, float64) bool),
		new(func(float64, int) bool), new(func(time.Time, time.Time) bool)}
	opts := append(plainOptions(s),
		expr.Function(equalName, equal, comparisons...),
		expr.Operator("==", equalName),
		expr.Function(notEqualName, notEqual, comparisons...),
		expr.Operator("!=", notEqualName),
	)
	floats := []any{new(func(float64, float64) bool), new(func(int, float64) bool), new(func(float64, int) bool)}
	for _, op := range []string{"<", "<=", ">", ">="} {
		holds := orderings[op]
		name := "compare " + op // no expression can name it
		opts = append(opts,
			expr.Function(name, func(args ...any) (any, error) {
				c, err := order(op, args)
				if err != nil {
					return nil, err
				}
				return holds(c), nil
			}, floats...),
			expr.Operator(op, name))
	}
	return opts
}

// wideDecimalError returns err, expr's error compiling code over s, in words a user knows when it
// is a type error over a DECIMAL of more than 18 digits (exactDecimal): which column, what an
// expression may do with it, and where to do the rest. Its position stays expr's.
func wideDecimalError(err error, code string, s schema.Schema) error {
	if !strings.Contains(err.Error(), exactDecimalName) {
		return err
	}
	var cols []string
	for _, f := range s.Fields {
		if f.Type.HasWideDecimal() && strings.Contains(code, f.Name) {
			cols = append(cols, f.Name+" "+f.Type.DDL())
		}
	}
	msg := fmt.Sprintf("a DECIMAL of more than 18 digits (%s) can only be checked for NULL in a row expression (`x != nil`, `x == nil`) or compared as its exact text (`string(x) == \"12.50\"`): "+
		"expressions see a DECIMAL as a float, which does not hold so many digits; compare or compute with its value in a SQL dataset (a WHERE or CASE over the column)", strings.Join(cols, ", "))
	var fe *file.Error
	if errors.As(err, &fe) {
		out := *fe
		out.Message = msg
		return &out
	}
	return errors.New(msg)
}

// CheckSyntax checks code without knowing the columns it reads (a query's result, an inferred
// schema, known only when the dataset runs): a syntax error, or a result that cannot be a boolean
// whatever the columns' types (`1 + 2`), is returned as Compile returns it. Names and types are
// left to Compile at the run.
func CheckSyntax(code string) error {
	if strings.TrimSpace(code) == "" {
		return fmt.Errorf("the expression is empty")
	}
	p, err := expr.Compile(code, expr.AllowUndefinedVariables())
	if err != nil {
		return err
	}
	return checkBool(p, code)
}

// envTypes gives expr the type of each column: that of sample, or any for a column whose type
// is unknown (Kind 0).
func envTypes(s schema.Schema) types.Map {
	env := make(types.Map, len(s.Fields))
	for _, f := range s.Fields {
		if f.Type.Kind == 0 {
			env[f.Name] = types.Any
			continue
		}
		env[f.Name] = exprType(f.Type)
	}
	return env
}

// exprType is the expr type of a column of type t: that of sample for a primitive; for a STRUCT
// a map of exactly its fields (so `addr.cty` for a field city is a compile error, not an
// always-nil value), for an ARRAY an array of its element type, for a MAP a map of any key text
// to its value type.
func exprType(t schema.Type) types.Type {
	switch {
	case t.Kind == schema.StructKind && t.Struct != nil:
		m := make(types.Map, len(t.Struct.Fields))
		for _, f := range t.Struct.Fields {
			m[f.Name] = exprType(f.Type)
		}
		return m
	case t.Kind == schema.ArrayKind && t.Elem != nil:
		return types.Array(exprType(*t.Elem))
	case t.Kind == schema.MapKind && t.Value != nil:
		return types.Map{types.Extra: exprType(*t.Value)}
	}
	return types.TypeOf(sample(t))
}

// checkNames rejects identifiers that are neither columns nor expr builtins, so that a typo in a
// column name is a compile error rather than an always-nil value.
func checkNames(code string, s schema.Schema) error {
	// Compile again without AllowUndefinedVariables: expr then reports unknown names itself.
	if _, err := expr.Compile(code, compileOptions(s)...); err != nil {
		return fmt.Errorf("%w (columns: %s)", err, strings.Join(s.Names(), ", "))
	}
	return nil
}

// checkBool returns an ErrNotBool error when the compiled expression's type is known and is not
// a boolean. It does not use expr.AsBool, whose run-time cast fails on a nil result (a nil result
// is a violation, not an error).
func checkBool(p *vm.Program, code string) error {
	nt := p.Node().Nature()
	if nt.Nil {
		return fmt.Errorf("%w, but `%s` is always nil", ErrNotBool, code)
	}
	t := nt.Type
	if t == nil || t.Kind() == reflect.Bool || t.Kind() == reflect.Interface {
		return nil // a boolean, or a type only known at run time
	}
	return fmt.Errorf("%w, but `%s` gives %s", ErrNotBool, code, typeName(t))
}

// typeName says what a value of type t is, for ErrNotBool.
func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "a timestamp"
	case t == reflect.TypeFor[time.Duration]():
		return "a duration"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an int"
	case reflect.Float32, reflect.Float64:
		return "a float"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return "a " + t.String()
}

// reads returns the indexes in s of the columns the expression code names, and whether it reads
// the whole environment ($env, through which it may read any column). It walks both the compiled
// tree p and the tree as written (parser.Parse, before expr's optimizer reshapes it: the
// optimizer may move a part where ast.Walk does not look, such as the mapper of map(filter(...))).
func reads(code string, p *vm.Program, s schema.Schema) ([]int, bool) {
	var v identifiers
	node := p.Node()
	ast.Walk(&node, &v)
	if tree, err := parser.Parse(code); err == nil {
		ast.Walk(&tree.Node, &v)
	}
	var out []int
	for i, f := range s.Fields {
		if v.names[f.Name] {
			out = append(out, i)
		}
	}
	return out, v.names["$env"]
}

// identifiers collects the names an expression uses.
type identifiers struct{ names map[string]bool }

func (v *identifiers) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		if v.names == nil {
			v.names = map[string]bool{}
		}
		v.names[x.Value] = true
	case *ast.BuiltinNode:
		// expr's optimizer folds map(filter(xs, p), m) (and first/last of it) into one filter
		// whose mapper m is in Map, a field ast.Walk does not visit.
		if x.Map != nil {
			ast.Walk(&x.Map, v)
		}
	}
}

// Columns returns the indexes, in the compiled schema, of the columns Eval reads of a row: a row
// holding those values, and nil in every other column, evaluates as the whole row does. It is
// every column when the expression reads the whole environment ($env). The slice is the
// Program's own, not to be changed.
func (p *Program) Columns() []int { return p.setCols }

// StringMatch reports whether the expression compares one STRING column with string literals
// (`col == "x"`, `col != "x"`, `col in [...]`, `col not in [...]`), and if so returns that
// column (its index in the compiled schema) and the answer Eval gives on a row whose value there
// is s. A row whose value there is NULL is for Eval (the machine's answer to NULL).
func (p *Program) StringMatch() (col int, match func(s string) bool, ok bool) {
	m := p.match
	if m == nil {
		return -1, nil, false
	}
	return m.col, m.of, true
}

// Eval evaluates the expression on one row (values in the order of the compiled schema).
// It returns true only when the result is the boolean true. Anything else is false: with a nil
// error when the result is not true, or when evaluation fails on a row where a column the
// expression reads is null (as in SQL, an operator on NULL gives NULL: `amount > 25.0` on a null
// amount is simply not true); with the evaluation error otherwise. When such a NULL is met inside
// an and, or or not, the parts are evaluated one by one under SQL's three-valued logic, as Spark
// evaluates the same condition: `a != 1 or b == 2` holds on a NULL a when b is 2, whichever side
// of the or the NULL is on, and `not (a > 1 and b == 3)` holds when b is not 3.
//
// Only the columns the expression names are converted (a row of many columns costs what the
// expression reads); the others are never in the environment. A comparison of a STRING column
// with string literals (strMatch) is answered without the machine.
func (p *Program) Eval(row []any) (bool, error) {
	if p.match != nil {
		if b, ok := p.match.eval(row); ok {
			return b, nil
		}
	}
	prog := p.fast
	if prog == nil {
		prog = p.prog
	}
	for _, i := range p.setCols {
		f := &p.cols.Fields[i]
		v := row[i]
		if !finite(v) {
			prog = p.prog
		}
		p.env[f.Name] = ExprValue(f.Type, v)
	}
	out, err := p.vm.Run(prog, p.env)
	if err != nil {
		nullRead := false
		for _, i := range p.reads {
			if hasNull(row[i]) {
				nullRead = true
			}
		}
		if !nullRead {
			return false, err
		}
		if p.logic == nil {
			return false, nil
		}
		// A NULL met inside an and, or or not: SQL's three-valued logic decides, as Spark
		// evaluates the expectation (`a != 1 or b == 2` holds on a NULL a when b is 2).
		v, lerr := p.logic.eval(p, row)
		if lerr != nil {
			return false, nil
		}
		return v == tTrue, nil
	}
	b, ok := out.(bool)
	return ok && b, nil
}
