package flows

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"tributary/schema"
	"tributary/spec"
)

// csvConfig is a csv source's options (spec.CSV*), with Spark's CSV reader defaults.
type csvConfig struct {
	header                bool
	delim, quote, escape  byte
	comment               byte
	hasQuote, hasComment  bool
	nullValue, emptyValue string
	latin1                bool
	// trimLeading and trimTrailing drop the white space before and after an unquoted value
	// (ignore_leading_white_space, ignore_trailing_white_space: trimFields).
	trimLeading, trimTrailing bool
}

// isCSVSpace says whether c is white space to Spark's CSV reader (univocity: a character up to
// U+0020).
func isCSVSpace(r rune) bool { return r <= ' ' }

// trimFields drops the white space before (trimLeading) and after (trimTrailing) the text of each
// unquoted field, as Spark's CSV reader does under ignoreLeadingWhiteSpace and
// ignoreTrailingWhiteSpace; a quoted field keeps its text as quoted.
func (c csvConfig) trimFields(fields []csvField) {
	if !c.trimLeading && !c.trimTrailing {
		return
	}
	for i := range fields {
		if fields[i].quoted {
			continue
		}
		if c.trimLeading {
			fields[i].text = strings.TrimLeftFunc(fields[i].text, isCSVSpace)
		}
		if c.trimTrailing {
			fields[i].text = strings.TrimRightFunc(fields[i].text, isCSVSpace)
		}
	}
}

// spaceAround says whether text begins or ends with white space (isCSVSpace).
func spaceAround(text string) bool {
	return text != "" && (text[0] <= ' ' || text[len(text)-1] <= ' ')
}

func csvConfigOf(opts map[string]string) csvConfig {
	c := csvConfig{delim: ',', quote: '"', escape: '\\', hasQuote: true}
	if v, ok := opts[spec.CSVHeader]; ok {
		c.header = v == "true"
	}
	if v := opts[spec.CSVDelimiter]; v != "" {
		c.delim = v[0]
	}
	if v, ok := opts[spec.CSVQuote]; ok {
		c.hasQuote = v != ""
		if v != "" {
			c.quote = v[0]
		}
	}
	if v := opts[spec.CSVEscape]; v != "" {
		c.escape = v[0]
	}
	if v := opts[spec.CSVComment]; v != "" {
		c.comment, c.hasComment = v[0], true
	}
	c.nullValue = opts[spec.CSVNullValue]
	c.emptyValue = opts[spec.CSVEmptyValue]
	c.latin1 = opts[spec.CSVEncoding] == "iso-8859-1"
	c.trimLeading = opts[spec.CSVIgnoreLeadingWhiteSpace] == "true"
	c.trimTrailing = opts[spec.CSVIgnoreTrailingWhiteSpace] == "true"
	return c
}

// csvField is one field of a record as written: its text (quotes removed) and whether it was
// quoted. Of a quoted field, closeAt is the length of the text inside the quotes (the text after
// the closing quote, kept as written, follows it; -1 when the quote is not closed), and when the
// quoted part holds a doubled quote or an escape, which text resolves, rawAt:rawEnd is that part
// as written, from the opening quote to the closing one, in the reader's raw buffer (rawEnd 0
// otherwise: the text is as written). csvReader.recordText uses them.
type csvField struct {
	text          string
	quoted        bool
	closeAt       int32
	rawAt, rawEnd int32
}

// csvReader splits CSV input into records (RFC 4180): fields separated by the delimiter,
// records ended by LF, CRLF or CR; a quoted field may hold delimiters, line ends (kept as they
// are) and quotes, written doubled ("") or after the escape character. Blank lines and, with a
// comment character, lines starting with it are skipped.
type csvReader struct {
	cfg  csvConfig
	br   *bufio.Reader
	line int64 // physical lines consumed
	buf  []byte
	raw  []byte // the record's quoted parts as written that hold an escape (csvField.rawAt)
}

// newCSVReader reads in decoded by the configured encoding, with a UTF-8 byte-order mark skipped.
func newCSVReader(cfg csvConfig, in io.Reader) *csvReader {
	if cfg.latin1 {
		in = &latin1Reader{r: in}
	}
	br := bufio.NewReaderSize(in, 1<<20)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) && !cfg.latin1 {
		br.Discard(3)
	}
	return &csvReader{cfg: cfg, br: br}
}

// next returns the next record and the line it starts on, or io.EOF. malformed, when not "", says
// why the record is not well-formed (a quoted field not closed before the end of the input).
func (r *csvReader) next() (fields []csvField, start int64, malformed string, err error) {
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			return nil, 0, "", err
		}
		switch {
		case b == '\n':
			r.line++
			continue
		case b == '\r':
			r.endCR()
			continue
		case r.cfg.hasComment && b == r.cfg.comment:
			if err := r.skipLine(); err != nil {
				return nil, 0, "", err
			}
			continue
		}
		r.br.UnreadByte()
		if r.skipWhiteLine() {
			continue
		}
		break
	}
	start = r.line + 1
	r.raw = r.raw[:0]
	for {
		f, end, bad, err := r.field()
		if err != nil {
			return nil, 0, "", err
		}
		fields = append(fields, f)
		if bad != "" && malformed == "" {
			malformed = bad
			last := r.line // the file's last line: the one its last line end ends, or the one after
			if len(r.buf) == 0 || r.buf[len(r.buf)-1] != '\n' {
				last++
			}
			if last > start {
				// A quote opened on line start and never closed takes every line after it: say
				// so, since the rows of those lines are not read (a stray quote, most likely).
				malformed = fmt.Sprintf("%s: the record runs from line %d to the end of the file (line %d), so lines %d to %d are one malformed record, not rows of their own; a stray quote on line %d is the likely cause",
					bad, start, last, start, last, start)
			}
		}
		if end {
			return fields, start, malformed, nil
		}
	}
}

// skipWhiteLine consumes a line that holds only white space (spaces, tabs, other characters up
// to U+0020) up to its line end or the end of the input, and says whether it did: such a line is
// blank, skipped as Spark's CSV reader skips every line whose trim is empty
// (CSVExprUtils.filterCommentAndEmpty), rather than read as a record of one white field. The
// line end is left for the caller, which counts the line.
func (r *csvReader) skipWhiteLine() bool {
	const most = 4096 // a longer run of white space is read as a record
	for n := 1; n <= most; n++ {
		b, _ := r.br.Peek(n)
		if len(b) < n { // the input ends after white space
			if len(b) == 0 {
				return false
			}
			r.br.Discard(len(b))
			return true
		}
		switch c := b[n-1]; {
		case c == '\n' || c == '\r':
			if n == 1 {
				return false
			}
			r.br.Discard(n - 1)
			return true
		case c > ' ':
			return false
		}
	}
	return false
}

// endCR consumes the LF of a CRLF after a CR was read, and counts the line.
func (r *csvReader) endCR() {
	if b, err := r.br.ReadByte(); err == nil && b != '\n' {
		r.br.UnreadByte()
	}
	r.line++
}

func (r *csvReader) skipLine() error {
	for {
		b, err := r.br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if b == '\n' {
			r.line++
			return nil
		}
		if b == '\r' {
			r.endCR()
			return nil
		}
	}
}

// field reads one field and what ends it: end is true at the end of the record.
func (r *csvReader) field() (f csvField, end bool, malformed string, err error) {
	r.buf = r.buf[:0]
	b, err := r.br.ReadByte()
	if err == io.EOF {
		return f, true, "", nil
	}
	if err != nil {
		return f, true, "", err
	}
	if r.cfg.hasQuote && b == r.cfg.quote {
		f.quoted = true
		escaped := false // the quoted part as written is in r.raw from f.rawAt on
		for closed := false; !closed; {
			b, err = r.br.ReadByte()
			if err == io.EOF {
				f.text, f.closeAt = validUTF8(r.buf), -1
				if escaped {
					f.rawEnd = int32(len(r.raw))
				}
				return f, true, "a quoted field is not closed before the end of the file", nil
			}
			if err != nil {
				return f, true, "", err
			}
			switch {
			case b == r.cfg.quote:
				nb, err := r.br.ReadByte()
				if err == nil && nb == r.cfg.quote {
					escaped = r.keepRaw(&f, escaped, b, nb)
					r.buf = append(r.buf, b) // a doubled quote
					continue
				}
				if err == nil {
					r.br.UnreadByte()
				}
				closed = true
				continue
			case b == r.cfg.escape:
				nb, err := r.br.ReadByte()
				if err == nil && (nb == r.cfg.quote || nb == r.cfg.escape) {
					escaped = r.keepRaw(&f, escaped, b, nb)
					r.buf = append(r.buf, nb)
					continue
				}
				if err == nil {
					r.br.UnreadByte()
				}
			case b == '\n':
				r.line++
			}
			r.buf = append(r.buf, b)
			if escaped {
				r.raw = append(r.raw, b)
			}
		}
		f.closeAt = int32(len(r.buf))
		if escaped {
			r.raw = append(r.raw, r.cfg.quote)
			f.rawEnd = int32(len(r.raw))
		}
		b, err = r.br.ReadByte()
	}
	// Unquoted text, or what follows a closing quote (kept as written, as Spark's parser does).
	for {
		if err == io.EOF {
			r.setText(&f)
			return f, true, "", nil
		}
		if err != nil {
			return f, true, "", err
		}
		switch b {
		case r.cfg.delim:
			r.setText(&f)
			return f, false, "", nil
		case '\n':
			r.line++
			r.setText(&f)
			return f, true, "", nil
		case '\r':
			r.endCR()
			r.setText(&f)
			return f, true, "", nil
		}
		r.buf = append(r.buf, b)
		b, err = r.br.ReadByte()
	}
}

// setText sets f.text to the field's text read into r.buf, and a quoted field's closeAt to its
// place in that text once invalid UTF-8 is replaced (validUTF8).
func (r *csvReader) setText(f *csvField) {
	f.text = validUTF8(r.buf)
	if f.closeAt > 0 && len(f.text) != len(r.buf) {
		f.closeAt = int32(len(validUTF8(r.buf[:f.closeAt])))
	}
}

// keepRaw appends to r.raw the two bytes b, nb of a doubled quote or an escape that a quoted
// field f holds, as written, after the field's quoted part so far when they are its first
// (escaped false), and returns true: from then on the field's bytes go to r.raw too.
func (r *csvReader) keepRaw(f *csvField, escaped bool, b, nb byte) bool {
	if !escaped {
		f.rawAt = int32(len(r.raw))
		r.raw = append(r.raw, r.cfg.quote)
		r.raw = append(r.raw, r.buf...)
	}
	r.raw = append(r.raw, b, nb)
	return true
}

// recordText is the record of fields, the last record next returned, as the file writes it: its
// fields with their quotes, doubled quotes and escapes, joined by the delimiter, without the line
// end that closes it. This is the text Spark's CSV reader gives a malformed record's
// _corrupt_record (UnivocityParser: the parser's current parsed content, stripLineEnd).
func (r *csvReader) recordText(fields []csvField) string {
	var b strings.Builder
	q := string(r.cfg.quote)
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(r.cfg.delim)
		}
		switch {
		case !f.quoted:
			b.WriteString(f.text)
		case f.rawEnd > 0:
			b.WriteString(validUTF8(r.raw[f.rawAt:f.rawEnd]))
			if f.closeAt >= 0 {
				b.WriteString(f.text[f.closeAt:])
			}
		case f.closeAt < 0:
			b.WriteString(q + f.text)
		default:
			b.WriteString(q + f.text[:f.closeAt] + q + f.text[f.closeAt:])
		}
	}
	text := b.String()
	if strings.HasSuffix(text, "\r\n") {
		return text[:len(text)-2]
	}
	return strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
}

// validUTF8 returns b as a string, with invalid UTF-8 replaced by U+FFFD as Java's UTF-8
// decoder replaces it, which Spark's CSV reader decodes a line with (new String(bytes, UTF_8),
// CodingErrorAction.REPLACE): one U+FFFD for a byte that starts no character (FF FE is two), and
// one for the start of a sequence that a byte breaks or the end cuts short (E2 82 before a
// delimiter or at the end is one, not two; F0 9F 98 one, not three), and one for the three bytes
// of an encoded surrogate (ED A0 80). A field's bytes decode as the line's would: the delimiter,
// quote or line end after a field is ASCII, which ends a sequence as the end does.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	cont := func(c byte) bool { return c&0xC0 == 0x80 }
	out := make([]byte, 0, len(b)+8)
	n := len(b)
	for i := 0; i < n; {
		b1 := b[i]
		if b1 < utf8.RuneSelf {
			out = append(out, b1)
			i++
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError) // unless the sequence is valid: undone below
		switch {
		case b1 >= 0xC2 && b1 <= 0xDF:
			if i+1 < n && cont(b[i+1]) {
				out = append(out[:len(out)-3], b[i:i+2]...)
				i += 2
				continue
			}
			i++
		case b1 >= 0xE0 && b1 <= 0xEF:
			overlong := func(b2 byte) bool { return b1 == 0xE0 && b2&0xE0 == 0x80 }
			switch {
			case i+2 < n:
				b2, b3 := b[i+1], b[i+2]
				switch {
				case overlong(b2) || !cont(b2):
					i++
				case !cont(b3):
					i += 2
				case b1 == 0xED && b2 >= 0xA0: // a surrogate: one U+FFFD for the three bytes
					i += 3
				default:
					out = append(out[:len(out)-3], b[i:i+3]...)
					i += 3
				}
			case i+1 < n && (overlong(b[i+1]) || !cont(b[i+1])):
				i++
			default: // cut short by the end: one U+FFFD for what is left
				i = n
			}
		case b1 >= 0xF0 && b1 <= 0xF7:
			badSecond := func(b2 byte) bool {
				return b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF) || b1 == 0xF4 && b2&0xF0 != 0x80 || !cont(b2)
			}
			switch {
			case i+3 < n:
				b2, b3, b4 := b[i+1], b[i+2], b[i+3]
				switch {
				case b1 > 0xF4 || badSecond(b2):
					i++
				case !cont(b3):
					i += 2
				case !cont(b4):
					i += 3
				default:
					out = append(out[:len(out)-3], b[i:i+4]...)
					i += 4
				}
			case b1 > 0xF4 || i+1 < n && badSecond(b[i+1]):
				i++
			case i+2 < n && !cont(b[i+2]):
				i += 2
			default: // cut short by the end
				i = n
			}
		default: // 80 to C1, F8 to FF: no character starts with it
			i++
		}
	}
	return string(out)
}

// latin1Reader decodes ISO-8859-1 input to UTF-8.
type latin1Reader struct {
	r   io.Reader
	buf []byte
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	n := len(p) / 2
	if n == 0 {
		return 0, io.ErrShortBuffer
	}
	if cap(l.buf) < n {
		l.buf = make([]byte, n)
	}
	m, err := l.r.Read(l.buf[:n])
	out := p[:0]
	for _, c := range l.buf[:m] {
		if c < 0x80 {
			out = append(out, c)
		} else {
			out = append(out, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return len(out), err
}

// eachCSVRow reads CSV input into rows of the declared schema (plus the rescued-data column
// when there is one) and calls fn with each and the line its record starts on.
//
// With header, the first record names the columns and fields go to the schema's columns by
// name (without regard to case, but as written when there is a rescued-data column: a name spelt
// in another case is then rescued; matchHeaderFold); without, by position. A column with no
// field is NULL; a field with no column (or an unknown header name) is ignored, or kept in the
// rescued-data column under its header name (or _c<position>). An unquoted empty field, and a
// field whose text is null_value, is NULL; a quoted empty field "" reads as empty_value
// (default: the empty string), as Spark's parser does. An empty value in a column that is not
// STRING is NULL; other text that does not fit its column is a bad value (NULL, reported,
// rescued). A record whose quoted field is not closed before the end of the file is malformed
// (parsed false; rescued as the file writes it, csvReader.recordText). A header that names none
// of the schema's columns goes to warn (when not nil; headerMismatch), and the file is read on.
func eachCSVRow(src *spec.Source, filePath string, in io.Reader, fn rowFunc, warn func(msg string)) error {
	cfg := csvConfigOf(src.Options)
	cr := newCSVReader(cfg, in)
	declared := src.Schema
	width := len(declared.Fields)
	if src.RescuedDataColumn != "" {
		width++
	}
	var cols []int     // schema index of each field position, -1 for none
	var names []string // name of each field position, for the rescued data
	if !cfg.header {
		for i := range declared.Fields {
			cols = append(cols, i)
			names = append(names, declared.Fields[i].Name)
		}
		if src.InferSchema { // inferred without a header: field k is column _c<k>, wherever it is
			cols, names = nil, nil
			for k := 0; ; k++ {
				name := "_c" + strconv.Itoa(k)
				i := declared.Index(name)
				if i < 0 {
					break
				}
				cols, names = append(cols, i), append(names, name)
			}
		}
	}
	rescue := func(m map[string]any) string {
		m["_file_path"] = filePath
		b, _ := json.Marshal(m)
		return string(b)
	}
	headerDone := !cfg.header
	for {
		fields, lineNo, malformed, err := cr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		cfg.trimFields(fields)
		if !headerDone {
			headerDone = true
			taken := map[int]bool{}
			header := make([]string, len(fields))
			for i, f := range fields {
				header[i] = f.text
			}
			if src.InferSchema {
				// The names inference gave the columns (a declared schema is matched by the
				// names as written, a repeat going to the rescued data).
				header = headerNames(fields, cfg.nullValue, func(name string) bool { return declared.Index(name) >= 0 })
			}
			for _, name := range header {
				i := declared.Index(name)
				if i >= 0 && taken[i] {
					i = -1
				}
				if i >= 0 {
					taken[i] = true
				}
				cols = append(cols, i)
				names = append(names, name)
			}
			if src.RescuedDataColumn == "" {
				matchHeaderFold(header, cols, taken, declared)
			}
			if warn != nil && len(declared.Fields) > 0 && !slices.ContainsFunc(cols, func(i int) bool { return i >= 0 }) {
				warn(headerMismatch(filePath, lineNo, cfg.delim, header, declared, src.RescuedDataColumn != ""))
			} else if warn != nil {
				// A header name padded with white space names no column (Spark's reader keeps the
				// spaces too): say which column it would fill, and how to trim it.
				var padded []string
				for pos, name := range header {
					if i := declared.Index(strings.TrimFunc(name, isCSVSpace)); cols[pos] < 0 && spaceAround(name) && i >= 0 && !taken[i] {
						padded = append(padded, fmt.Sprintf("%q (column %s)", name, declared.Fields[i].Name))
					}
				}
				if len(padded) > 0 {
					warn(fmt.Sprintf("%s:%d: the CSV header names %s with white space around the name, so those columns are NULL in every row of the file; set options: {%s: true, %s: true} to drop white space around unquoted names and values, or fix the header",
						filePath, lineNo, strings.Join(padded, ", "), spec.CSVIgnoreLeadingWhiteSpace, spec.CSVIgnoreTrailingWhiteSpace))
				}
			}
			continue
		}
		row := make([]any, width)
		if malformed != "" {
			if src.RescuedDataColumn != "" {
				row[len(declared.Fields)] = rescue(map[string]any{"_corrupt_record": cr.recordText(fields)})
			}
			if err := fn(row, false, []badValue{{Line: lineNo, Reason: malformed}}, lineNo); err != nil {
				return err
			}
			continue
		}
		var bad []badValue
		var rescued map[string]any
		keep := func(name string, v string) {
			if src.RescuedDataColumn == "" {
				return
			}
			if rescued == nil {
				rescued = map[string]any{}
			}
			rescued[name] = v
		}
		for pos, f := range fields {
			var text *string
			switch {
			case f.quoted && f.text == "":
				text = &cfg.emptyValue
			case f.text == "", f.text == cfg.nullValue:
			default:
				text = &f.text
			}
			if pos >= len(cols) || cols[pos] < 0 {
				if text != nil {
					name := "_c" + strconv.Itoa(pos) // past the header, or under an empty name
					if pos < len(names) && names[pos] != "" {
						name = names[pos]
					}
					keep(name, *text)
				}
				continue
			}
			if text == nil {
				continue
			}
			c := declared.Fields[cols[pos]]
			if (c.Type.Kind != schema.String || c.Type.IsBinary()) && *text == "" {
				continue // NULL, as Spark's nullSafeDatum reads an empty value of a BinaryType too
			}
			if c.Type.IsBinary() {
				// The field's text as UTF-8 bytes: Spark's CSV reader takes a BinaryType value so
				// (UnivocityParser: the decoded text's getBytes), not as base64 as its JSON reader.
				row[cols[pos]] = *text
				continue
			}
			var v any
			var err error
			switch k := c.Type.Kind; {
			case (k == schema.Long || k == schema.Integer || k == schema.DecimalKind || k == schema.Boolean) && spaceAround(*text):
				// Spark's CSV reader converts these with Java's parsers, which take no white space
				// (Integer.parseInt, BigDecimal, toBoolean); a DOUBLE's (Double.parseDouble), a
				// DATE's and a TIMESTAMP's trim it.
				fix := fmt.Sprintf("to drop such white space around unquoted values, set options: {%s: true, %s: true}", spec.CSVIgnoreLeadingWhiteSpace, spec.CSVIgnoreTrailingWhiteSpace)
				if f.quoted {
					fix = "the quotes keep it (as Spark's reader does, whatever its options): write the value without it, or declare the column STRING and convert it in a SQL dataset (trim)"
				}
				err = fmt.Errorf("%q has white space around the value, which Spark's CSV reader does not read as %s; %s", *text, c.Type.DDL(), fix)
			case k == schema.DateKind:
				v, err = schema.ParseReaderDate(*text) // as Spark's CSV reader reads a date
			case c.Type.Kind == schema.TimestampKind && !c.Type.IsNTZ():
				v, err = schema.ParseReaderTimestamp(*text) // and a timestamp
			default:
				v, err = schema.FromJSON(c.Type, *text)
			}
			if err != nil {
				bad = append(bad, badValue{Line: lineNo, Column: c.Name, Reason: err.Error()})
				keep(c.Name, *text)
				continue
			}
			row[cols[pos]] = v
		}
		if rescued != nil {
			row[len(declared.Fields)] = rescue(rescued)
		}
		sort.Slice(bad, func(i, j int) bool { return bad[i].Column < bad[j].Column })
		if err := fn(row, true, bad, lineNo); err != nil {
			return err
		}
	}
}

// matchHeaderFold gives each header name that names no column (cols[pos] < 0) the column of
// declared it spells in another case (`ID` for `id`), unless a name spelt as the column, or an
// earlier such name, fills it (taken). Without a rescued-data column, Spark's CSV reader compares
// header names with the schema's without regard to case (CSVHeaderChecker under its default
// spark.sql.caseSensitive=false); with one, such a name is rescued instead, as Auto Loader's
// default readerCaseSensitive does.
func matchHeaderFold(header []string, cols []int, taken map[int]bool, declared schema.Schema) {
	for pos, name := range header {
		if cols[pos] >= 0 {
			continue
		}
		for i, f := range declared.Fields {
			if !taken[i] && strings.EqualFold(f.Name, name) {
				cols[pos], taken[i] = i, true
				break
			}
		}
	}
}

// headerMismatch says that the CSV header of a file (its fields, read with delimiter delim at
// line lineNo) names none of the columns of declared, and what to check: a delimiter other than
// delim that the header holds, the header option, the schema. caseSensitive says that names were
// matched as written (with a rescued-data column), not without regard to case.
func headerMismatch(filePath string, lineNo int64, delim byte, header []string, declared schema.Schema, caseSensitive bool) string {
	cols := make([]string, len(declared.Fields))
	for i, f := range declared.Fields {
		cols[i] = f.Name
	}
	quoted := make([]string, len(header))
	for i, h := range header {
		quoted[i] = strconv.Quote(h)
	}
	fields := "fields"
	if len(header) == 1 {
		fields = "field"
	}
	msg := fmt.Sprintf("%s:%d: the CSV header names none of the schema's columns (%s): with delimiter %s it reads as %d %s, %s; every row of the file is read with NULL in those columns. ",
		filePath, lineNo, strings.Join(cols, ", "), delimName(delim), len(header), fields, strings.Join(quoted, ", "))
	line := strings.Join(header, string(delim))
	for _, d := range []byte{',', ';', '\t', '|'} {
		if d != delim && strings.IndexByte(line, d) >= 0 {
			return msg + fmt.Sprintf("The header holds %s: if that is the file's delimiter, set options: {delimiter: %s}; otherwise check `header` (is the first line a header?) and the schema's column names", delimName(d), strconv.Quote(string(d)))
		}
	}
	matched := "matched without regard to case"
	if caseSensitive {
		matched = "matched as written, as a rescued_data_column keeps a name spelt in another case"
	}
	return msg + "Check the `delimiter` option, `header` (is the first line a header?) and the schema's column names (" + matched + ")"
}

// delimName is a delimiter as the spec writes it, quoted: ",", "\t".
func delimName(d byte) string {
	return strconv.Quote(string(d))
}

// rowFunc receives each row read from an input file: parsed is false when the line or record
// was malformed (the row is then NULLs, with the text rescued when there is a rescued-data
// column); bad lists what did not fit; lineNo is the 1-based line the row starts on.
type rowFunc func(row []any, parsed bool, bad []badValue, lineNo int64) error

// eachRow reads one input file of a file source in its format and calls fn with each row.
// pool, when not nil, recycles the memory of JSON-lines rows once the caller releases them
// (blockPool); the other formats ignore it. warn, when not nil, receives what is wrong with the
// file as a whole though it reads on (a CSV header that names none of the schema's columns).
// Text that starts as no UTF-8 text does (sniffText: UTF-16, a compressed file not named so) is
// not read: it is a *damagedInput at line 1.
func eachRow(src *spec.Source, filePath string, in io.Reader, pool *blockPool, fn rowFunc, warn func(msg string)) error {
	return eachRowOrBlock(src, filePath, in, pool, fn, nil, warn)
}

// eachRowOrBlock is eachRow, save that with blocks not nil a JSON-lines file (not multiline) is
// read by column: each parsed block is given to blocks, its rows in lineBlock.cols (see
// blockColumns), instead of its rows to fn. Another format is then an error.
func eachRowOrBlock(src *spec.Source, filePath string, in io.Reader, pool *blockPool, fn rowFunc, blocks func(*lineBlock) error, warn func(msg string)) error {
	jsonLines := src.Format == "json" && src.Options[spec.JSONMultiline] != "true"
	if blocks != nil && !jsonLines {
		return fmt.Errorf("%s: only JSON lines are read by column, not format %s", filePath, src.Format)
	}
	// A plain JSON-lines file smaller than a block is read in a block of its size (one more
	// byte: the read that finds its end).
	blockSize := jsonBlockSize
	if f, ok := in.(*os.File); ok && src.Format == "json" && src.Options[spec.JSONMultiline] != "true" {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() < int64(blockSize) {
			blockSize = max(int(st.Size())+1, 64)
		}
	}
	if src.Format != spec.FormatParquet {
		var reason string
		if in, reason = sniffText(in, string(src.Format)); reason != "" {
			// Read as UTF-8, its every line would be garbage: the file is one malformed record.
			return &damagedInput{path: filePath, line: 1, reason: reason}
		}
	}
	switch src.Format {
	case spec.FormatCSV:
		return eachCSVRow(src, filePath, in, fn, warn)
	case spec.FormatParquet:
		return eachParquetRow(src, filePath, fn, warn)
	case spec.FormatDebezium:
		return eachDebeziumRow(src, filePath, in, fn, warn)
	case "json":
		lr := newLineReader(src.Schema, src.RescuedDataColumn, filePath)
		if blocks != nil {
			lr.columns = newColumnLayout(src.Schema)
		}
		var err error
		if !jsonLines {
			err = eachJSONValue(lr, in, fn, nil)
		} else {
			err = eachJSONLineSized(lr, in, pool, blockSize, fn, blocks)
			if cut := (*cutLine)(nil); errors.As(err, &cut) {
				return &incompleteInput{path: filePath, reason: cut.Error()}
			}
		}
		if msg := lr.caseVariantsWarning(); msg != "" && warn != nil && err == nil {
			warn(msg)
		}
		return err
	}
	return fmt.Errorf("format %s cannot be read from files", src.Format)
}

// safeHeader returns the column names of a CSV header record as Spark's CSV reader makes them
// (CSVUtils.makeSafeHeader, case-insensitive): a name repeated (in any case) gets its position
// appended ("id,id" -> "id0,id1"), and an empty name or the null_value text becomes
// "_c<position>", so that no two columns share a name and no value is lost.
func safeHeader(fields []csvField, nullValue string) []string {
	count := map[string]int{}
	for _, f := range fields {
		count[strings.ToLower(f.text)]++
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		switch {
		case f.text == "" || f.text == nullValue:
			names[i] = "_c" + strconv.Itoa(i)
		case count[strings.ToLower(f.text)] > 1:
			names[i] = f.text + strconv.Itoa(i)
		default:
			names[i] = f.text
		}
	}
	// A made name may meet a name as written ("id1,id,id": id1 twice): the later one takes a
	// further suffix, so that every column keeps its own name.
	seen := map[string]bool{}
	for i, n := range names {
		for seen[strings.ToLower(n)] {
			n += "_" + strconv.Itoa(i)
		}
		names[i] = n
		seen[strings.ToLower(n)] = true
	}
	return names
}

// headerNames returns the column names of a CSV header record: safeHeader's, except that a name
// as written is kept where the table already has a column of that name and none of the safe
// one (has: a table inferred before repeated and empty names were made safe keeps filling its
// columns). has nil: no table yet.
func headerNames(fields []csvField, nullValue string, has func(name string) bool) []string {
	names := safeHeader(fields, nullValue)
	if has == nil {
		return names
	}
	for i, f := range fields {
		if names[i] != f.text && !has(names[i]) && has(f.text) {
			names[i] = f.text
		}
	}
	return names
}
