package flows

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"tributary/schema"
)

// badValue describes one value or line of input that did not fit (semantics.md "Ingestion").
type badValue struct {
	Line   int64
	Column string // "" when the whole line did not parse
	Reason string
	// RestOfFile: the line and the rest of its file could not be read (a compressed file that
	// cannot be decompressed to its end).
	RestOfFile bool
}

// lineReader turns JSON-lines input into rows of a declared schema. A row is the schema's values
// followed by the rescued-data column when the source has one.
type lineReader struct {
	schema   schema.Schema // the declared columns
	rescued  string        // rescued-data column name, or ""
	filePath string        // for the rescued JSON's _file_path
	index    map[string]int
	// inOrder: every column name is distinct, so the scanner may match a field name against the
	// column that follows the previous field's before it looks the name up in index.
	inOrder bool
	// wordCols and stringCols count the columns whose values a boxSlab holds in words and in
	// strings: how much room a block's slab needs per line.
	wordCols, stringCols int

	// Without a rescued data column, a field whose name differs only in case from a column is
	// skipped (names are case-sensitive), leaving that column NULL: noteField records such
	// names in variants (field name -> column name), for a WARN once the file is read.
	// nameLens has bit n set when a column's name is n bytes long (n < 64; bit 63 for longer
	// names), so that most unknown fields are passed over without a comparison. A field of an
	// object inside a column (a STRUCT's, in an ARRAY or MAP too) so spelt is skipped with or
	// without one: noteNested records it under its path ("info.Name" -> "info.name").
	// nestedCols[i] is set when column i's type holds a STRUCT (nil when none does).
	nameLens   uint64
	nestedCols []bool
	// keyWord[i] is the JSON text of column i's name as a field name, quotes included ("id"),
	// in its first bytes, when that text is 8 bytes or shorter and has no byte JSON escapes
	// (keyMask[i] has those bytes set; 0 otherwise): the scanner matches the field that follows
	// the previous one against it with one load, before it reads the name as a string.
	keyWord, keyMask []uint64
	// columns, when not nil, makes eachJSONLineSized keep the rows of each block by column
	// (blockColumns) in this layout of the schema's columns.
	columns        *columnLayout
	mu             sync.Mutex
	variants       map[string]string
	nestedVariants bool // variants holds a nested field's
}

// noteField is called for a field of a line that names no column, without a rescued data
// column: when its name differs only in case from a column's, it is recorded (variants). Safe
// for the parse workers of one file to call at once.
func (r *lineReader) noteField(name string) {
	if r.nameLens&(1<<min(len(name), 63)) == 0 {
		return
	}
	for _, f := range r.schema.Fields {
		if len(f.Name) == len(name) && strings.EqualFold(f.Name, name) {
			r.record(name, f.Name, false)
			return
		}
	}
}

// record adds to variants the name a file gives (field, a path when nested) to the column or
// nested field col.
func (r *lineReader) record(field, col string, nested bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nestedVariants = r.nestedVariants || nested
	if _, ok := r.variants[field]; !ok {
		if r.variants == nil {
			r.variants = map[string]string{}
		}
		r.variants[strings.Clone(field)] = col
	}
}

// noteNested is called with the value x that encoding/json decoded for column col, whose type
// holds a STRUCT (nestedCols): it records (variants) each field of the objects in x that names
// no field of its STRUCT but differs only in case from one, which FromJSON leaves NULL, under
// the paths nestedCaseVariants gives a Parquet file's ("info.Name" for "info.name", "pts[].X",
// "m{}.X"). Safe for the parse workers of one file to call at once.
func (r *lineReader) noteNested(col int, x any) {
	var walk func(t *schema.Type, x any, path string)
	walk = func(t *schema.Type, x any, path string) {
		switch t.Kind {
		case schema.StructKind:
			obj, _ := x.(map[string]any)
			if t.Struct == nil || obj == nil {
				return
			}
			for name, v := range obj {
				if i := t.Struct.Index(name); i >= 0 {
					if hasStruct(&t.Struct.Fields[i].Type) {
						walk(&t.Struct.Fields[i].Type, v, path+"."+name)
					}
				} else if i := foldIndex(*t.Struct, name); i >= 0 {
					r.record(path+"."+name, path+"."+t.Struct.Fields[i].Name, true)
				}
			}
		case schema.ArrayKind:
			if arr, _ := x.([]any); len(arr) > 0 {
				path += "[]"
				for _, e := range arr {
					walk(t.Elem, e, path)
				}
			}
		case schema.MapKind:
			if obj, _ := x.(map[string]any); len(obj) > 0 {
				path += "{}"
				for _, v := range obj {
					walk(t.Value, v, path)
				}
			}
		}
	}
	f := &r.schema.Fields[col]
	walk(&f.Type, x, f.Name)
}

// hasStruct reports whether t is a STRUCT or holds one (as an ARRAY's element, a MAP's value).
func hasStruct(t *schema.Type) bool {
	switch t.Kind {
	case schema.StructKind:
		return true
	case schema.ArrayKind:
		return t.Elem != nil && hasStruct(t.Elem)
	case schema.MapKind:
		return t.Value != nil && hasStruct(t.Value)
	}
	return false
}

// caseVariantsWarning is the WARN of the fields noteField recorded, "" when there are none.
func (r *lineReader) caseVariantsWarning() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.variants) == 0 {
		return ""
	}
	var pairs []string
	for name, col := range r.variants {
		pairs = append(pairs, name+" for "+col)
	}
	sort.Strings(pairs)
	if r.nestedVariants {
		// A rescued data column keeps top-level fields only: nested ones are lost either way.
		return fmt.Sprintf("%s: the file spells fields in another case than the schema (%s): fields are matched by name, case-sensitively, so those fields are NULL where only the other spelling is given; declare them as the file does (a rescued_data_column keeps only top-level fields)",
			r.filePath, strings.Join(pairs, ", "))
	}
	return fmt.Sprintf("%s: the file spells fields in another case than the schema (%s): fields are matched by name, case-sensitively, so those columns are NULL where only the other spelling is given; declare them as the file does, or set rescued_data_column to keep their values",
		r.filePath, strings.Join(pairs, ", "))
}

// keyWord returns the JSON text of name as a field name (quotes included), little-endian in a
// word, and the mask of its bytes; both 0 when the text is longer than 8 bytes or name holds a
// byte JSON text would escape (a quote, a backslash, a control character) or one beyond ASCII.
func keyWord(name string) (word, mask uint64) {
	if len(name)+2 > 8 {
		return 0, 0
	}
	text := `"` + name + `"`
	for k := 0; k < len(text); k++ {
		c := text[k]
		if (k > 0 && k < len(text)-1 && (c == '"' || c == '\\')) || c < 0x20 || c >= 0x80 {
			return 0, 0
		}
		word |= uint64(c) << (8 * k)
		mask |= 0xff << (8 * k)
	}
	return word, mask
}

func newLineReader(s schema.Schema, rescued, filePath string) *lineReader {
	idx := make(map[string]int, len(s.Fields))
	for i, f := range s.Fields {
		idx[f.Name] = i
	}
	r := &lineReader{schema: s, rescued: rescued, filePath: filePath, index: idx, inOrder: len(idx) == len(s.Fields)}
	r.keyWord, r.keyMask = make([]uint64, len(s.Fields)), make([]uint64, len(s.Fields))
	for i, f := range s.Fields {
		r.keyWord[i], r.keyMask[i] = keyWord(f.Name)
		r.nameLens |= 1 << min(len(f.Name), 63)
		if hasStruct(&f.Type) {
			if r.nestedCols == nil {
				r.nestedCols = make([]bool, len(s.Fields))
			}
			r.nestedCols[i] = true
		}
		switch f.Type.Kind {
		case schema.Long, schema.Integer, schema.Double, schema.DecimalKind, schema.DateKind, schema.TimestampKind:
			if !f.Type.WideDecimal() { // a Decimal128 is boxed on its own, not in the slab
				r.wordCols++
			}
		case schema.String:
			r.stringCols++
		}
	}
	return r
}

// width is the number of values in each row.
func (r *lineReader) width() int {
	if r.rescued != "" {
		return len(r.schema.Fields) + 1
	}
	return len(r.schema.Fields)
}

// parse converts one line: the schema's values and, when the source has one, the rescued-data
// column (semantics.md "Ingestion"). ok is false when the line is not a JSON object at all; then
// row is a row of NULLs (with the text rescued when there is a rescued column). bad lists values
// that did not fit their column, sorted by column name. line may be reused by the caller once
// parse returns.
func (r *lineReader) parse(line []byte, lineNo int64) (row []any, ok bool, bad []badValue) {
	row = make([]any, r.width(), r.width()+rowSpare)
	ok, bad = r.parseInto(string(line), lineNo, row, nil)
	return row, ok, bad
}

// rowSpare is the capacity left after the values of each row that parse and eachJSONLine return,
// so that a caller appending its own trailing values (an ingest flow appends up to four: the
// file's path and time, the file's index and the line number) does not copy the row.
const rowSpare = 4

// parseInto is parse into row, a slice of r.width() NULLs, from line as text. The values it
// stores may share line's memory and slab's (see boxSlab; nil: none). It reads the line with the
// scanner of jsonscan.go and falls back to parseDecoded for what the scanner leaves to it, so
// its results are parseDecoded's.
func (r *lineReader) parseInto(line string, lineNo int64, row []any, slab *boxSlab) (ok bool, bad []badValue) {
	if bad, done := r.scan(line, lineNo, row, slab); done {
		return true, bad
	}
	clear(row)
	return r.parseDecoded([]byte(line), lineNo, row)
}

// arrayElements returns the elements of a line of JSON-lines input that holds a JSON array of
// objects and nothing else: Spark's JSON reader makes a row of each (an empty array makes none).
// ok is false for any other line, which is parsed as a record (an array holding anything but
// objects, or not valid JSON, is then a malformed one).
func arrayElements(line string) ([]json.RawMessage, bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '[' {
		return nil, false // the common case: a check of a byte, no allocation
	}
	return decodeArray(line[i:])
}

// decodeArray is arrayElements for a line that starts with '['.
func decodeArray(line string) (elems []json.RawMessage, ok bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&elems); err != nil {
		// Its elements may hold a non-numeric number token (NaN, Infinity).
		if elems, ok = looseArray(line); !ok {
			return nil, false
		}
	} else if moreText(line, dec) {
		return nil, false
	}
	for _, e := range elems {
		if len(e) == 0 || e[0] != '{' {
			return nil, false
		}
	}
	return elems, true
}

// moreText reports whether line, from which dec decoded one value, has more than JSON white
// space after it. (dec.More does not do: it is false before a '}' or ']', which ends an array or
// object being parsed, and so would take `{"id": 1}}` for one object.)
func moreText(line string, dec *json.Decoder) bool {
	return skipSpace(line, int(dec.InputOffset())) != len(line)
}

// parseDecoded is parseInto by way of encoding/json: the line decoded into a map[string]any
// (numbers as json.Number), each field converted with schema.FromJSONReader, but an object or
// array given to a STRING column kept as its own text (schema.JSONValueText); a line that is not
// valid UTF-8 is malformed (notUTF8Reason). It defines the results of parse; the scanner must
// agree with it on every line.
func (r *lineReader) parseDecoded(line []byte, lineNo int64, row []any) (ok bool, bad []badValue) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	var reason string
	if at := invalidUTF8(line); at >= 0 {
		reason = notUTF8Reason(line[at], utf8.RuneCount(line[:at])+1)
	} else if err := dec.Decode(&v); err != nil {
		// A line with a non-numeric number token (NaN, Infinity), which Spark's JSON reader takes
		// and encoding/json refuses, is decoded the slow way.
		var ok bool
		if v, ok = decodeJSONText(string(line)); !ok {
			reason = "the line is not valid JSON (" + err.Error() + "); it starts " + textStart(line)
		}
	} else if moreText(string(line), dec) {
		reason = "the line has more text after its JSON value"
	}
	obj, isObj := v.(map[string]any)
	if reason == "" && !isObj {
		reason = "the line is " + jsonKindName(v) + ", not a JSON object"
	}
	if reason != "" {
		if r.rescued != "" {
			row[len(r.schema.Fields)] = r.rescue(map[string]any{"_corrupt_record": string(line)})
		}
		return false, []badValue{{Line: lineNo, Reason: reason}}
	}
	var rescue map[string]any
	var raws map[string]json.RawMessage // the fields' text, once a STRING column is given an object or array
	for name, v := range obj {
		i, known := r.index[name]
		if !known {
			if r.rescued != "" {
				if rescue == nil {
					rescue = map[string]any{}
				}
				rescue[name] = v
			} else {
				r.noteField(name)
			}
			continue
		}
		f := r.schema.Fields[i]
		if r.nestedCols != nil && r.nestedCols[i] {
			r.noteNested(i, v)
		}
		val, err := schema.FromJSONReader(f.Type, v)
		if err == nil && f.Type.Kind == schema.String && !f.Type.IsBinary() {
			switch v.(type) {
			case map[string]any, []any:
				// The value's own text, its members in their order (the map sorted them).
				if raws == nil {
					json.Unmarshal(line, &raws)
				}
				if text, ok := schema.JSONValueText(string(raws[name])); ok {
					val = text
				} else if text, ok := looseValueText(looseRawFields(string(line))[name]); ok {
					val = text // it holds a non-numeric number token (NaN, Infinity)
				}
			}
		}
		if err != nil {
			bad = append(bad, badValue{Line: lineNo, Column: name, Reason: err.Error()})
			if r.rescued != "" {
				if rescue == nil {
					rescue = map[string]any{}
				}
				rescue[name] = v
			}
			continue
		}
		row[i] = val
	}
	if rescue != nil {
		row[len(r.schema.Fields)] = r.rescue(rescue)
	}
	sortBad(bad)
	return true, bad
}

// textStart quotes the start of a line of input (at most textStartRunes runes, "..." after when
// there is more), for a reason that says why the line does not parse: the parser's own words
// ("invalid character 'h' in literal true") rarely show the line.
func textStart(line []byte) string {
	s := string(line)
	n := 0
	for i := range s {
		if n == textStartRunes {
			return strconv.Quote(s[:i]) + "..."
		}
		n++
	}
	return strconv.Quote(s)
}

// textStartRunes is how much of a line textStart quotes.
const textStartRunes = 40

// sortBad sorts the bad values of one line by column name.
func sortBad(bad []badValue) {
	if len(bad) > 1 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].Column < bad[j].Column })
	}
}

func jsonKindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a JSON array"
	case string:
		return "a JSON string"
	case json.Number:
		return "a JSON number"
	case bool:
		return "a JSON boolean"
	}
	return fmt.Sprintf("%T", v)
}

// invalidUTF8 returns the index in b of the first byte that is not valid UTF-8, or -1 when b is
// valid UTF-8.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// notUTF8Reason says why JSON input holding byte b, which is not valid UTF-8, is malformed (at
// column col of its line; 0: not said): Spark's JSON reader decodes a file as UTF-8 (Jackson's
// UTF-8 parser) and fails the record at such a byte rather than replacing it, and RFC 8259
// requires UTF-8.
func notUTF8Reason(b byte, col int) string {
	at := ""
	if col > 0 {
		at = fmt.Sprintf(" at column %d", col)
	}
	return fmt.Sprintf("byte 0x%02X%s is not valid UTF-8, and JSON input is read as UTF-8, as Spark's JSON reader reads it: the record is malformed; convert the file to UTF-8 (it may be ISO-8859-1 or Windows-1252) and land it under a new name", b, at)
}

func (r *lineReader) rescue(m map[string]any) string {
	m["_file_path"] = r.filePath
	b, err := json.Marshal(m)
	if err != nil {
		// A non-numeric number token (NaN, Infinity), which encoding/json does not write as a number.
		b, _ = json.Marshal(quoteNonNumeric(m))
	}
	return string(b)
}

// crPiece is one of the lines ended by bare "\r"s that a line holds (crLines).
type crPiece struct {
	text string
	off  int64 // its line number after the line's first: 0 for the first piece
}

// crLines returns the lines of line (which has no "\n", nor the "\r" of a "\r\n" that ended
// it) when it holds lines ended by bare "\r" (as old Mac OS files are, and as Spark's line reader
// splits them) and is not valid JSON as a whole: its pieces between "\r"s, blank ones left out
// but counted (nil when all are blank), and ends, how many "\r"s ended a line in it (the lines
// after it come that many lines later); nil and 0 otherwise. A "\r" inside a valid line is white
// space between its tokens and splits nothing.
func crLines(line string) (out []crPiece, ends int64) {
	if strings.IndexByte(line, '\r') < 0 || json.Valid([]byte(line)) || validLoose(line) {
		return nil, 0
	}
	var off int64
	for piece := range strings.SplitSeq(line, "\r") {
		if !blank(piece) {
			out = append(out, crPiece{piece, off})
		}
		off++
	}
	return out, off - 1
}

// crBody is line without its line end: the "\n" and the "\r" before it, which end one line
// together; other "\r"s are left for crLines.
func crBody(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line
}

// eachLine calls fn for every non-blank line of in with its 1-based line number. Lines may be of
// any length; a trailing "\r" is removed, and a line of lines ended by bare "\r"s (crLines)
// gives each of them, with its number.
func eachLine(in io.Reader, fn func(line []byte, lineNo int64) error) error {
	return eachLineEnded(in, func(line []byte, lineNo int64, _ bool) error { return fn(line, lineNo) })
}

// eachLineEnded is eachLine that also tells fn whether the line ended in "\n" (only the input's
// last line may not).
func eachLineEnded(in io.Reader, fn func(line []byte, lineNo int64, ended bool) error) error {
	br := bufio.NewReaderSize(in, 1<<20)
	var lineNo int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			ended := line[len(line)-1] == '\n'
			trimmed := bytes.TrimRight(line, "\r\n")
			pieces, ends := crLines(string(crBody(line)))
			if pieces != nil {
				for j, p := range pieces {
					// A piece ends at its "\r"; the last one as the line does.
					if ferr := fn([]byte(p.text), lineNo+p.off, ended || j < len(pieces)-1); ferr != nil {
						return ferr
					}
				}
			} else if len(bytes.TrimSpace(trimmed)) > 0 {
				if ferr := fn(trimmed, lineNo, ended); ferr != nil {
					return ferr
				}
			}
			lineNo += ends
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
