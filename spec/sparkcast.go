package spec

import (
	"slices"
	"strings"
)

// textEdit replaces the bytes start to end of a query's SQL with text (an insertion when start
// equals end). outer orders insertions at one offset: the one of the greater outer comes first
// (it is the outer call of x::INT::BIGINT).
type textEdit struct {
	start, end int
	text       string
	outer      int
}

// applyEdits returns sql with edits made, in the order of their offsets; an edit that overlaps
// the one before it is skipped (the edits Rewrite makes do not overlap).
func applyEdits(sql string, edits []textEdit) string {
	slices.SortStableFunc(edits, func(a, b textEdit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		if (a.start == a.end) != (b.start == b.end) {
			if a.start == a.end {
				return -1 // an insertion before the text replaced at its offset
			}
			return 1
		}
		return b.outer - a.outer
	})
	var b strings.Builder
	last := 0
	for _, e := range edits {
		if e.start < last {
			continue
		}
		b.WriteString(sql[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(sql[last:])
	return b.String()
}

// castTypes are the names of the types whose casts run as Spark SQL's (Spark's integral types,
// DuckDB's other names of the same types, and the text types), by lower-case name, with the
// DuckDB type a cast to them gives.
var castTypes = map[string]string{
	"tinyint": "TINYINT", "byte": "TINYINT", "int1": "TINYINT",
	"smallint": "SMALLINT", "short": "SMALLINT", "int2": "SMALLINT",
	"int": "INTEGER", "integer": "INTEGER", "int4": "INTEGER", "signed": "INTEGER",
	"bigint": "BIGINT", "long": "BIGINT", "int8": "BIGINT",
	"string": "VARCHAR", "varchar": "VARCHAR", "text": "VARCHAR",
}

// castCall is the name of the macro that casts to typ (a value of castTypes) as Spark SQL does,
// which the query engine defines on every connection (sqlengine.CastMacro, whose names
// TestCastMacroNames checks these are); try names the TRY_CAST form.
func castCall(typ string, try bool) string {
	if try {
		return "spark_try_cast_" + strings.ToLower(typ)
	}
	return "spark_cast_" + strings.ToLower(typ)
}

// onceCall is the name of the form of a castCall or concatWSPart macro that computes its
// argument once (sqlengine.OnceMacro): for an argument that holds another cast or concat_ws
// (nestedCall), which the plain form, folded by its argument's type, would copy into each of its
// branches when DuckDB binds it, so that a cast of casts would bind as slowly as the product of
// their branches. The plain form costs nothing when the query runs; this one a lambda a row.
func onceCall(macro string) string { return macro + "_once" }

// nestedCall reports whether the tokens of an argument hold a cast or a concat_ws call, which
// castEdits and concatWSEdits make macro calls.
func nestedCall(toks []sqlToken) bool {
	for i, t := range toks {
		if t.is("cast") || t.is("try_cast") || t.is("concat_ws") || (t.kind == 'p' && t.text == ":" && i+1 < len(toks) && toks[i+1].text == ":") {
			return true
		}
	}
	return false
}

// castEdits returns the edits that make each cast of sql to a type of castTypes a call of
// castCall's macro, so that it gives Spark's value: DuckDB's CAST(2.7 AS INT) is 3, Spark's 2;
// DuckDB's CAST(1e20 AS VARCHAR) is 1e+20, Spark's 1.0E20. CAST(x AS INT) and TRY_CAST(x AS
// INT) become spark_cast_integer(x) and spark_try_cast_integer(x), and x::INT
// spark_cast_integer(x) (castOperand finds x). A cast to a list (INT[]) is left alone, and so
// is one to a type with a length (VARCHAR(10)).
func castEdits(sql string) []textEdit {
	toks := tokenize(sql)
	var out []textEdit
	for i, t := range toks {
		switch {
		case (t.is("cast") || t.is("try_cast")) && i+1 < len(toks) && toks[i+1].kind == 'p' && toks[i+1].text == "(" &&
			(i == 0 || toks[i-1].kind != 'p' || toks[i-1].text != "."):
			end := closeParen(toks, i+1)
			if end >= len(toks) || end < i+4 || !toks[end-2].is("as") || toks[end-1].kind != 'w' {
				continue
			}
			typ, ok := castTypes[strings.ToLower(toks[end-1].text)]
			if !ok {
				continue
			}
			call := castCall(typ, t.is("try_cast"))
			if nestedCall(toks[i+2 : end-2]) {
				call = onceCall(call)
			}
			out = append(out,
				textEdit{start: t.start, end: toks[i+1].end, text: call + "("},
				textEdit{start: toks[end-3].end, end: toks[end].end, text: ")"})
		case t.kind == 'p' && t.text == ":" && i > 0 && i+2 < len(toks) && toks[i+1].kind == 'p' && toks[i+1].text == ":" &&
			toks[i+1].start == t.end && toks[i+2].kind == 'w' && (i+3 >= len(toks) || toks[i+3].text != "[" && toks[i+3].text != "("):
			typ, ok := castTypes[strings.ToLower(toks[i+2].text)]
			if !ok {
				continue
			}
			from := castOperand(toks, i)
			if from < 0 {
				continue
			}
			call := castCall(typ, false)
			if nestedCall(toks[from:i]) {
				call = onceCall(call)
			}
			out = append(out,
				textEdit{start: toks[from].start, end: toks[from].start, text: call + "(", outer: t.start},
				textEdit{start: t.start, end: toks[i+2].end, text: ")"})
		}
	}
	return out
}

// concatWSPart is the macro that each argument of concat_ws after the separator is passed to,
// with the separator, so that an array argument is joined as Spark SQL's concat_ws joins it
// (its elements that are not NULL), where DuckDB's writes it as text: sqlengine.ConcatWSPart,
// which TestCastMacroNames checks this is.
const concatWSPart = "spark_concat_ws_part"

// concatWSEdits returns the edits that make each argument a of a call concat_ws(sep, a, ...)
// in sql concatWSPart(a, sep), sep written as the call writes it.
func concatWSEdits(sql string) []textEdit {
	toks := tokenize(sql)
	var out []textEdit
	for i, t := range toks {
		if !t.is("concat_ws") || i+1 >= len(toks) || toks[i+1].text != "(" || (i > 0 && toks[i-1].text == ".") {
			continue
		}
		args := callArgTokens(toks, i+1)
		if len(args) < 2 || len(args[0]) == 0 {
			continue
		}
		sep := sql[args[0][0].start:args[0][len(args[0])-1].end]
		for _, a := range args[1:] {
			if len(a) == 0 {
				continue
			}
			start, end := a[0].start, a[len(a)-1].end
			call := concatWSPart
			if nestedCall(a) {
				call = onceCall(call)
			}
			out = append(out,
				textEdit{start: start, end: start, text: call + "(", outer: end},
				textEdit{start: end, end: end, text: ", " + sep + ")"})
		}
	}
	return out
}

// castOperand returns the index of the first token of the operand of the "::" at toks[colon]
// (a name, maybe qualified; a number; a string, maybe typed: DATE '...'; a parenthesized
// expression or a call; each maybe subscripted or itself cast: x::DOUBLE::INT), or -1 when
// there is none.
func castOperand(toks []sqlToken, colon int) int {
	k := colon - 1
	for {
		t := toks[k]
		switch {
		case t.kind == 'p' && (t.text == ")" || t.text == "]"):
			open := openParen(toks, k)
			if open < 0 {
				return -1
			}
			k = open
			if k > 0 && (t.text == "]" && subscripted(toks[k-1]) || t.text == ")" && toks[k-1].kind == 'w' && !noSubscript[strings.ToLower(toks[k-1].text)]) {
				k--
				continue // the subscripted value, or the called function's name
			}
		case t.is("end"):
			if k = caseStart(toks, k); k < 0 {
				return -1
			}
		case t.kind == 's' && k > 0 && toks[k-1].kind == 'w' && !noSubscript[strings.ToLower(toks[k-1].text)]:
			k-- // a typed literal: DATE '2024-01-31'
		case t.kind == 'n' || t.kind == 'w' && k > 0 && toks[k-1].kind == 'n' && toks[k-1].end == t.start:
			k = numberStart(toks, k)
		case t.kind == 'w' || t.kind == 'q' || t.kind == 's':
		default:
			return -1
		}
		for toks[k].isName() && k >= 2 && toks[k-1].kind == 'p' && toks[k-1].text == "." && toks[k-2].isName() {
			k -= 2 // a qualified name: t.a
		}
		if k >= 3 && toks[k-1].kind == 'p' && toks[k-1].text == ":" && toks[k-2].kind == 'p' && toks[k-2].text == ":" {
			k -= 3 // the operand is itself a cast: x::DOUBLE::INT
			continue
		}
		return k
	}
}

// openParen returns the index of the "(" or "[" that the ")" or "]" at toks[close] closes, or -1.
func openParen(toks []sqlToken, close int) int {
	depth := 0
	for j := close; j >= 0; j-- {
		if toks[j].kind != 'p' {
			continue
		}
		switch toks[j].text {
		case ")", "]":
			depth++
		case "(", "[":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// caseStart returns the index of the CASE that the END at toks[end] closes, or -1.
func caseStart(toks []sqlToken, end int) int {
	depth := 0
	for j := end; j >= 0; j-- {
		switch {
		case toks[j].is("end"):
			depth++
		case toks[j].is("case"):
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// numberStart returns the index of the first token of the number whose last token is toks[k]:
// the tokens before it with nothing between them that a number is made of (1e-5 is the number
// 1, the word e, the "-" and the number 5; 0x1F the number 0 and the word x1F).
func numberStart(toks []sqlToken, k int) int {
	for k > 0 && toks[k-1].end == toks[k].start {
		prev := toks[k-1]
		switch {
		case toks[k].kind == 'w' && prev.kind == 'n', toks[k].kind == 'n' && prev.text == ".":
		case toks[k].kind == 'n' && (prev.text == "-" || prev.text == "+") && k > 1 && toks[k-2].end == prev.start &&
			toks[k-2].kind == 'w' && strings.EqualFold(toks[k-2].text, "e"):
			k-- // the sign of an exponent
		default:
			return k
		}
		k--
	}
	return k
}
