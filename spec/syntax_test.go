package spec

import (
	"errors"
	"testing"
)

// TestYAMLSyntaxErrorPositions: a YAML syntax error is reported at the line at fault, 1-based,
// with a hint: a tab in a line's indentation at that line (the parser names the line of the
// value before it), with the hint to indent with spaces; an unquoted ${...} inside {...} at the
// ${, with the hint to quote it.
func TestYAMLSyntaxErrorPositions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		line, col  int
		msg, hint  string
	}{
		{"tab after a value", "name: t\nstorage: ./s\ndatasets:\n  - name: a\n\tsource: {path: ./l, format: json}\n",
			5, 2, "invalid YAML: found a tab character that violates indentation", "indent with spaces: YAML does not allow tabs for indentation"},
		{"tab at the top level", "name: t\n\tstorage: ./s\n",
			2, 2, "invalid YAML: found a tab character that violates indentation", "indent with spaces: YAML does not allow tabs for indentation"},
		{"tab after spaces", "name: t\nstorage: ./s\ndatasets:\n  - name: a\n    source:\n\t  path: ./l\n",
			6, 4, "invalid YAML: found character that cannot start any token", "indent with spaces: YAML does not allow tabs for indentation"},
		{"unquoted variable in a flow mapping", "name: t\nstorage: ./s\ndatasets:\n  - name: a\n    source: {path: ${lnd}, format: json}\n",
			5, 20, "invalid YAML: did not find expected ',' or '}'", `quote a ${...} inside {...}: write "${lnd}" (its braces are YAML's flow syntax otherwise)`},
	} {
		_, err := Parse("p.yaml", []byte(c.text), nil, func(string) (string, bool) { return "", false })
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Errorf("%s: %v, want one error", c.name, err)
			continue
		}
		e := es[0]
		if e.Pos.Line != c.line || e.Pos.Column != c.col || e.Msg != c.msg || e.Hint != c.hint {
			t.Errorf("%s: %d:%d %q (hint %q), want %d:%d %q (hint %q)", c.name, e.Pos.Line, e.Pos.Column, e.Msg, e.Hint, c.line, c.col, c.msg, c.hint)
		}
	}
}
