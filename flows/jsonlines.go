package flows

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"tributary/schema"
)

// badValue describes one value or line of input that did not fit (semantics.md "Ingestion").
type badValue struct {
	Line   int64
	Column string // "" when the whole line did not parse
	Reason string
}

// lineReader turns JSON-lines input into rows of a declared schema. A row is the schema's values
// followed by the rescued-data column when the source has one.
type lineReader struct {
	schema   schema.Schema // the declared columns
	rescued  string        // rescued-data column name, or ""
	filePath string        // for the rescued JSON's _file_path
	index    map[string]int
}

func newLineReader(s schema.Schema, rescued, filePath string) *lineReader {
	idx := make(map[string]int, len(s.Fields))
	for i, f := range s.Fields {
		idx[f.Name] = i
	}
	return &lineReader{schema: s, rescued: rescued, filePath: filePath, index: idx}
}

// width is the number of values in each row.
func (r *lineReader) width() int {
	if r.rescued != "" {
		return len(r.schema.Fields) + 1
	}
	return len(r.schema.Fields)
}

// parse converts one line. ok is false when the line is not a JSON object at all; then row is a
// row of NULLs (with the text rescued when there is a rescued column). bad lists values that did
// not fit their column.
func (r *lineReader) parse(line []byte, lineNo int64) (row []any, ok bool, bad []badValue) {
	row = make([]any, r.width())
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	var reason string
	if err := dec.Decode(&v); err != nil {
		reason = "the line is not valid JSON (" + err.Error() + ")"
	} else if dec.More() {
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
		return row, false, []badValue{{Line: lineNo, Reason: reason}}
	}
	var rescue map[string]any
	for name, v := range obj {
		i, known := r.index[name]
		if !known {
			if r.rescued != "" {
				if rescue == nil {
					rescue = map[string]any{}
				}
				rescue[name] = v
			}
			continue
		}
		f := r.schema.Fields[i]
		val, err := schema.FromJSON(f.Type, v)
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
	sort.Slice(bad, func(i, j int) bool { return bad[i].Column < bad[j].Column })
	return row, true, bad
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

func (r *lineReader) rescue(m map[string]any) string {
	m["_file_path"] = r.filePath
	b, _ := json.Marshal(m)
	return string(b)
}

// eachLine calls fn for every non-blank line of in with its 1-based line number. Lines may be of
// any length; a trailing "\r" is removed.
func eachLine(in io.Reader, fn func(line []byte, lineNo int64) error) error {
	br := bufio.NewReaderSize(in, 1<<20)
	var lineNo int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			trimmed := bytes.TrimRight(line, "\r\n")
			if len(bytes.TrimSpace(trimmed)) > 0 {
				if ferr := fn(trimmed, lineNo); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
