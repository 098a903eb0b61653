package spec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"tributary/internal/suggest"
)

// Pos is a position in a spec file. Line and Column are 1-based; Column counts characters
// (runes), as YAML does. A zero Line means the position is the file as a whole.
type Pos struct {
	File         string
	Line, Column int
}

// String returns "file:line:col", or "file:line" without a column, or "file" without a line.
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// MarshalJSON writes the position as {"file", "line", "column"}.
func (p Pos) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		File   string `json:"file"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
	}{p.File, p.Line, p.Column})
}

// short is the position without the file, "line:col", for mentions inside a message.
func (p Pos) short() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// Error is one problem in a spec: where (Pos, and Path, the key path such as
// "datasets[1].apply_changes.keys"), what (Msg) and, when there is one, how to fix it (Hint).
// Unset names the variable of a "${NAME} is not set" problem ("" for any other).
type Error struct {
	Pos   Pos
	Path  string
	Msg   string
	Hint  string
	Unset string
}

// jsonError is the JSON form of an Error (`pipeline validate --json`): the position flattened,
// every key present.
type jsonError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Path    string `json:"path"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

// MarshalJSON writes the problem as {"file", "line", "column", "path", "message", "hint"}; a
// missing part is "" or 0.
func (e *Error) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // hints hold `a >= b` and `x != nil`: as written, not \u003e
	if err := enc.Encode(jsonError{File: e.Pos.File, Line: e.Pos.Line, Column: e.Pos.Column, Path: e.Path, Message: e.Msg, Hint: e.Hint}); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (e *Error) UnmarshalJSON(b []byte) error {
	var j jsonError
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Error{Pos: Pos{File: j.File, Line: j.Line, Column: j.Column}, Path: j.Path, Msg: j.Message, Hint: j.Hint}
	return nil
}

// Error returns "file:line:col: path: msg (hint: hint)", leaving out the path and the hint
// when they are empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(e.Hint)
		b.WriteByte(')')
	}
	return b.String()
}

// Errors is every problem found in one spec, sorted by position. Load and Parse return it as
// their error; use errors.As to get it.
type Errors []*Error

// Error lists every problem, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems as a list of errors, for errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// With returns the problems of es and more in one list, sorted by position as Load sorts its
// problems (file, line, column, then key path and message), exact repeats dropped: the report of
// a check that runs after Load (the query bind check) merged with the spec's own problems. es is
// left as it is.
func (es Errors) With(more ...*Error) Errors {
	return sortErrors(append(append(Errors(nil), es...), more...))
}

// sortErrors orders problems by file, line, column, then path and message, and drops exact
// repeats.
func sortErrors(es Errors) Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// didYouMean returns a hint naming the candidates closest to word by edit distance (ignoring
// case), or, when none is close, listing all of them as "<what>: a, b, c". A candidate that is
// word in another case is the one named, with the reminder that names are case-sensitive (a
// user of Spark, whose column names are not, writes `ID` for `id`).
func didYouMean(word string, candidates []string, what string) string {
	for _, c := range candidates {
		if strings.EqualFold(c, word) {
			return "did you mean `" + c + "`? names are case-sensitive"
		}
	}
	if s := suggest.Closest(word, candidates); len(s) > 0 {
		return "did you mean " + quoteJoin(s, " or ") + "?"
	}
	if len(candidates) == 0 {
		return ""
	}
	return what + ": " + strings.Join(candidates, ", ")
}

// quoteJoin writes names as `a`, `b` or `c`.
func quoteJoin(names []string, last string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + last + q[len(q)-1]
}
