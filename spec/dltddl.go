package spec

import (
	"fmt"
	"strings"
)

// dltDefinition reads a Delta Live Tables SQL definition written where a query goes (`CREATE OR
// REFRESH STREAMING TABLE x (CONSTRAINT c EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW) COMMENT
// '...' TBLPROPERTIES ('k' = 'v') AS SELECT ...`; also MATERIALIZED VIEW, LIVE TABLE,
// [TEMPORARY] [LIVE] VIEW) and returns the spec's keys that say the same, as a hint (PARTITIONED
// BY and CLUSTER BY are left out: a query dataset's table is not partitioned); ok is false when
// sql does not start so (Databricks, "Delta Live Tables SQL language reference").
func dltDefinition(sql string) (hint string, ok bool) {
	toks := tokenize(sql)
	if len(toks) == 0 || !toks[0].is("create") {
		return "", false
	}
	typ := "materialized_view"
	i := 1
	for ; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.is("or"), t.is("refresh"), t.is("replace"), t.is("temporary"), t.is("temp"), t.is("live"), t.is("materialized"), t.is("private"):
		case t.is("streaming"):
			typ = "streaming_table"
		case t.is("table"):
		case t.is("view"):
			if typ != "streaming_table" && !toks[i-1].is("materialized") {
				typ = "view"
			}
		default:
			goto name
		}
	}
name:
	// The name, possibly qualified (a.b.c).
	for i++; i+1 < len(toks) && toks[i].kind == 'p' && toks[i].text == "." && toks[i+1].isName(); i += 2 {
	}
	keys := []string{"`type: " + typ + "`"}
	var expectations, idioms []string // idioms: the constraints' SQL expressions
	for i < len(toks) {
		t := toks[i]
		switch {
		case t.kind == 'p' && t.text == "(":
			end := closing(toks, i)
			for _, part := range splitTopLevel(toks[i+1 : end]) {
				if e, expr, ok := constraintExpectation(sql, part); ok {
					expectations, idioms = append(expectations, e), append(idioms, expr)
				}
			}
			i = end + 1
		case t.is("comment") && i+1 < len(toks) && (toks[i+1].kind == 's' || toks[i+1].kind == 'q'):
			keys = append(keys, fmt.Sprintf("`comment: %q`", toks[i+1].text))
			i += 2
		case (t.is("partitioned") || t.is("cluster")) && i+2 < len(toks) && toks[i+1].is("by") && toks[i+2].text == "(":
			i = closing(toks, i+2) + 1 // a query dataset's table is not partitioned
		case t.is("tblproperties") && i+1 < len(toks) && toks[i+1].text == "(":
			end := closing(toks, i+1)
			var props []string
			for _, part := range splitTopLevel(toks[i+2 : end]) {
				for j, pt := range part {
					if pt.kind == 'p' && pt.text == "=" && j > 0 && j+1 < len(part) {
						k := strings.Trim(sql[part[0].start:part[j-1].end], "\"'`")
						v := strings.Trim(sql[part[j+1].start:part[len(part)-1].end], "\"'")
						props = append(props, fmt.Sprintf("%s: %q", k, v))
						break
					}
				}
			}
			keys = append(keys, "`table_properties: {"+strings.Join(props, ", ")+"}`")
			i = end + 1
		case t.is("as"):
			q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql[t.end:]), ";"))
			if len(q) > 160 {
				q = q[:157] + "..."
			}
			keys = append(keys, "`query: "+q+"`")
			if len(expectations) > 0 {
				keys = append(keys, "`expectations: ["+strings.Join(expectations, ", ")+"]`")
				if len(idioms) > 0 {
					keys[len(keys)-1] += " (" + sqlIdiomHint(strings.Join(idioms, " ")) + ")"
				}
			}
			return "this is a Delta Live Tables definition; the spec says it with keys of the dataset: " + strings.Join(keys, ", "), true
		default:
			i++
		}
	}
	return "", false
}

// closing returns the index of the token that closes the bracket at toks[open], or the last
// token when none does.
func closing(toks []sqlToken, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].kind != 'p' {
			continue
		}
		switch toks[j].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return len(toks) - 1
}

// splitTopLevel splits toks at their commas outside brackets.
func splitTopLevel(toks []sqlToken) [][]sqlToken {
	var out [][]sqlToken
	depth, start := 0, 0
	for j, t := range toks {
		if t.kind != 'p' {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[start:j])
				start = j + 1
			}
		}
	}
	return append(out, toks[start:])
}

// constraintExpectation turns `CONSTRAINT name EXPECT (expr) [ON VIOLATION DROP ROW | FAIL
// UPDATE]` into the spec's expectation, with expr, the SQL expression it keeps (which
// sqlIdiomHint then says how to write); ok is false for another part of the list (a column
// definition).
func constraintExpectation(sql string, part []sqlToken) (e, expr string, ok bool) {
	if len(part) < 4 || !part[0].is("constraint") || !part[2].is("expect") || part[3].text != "(" {
		return "", "", false
	}
	end := closing(part, 3)
	expr = strings.TrimSpace(sql[part[3].end:part[end].start])
	action := "warn"
	for _, t := range part[end+1:] {
		switch {
		case t.is("drop"):
			action = "drop"
		case t.is("fail"):
			action = "fail"
		}
	}
	quoted := "'" + expr + "'"
	if strings.Contains(expr, "'") {
		quoted = fmt.Sprintf("%q", expr)
	}
	return fmt.Sprintf("{name: %s, expect: %s, on_violation: %s}", part[1].text, quoted, action), expr, true
}
