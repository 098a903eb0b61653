package spec

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"tributary/schema"
)

// parseColumns parses a `schema:` DDL string column by column, so that a mistake in one column
// neither hides the others nor the checks that use them. It splits ddl at its top-level commas
// (outside (), <>, quotes and backticks) and parses each part with schema.ParseDDL. It keeps
// every column whose name it can read: with its type when that parses, else with the zero
// schema.Type, which expectations.Compile takes as a column of unknown type.
//
// It returns the problems found (one per bad column, offsets into ddl) and whether the list of
// column names is complete: false when a column's name cannot be read or a bracket, quote or
// backtick is never closed (then the parts after it are unknown).
func parseColumns(ddl string) (s schema.Schema, problems []*schema.DDLError, complete bool) {
	whole, err := schema.ParseDDL(ddl)
	if err == nil {
		return whole, nil, true
	}
	var de *schema.DDLError
	if !errors.As(err, &de) {
		return schema.Schema{}, []*schema.DDLError{{Msg: err.Error()}}, false
	}
	parts, balanced := splitColumns(ddl)
	if len(parts) == 1 && strings.TrimSpace(ddl) == "" {
		return schema.Schema{}, []*schema.DDLError{de}, false
	}
	complete = balanced
	seen := map[string]bool{}
	for i, p := range parts {
		text := ddl[p.start:p.end]
		if strings.TrimSpace(text) == "" {
			msg := "expected a column name after ','"
			if i == 0 {
				msg = "expected a column name before ','"
			}
			problems = append(problems, &schema.DDLError{Offset: p.start + len(text) - len(strings.TrimLeft(text, " \t\r\n")), Msg: msg})
			continue
		}
		cols, problem, named := parseColumn(text)
		if problem != nil {
			problem.Offset += p.start
			problems = append(problems, problem)
		}
		complete = complete && named
		for _, c := range cols {
			if seen[c.field.Name] {
				if problem == nil {
					problems = append(problems, &schema.DDLError{Offset: p.start + c.off, Msg: fmt.Sprintf("column %q is declared twice", c.field.Name)})
				}
				continue
			}
			seen[c.field.Name] = true
			s.Fields = append(s.Fields, c.field)
		}
	}
	return s, problems, complete
}

// columnOffset returns the byte offset in ddl of the name of column name, or 0 when it is not
// found (the start of the string), for errors about one column of a schema string.
func columnOffset(ddl, name string) int {
	parts, _ := splitColumns(ddl)
	for _, p := range parts {
		if n, off, ok := columnName(ddl[p.start:p.end]); ok && n == name {
			return p.start + off
		}
	}
	return 0
}

// column is a column read from one part of a DDL string, with the byte offset of its name.
type column struct {
	field schema.Field
	off   int
}

// parseColumn parses one part of a DDL string, which should declare one column. On a problem it
// still returns what it can read: the column with its type when only what follows the type is
// wrong (a missing comma: the rest is then read as more columns, without reporting their
// problems), else the column by name with an unknown type. named is false when the part has a
// problem and no readable column name.
func parseColumn(part string) (cols []column, problem *schema.DDLError, named bool) {
	name, off, ok := columnName(part)
	s, err := schema.ParseDDL(part)
	if err == nil {
		for _, f := range s.Fields {
			cols = append(cols, column{f, off})
		}
		return cols, nil, true
	}
	if !errors.As(err, &problem) {
		problem = &schema.DDLError{Msg: err.Error()}
	}
	if !ok {
		return nil, problem, false
	}
	if head, err := schema.ParseDDL(part[:problem.Offset]); err == nil && len(head.Fields) == 1 && problem.Offset > 0 {
		cols = append(cols, column{head.Fields[0], off})
		rest := part[problem.Offset:]
		trimmed := strings.TrimLeft(rest, " \t\r\n,")
		named = true
		if strings.TrimSpace(trimmed) != "" {
			base := problem.Offset + len(rest) - len(trimmed)
			parts, balanced := splitColumns(trimmed)
			named = balanced
			for _, p := range parts {
				more, _, ok := parseColumn(trimmed[p.start:p.end])
				named = named && ok
				for _, c := range more {
					c.off += base + p.start
					cols = append(cols, c)
				}
			}
		}
		return cols, problem, named
	}
	return []column{{schema.Field{Name: name, Nullable: true}, off}}, problem, true
}

// columnName reads the column name at the start of a DDL part as schema.ParseDDL does (a word of
// letters, digits and _, or a name in backticks), returning it with its byte offset.
func columnName(part string) (name string, off int, ok bool) {
	i := 0
	for i < len(part) && unicode.IsSpace(rune(part[i])) {
		i++
	}
	if i < len(part) && part[i] == '`' {
		end := strings.IndexByte(part[i+1:], '`')
		if end <= 0 {
			return "", i, false
		}
		return part[i+1 : i+1+end], i, true
	}
	j := i
	for j < len(part) && (part[j] == '_' || unicode.IsLetter(rune(part[j])) || unicode.IsDigit(rune(part[j]))) {
		j++
	}
	return part[i:j], i, j > i
}

// span is a byte range [start, end) of a string.
type span struct{ start, end int }

// splitColumns splits a DDL string at its top-level commas: those outside (), <>, quotes and
// backticks. balanced is false when a bracket, quote or backtick is left open at the end.
func splitColumns(ddl string) (parts []span, balanced bool) {
	depth := 0
	var quote byte // the open quote or backtick, or 0
	start := 0
	for i := 0; i < len(ddl); i++ {
		c := ddl[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '`' || c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '<':
			depth++
		case c == ')' || c == '>':
			depth = max(depth-1, 0)
		case c == ',' && depth == 0:
			parts = append(parts, span{start, i})
			start = i + 1
		}
	}
	parts = append(parts, span{start, len(ddl)})
	return parts, depth == 0 && quote == 0
}
