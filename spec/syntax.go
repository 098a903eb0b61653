package spec

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// blockProblems are the YAML parser's messages about a block mapping or list that goes wrong,
// nearly always through indentation. For them (and for flowProblems) the parser names the
// 0-based line where the mapping or list starts, not the line at fault.
var blockProblems = map[string]string{
	"did not find expected key":           "mapping",
	"did not find expected '-' indicator": "list",
}

// flowProblems are the parser's messages about a {...} or [...] (see blockProblems).
var flowProblems = map[string]string{
	"did not find expected ',' or '}'": "{...}",
	"did not find expected ',' or ']'": "[...]",
}

// otherParserProblems are the parser's other messages naming a 0-based line.
var otherParserProblems = []string{
	"did not find expected <document start>", "did not find expected node content",
	"found undefined tag handle", "found duplicate %YAML directive", "found incompatible YAML document",
	"found duplicate %TAG directive", "did not find expected <stream-start>",
}

// unquotedVar matches a ${...} that starts a plain scalar of a flow collection: after `{`, `[`,
// `,` or `: `, not inside quotes.
var unquotedVar = regexp.MustCompile(`[{\[,:]\s*\$\{`)

// varRef matches a ${...} substitution, the one unquotedVar finds, for its hint.
var varRef = regexp.MustCompile(`\$\{[^}]*\}`)

const indentHint = "check the indentation of this line and of the lines above it: the keys of one mapping must start in the same column, and so must the `-` of one list"

// syntaxError turns a YAML parser error ("yaml: line 3: ...") on data into an Error at the most
// useful position found: for an indentation problem, the line where the document stops making
// sense (found by parsing ever longer beginnings of it), not the start of the enclosing block that
// the parser names; the column is that of the line's first character. It adds a hint where the
// message calls for one.
func syntaxError(file string, data []byte, err error) *Error {
	full := err.Error()
	m := yamlLine.FindStringSubmatch(full)
	if m == nil {
		return &Error{Pos: Pos{File: file, Line: 1, Column: 1}, Msg: "invalid YAML: " + strings.TrimPrefix(full, "yaml: ")}
	}
	lines := strings.Split(string(data), "\n")
	line, _ := strconv.Atoi(m[1])
	msg, hint := m[2], ""
	varCol := 0 // the column of an unquoted ${...} in a flow collection
	if what, ok := blockProblems[msg]; ok {
		start := line + 1
		line = faultyLine(lines, start, full)
		if line != start {
			msg += " in the " + what + " that starts at line " + strconv.Itoa(start)
		}
		hint = indentHint
	} else if what, ok := flowProblems[msg]; ok {
		line++
		hint = "check the " + what + " that starts on this line: separate its items with `,` and close it with `" + what[len(what)-1:] + "`"
		l := min(max(line, 1), len(lines))
		if loc := unquotedVar.FindStringIndex(lines[l-1]); loc != nil {
			// ${name} inside {...} or [...]: its braces end the flow collection for YAML.
			at := loc[1] - 2 // the ${
			ref := varRef.FindString(lines[l-1][at:])
			hint = "quote a ${...} inside " + what + ": write \"" + ref + "\" (its braces are YAML's flow syntax otherwise)"
			varCol = 1 + len([]rune(lines[l-1][:at]))
		}
	} else if slices.Contains(otherParserProblems, msg) {
		line++
	} else if strings.Contains(msg, "tab character") {
		// The scanner names the line of the value it was reading, not the one whose
		// indentation holds the tab: that is the first such line from there on.
		for l := max(line, 1); l <= len(lines); l++ {
			t := lines[l-1]
			if strings.Contains(t[:len(t)-len(strings.TrimLeft(t, " \t"))], "\t") {
				line = l
				break
			}
		}
	}
	line = min(max(line, 1), len(lines))
	text := strings.TrimSuffix(lines[line-1], "\r")
	col := 1 + len([]rune(text)) - len([]rune(strings.TrimLeft(text, " \t")))
	if varCol > 0 {
		col = varCol // at the ${...} to quote
	}
	if hint == "" {
		hint = scannerHint(msg, text)
	}
	return &Error{Pos: Pos{File: file, Line: line, Column: col}, Msg: "invalid YAML: " + msg, Hint: hint}
}

// faultyLine returns the first line (1-based, from start on) such that the document cut after it
// fails to parse with the same error as the whole document: the line where the parser stopped.
// It is found by bisection; start when there is none.
func faultyLine(lines []string, start int, want string) int {
	fails := func(n int) bool {
		var doc yaml.Node
		err := yaml.Unmarshal([]byte(strings.Join(lines[:n], "\n")), &doc)
		return err != nil && err.Error() == want
	}
	lo, hi := max(start, 1), len(lines) // the answer is in [lo, hi]; fails(len(lines)) holds
	if lo > hi || !fails(hi) {
		return start
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// scannerHint is the hint for a YAML scanner message found on the line text.
func scannerHint(msg, text string) string {
	switch {
	case strings.ContainsAny(text[:len(text)-len(strings.TrimLeft(text, " \t"))], "\t"):
		return "indent with spaces: YAML does not allow tabs for indentation"
	case msg == "mapping values are not allowed in this context":
		return "check the indentation of this line against the line above it, or quote a value that contains `: `"
	case msg == "found character that cannot start any token":
		return "quote a value that starts with a character such as ` @ or %"
	case msg == "found unexpected end of stream":
		return "a quote, `[` or `{` above is never closed"
	case msg == "did not find expected node content":
		return "a value is missing here, e.g. between two commas or after a `-`"
	case strings.HasPrefix(msg, "could not find expected ':'"):
		return "write `key: value`, with a space after the colon, or quote the value"
	}
	return ""
}
