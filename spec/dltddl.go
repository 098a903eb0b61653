package spec

import (
	"fmt"
	"strings"

	"tributary/expectations"
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
words:
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
			break words // the name, or FLOW
		}
	}
	if i+1 < len(toks) && toks[i].is("flow") {
		return dltAppendFlow(sql, toks, i)
	}
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
			for _, part := range splitTopLevel(toks[i+1 : min(end, len(toks))]) {
				if e, expr, ok := constraintExpectation(sql, part); ok {
					expectations = append(expectations, e)
					if expr != "" {
						idioms = append(idioms, expr)
					}
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
			for _, part := range splitTopLevel(toks[i+2 : min(end, len(toks))]) {
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
				if h := sqlIdiomHint(strings.Join(idioms, " ")); h != "" {
					keys[len(keys)-1] += " (" + h + ")"
				}
			}
			return "this is a Delta Live Tables definition; the spec says it with keys of the dataset: " + strings.Join(keys, ", "), true
		default:
			i++
		}
	}
	return "", false
}

// dltAppendFlow reads a Delta Live Tables append flow, `CREATE FLOW f AS INSERT INTO x [BY NAME]
// SELECT ...` (toks[at] is FLOW), and returns the spec's keys for it as a hint: the spec has one
// flow per dataset, so x is a streaming_table whose query is the SELECT (that of several append
// flows into x are one query, a UNION ALL BY NAME). ok is false when sql holds no INSERT INTO
// (an APPLY CHANGES flow is dltApplyChanges's).
func dltAppendFlow(sql string, toks []sqlToken, at int) (hint string, ok bool) {
	for i := at + 1; i+2 < len(toks); i++ {
		if !toks[i].is("insert") || !toks[i+1].is("into") {
			continue
		}
		j := i + 2
		target := toks[j].text
		for j++; j+1 < len(toks) && toks[j].kind == 'p' && toks[j].text == "." && toks[j+1].isName(); j += 2 {
			target = toks[j+1].text // LIVE.x, catalog.schema.x: the dataset is the last part
		}
		if j+1 < len(toks) && toks[j].is("by") && toks[j+1].is("name") {
			j += 2
		}
		if j >= len(toks) {
			return "", false
		}
		q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql[toks[j].start:]), ";"))
		if len(q) > 160 {
			q = q[:157] + "..."
		}
		return fmt.Sprintf("this is a Delta Live Tables append flow into %s; the spec has one flow per dataset, so say it with keys of dataset %s: `type: streaming_table`, `query: %s` (the SELECTs of several append flows into %s are one query joined by UNION ALL BY NAME)", target, target, q, target), true
	}
	return "", false
}

// closing returns the index of the token that closes the bracket at toks[open], or len(toks)
// when none does.
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
	return len(toks)
}

// inside returns the text of sql between the bracket at toks[open] and toks[end], which closes
// it (closing), or to the end of sql when nothing does.
func inside(sql string, toks []sqlToken, open, end int) string {
	if end >= len(toks) {
		return strings.TrimSpace(sql[toks[open].end:])
	}
	return strings.TrimSpace(sql[toks[open].end:toks[end].start])
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
// UPDATE]` into the spec's expectation, with expr, the SQL expression it keeps when sqlCondition
// cannot write it as a row expression ("" when it can; sqlIdiomHint then says how); ok is false
// for another part of the list (a column definition).
func constraintExpectation(sql string, part []sqlToken) (e, expr string, ok bool) {
	if len(part) < 4 || !part[0].is("constraint") || !part[2].is("expect") || part[3].text != "(" {
		return "", "", false
	}
	end := closing(part, 3)
	expr = inside(sql, part, 3, end)
	action := "warn"
	for _, t := range part[min(end+1, len(part)):] {
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
	if e, ok := sqlCondition(expr); ok {
		quoted, expr = "'"+e+"'", "" // nothing left to say about its SQL
	}
	return fmt.Sprintf("{name: %s, expect: %s, on_violation: %s}", part[1].text, quoted, action), expr, true
}

// dltStatement reports whether sql is a Delta Live Tables statement rather than a query
// (dltDefinition, dltApplyChanges): its hint says what to write, and the checks of a query's
// references do not apply to it.
func dltStatement(sql string) bool {
	if _, ok := dltApplyChanges(sql); ok {
		return true
	}
	_, ok := dltDefinition(sql)
	return ok
}

// dltApplyChanges reads a Delta Live Tables APPLY CHANGES INTO (or AUTO CDC INTO) statement
// written where a query goes, alone or in a `CREATE FLOW f AS` (Databricks, "APPLY CHANGES
// INTO", "AUTO CDC INTO": KEYS, APPLY AS DELETE WHEN, APPLY AS TRUNCATE WHEN, SEQUENCE BY,
// COLUMNS [* EXCEPT], STORED AS SCD TYPE, TRACK HISTORY ON [* EXCEPT], IGNORE NULL UPDATES) and
// returns the dataset's `apply_changes:` that says the same, as a hint (conditions in SQL, with
// how to write them as row expressions); ok is false when sql holds no such statement.
func dltApplyChanges(sql string) (hint string, ok bool) {
	toks := tokenize(sql)
	start := -1
	for i := 0; i+2 < len(toks); i++ {
		if (toks[i].is("apply") && toks[i+1].is("changes") || toks[i].is("auto") && toks[i+1].is("cdc")) && toks[i+2].is("into") {
			start = i + 3
			break
		}
	}
	if start < 0 {
		return "", false
	}
	// until returns the text of the tokens from i to the next clause keyword at the top level
	// (or a `;`), and the index of that keyword.
	clause := map[string]bool{"from": true, "keys": true, "apply": true, "ignore": true, "sequence": true,
		"columns": true, "stored": true, "track": true, "where": true}
	until := func(i int) (string, int) {
		j, depth := i, 0
		for ; j < len(toks); j++ {
			t := toks[j]
			if t.kind == 'p' {
				switch t.text {
				case "(", "[":
					depth++
				case ")", "]":
					depth--
				case ";":
					if depth == 0 {
						goto done
					}
				}
			}
			if depth == 0 && t.kind == 'w' && clause[strings.ToLower(t.text)] && j > i {
				break
			}
		}
	done:
		if j == i {
			return "", j
		}
		return strings.TrimSpace(sql[toks[i].start:toks[j-1].end]), j
	}
	// list reads "(a, b)" or "a, b" as a YAML flow list.
	list := func(s string) string {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
			s = s[1 : len(s)-1]
		}
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = strings.Trim(strings.TrimSpace(p), "`\"")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	dequalify := func(name string) string {
		name = strings.TrimSpace(name)
		if inner, ok := strings.CutPrefix(strings.ToUpper(name), "STREAM"); ok && strings.HasPrefix(strings.TrimSpace(inner), "(") {
			name = strings.TrimSpace(name[len(name)-len(inner):])
			name = strings.TrimSuffix(strings.TrimPrefix(name, "("), ")")
		} else if strings.HasPrefix(strings.ToUpper(name), "STREAM ") {
			name = name[len("STREAM "):]
		}
		name = strings.TrimSpace(name)
		return name[strings.LastIndexByte(name, '.')+1:]
	}
	var keys, conds []string
	// columns adds the key of a COLUMNS or TRACK HISTORY ON list c: `* EXCEPT (a, b)` as except
	// (nothing for `*` alone: every column), another list as only.
	columns := func(c, only, except string) {
		if rest, ok := strings.CutPrefix(c, "*"); ok {
			if ex, ok := cutWord(rest, "except"); ok {
				keys = append(keys, except+": "+list(ex))
			}
			return
		}
		keys = append(keys, only+": "+list(c))
	}
	i := start
	_, i = until(i) // the target: the dataset itself
	for i < len(toks) {
		t := toks[i]
		switch {
		case t.is("from"):
			var src string
			src, i = until(i + 1)
			keys = append(keys, "source: "+dequalify(src))
		case t.is("keys"):
			var k string
			k, i = until(i + 1)
			keys = append(keys, "keys: "+list(k))
		case t.is("apply") && i+3 < len(toks) && toks[i+1].is("as") && toks[i+3].is("when"):
			key := "apply_as_deletes"
			if toks[i+2].is("truncate") {
				key = "apply_as_truncates"
			}
			var cond string
			cond, i = until(i + 4)
			if e, ok := sqlCondition(cond); ok {
				keys = append(keys, key+": '"+e+"'")
			} else {
				keys = append(keys, key+": <"+cond+" as a row expression>")
				conds = append(conds, cond)
			}
		case t.is("sequence") && i+1 < len(toks) && toks[i+1].is("by"):
			var s string
			s, i = until(i + 2)
			if inner, ok := strings.CutPrefix(strings.ToLower(s), "struct"); ok && strings.HasPrefix(strings.TrimSpace(inner), "(") {
				s = list(strings.TrimSpace(s[len("struct"):]))
			}
			keys = append(keys, "sequence_by: "+s)
		case t.is("columns"):
			var c string
			c, i = until(i + 1)
			columns(c, "column_list", "except_column_list")
		case t.is("stored"):
			var s string
			s, i = until(i + 1)
			if f := strings.Fields(s); len(f) > 0 {
				keys = append(keys, "stored_as_scd_type: "+f[len(f)-1])
			}
		case t.is("track"):
			var s string
			s, i = until(i + 1)
			if s, ok := cutWord(s, "history"); ok {
				if s, ok := cutWord(s, "on"); ok {
					columns(s, "track_history_column_list", "track_history_except_column_list")
				}
			}
		case t.is("ignore"):
			_, i = until(i + 1)
			keys = append(keys, "ignore_null_updates: true")
		default:
			_, i = until(i + 1)
		}
	}
	hint = "this is a Delta Live Tables APPLY CHANGES statement; the spec says it with the dataset's `apply_changes:` {" + strings.Join(keys, ", ") + "}, and no query"
	if h := sqlIdiomHint(strings.Join(conds, " ")); h != "" {
		hint += " (" + h + ")"
	}
	return hint, true
}

// cutWord cuts word (in any case) and the space around it from the start of s.
func cutWord(s, word string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) >= len(word) && strings.EqualFold(s[:len(word)], word) {
		return strings.TrimSpace(s[len(word):]), true
	}
	return s, false
}

// sqlCondition writes a SQL condition of a Delta Live Tables statement as a row expression
// (expectations.CheckSyntax) when its forms are the simple ones: 'x' and "x" strings, =, <>,
// AND, OR, NOT, IS [NOT] NULL; ok is false when the result does not parse as one.
func sqlCondition(cond string) (string, bool) {
	toks := tokenize(cond)
	var b strings.Builder
	prevEnd := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		b.WriteString(cond[prevEnd:t.start])
		prevEnd = t.end
		adjacent := func(j int) bool { return j < len(toks) && toks[j].start == toks[j-1].end }
		switch {
		case t.kind == 's' || t.kind == 'q':
			fmt.Fprintf(&b, "%q", t.text)
		case t.is("is") && i+2 < len(toks) && toks[i+1].is("not") && toks[i+2].is("null"):
			b.WriteString("!= nil")
			prevEnd, i = toks[i+2].end, i+2
		case t.is("is") && i+1 < len(toks) && toks[i+1].is("null"):
			b.WriteString("== nil")
			prevEnd, i = toks[i+1].end, i+1
		case t.is("and"), t.is("or"), t.is("not"):
			b.WriteString(strings.ToLower(t.text))
		case t.kind == 'p' && t.text == "<" && adjacent(i+1) && toks[i+1].text == ">":
			b.WriteString("!=")
			prevEnd, i = toks[i+1].end, i+1
		case t.kind == 'p' && t.text == "=" && !(i > 0 && adjacent(i) && strings.Contains("<>!=", toks[i-1].text)) && !(adjacent(i+1) && toks[i+1].text == "="):
			b.WriteString("==")
		default:
			b.WriteString(cond[t.start:t.end])
		}
	}
	b.WriteString(cond[prevEnd:])
	out := strings.TrimSpace(b.String())
	return out, expectations.CheckSyntax(out) == nil
}
