package flows

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// lineCounter passes input through and remembers where its line ends are (LF, CRLF, or a bare
// CR, as the other readers count lines), so that a byte offset already read can be turned into a
// line number. It keeps only the line ends not yet passed.
type lineCounter struct {
	r      io.Reader
	read   int64   // bytes passed through
	ends   []int64 // offsets of the line ends not yet counted
	passed int64   // line ends before the last offset asked
	lastCR bool    // the last byte passed through is a CR, which ends a line with an LF after it
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		switch {
		case b == '\r':
			c.ends = append(c.ends, c.read+int64(i))
		case b == '\n' && !c.lastCR:
			c.ends = append(c.ends, c.read+int64(i))
		}
		c.lastCR = b == '\r'
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the 1-based line of byte offset off; offsets must not decrease between calls.
func (c *lineCounter) lineAt(off int64) int64 {
	i := 0
	for i < len(c.ends) && c.ends[i] < off {
		i++
	}
	c.passed += int64(i)
	c.ends = c.ends[i:]
	return c.passed + 1
}

// eachJSONValue reads input in the json reader's multiline mode: the file is a JSON array whose
// elements are the records, or JSON values one after another (such as pretty-printed objects).
// Each record is parsed as a line of JSON-lines input is, with the line it starts on. A file
// that stops being valid JSON gives one malformed record at the line of the syntax error (for a
// truncated file, the line where the unfinished value starts), and the rest of the file is not read (Spark's multiLine reader makes such a file one
// corrupt record). lr parses the records (and notes the fields spelt in another case than its
// columns, lineReader.caseVariantsWarning). With onRaw, each record's JSON text goes to onRaw
// instead of being parsed.
func eachJSONValue(lr *lineReader, in io.Reader, fn rowFunc, onRaw func([]byte)) error {
	lc := &lineCounter{r: in}
	br := bufio.NewReaderSize(lc, 1<<16)
	var base int64 // bytes skipped before the decoder's input: a UTF-8 byte-order mark
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		br.Discard(3)
		base = 3
	}
	array := false
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
			base++
			continue
		}
		br.UnreadByte()
		array = b == '['
		break
	}
	dec := json.NewDecoder(br)
	restMalformed := func(off int64, reason string) error {
		line := lc.lineAt(base + off)
		row := make([]any, lr.width())
		if lr.rescued != "" {
			row[len(lr.schema.Fields)] = lr.rescue(map[string]any{"_corrupt_record": "the rest of the file from line " + strconv.FormatInt(line, 10)})
		}
		return fn(row, false, []badValue{{Line: line, Reason: reason, RestOfFile: true}}, line)
	}
	malformed := func(off int64, err error) error {
		if incomplete(err) != nil {
			return err // a compressed file still being written: not read now (readFiles)
		}
		return restMalformed(off, "the file is not valid JSON ("+err.Error()+")")
	}
	if array {
		if _, err := dec.Token(); err != nil {
			return malformed(0, err)
		}
	}
	for {
		if array && !dec.More() {
			if _, err := dec.Token(); err != nil {
				return malformed(dec.InputOffset(), err)
			}
			array = false // values after the array are read as further records
		}
		before := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF && !array {
			return nil
		}
		if err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				return malformed(max(syn.Offset-1, before), err)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return malformed(unfinishedStart(dec), err)
			}
			return err
		}
		start := dec.InputOffset() - int64(len(raw))
		if at := invalidUTF8(raw); at >= 0 {
			// Not JSON (RFC 8259 requires UTF-8), as a syntax error is not: Spark's multiLine
			// reader makes the file a corrupt record.
			return restMalformed(start+int64(at), notUTF8Reason(raw[at], 0))
		}
		line := lc.lineAt(base + start)
		if onRaw != nil {
			onRaw(raw)
			continue
		}
		row, parsed, bad := lr.parse(raw, line)
		if err := fn(row, parsed, bad, line); err != nil {
			return err
		}
	}
}

// unfinishedStart returns the input offset where the value dec failed to read for lack of input
// starts: past the white space (and, in an array, the comma) that precede it, which the
// decoder holds unread.
func unfinishedStart(dec *json.Decoder) int64 {
	off := dec.InputOffset()
	rest, _ := io.ReadAll(dec.Buffered())
	return off + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n")))
}
