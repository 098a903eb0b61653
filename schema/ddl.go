package schema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"tributary/internal/suggest"
)

// DDLError is a problem in a DDL schema string; Offset is the 0-based byte offset in that string.
type DDLError struct {
	Offset int
	Msg    string
}

// Error gives the 1-based character position and the problem.
func (e *DDLError) Error() string { return fmt.Sprintf("at character %d: %s", e.Offset+1, e.Msg) }

// ParseDDL parses a Spark DDL schema string such as
// "op STRING, order_id BIGINT, amount DECIMAL(10,2), at TIMESTAMP". Type names are
// case-insensitive and accept Spark's synonyms (LONG, INTEGER, BOOL, NUMERIC/DEC). Column names
// may be quoted with backticks. STRUCT<name: TYPE, ...> (the colon is optional), ARRAY<TYPE> and
// MAP<KEY, VALUE> nest at any depth ("tags ARRAY<STRUCT<a: INT, b: ARRAY<STRING>>>"), in upper or
// lower case as Spark prints them ("array<int>"). A MAP key cannot be a MAP (Spark refuses map
// types as keys).
// Errors are *DDLError with the offset of the problem.
func ParseDDL(s string) (Schema, error) {
	p := &ddlParser{s: s}
	var out Schema
	seen := map[string]bool{}
	p.space()
	if p.pos >= len(s) {
		return Schema{}, &DDLError{0, "the schema is empty; write columns as \"name TYPE, ...\""}
	}
	for {
		p.space()
		start := p.pos
		name, err := p.name()
		if err != nil {
			return Schema{}, err
		}
		if seen[name] {
			return Schema{}, &DDLError{start, fmt.Sprintf("column %q is declared twice", name)}
		}
		seen[name] = true
		p.space()
		t, err := p.typ()
		if err != nil {
			return Schema{}, err
		}
		p.space()
		out.Fields = append(out.Fields, Field{Name: name, Type: t, Nullable: true})
		if p.pos >= len(s) {
			return out, nil
		}
		if c := columnClause(s[p.pos:]); c != "" {
			advice := columnClauses[c]
			if c == "not null" {
				advice = fmt.Sprintf(advice, name)
			}
			return Schema{}, &DDLError{p.pos, fmt.Sprintf("%s after column %q is not supported yet: remove it (%s)", strings.ToUpper(c), name, advice)}
		}
		if s[p.pos] != ',' {
			return Schema{}, &DDLError{p.pos, fmt.Sprintf("expected ',' or the end after column %q, found %q", name, rest(s[p.pos:]))}
		}
		p.pos++
	}
}

// columnClauses are the clauses Spark DDL allows after a column's type (which Delta Live Tables
// pipelines write in a table's schema), none of which a schema here takes, with what to do instead.
var columnClauses = map[string]string{
	"not null":  "every column is nullable; a `fail` expectation `%s != nil` stops NULLs",
	"comment":   "a column has no comment; the dataset's `comment:` describes the table",
	"default":   "a column has no default value",
	"generated": "a column is not generated; compute it in a query dataset",
	"collate":   "strings compare by their bytes",
}

// columnClauseRE matches a clause of columnClauses at the start of a string, in any case.
var columnClauseRE = regexp.MustCompile(`(?i)^(not\s+null|comment|default|generated|collate)\b`)

// columnClause returns the key of columnClauses that rest starts with, or "".
func columnClause(rest string) string {
	m := columnClauseRE.FindString(rest)
	return strings.Join(strings.Fields(strings.ToLower(m)), " ")
}

type ddlParser struct {
	s   string
	pos int
}

func rest(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}

func (p *ddlParser) space() {
	for p.pos < len(p.s) && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
	}
}

func (p *ddlParser) name() (string, error) {
	if p.pos < len(p.s) && p.s[p.pos] == '`' {
		end := strings.IndexByte(p.s[p.pos+1:], '`')
		if end < 0 {
			return "", &DDLError{p.pos, "unclosed backtick in column name"}
		}
		n := p.s[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		if n == "" {
			return "", &DDLError{p.pos - 2, "empty column name"}
		}
		return n, nil
	}
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == '_' || unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos]))) {
		p.pos++
	}
	if start == p.pos {
		return "", &DDLError{start, fmt.Sprintf("expected a column name, found %q", rest(p.s[start:]))}
	}
	return p.s[start:p.pos], nil
}

func (p *ddlParser) word() string {
	start := p.pos
	for p.pos < len(p.s) && (unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos])) || p.s[p.pos] == '_') {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *ddlParser) typ() (Type, error) {
	start := p.pos
	w := strings.ToUpper(p.word())
	switch w {
	case "BIGINT", "LONG":
		return Type{Kind: Long}, nil
	case "INT", "INTEGER":
		return Type{Kind: Integer}, nil
	case "STRING":
		return Type{Kind: String}, nil
	case "DOUBLE":
		return Type{Kind: Double}, nil
	case "FLOAT", "REAL":
		return Type{Kind: Double, Storage: StorageFloat}, nil
	case "SMALLINT", "SHORT":
		return Type{Kind: Integer, Storage: StorageShort}, nil
	case "TINYINT", "BYTE":
		return Type{Kind: Integer, Storage: StorageByte}, nil
	case "BOOLEAN", "BOOL":
		return Type{Kind: Boolean}, nil
	case "DATE":
		return Type{Kind: DateKind}, nil
	case "TIMESTAMP":
		return Type{Kind: TimestampKind}, nil
	case "TIMESTAMP_NTZ":
		return TimestampNTZ, nil
	case "BINARY":
		return Binary, nil
	case "DECIMAL", "DEC", "NUMERIC":
		t := Type{Kind: DecimalKind, Precision: 10, Scale: 0} // Spark's default DECIMAL is (10,0)
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == '(' {
			p.pos++
			p.space()
			pr, err := p.int()
			if err != nil {
				return Type{}, err
			}
			t.Precision = pr
			t.Scale = 0
			p.space()
			if p.pos < len(p.s) && p.s[p.pos] == ',' {
				p.pos++
				p.space()
				sc, err := p.int()
				if err != nil {
					return Type{}, err
				}
				t.Scale = sc
				p.space()
			}
			if p.pos >= len(p.s) || p.s[p.pos] != ')' {
				return Type{}, &DDLError{p.pos, "expected ')' to close DECIMAL(precision, scale)"}
			}
			p.pos++
		}
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
			return Type{}, &DDLError{start, fmt.Sprintf("DECIMAL precision %d is out of range 1..%d, the digits a DECIMAL holds (as in Spark); use DECIMAL(%d,%d), or DOUBLE for a wider range with fewer exact digits", t.Precision, MaxDecimalPrecision, MaxDecimalPrecision, min(t.Scale, MaxDecimalPrecision))}
		}
		if t.Scale > t.Precision {
			return Type{}, &DDLError{start, fmt.Sprintf("DECIMAL scale %d is larger than its precision %d", t.Scale, t.Precision)}
		}
		return t, nil
	case "STRUCT":
		return p.structType(start)
	case "ARRAY":
		return p.arrayType()
	case "MAP":
		return p.mapType()
	case "CHAR", "VARCHAR":
		return Type{}, p.charVarchar(start, w)
	case "INTERVAL":
		return Type{}, &DDLError{start, "type INTERVAL is not supported: a table cannot hold an interval (Spark: \"Cannot use interval type in the table schema\"; Delta Lake has no interval type); declare the length as a number, e.g. `duration_seconds BIGINT`, or as STRING"}
	case "VOID":
		return Type{}, &DDLError{start, "type VOID is not supported: a column that is always NULL has no use in a table (Spark refuses VOID in a table schema too); leave the column out, or give it the type its values will have, e.g. STRING"}
	case "":
		return Type{}, &DDLError{start, fmt.Sprintf("expected a type after the column name, found %q", rest(p.s[start:]))}
	}
	if near := suggest.Closest(w, typeNames); len(near) > 0 {
		return Type{}, &DDLError{start, fmt.Sprintf("unknown type %q (did you mean %s?); supported: "+supportedTypes, w, strings.Join(near, " or "))}
	}
	return Type{}, &DDLError{start, fmt.Sprintf("unknown type %q; supported: "+supportedTypes, w)}
}

// typeNames are the type keywords offered for a misspelt type.
var typeNames = []string{"BIGINT", "INT", "SMALLINT", "TINYINT", "STRING", "BINARY", "DOUBLE", "FLOAT", "BOOLEAN", "DECIMAL", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "STRUCT", "ARRAY", "MAP"}

// supportedTypes lists the DDL types ParseDDL accepts, for errors.
const supportedTypes = "BIGINT, INT, SMALLINT, TINYINT, STRING, BINARY, DOUBLE, FLOAT, BOOLEAN, DECIMAL(p,s), DATE, TIMESTAMP, TIMESTAMP_NTZ, STRUCT<name: TYPE, ...>, ARRAY<TYPE>, MAP<KEY, VALUE>"

// open consumes the '<' after the keyword kw, or returns the error showing the expected form.
func (p *ddlParser) open(kw, form string) error {
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != '<' {
		return &DDLError{p.pos, fmt.Sprintf("expected '<' after %s: %s", kw, form)}
	}
	p.pos++
	p.space()
	return nil
}

// arrayType parses the <TYPE> of an ARRAY.
func (p *ddlParser) arrayType() (Type, error) {
	if err := p.open("ARRAY", "ARRAY<TYPE>"); err != nil {
		return Type{}, err
	}
	et, err := p.typ()
	if err != nil {
		return Type{}, err
	}
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != '>' {
		return Type{}, &DDLError{p.pos, fmt.Sprintf("expected '>' to close ARRAY<%s>, found %q", et.DDL(), rest(p.s[p.pos:]))}
	}
	p.pos++
	return ArrayOf(et), nil
}

// mapType parses the <KEY, VALUE> of a MAP.
func (p *ddlParser) mapType() (Type, error) {
	if err := p.open("MAP", "MAP<KEY, VALUE>"); err != nil {
		return Type{}, err
	}
	at := p.pos
	kt, err := p.typ()
	if err != nil {
		return Type{}, err
	}
	if kt.Kind == MapKind {
		return Type{}, &DDLError{at, "a MAP key cannot be a MAP"}
	}
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != ',' {
		return Type{}, &DDLError{p.pos, fmt.Sprintf("expected ',' between the key and value types of MAP<KEY, VALUE>, found %q", rest(p.s[p.pos:]))}
	}
	p.pos++
	p.space()
	vt, err := p.typ()
	if err != nil {
		return Type{}, err
	}
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != '>' {
		return Type{}, &DDLError{p.pos, fmt.Sprintf("expected '>' to close MAP<%s, %s>, found %q", kt.DDL(), vt.DDL(), rest(p.s[p.pos:]))}
	}
	p.pos++
	return MapOf(kt, vt), nil
}

// structType parses the <name: TYPE, ...> of a STRUCT whose keyword starts at start.
func (p *ddlParser) structType(start int) (Type, error) {
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != '<' {
		return Type{}, &DDLError{p.pos, "expected '<' after STRUCT: STRUCT<name: TYPE, ...>"}
	}
	p.pos++
	var fields Schema
	seen := map[string]string{} // lower-case name -> name as declared
	for {
		p.space()
		at := p.pos
		name, err := p.name()
		if err != nil {
			return Type{}, err
		}
		if first, dup := seen[strings.ToLower(name)]; dup {
			if first == name {
				return Type{}, &DDLError{at, fmt.Sprintf("field %q is declared twice in the STRUCT", name)}
			}
			return Type{}, &DDLError{at, fmt.Sprintf("field %q is declared twice in the STRUCT, as %q and %q (Delta field names are case-insensitive)", name, first, name)}
		}
		seen[strings.ToLower(name)] = name
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ':' {
			p.pos++
			p.space()
		}
		t, err := p.typ()
		if err != nil {
			return Type{}, err
		}
		fields.Fields = append(fields.Fields, Field{Name: name, Type: t, Nullable: true})
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '>' {
			p.pos++
			return Type{Kind: StructKind, Struct: &fields}, nil
		}
		return Type{}, &DDLError{p.pos, fmt.Sprintf("expected ',' or '>' in STRUCT, found %q", rest(p.s[p.pos:]))}
	}
}

func (p *ddlParser) int() (int, error) {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	n, err := strconv.Atoi(p.s[start:p.pos])
	if err != nil {
		return 0, &DDLError{start, "expected a number"}
	}
	return n, nil
}

// charVarchar reads the (n) after the keyword w (CHAR or VARCHAR, which starts at start) and
// returns the error for it: a schema that ParseDDL reads is read from the data, and Spark takes
// CHAR(n) and VARCHAR(n) only in a table's schema (CharVarcharUtils.failIfHasCharVarchar,
// which DataFrameReader.schema and DataStreamReader.schema call: "char/varchar type can only be
// used in the table schema"), reading text as STRING.
func (p *ddlParser) charVarchar(start int, w string) error {
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != '(' {
		return &DDLError{p.pos, fmt.Sprintf("expected '(' after %s: %s(length)", w, w)}
	}
	p.pos++
	p.space()
	n, err := p.int()
	if err != nil {
		return err
	}
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != ')' {
		return &DDLError{p.pos, fmt.Sprintf("expected ')' to close %s(length)", w)}
	}
	p.pos++
	return &DDLError{start, fmt.Sprintf("type %s(%d) is not supported: declare the column STRING (Spark refuses CHAR and VARCHAR in a schema the data is read with, \"char/varchar type can only be used in the table schema\", and its readers see a table's CHAR and VARCHAR columns as STRING)", w, n)}
}
