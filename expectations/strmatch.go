package expectations

import (
	"slices"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"tributary/schema"
)

// strMatch is an expression that compares one STRING column with string literals:
// `col == "x"`, `"x" == col`, `col != "x"`, `col in ["x", "y"]`, `col not in [...]` (the shape of
// most apply_as_deletes, apply_as_truncates and op expectations). Eval answers it without the
// virtual machine when the column holds a string; a NULL goes through the machine, so that its
// result is expr's own.
type strMatch struct {
	col  int      // index in the compiled schema
	lits []string // the literals
	neg  bool     // != or not in
}

// matchOf returns the strMatch that code is, or nil when it is not of that shape.
func matchOf(code string, s schema.Schema) *strMatch {
	tree, err := parser.Parse(code)
	if err != nil {
		return nil
	}
	n, neg := tree.Node, false
	if u, ok := n.(*ast.UnaryNode); ok && (u.Operator == "not" || u.Operator == "!") {
		if b, ok := u.Node.(*ast.BinaryNode); ok && b.Operator == "in" {
			n, neg = b, true // `not (col in [...])`, as the parser writes `col not in [...]`
		}
	}
	b, ok := n.(*ast.BinaryNode)
	if !ok {
		return nil
	}
	column := func(n ast.Node) int {
		id, ok := n.(*ast.IdentifierNode)
		if !ok {
			return -1
		}
		i := s.Index(id.Value)
		if i < 0 || s.Fields[i].Type.Kind != schema.String {
			return -1
		}
		return i
	}
	literal := func(n ast.Node) (string, bool) {
		str, ok := n.(*ast.StringNode)
		if !ok {
			return "", false
		}
		return str.Value, true
	}
	switch b.Operator {
	case "==", "!=":
		col, other := column(b.Left), b.Right
		if col < 0 {
			col, other = column(b.Right), b.Left
		}
		lit, ok := literal(other)
		if col < 0 || !ok {
			return nil
		}
		return &strMatch{col: col, lits: []string{lit}, neg: b.Operator == "!="}
	case "in":
		col := column(b.Left)
		arr, ok := b.Right.(*ast.ArrayNode)
		if col < 0 || !ok {
			return nil
		}
		m := &strMatch{col: col, neg: neg}
		for _, e := range arr.Nodes {
			lit, ok := literal(e)
			if !ok {
				return nil
			}
			m.lits = append(m.lits, lit)
		}
		return m
	}
	return nil
}

// eval answers the match on row; ok is false when the column is NULL (the caller asks the
// machine).
func (m *strMatch) eval(row []any) (result, ok bool) {
	v, ok := row[m.col].(string)
	if !ok {
		return false, false
	}
	return m.of(v), true
}

// of answers the match on a value of the column that is not NULL.
func (m *strMatch) of(s string) bool { return slices.Contains(m.lits, s) != m.neg }
