package expectations

import (
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"tributary/schema"
)

// Program is a compiled row expression over the columns of one schema.
type Program struct {
	Source string
	prog   *vm.Program
	cols   schema.Schema
	env    map[string]any
}

// sample returns a value of the Go type an expression sees for a column of type t.
// DECIMAL and DOUBLE are float64, BIGINT and INT are int, DATE is a "YYYY-MM-DD" string,
// TIMESTAMP is a time.Time.
func sample(t schema.Type) any {
	switch t.Kind {
	case schema.Long, schema.Integer:
		return 0
	case schema.Double, schema.DecimalKind:
		return 0.0
	case schema.Boolean:
		return false
	case schema.TimestampKind:
		return time.Time{}
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
		f := float64(x)
		for i := 0; i < t.Scale; i++ {
			f /= 10
		}
		return f
	case schema.Date:
		return schema.FormatDate(x)
	case schema.Timestamp:
		return time.UnixMicro(int64(x)).UTC()
	}
	return v
}

// Compile type-checks code against the columns of s. Column names are variables; an unknown name,
// a syntax error or a type error is returned with expr's message (which carries the position in
// the expression). The result must be a boolean (or nil, which counts as a violation).
func Compile(code string, s schema.Schema) (*Program, error) {
	if strings.TrimSpace(code) == "" {
		return nil, fmt.Errorf("the expression is empty")
	}
	env := make(map[string]any, len(s.Fields))
	for _, f := range s.Fields {
		env[f.Name] = sample(f.Type)
	}
	p, err := expr.Compile(code, expr.Env(env), expr.AllowUndefinedVariables())
	if err != nil {
		return nil, err
	}
	if err := checkNames(p, code, s); err != nil {
		return nil, err
	}
	return &Program{Source: code, prog: p, cols: s, env: make(map[string]any, len(s.Fields))}, nil
}

// checkNames rejects identifiers that are neither columns nor expr builtins, so that a typo in a
// column name is a compile error rather than an always-nil value.
func checkNames(p *vm.Program, code string, s schema.Schema) error {
	// Compile again without AllowUndefinedVariables: expr then reports unknown names itself.
	env := make(map[string]any, len(s.Fields))
	for _, f := range s.Fields {
		env[f.Name] = sample(f.Type)
	}
	if _, err := expr.Compile(code, expr.Env(env)); err != nil {
		return fmt.Errorf("%w (columns: %s)", err, strings.Join(s.Names(), ", "))
	}
	_ = p
	return nil
}

// Eval evaluates the expression on one row (values in the order of the compiled schema).
// It returns true only when the result is the boolean true; a nil result or an evaluation error
// returns false and the error (nil when the result was simply not true).
func (p *Program) Eval(row []any) (bool, error) {
	for i, f := range p.cols.Fields {
		p.env[f.Name] = ExprValue(f.Type, row[i])
	}
	out, err := expr.Run(p.prog, p.env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	return ok && b, nil
}
