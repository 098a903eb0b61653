package spec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Query is the SQL of a `query:` dataset (DuckDB SQL). The datasets it reads are found in the
// SQL itself (Refs) and are the dataset's dependencies.
type Query struct {
	SQL  string     // as written, after ${} substitution
	Refs []QueryRef // every dataset reference, in the order of the text
	// Files are the file paths the query reads, written as string literals, in the order of the
	// text; Rewrite puts each relative one as the spec's folder resolves it.
	Files []QueryFile
	Pos   Pos
	// posAt is the position in the spec's file of a byte offset of SQL (as the query's own
	// problems are placed), nil for a Query not decoded from a spec.
	posAt func(off int) Pos
	path  string // the key path of the query, "datasets[i].query"
}

// Path returns the key path of the query in the spec ("datasets[2].query", as Error.Path
// names it), "" for a Query not decoded from a spec.
func (q *Query) Path() string { return q.path }

// PosAt returns the position in the spec's file of the byte offset off of the query's SQL:
// its line and column inside a one-line, folded or literal block scalar; Pos when the query was
// not decoded from a spec or off is outside the SQL.
func (q *Query) PosAt(off int) Pos {
	if q.posAt == nil || off < 0 || off > len(q.SQL) {
		return q.Pos
	}
	return q.posAt(off)
}

// NameAt returns the byte offset in the query's SQL of the first word (an identifier or keyword,
// not inside a string, a quoted name or a comment) spelt name in any case, or of the first quoted
// name spelt so exactly; -1 when there is none. It places a problem DuckDB reports by name.
func (q *Query) NameAt(name string) int {
	for _, t := range tokenize(q.SQL) {
		if t.kind == 'w' && strings.EqualFold(t.text, name) || t.kind == 'q' && t.text == name {
			return t.start
		}
	}
	return -1
}

// QueryFile is a file path a query names with a string literal where DuckDB reads files: the
// first argument of a table function that reads files (read_csv('data/x.csv'),
// read_parquet(['a.parquet', 'b.parquet']), glob('*.json'), ...; see fileFunctions), or a FROM
// item ('data/x.csv'). Start and End are the literal's byte offsets in Query.SQL.
type QueryFile struct {
	Path       string // as written
	Resolved   string // Path resolved against the spec's folder when relative (and local), else Path
	Start, End int
}

// The kinds of QueryRef.
const (
	RefTable   = "table"         // a plain reference: the dataset's current contents
	RefStream  = "stream"        // STREAM(x) or STREAM x: the rows appended since the last update
	RefChanges = "table_changes" // table_changes('x', from[, to]): the change data feed
)

// QueryRef is one reference to a dataset in a query: the text from Start to End (byte offsets
// in Query.SQL) names dataset Name (a `LIVE.` prefix removed).
type QueryRef struct {
	Name       string
	Kind       string // RefTable, RefStream or RefChanges
	Start, End int
	// From and To are the versions of a RefChanges (To -1: the latest).
	From, To int64
	// Quarantine is, for a RefTable of the quarantine table of a dataset (Name is then
	// "<dataset>_quarantine", QuarantineSuffix), that dataset's name; empty otherwise.
	Quarantine string
}

// Dataset returns the name of the dataset r reads: the one whose quarantine table it names, or
// Name.
func (r QueryRef) Dataset() string {
	if r.Quarantine != "" {
		return r.Quarantine
	}
	return r.Name
}

// Rewrite returns the SQL with each reference replaced by name(ref), the relation that holds
// it (a quoted identifier, usually), and each file path of Files that the spec's folder
// resolves replaced by the resolved path, as a string literal: relative paths resolve against
// the spec's folder, never the working directory. Each cast to an integral type or a string
// calls the engine's macro that casts as Spark SQL does (castEdits), and each argument of
// concat_ws the one that joins an array as Spark's does (concatWSEdits).
func (q *Query) Rewrite(name func(QueryRef) string) string {
	var edits []textEdit
	for _, r := range q.Refs {
		edits = append(edits, textEdit{start: r.Start, end: r.End, text: name(r)})
	}
	for _, f := range q.Files {
		if f.Resolved != f.Path {
			edits = append(edits, textEdit{start: f.Start, end: f.End, text: "'" + strings.ReplaceAll(f.Resolved, "'", "''") + "'"})
		}
	}
	edits = append(edits, castEdits(q.SQL)...)
	return applyEdits(q.SQL, append(edits, concatWSEdits(q.SQL)...))
}

// Streams returns the names of the datasets the query reads with STREAM, without repeats.
func (q *Query) Streams() []string {
	var out []string
	for _, r := range q.Refs {
		if r.Kind == RefStream && !contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// DynamicPivot reports whether the query holds a PIVOT whose new columns are values of its
// input: an ON column without an IN list of values (`PIVOT t ON name USING sum(v)`, or `ON name
// IN (SELECT ...)`), of the statement or of a PIVOT after a FROM item. Such a result's columns
// are known only once the query runs: over empty tables it has none of them.
func (q *Query) DynamicPivot() bool {
	toks := tokenize(q.SQL)
	for i, t := range toks {
		if t.is("pivot") || t.is("pivot_wider") {
			if i+1 < len(toks) && toks[i+1].text == "(" && toks[i+1].kind == 'p' && !subqueryAt(toks, i+2) {
				if pivotForDynamic(toks, i+1) {
					return true
				}
			} else if pivotOnDynamic(toks, i+1) {
				return true
			}
		}
	}
	return false
}

// subqueryAt reports whether toks[i] starts a query inside parentheses (SELECT, WITH, FROM, ...).
func subqueryAt(toks []sqlToken, i int) bool {
	return i < len(toks) && toks[i].kind == 'w' && queryStarts[strings.ToLower(toks[i].text)]
}

// pivotForDynamic reports whether the SQL-standard PIVOT whose "(" is toks[open] (`PIVOT (sum(v)
// FOR name IN (...))`) takes the values of a FOR column from a subquery.
func pivotForDynamic(toks []sqlToken, open int) bool {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch t := toks[j]; {
		case t.kind == 'p' && t.text == "(":
			depth++
		case t.kind == 'p' && t.text == ")":
			if depth--; depth == 0 {
				return false
			}
		case depth == 1 && t.is("in") && !valueList(toks, j+1):
			return true
		}
	}
	return false
}

// pivotOnDynamic reports whether the ON clause of the PIVOT statement whose source starts at
// toks[from] (`PIVOT t ON a IN ('x', 'y'), b USING ...`) has a column without an IN list of
// values. A PIVOT without ON (`PIVOT t USING sum(v) GROUP BY k`) adds no column.
func pivotOnDynamic(toks []sqlToken, from int) bool {
	depth, on := 0, -1
	for j := from; j < len(toks) && on < 0; j++ {
		t := toks[j]
		switch {
		case t.kind == 'p' && t.text == "(":
			depth++
		case t.kind == 'p' && t.text == ")":
			if depth--; depth < 0 {
				return false
			}
		case t.kind == 'p' && t.text == ";":
			return false
		case depth == 0 && t.is("on"):
			on = j
		case depth == 0 && (t.is("using") || t.is("group") || t.is("order") || t.is("limit")):
			return false
		}
	}
	if on < 0 {
		return false
	}
	depth, hasIn := 0, false
	for j := on + 1; j < len(toks); j++ {
		t := toks[j]
		end := false
		switch {
		case t.kind == 'p' && (t.text == "(" || t.text == "[" || t.text == "{"):
			depth++
		case t.kind == 'p' && (t.text == ")" || t.text == "]" || t.text == "}"):
			depth--
			end = depth < 0
		case depth == 0 && t.kind == 'p' && t.text == ";":
			end = true
		case depth == 0 && (t.is("using") || t.is("group") || t.is("order") || t.is("limit")):
			end = true
		case depth == 0 && t.kind == 'p' && t.text == ",":
			if !hasIn {
				return true
			}
			hasIn = false
		case depth == 0 && t.is("in"):
			if !valueList(toks, j+1) {
				return true
			}
			hasIn = true
		}
		if end {
			break
		}
	}
	return !hasIn
}

// valueList reports whether toks[i] opens a list of values, not a subquery: "(" not followed by
// the start of a query.
func valueList(toks []sqlToken, i int) bool {
	return i < len(toks) && toks[i].kind == 'p' && toks[i].text == "(" && !subqueryAt(toks, i+1)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sqlToken is a token of a query: a word (identifier or keyword, quoted or not), a string
// literal, a number or one punctuation character.
type sqlToken struct {
	kind       byte // 'w' word, 'q' quoted identifier, 's' string, 'n' number, 'p' punctuation
	text       string
	start, end int
}

// tokenize splits SQL into tokens, skipping white space and comments (-- and /* */). Strings
// are quoted with ' or, as in DuckDB and PostgreSQL, dollars: $$...$$ or $tag$...$tag$, and
// escape strings E'...' take backslash escapes.
func tokenize(s string) []sqlToken {
	var out []sqlToken
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				i = len(s)
			} else {
				i += j + 4
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			j := i + 1
			var b strings.Builder
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			kind := byte('s')
			if c == '"' {
				kind = 'q'
			}
			end := min(j+1, len(s))
			out = append(out, sqlToken{kind: kind, text: b.String(), start: i, end: end})
			i = end
		case (c == 'E' || c == 'e') && i+1 < len(s) && s[i+1] == '\'':
			// An escape string (E'it\'s'), as DuckDB and PostgreSQL read it: a backslash
			// escapes the character after it, a quote too.
			j := i + 2
			var b strings.Builder
			for j < len(s) {
				if s[j] == '\\' && j+1 < len(s) {
					b.WriteByte(s[j+1])
					j += 2
					continue
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			end := min(j+1, len(s))
			out = append(out, sqlToken{kind: 's', text: b.String(), start: i, end: end})
			i = end
		case c == '$' && dollarTag(s[i:]) != "":
			tag := dollarTag(s[i:])
			body := i + len(tag)
			text, end := s[body:], len(s)
			if j := strings.Index(s[body:], tag); j >= 0 {
				text, end = s[body:body+j], body+j+len(tag)
			}
			out = append(out, sqlToken{kind: 's', text: text, start: i, end: end})
			i = end
		case c == '_' || unicode.IsLetter(rune(c)) || c >= 0x80:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 0x80 || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			out = append(out, sqlToken{kind: 'w', text: s[i:j], start: i, end: j})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			out = append(out, sqlToken{kind: 'n', text: s[i:j], start: i, end: j})
			i = j
		default:
			out = append(out, sqlToken{kind: 'p', text: s[i : i+1], start: i, end: i + 1})
			i++
		}
	}
	return out
}

// backtickName returns the first name that sql quotes with backticks, as Spark SQL does
// (`Company Name`), outside strings, quoted names and comments; ok is false when there is none.
func backtickName(sql string) (name string, ok bool) {
	for _, t := range tokenize(sql) {
		if t.kind == 'p' && t.text == "`" {
			if j := strings.IndexByte(sql[t.end:], '`'); j >= 0 {
				return sql[t.end : t.end+j], true
			}
		}
	}
	return "", false
}

// dollarTag returns the opening delimiter of a dollar-quoted string at the start of s, `$$` or
// `$tag$` (tag a letter or _ then letters, digits or _), or "" when s starts with none ($1 is a
// parameter).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1]
		case c == '_' || unicode.IsLetter(rune(c)) || c >= 0x80 || (j > 1 && c >= '0' && c <= '9'):
		default:
			return ""
		}
	}
	return ""
}

func (t sqlToken) is(word string) bool { return t.kind == 'w' && strings.EqualFold(t.text, word) }

func (t sqlToken) isName() bool { return t.kind == 'w' || t.kind == 'q' }

// queryProblem is a problem found in a query's text, at byte offset Offset.
type queryProblem struct {
	Offset int
	Msg    string
	Hint   string
}

// clauseEnd are the words after which a FROM list's items end.
var clauseEnd = map[string]bool{
	"where": true, "group": true, "order": true, "limit": true, "having": true, "union": true,
	"except": true, "intersect": true, "join": true, "inner": true, "left": true, "right": true,
	"full": true, "cross": true, "natural": true, "on": true, "using": true, "window": true,
	"qualify": true, "positional": true, "asof": true, "anti": true, "semi": true, "lateral": true,
	"select": true, "offset": true, "pivot": true, "unpivot": true, "returning": true, "as": true,
	"tablesample": true, "using_sample": true,
}

// fileFunctions are DuckDB's table functions whose first argument is a file path, a glob or a
// list of them (DuckDB "Data Import" and the extensions' readers).
var fileFunctions = map[string]bool{
	"read_csv": true, "read_csv_auto": true, "sniff_csv": true,
	"read_parquet": true, "parquet_scan": true, "parquet_metadata": true, "parquet_schema": true,
	"parquet_file_metadata": true, "parquet_kv_metadata": true,
	"read_json": true, "read_json_auto": true, "read_json_objects": true, "read_json_objects_auto": true,
	"read_ndjson": true, "read_ndjson_auto": true, "read_ndjson_objects": true,
	"read_text": true, "read_blob": true, "glob": true,
	"delta_scan": true, "iceberg_scan": true, "read_xlsx": true, "st_read": true, "read_avro": true,
}

// localRelative reports whether p is a relative path of the local file system: not absolute,
// not under the home directory (~), and no URL (s3://, https://, file://).
func localRelative(p string) bool {
	return p != "" && !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") && !strings.Contains(p, "://")
}

// fromFunctions are the SQL functions whose arguments may contain FROM.
var fromFunctions = map[string]bool{"extract": true, "trim": true, "substring": true, "overlay": true, "position": true}

// parseQuery finds the dataset references of a query: the table names after FROM and JOIN
// (and after commas of a FROM list), STREAM(x) / STREAM x, and table_changes('x', from[, to]).
// A bare name where a WITH of the query defines it (cteScopes) names the CTE, not a dataset; a
// `LIVE.` prefix always names a dataset (and is dropped), as STREAM does; any other qualified
// name is left to DuckDB.
//
// quals are the names qualified by something other than LIVE (`main.x`, `cat.db.x`) where a
// table reference stands: DuckDB resolves them in its own catalog (queryChecks refuses those
// whose last part names a dataset).
func parseQuery(sql string) (refs []QueryRef, files []QueryFile, probs []queryProblem, quals []QueryRef) {
	toks := tokenize(sql)
	scopes := cteScopes(toks)
	isCTE := func(name string, at int) bool {
		for _, c := range scopes {
			if c.from <= at && at < c.to && strings.EqualFold(c.name, name) {
				return true
			}
		}
		return false
	}
	// file records the string literal at toks[k] as a file path, once.
	file := func(k int) {
		if k < len(toks) && toks[k].kind == 's' && (len(files) == 0 || files[len(files)-1].Start < toks[k].start) {
			files = append(files, QueryFile{Path: toks[k].text, Resolved: toks[k].text, Start: toks[k].start, End: toks[k].end})
		}
	}
	// fileArgs records the file paths of a call whose parenthesis is at toks[k]: its first
	// argument, a string or a list of strings.
	fileArgs := func(k int) {
		if k+1 >= len(toks) {
			return
		}
		if a := toks[k+1]; a.kind != 'p' || a.text != "[" {
			if k+2 < len(toks) && toks[k+2].kind == 'p' && (toks[k+2].text == "," || toks[k+2].text == ")") {
				file(k + 1)
			}
			return
		}
		for m := k + 2; m+1 < len(toks) && toks[m].kind == 's' && toks[m+1].kind == 'p'; m += 2 {
			file(m)
			if toks[m+1].text != "," {
				break
			}
		}
	}
	// tableRef parses one table reference at toks[i]; it returns the index after it.
	var tableRef func(i int) int
	tableRef = func(i int) int {
		if i >= len(toks) {
			return i
		}
		if toks[i].is("lateral") && i+1 < len(toks) {
			i++ // LATERAL (subquery) or LATERAL function(...)
		}
		t := toks[i]
		if t.is("stream") {
			if i+1 < len(toks) && toks[i+1].text == "(" && toks[i+1].kind == 'p' {
				name, j, ok := qualified(toks, i+2)
				if !ok || j >= len(toks) || toks[j].text != ")" {
					probs = append(probs, queryProblem{Offset: t.start, Msg: "STREAM takes one dataset name: STREAM(name)", Hint: "write STREAM(dataset) or STREAM dataset"})
					return i + 1
				}
				refs = append(refs, QueryRef{Name: name, Kind: RefStream, Start: t.start, End: toks[j].end})
				return j + 1
			}
			if name, j, ok := qualified(toks, i+1); ok {
				refs = append(refs, QueryRef{Name: name, Kind: RefStream, Start: t.start, End: toks[j-1].end})
				return j
			}
		}
		if t.is("table_changes") && i+1 < len(toks) && toks[i+1].text == "(" {
			return tableChanges(toks, i, &refs, &probs)
		}
		if t.kind == 's' {
			file(i) // FROM 'data/x.csv': DuckDB reads the file
			return i + 1
		}
		if !t.isName() {
			return i
		}
		name, j, ok := qualified(toks, i)
		if !ok {
			return i + 1
		}
		if j < len(toks) && toks[j].text == "(" && toks[j].kind == 'p' {
			if fileFunctions[strings.ToLower(name)] {
				fileArgs(j)
			}
			return j // a table function: not a dataset
		}
		if strings.Contains(name, ".") {
			quals = append(quals, QueryRef{Name: name, Kind: RefTable, Start: t.start, End: toks[j-1].end})
			return j
		}
		if !isLive(toks, i) && isCTE(name, i) {
			return j
		}
		refs = append(refs, QueryRef{Name: name, Kind: RefTable, Start: t.start, End: toks[j-1].end})
		return j
	}
	// listItems are the open parentheses that start an item of a FROM list (a subquery, `FROM
	// (SELECT ...) a, b`): the list goes on after the matching close (fromList).
	listItems := map[int]bool{}
	// fromList parses the rest of a FROM list from toks[j], just after an item: an alias, then
	// a comma and the next item, and so on. It returns the index where the list ends, or that
	// of an item's open parenthesis, whose contents the caller's loop reads first.
	fromList := func(j int) int {
		for j < len(toks) {
			if toks[j].kind == 'p' && toks[j].text == "(" {
				listItems[j] = true
				return j
			}
			k := j
			if k < len(toks) && toks[k].is("as") {
				k++
			}
			if k < len(toks) && toks[k].isName() && !clauseEnd[strings.ToLower(toks[k].text)] {
				k++
				if k < len(toks) && toks[k].kind == 'p' && toks[k].text == "(" {
					k = closing(toks, k) + 1 // the alias's column names: t(a, b)
				}
			}
			if k < len(toks) && toks[k].kind == 'p' && toks[k].text == "," {
				j = tableRef(k + 1)
				continue
			}
			break
		}
		return j
	}
	// inFn holds, for each open parenthesis, whether it opened a function whose arguments use
	// FROM without a table (EXTRACT(YEAR FROM d), TRIM(BOTH ' ' FROM s), SUBSTRING(s FROM 2));
	// opens, the index of each open parenthesis.
	var inFn []bool
	var opens []int
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == 'p' && t.text == "(":
			inFn = append(inFn, i > 0 && toks[i-1].kind == 'w' && fromFunctions[strings.ToLower(toks[i-1].text)])
			opens = append(opens, i)
		case t.kind == 'p' && t.text == ")":
			if len(inFn) > 0 {
				inFn = inFn[:len(inFn)-1]
				open := opens[len(opens)-1]
				opens = opens[:len(opens)-1]
				if listItems[open] {
					i = max(i, fromList(i+1)-1)
				}
			}
		case t.is("table_changes") && i+1 < len(toks) && toks[i+1].text == "(":
			i = tableChanges(toks, i, &refs, &probs) - 1
		case pivotStatement(toks, i):
			i = max(i, tableRef(i+1)-1)
		case t.is("from") && len(inFn) > 0 && inFn[len(inFn)-1]:
			// an argument, not a table
		case t.is("join"):
			i = max(i, tableRef(i+1)-1)
		case t.is("from"):
			// a FROM list: "FROM a x, b y", "FROM (SELECT ...) x, b y"
			i = max(i, fromList(tableRef(i+1))-1)
		}
	}
	return refs, files, append(probs, statementProblems(sql, toks)...), quals
}

// queryStarts are the words a query (a statement that returns rows and changes nothing) may
// start with in DuckDB's dialect; a parenthesis starts one too: `(SELECT ...) UNION ...`.
var queryStarts = map[string]bool{
	"select": true, "with": true, "from": true, "values": true, "table": true, "pivot": true,
	"pivot_wider": true, "unpivot": true, "pivot_longer": true, "describe": true, "summarize": true,
	"show": true,
}

// statementProblems refuses what is not one query: a statement of another kind (CREATE TABLE
// ... AS, COPY ... TO, INSERT, ATTACH, SET), which DuckDB would run for its effect and whose
// result (a count) would become the dataset, and statements after the first `;`, of which
// DuckDB returns only the last result. A `;` at the end is fine.
func statementProblems(sql string, toks []sqlToken) []queryProblem {
	var probs []queryProblem
	if len(toks) > 0 {
		if t := toks[0]; !(t.kind == 'p' && t.text == "(") && !(t.kind == 'w' && queryStarts[strings.ToLower(t.text)]) {
			hint := "write the SELECT alone: the runner stores its result as the dataset's table"
			if h, ok := dltApplyChanges(sql); ok {
				hint = h
			} else if h, ok := dltDefinition(sql); ok {
				hint = h
				if autoLoaderCall(sql) {
					hint += "; its Auto Loader read (read_files or cloud_files) is not a query either: make the dataset a `source: {path: ..., format: json|csv|parquet}` with those keys except `query:`"
				}
			}
			probs = append(probs, queryProblem{Offset: t.start,
				Msg:  fmt.Sprintf("a query is a SELECT (or WITH, FROM, VALUES, PIVOT ...), not a statement starting with %s", t.text),
				Hint: hint})
		}
	}
	if _, ok := dltApplyChanges(sql); ok {
		return probs // CREATE ...; APPLY CHANGES INTO ...: the hint says both in the spec's keys
	}
	for i, t := range toks {
		if t.kind != 'p' || t.text != ";" {
			continue
		}
		for _, n := range toks[i+1:] {
			if n.kind != 'p' || n.text != ";" {
				probs = append(probs, queryProblem{Offset: n.start,
					Msg:  "a query is one statement, but another starts here, after a `;`",
					Hint: "remove the `;` and what follows; combine queries with UNION ALL, a join or WITH"})
				return probs
			}
		}
		break
	}
	return probs
}

// cteScope is a name a WITH clause defines, visible as a CTE at the tokens [from, to).
type cteScope struct {
	name     string
	at       int // the token of the name, in its definition
	from, to int
}

// cteScopes finds the CTEs of every WITH clause of toks (`WITH [RECURSIVE] name [(cols)] AS
// [[NOT] MATERIALIZED] (query), ...`). A CTE is visible from the end of its definition to the
// end of the query or parenthesis that holds its WITH, so in the CTEs after it and in the body;
// inside its own definition only under RECURSIVE (elsewhere a name inside it is the table of
// that name, as in DuckDB: `WITH a AS (SELECT * FROM a) ...` reads dataset a).
func cteScopes(toks []sqlToken) []cteScope {
	isP := func(i int, p string) bool { return i < len(toks) && toks[i].kind == 'p' && toks[i].text == p }
	// match[i] is the index of the parenthesis that closes or opens toks[i] (len(toks) when
	// unclosed); outer[i] the index of the innermost open parenthesis around toks[i], or -1.
	match := make([]int, len(toks))
	outer := make([]int, len(toks))
	var open []int
	for i := range toks {
		outer[i] = -1
		if len(open) > 0 {
			outer[i] = open[len(open)-1]
		}
		match[i] = len(toks)
		switch {
		case isP(i, "("):
			open = append(open, i)
		case isP(i, ")") && len(open) > 0:
			o := open[len(open)-1]
			open = open[:len(open)-1]
			match[o], match[i] = i, o
			outer[i] = outer[o]
		}
	}
	var out []cteScope
	for i, t := range toks {
		if !t.is("with") {
			continue
		}
		end := len(toks)
		if o := outer[i]; o >= 0 {
			end = match[o]
		}
		j := i + 1
		recursive := j < len(toks) && toks[j].is("recursive")
		if recursive {
			j++
		}
		for j < len(toks) && toks[j].isName() {
			name, at := toks[j].text, j
			j++
			if isP(j, "(") {
				j = match[j] + 1 // the column list
			}
			if j >= len(toks) || !toks[j].is("as") {
				break
			}
			j++
			if j < len(toks) && toks[j].is("not") {
				j++
			}
			if j < len(toks) && toks[j].is("materialized") {
				j++
			}
			if !isP(j, "(") {
				break
			}
			from := match[j] + 1
			if recursive {
				from = j
			}
			out = append(out, cteScope{name: name, at: at, from: from, to: end})
			j = match[j] + 1
			if !isP(j, ",") {
				break
			}
			j++
		}
	}
	return out
}

// pivotWords are the words that start DuckDB's PIVOT and UNPIVOT statements (`PIVOT t ON ...
// USING ...`, `UNPIVOT t ON ... INTO ...`), which name their table right after the word.
var pivotWords = map[string]bool{"pivot": true, "unpivot": true, "pivot_wider": true, "pivot_longer": true}

// pivotStatement reports whether toks[i] starts a PIVOT or UNPIVOT statement whose table is a
// name (not a subquery): a pivot word where a statement may start (first, or after `(`, `)` or
// `;`) followed by a name that is no keyword of a clause. (After a FROM item, `FROM t PIVOT
// (...)`, t is a FROM item like any other.)
func pivotStatement(toks []sqlToken, i int) bool {
	t := toks[i]
	if t.kind != 'w' || !pivotWords[strings.ToLower(t.text)] || i+1 >= len(toks) {
		return false
	}
	if i > 0 && !(toks[i-1].kind == 'p' && (toks[i-1].text == "(" || toks[i-1].text == ")" || toks[i-1].text == ";")) {
		return false
	}
	next := toks[i+1]
	if !next.isName() {
		return false
	}
	if w := strings.ToLower(next.text); next.kind == 'w' && (clauseEnd[w] || w == "from" || w == "include" || w == "exclude") {
		return false
	}
	return true
}

// qualified reads a possibly dotted name at toks[i] ("x", "LIVE.x", "s.x"), dropping a LIVE
// prefix. It returns the name and the index after it.
func qualified(toks []sqlToken, i int) (string, int, bool) {
	if i >= len(toks) || !toks[i].isName() {
		return "", i, false
	}
	parts := []string{toks[i].text}
	j := i + 1
	for j+1 < len(toks) && toks[j].kind == 'p' && toks[j].text == "." && toks[j].end == toks[j+1].start && toks[j+1].isName() {
		parts = append(parts, toks[j+1].text)
		j += 2
	}
	if len(parts) == 2 && strings.EqualFold(parts[0], "live") {
		parts = parts[1:]
	}
	return strings.Join(parts, "."), j, true
}

// isLive reports whether the name at toks[i] is qualified by LIVE (`LIVE.x`).
func isLive(toks []sqlToken, i int) bool {
	return i+2 < len(toks) && toks[i].isName() && strings.EqualFold(toks[i].text, "live") && toks[i+1].kind == 'p' && toks[i+1].text == "." && toks[i+1].end == toks[i+2].start && toks[i+2].isName()
}

// tableChanges parses table_changes('x', from[, to]) at toks[i] and returns the index after it.
func tableChanges(toks []sqlToken, i int, refs *[]QueryRef, probs *[]queryProblem) int {
	bad := func() int {
		*probs = append(*probs, queryProblem{Offset: toks[i].start, Msg: "table_changes takes a dataset name in quotes and one or two versions",
			Hint: "write table_changes('dataset', 2) or table_changes('dataset', 2, 5)"})
		return i + 2
	}
	j := i + 2
	if j >= len(toks) || toks[j].kind != 's' {
		return bad()
	}
	name := toks[j].text
	if strings.HasPrefix(strings.ToLower(name), "live.") {
		name = name[5:]
	}
	j++
	var vers []int64
	for len(vers) < 2 && j+1 < len(toks) && toks[j].text == "," && toks[j].kind == 'p' && toks[j+1].kind == 'n' {
		v, err := strconv.ParseInt(toks[j+1].text, 10, 64)
		if err != nil {
			return bad()
		}
		vers = append(vers, v)
		j += 2
	}
	if len(vers) == 0 || j >= len(toks) || toks[j].text != ")" {
		return bad()
	}
	r := QueryRef{Name: name, Kind: RefChanges, Start: toks[i].start, End: toks[j].end, From: vers[0], To: -1}
	if len(vers) == 2 {
		r.To = vers[1]
	}
	*refs = append(*refs, r)
	return j + 1
}

// SQLSyntaxError is a query that an SQL parser (SQLParser) refuses: its message and the byte
// offset of the query it points at (-1: none).
type SQLSyntaxError struct {
	Message string
	Offset  int
}

// SQLParser, when set, parses the SQL of the query datasets of every spec Load reads, by their
// index in sqls (dir: the spec's folder, Pipeline.Dir), and returns those that do not parse (or
// an error when it cannot run): each is a spec error at its line and column, reported with the
// others. The pipeline command sets it to DuckDB's parser (sqlengine.Syntax), so that this
// package does not link DuckDB; nil checks nothing.
var SQLParser func(dir string, sqls []string) (map[int]SQLSyntaxError, error)

// querySyntax reports the queries that SQLParser refuses, where the parser points.
func (v *validation) querySyntax(infos []*datasetInfo) {
	if SQLParser == nil {
		return
	}
	var ins []*datasetInfo
	var sqls []string
	for _, in := range infos {
		if in.ds.Query != nil && in.query != nil {
			ins, sqls = append(ins, in), append(sqls, in.ds.Query.SQL)
		}
	}
	if len(sqls) == 0 {
		return
	}
	bad, err := SQLParser(v.d.dir, sqls)
	if err != nil {
		v.d.add(Pos{File: v.d.file}, "", "", "the SQL of the queries could not be checked: %v", err)
		return
	}
	for i, in := range ins {
		se, ok := bad[i]
		if !ok || dltStatement(in.ds.Query.SQL) || autoLoaderCall(in.ds.Query.SQL) {
			continue // a Delta Live Tables definition is reported with what to write instead
		}
		off := se.Offset
		if end := len(strings.TrimRight(in.ds.Query.SQL, " \t\r\n")); off > end {
			off = end // "at end of input": where the text ends, not past its last line break
		}
		off = max(off, 0)
		hint := "queries are DuckDB SQL (README \"SQL datasets\")"
		if h, ok := sparkSyntaxHint(in.ds.Query.SQL); ok {
			hint = h
		} else if name := keywordDataset(se.Message, v.byName); name != "" {
			hint = fmt.Sprintf("%s is a dataset's name and a keyword of SQL: write it in double quotes, \"%s\"", name, name)
		}
		v.d.add(v.d.queryPos(in.query.node, off), in.query.path, hint, "the SQL does not parse: %s", se.Message)
	}
}

// nearWord matches the word DuckDB's parser names in a syntax error.
var nearWord = regexp.MustCompile(`^syntax error at or near "([^"]+)"`)

// keywordDataset returns the name of the dataset (of byName) that the syntax error message
// names, without regard to case: a dataset named as an SQL keyword (`order`, `group`), which
// a query reads only quoted. "" when the message names no dataset.
func keywordDataset(message string, byName map[string]*datasetInfo) string {
	m := nearWord.FindStringSubmatch(message)
	if m == nil {
		return ""
	}
	for name := range byName {
		if strings.EqualFold(name, m[1]) {
			return name
		}
	}
	return ""
}

// sqlKeywords are reserved words of DuckDB's SQL that a query's reference scan can take for a
// dataset's name in SQL that does not parse (`FROM raw JOIN ON ...`, `FROM WHERE`): the parse
// error is that query's one problem, not an unknown dataset too.
var sqlKeywords = map[string]bool{
	"ALL": true, "AND": true, "AS": true, "BY": true, "CASE": true, "CROSS": true, "DISTINCT": true,
	"ELSE": true, "END": true, "EXCEPT": true, "FROM": true, "FULL": true, "GROUP": true,
	"HAVING": true, "IN": true, "INNER": true, "INTERSECT": true, "IS": true, "JOIN": true,
	"LATERAL": true, "LEFT": true, "LIMIT": true, "NATURAL": true, "NOT": true, "NULL": true,
	"OFFSET": true, "ON": true, "OR": true, "ORDER": true, "OUTER": true, "QUALIFY": true,
	"RIGHT": true, "SELECT": true, "THEN": true, "UNION": true, "USING": true, "WHEN": true,
	"WHERE": true, "WINDOW": true, "WITH": true,
}

// queryInfo keeps the node of a dataset's `query:` for positions.
type queryInfo struct {
	node *yaml.Node
	path string
	// qualified are the names the query qualifies other than with LIVE (parseQuery's quals).
	qualified []QueryRef
}

// query decodes a dataset's `query:`.
func (d *decoder) query(n *yaml.Node, path string) (*Query, *queryInfo) {
	s, ok := d.nonEmpty(n, path)
	if !ok {
		return nil, nil
	}
	node := resolve(n)
	q := &Query{SQL: s, Pos: d.pos(node), path: path}
	q.posAt = func(off int) Pos { return d.queryPos(node, off) }
	refs, files, probs, quals := parseQuery(s)
	if autoLoaderCall(s) && !dltStatement(s) {
		probs = nil // queryChecks says what to write instead
	}
	for _, p := range probs {
		d.add(d.queryPos(node, p.Offset), path, p.Hint, "%s", p.Msg)
	}
	for i, f := range files {
		if localRelative(f.Path) {
			files[i].Resolved = resolvePath(d.dir, f.Path)
		}
	}
	q.Refs, q.Files = refs, files
	return q, &queryInfo{node: node, path: path, qualified: quals}
}

// queryPos is the position of byte off of a query: inside the line for a one-line scalar, and
// for a literal block (|) the line and column of the text in the file.
func (d *decoder) queryPos(n *yaml.Node, off int) Pos {
	if !strings.Contains(n.Value, "\n") || n.Style&yaml.LiteralStyle == 0 {
		if p, ok := d.foldedPos(n, off); ok {
			return p
		}
		return d.posInBytes(n, off)
	}
	off = min(max(off, 0), len(n.Value))
	before := n.Value[:off]
	k := strings.Count(before, "\n")
	col := off - (strings.LastIndexByte(before, '\n') + 1)
	line := n.Line + 1 + k
	indent := 0
	// the block's indentation is that of its first non-blank line
	for l := n.Line; l < len(d.lines); l++ {
		if t := strings.TrimLeft(d.lines[l], " "); strings.TrimSpace(t) != "" {
			indent = len(d.lines[l]) - len(t)
			break
		}
	}
	return Pos{File: d.file, Line: line, Column: indent + utf8Count(n.Value[off-col:off]) + 1}
}

func utf8Count(s string) int { return len([]rune(s)) }

// foldedPos places byte off of a scalar that the file writes over several lines other than as
// a literal block: folded (`>`), or plain or double-quoted and wrapped. Folding changes only
// white space, so the file holds the value's other characters in order: the position is that
// of the same non-space character in the file (or just after the last one before off, when off
// is at white space or the end). ok is false for a scalar on one line, a single-quoted one (”
// is one ' in the value) or a double-quoted one with a backslash (an escape).
func (d *decoder) foldedPos(n *yaml.Node, off int) (Pos, bool) {
	style := n.Style &^ yaml.TaggedStyle
	line, col := n.Line-1, n.Column-1 // 0-based line and rune column where the text starts
	switch style {
	case yaml.FoldedStyle:
		line, col = n.Line, 0 // the text starts on the line after the `>`
	case 0:
	case yaml.DoubleQuotedStyle:
		col++ // past the opening quote
	default:
		return Pos{}, false
	}
	if line < 0 || line >= len(d.lines) || (style != yaml.FoldedStyle && !d.wrapped(n)) {
		return Pos{}, false
	}
	off = min(max(off, 0), len(n.Value))
	target, after := 0, false // the index of the non-space character sought among the value's
	for _, r := range n.Value[:off] {
		if !unicode.IsSpace(r) {
			target++
		}
	}
	if r, _ := utf8.DecodeRuneInString(n.Value[off:]); off == len(n.Value) || unicode.IsSpace(r) {
		if target == 0 {
			return Pos{}, false
		}
		target, after = target-1, true
	}
	for ; line < len(d.lines); line, col = line+1, 0 {
		rs := []rune(strings.TrimSuffix(d.lines[line], "\r"))
		if style == yaml.DoubleQuotedStyle && slices.Contains(rs, '\\') {
			return Pos{}, false
		}
		for ; col < len(rs); col++ {
			if unicode.IsSpace(rs[col]) {
				continue
			}
			if target == 0 {
				p := Pos{File: d.file, Line: line + 1, Column: col + 1}
				if after {
					p.Column++
				}
				return p, true
			}
			target--
		}
	}
	return Pos{}, false
}

// wrapped reports whether the plain or double-quoted scalar n continues past its first line in
// the file (its first line does not hold its whole value).
func (d *decoder) wrapped(n *yaml.Node) bool {
	if n.Line < 1 || n.Line > len(d.lines) {
		return false
	}
	rs := []rune(strings.TrimSuffix(d.lines[n.Line-1], "\r"))
	if n.Column < 1 || n.Column > len(rs) {
		return false
	}
	raw := strings.TrimSpace(string(rs[n.Column-1:]))
	if n.Style&yaml.DoubleQuotedStyle != 0 {
		return !strings.HasSuffix(raw, `"`) || raw == `"`
	}
	return raw != strings.TrimSpace(n.Value) && !strings.HasPrefix(raw, n.Value)
}

// queryChecks checks query datasets against the others: every dataset a query reads exists;
// STREAM only in streaming tables (which need one), and not over views; skip_change_commits only
// on query streaming tables; and no APPLY CHANGES flow reads a query dataset but a streaming
// table (an append-only log; its columns are checked when the query has run: deferApply).
func (v *validation) queryChecks(infos []*datasetInfo) {
	for _, in := range infos {
		ds := in.ds
		if in.skipChanges != nil && (ds.Query == nil || ds.Type != StreamingTable) {
			v.d.addAt(in.skipChanges, child(in.path, "skip_change_commits"), "remove it; for a Delta source put it inside `source:`",
				"skip_change_commits applies to a streaming_table defined by a query over STREAM(...)")
		}
		if ds.ApplyChanges != nil {
			// A query streaming table is an append-only log, as a bronze table is; a materialized
			// view's updates replace its rows, and a view is not stored.
			if src, ok := v.byName[ds.ApplyChanges.Source]; ok && src.kind == kindQuery && src.ds.Type != StreamingTable && in.apply.source.node != nil {
				v.d.addAt(in.apply.source.node, in.apply.source.path, fmt.Sprintf("make %s a `type: streaming_table` whose query reads STREAM(...), or feed apply_changes from a dataset with a `source:` (files, a Delta table, or another dataset's change feed: `source: {table: x, read: change_feed}`)", src.ds.Name),
					"apply_changes reads an append-only change log, but %s is a %s, whose updates recompute its rows", src.ds.Name, src.ds.Type)
			}
		}
		if s := ds.ApplyChangesFromSnapshot; s != nil && s.Source != "" {
			if src, ok := v.byName[s.Source]; ok && src.kind == kindQuery && in.snapshot.source.node != nil {
				v.d.addAt(in.snapshot.source.node, in.snapshot.source.path, "feed apply_changes_from_snapshot from a `source:` or an APPLY CHANGES dataset",
					"apply_changes_from_snapshot reading a query dataset (%s) is not supported yet", src.ds.Name)
			}
		}
		if ds.Query == nil || in.query == nil || dltStatement(ds.Query.SQL) {
			continue // a Delta Live Tables statement is reported with what to write instead
		}
		node, path := in.query.node, in.query.path
		for _, c := range sparkCalls(ds.Query.SQL) {
			form := c.name + "(...)"
			if c.form != "" {
				form = c.form
			} else if c.args > 0 {
				form = fmt.Sprintf("%s with %d %s", c.name, c.args, map[bool]string{true: "argument", false: "arguments"}[c.args == 1])
			}
			what := "does not take: the update would fail here"
			if c.other != "" {
				what = c.other
			}
			v.d.add(v.d.queryPos(node, c.at), path, "write "+c.duck,
				"%s is Spark SQL, which DuckDB, the engine that runs queries, %s", form, what)
		}
		if autoLoaderCall(ds.Query.SQL) {
			continue // its references and STREAM are Databricks SQL too
		}
		for _, r := range in.query.qualified {
			last := r.Name[strings.LastIndexByte(r.Name, '.')+1:]
			if target, ok := v.byLower[strings.ToLower(last)]; ok {
				v.d.add(v.d.queryPos(node, r.Start), path, "write "+target.ds.Name+" or LIVE."+target.ds.Name,
					"%s names dataset %s with a catalog or schema, which DuckDB looks up in its own catalog, where it does not exist: a query names the datasets of this pipeline alone or with LIVE.", r.Name, target.ds.Name)
			}
		}
		streams := 0
		for _, r := range ds.Query.Refs {
			at := v.d.queryPos(node, r.Start)
			if r.Kind == RefStream {
				streams++ // a STREAM of a misspelt name is one too: its error is enough
			}
			if r.Quarantine != "" {
				if r.Kind != RefTable {
					v.d.add(at, path, "read it as a table: FROM "+r.Name,
						"%s is the quarantine table of dataset %s, which a query reads whole (its current rows), not with STREAM or table_changes", r.Name, r.Quarantine)
				}
				continue
			}
			target, ok := v.byName[r.Name]
			if base, isQ := strings.CutSuffix(strings.ToLower(r.Name), QuarantineSuffix); !ok && isQ {
				if of, ok := v.byLower[base]; ok {
					// The quarantine table of a dataset that quarantines nothing: there is no such table.
					v.d.add(at, path, "give an expectation of "+of.ds.Name+" `on_violation: quarantine`, or read "+of.ds.Name+" itself",
						"unknown dataset %s: dataset %s has no quarantine table, since none of its expectations has on_violation: quarantine", r.Name, of.ds.Name)
					continue
				}
			}
			if !ok && sqlKeywords[strings.ToUpper(r.Name)] {
				continue // a keyword where a name belongs: SQL that does not parse, reported as such
			}
			if !ok {
				v.d.add(at, path, didYouMean(r.Name, v.namesBut(ds.Name), "datasets"), "unknown dataset %s: a query reads datasets of this pipeline", r.Name)
				continue
			}
			switch r.Kind {
			case RefStream:
				if ds.Type != StreamingTable {
					v.d.add(at, path, "make the dataset `type: streaming_table`, or read "+r.Name+" without STREAM",
						"STREAM(%s) reads new rows incrementally, which only a streaming_table does; this dataset is a %s", r.Name, ds.Type)
				}
				if target.ds.Type == View {
					v.d.add(at, path, "read it without STREAM, or make it a table", "%s is a view: it has no table to stream from", r.Name)
				}
				if target.ds.Type == MaterializedView {
					// Each update of a materialized view replaces its rows: after its first
					// version a stream would find only versions that remove rows.
					v.d.add(at, path, fmt.Sprintf("read it without STREAM (its current rows), read its changes with table_changes('%s', ...), or make %s a streaming_table", r.Name, r.Name),
						"%s is a materialized_view: each update replaces its rows, so it has no appends to stream", r.Name)
				}
			case RefChanges:
				if target.ds.Type == View {
					v.d.add(at, path, "read a table's changes", "%s is a view: it has no change data feed", r.Name)
				}
			}
		}
		if ds.Type == StreamingTable && streams > 1 {
			if at := joinedStreams(ds.Query.SQL, ds.Query.Refs); at >= 0 {
				v.d.add(v.d.queryPos(node, at), path, "read one side with STREAM and the other as a table (its current rows: a stream-static join), or join in a materialized_view that reads both",
					"a streaming_table joins the new rows of each update: two streams joined (or one read in a subquery of the other's SELECT) match only rows that arrive in the same update, where Delta Live Tables matches a row with the other stream's earlier rows too; UNION ALL of streams is fine")
			}
		}
		if ds.Type == StreamingTable && streams == 0 {
			v.d.addAt(node, path, "read the input with STREAM(dataset), or make the dataset `type: materialized_view`",
				"a streaming_table defined by a query must read at least one dataset with STREAM(...)")
		}
		if at := groupBy(ds.Query.SQL); ds.Type == StreamingTable && streams > 0 && at >= 0 {
			v.d.add(v.d.queryPos(node, at), path, "aggregate in a materialized_view that reads this table (recomputed on every update), or keep one row per group with apply_changes",
				"a streaming_table appends the result of each update's new rows: a GROUP BY of its query gives a row per group and update, partial counts and sums rather than totals (Delta Live Tables refuses a streaming aggregation without a watermark)")
		} else if at, what := perUpdate(ds.Query.SQL); ds.Type == StreamingTable && streams > 0 && at >= 0 {
			v.d.add(v.d.queryPos(node, at), path, "compute it in a materialized_view that reads this table (recomputed on every update over all its rows), or keep one row per key with apply_changes",
				"a streaming_table appends the result of each update's new rows: %s (Delta Live Tables refuses it on a stream)", what)
		}
	}
}

// aggregates are DuckDB's aggregate functions that a query ported from Spark SQL calls, by
// lower-case name: one in the outermost SELECT of a streaming table's query, without OVER,
// aggregates each update's new rows alone.
var aggregates = map[string]bool{"count": true, "sum": true, "avg": true, "mean": true, "min": true, "max": true,
	"list": true, "array_agg": true, "string_agg": true, "any_value": true, "first": true, "last": true,
	"median": true, "mode": true, "stddev": true, "stddev_samp": true, "stddev_pop": true, "variance": true,
	"var_samp": true, "var_pop": true, "bool_and": true, "bool_or": true, "every": true, "count_if": true,
	"approx_count_distinct": true, "arg_max": true, "arg_min": true, "max_by": true, "min_by": true,
	"histogram": true, "quantile_cont": true, "quantile_disc": true, "approx_quantile": true, "corr": true,
	"covar_samp": true, "covar_pop": true, "product": true, "bit_and": true, "bit_or": true, "bit_xor": true}

// perUpdate returns the offset of what, in a query's outermost SELECT (outside parentheses, as
// groupBy), computes over the rows of one update of a streaming table rather than over all the
// stream's rows, and says what it does, or -1: SELECT DISTINCT (a row appended again in each
// update that sees it), a window function (OVER: numbered, ranked or summed over the update's
// rows) and an aggregate without GROUP BY (a row per update).
func perUpdate(sql string) (int, string) {
	toks := tokenize(sql)
	depth := 0
	for i, t := range toks {
		switch {
		case t.kind == 'p' && t.text == "(":
			depth++
		case t.kind == 'p' && t.text == ")":
			depth--
		case depth != 0:
		case t.is("select") && i+1 < len(toks) && toks[i+1].is("distinct"):
			return toks[i+1].start, "SELECT DISTINCT removes the duplicates of each update's rows alone, so a value seen in several updates is appended once per update"
		case t.is("over") && (i+1 >= len(toks) || toks[i+1].text == "(" || toks[i+1].kind == 'w'):
			return t.start, "a window function (OVER) numbers, ranks or sums each update's new rows alone, not the stream's"
		case t.kind == 'w' && aggregates[strings.ToLower(t.text)] && i+1 < len(toks) && toks[i+1].text == "(" && (i == 0 || toks[i-1].text != "."):
			end := closeParen(toks, i+1)
			if end+2 < len(toks) && toks[end+1].is("filter") && toks[end+2].text == "(" {
				end = closeParen(toks, end+2)
			}
			if end+1 < len(toks) && toks[end+1].is("over") {
				continue // a window function: OVER is reported
			}
			return t.start, "an aggregate without GROUP BY gives one row per update, over its new rows alone, rather than one total"
		}
	}
	return -1, ""
}

// closeParen returns the index of the ")" that closes the "(" at toks[open], or len(toks).
func closeParen(toks []sqlToken, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].kind != 'p' {
			continue
		}
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(toks)
}

// joinedStreams returns the offset of the second of two STREAM references of refs that one
// SELECT of sql combines other than by UNION (a join, a subquery of its WHERE), or -1: between
// the two, no UNION at the level of their innermost common parentheses.
func joinedStreams(sql string, refs []QueryRef) int {
	var at []int
	for _, r := range refs {
		if r.Kind == RefStream {
			at = append(at, r.Start)
		}
	}
	toks := tokenize(sql)
	for a := 0; a < len(at); a++ {
		for b := a + 1; b < len(at); b++ {
			from, to := min(at[a], at[b]), max(at[a], at[b])
			depth, low := 0, 0
			unions := map[int]bool{}
			for _, t := range toks {
				if t.start <= from || t.start >= to {
					continue
				}
				switch {
				case t.kind == 'p' && t.text == "(":
					depth++
				case t.kind == 'p' && t.text == ")":
					depth--
					low = min(low, depth)
				case t.is("union"):
					unions[depth] = true
				}
			}
			if !unions[low] {
				return to
			}
		}
	}
	return -1
}

// groupBy returns the offset of the GROUP BY of a query's outermost SELECT (outside
// parentheses: not in a subquery, a CTE or a window), or -1.
func groupBy(sql string) int {
	toks := tokenize(sql)
	depth := 0
	for i, t := range toks {
		switch {
		case t.kind == 'p' && t.text == "(":
			depth++
		case t.kind == 'p' && t.text == ")":
			depth--
		case depth == 0 && t.is("group") && i+1 < len(toks) && toks[i+1].is("by"):
			return t.start
		}
	}
	return -1
}
