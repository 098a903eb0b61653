package flows

import (
	"bytes"
	"fmt"
	"testing"

	"tributary/schema"
	"tributary/spec"
)

// fuzzSource returns a file source over a schema of every kind, reading format with opts.
func fuzzSource(t *testing.T, format string, opts map[string]string, rescued string) *spec.Source {
	s, err := schema.ParseDDL("id INT, n BIGINT, s STRING, d DECIMAL(10,2), f DOUBLE, b BOOLEAN, day DATE, at TIMESTAMP")
	if err != nil {
		t.Fatal(err)
	}
	return &spec.Source{Format: format, Schema: s, Options: opts, RescuedDataColumn: rescued, Mode: spec.ModePermissive}
}

// checkRows reads input with src and checks what any reader must hold for any input: no panic,
// every row as wide as the schema (plus the rescued column), each value of its column's Go type
// or nil, and line numbers that start at 1 and never go down.
func checkRows(t *testing.T, src *spec.Source, input []byte) {
	width := len(src.Schema.Fields)
	if src.RescuedDataColumn != "" {
		width++
	}
	last := int64(1)
	err := eachRow(src, "/in/file", bytes.NewReader(input), nil, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
		if len(row) != width {
			return fmt.Errorf("row of %d values, want %d", len(row), width)
		}
		if lineNo < last {
			return fmt.Errorf("line %d after line %d", lineNo, last)
		}
		last = lineNo
		for i, f := range src.Schema.Fields {
			if !holds(f.Type, row[i]) {
				return fmt.Errorf("column %s holds %#v, not a value of %s", f.Name, row[i], f.Type.DDL())
			}
		}
		if !parsed && len(bad) == 0 {
			return fmt.Errorf("a malformed record with no reason")
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatalf("input %q: %v", input, err)
	}
}

// holds reports whether v is nil or a Go value of type t (schema package invariant), nested
// values checked all the way down.
func holds(t schema.Type, v any) bool {
	if v == nil {
		return true
	}
	switch x := v.(type) {
	case int32:
		return t.Kind == schema.Integer
	case int64:
		return t.Kind == schema.Long
	case string:
		return t.Kind == schema.String
	case schema.Decimal:
		return t.Kind == schema.DecimalKind
	case float64:
		return t.Kind == schema.Double
	case bool:
		return t.Kind == schema.Boolean
	case schema.Date:
		return t.Kind == schema.DateKind
	case schema.Timestamp:
		return t.Kind == schema.TimestampKind
	case []any:
		switch t.Kind {
		case schema.StructKind:
			if len(x) != len(t.Struct.Fields) {
				return false
			}
			for i, f := range t.Struct.Fields {
				if !holds(f.Type, x[i]) {
					return false
				}
			}
			return true
		case schema.ArrayKind:
			for _, e := range x {
				if !holds(*t.Elem, e) {
					return false
				}
			}
			return true
		}
	case schema.Map:
		if t.Kind != schema.MapKind {
			return false
		}
		for _, e := range x {
			if e.Key == nil || !holds(*t.Key, e.Key) || !holds(*t.Value, e.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// FuzzCSVReader: no input crashes the CSV reader, whatever the options (the seed corpus is in
// testdata/fuzz/FuzzCSVReader; `go test -fuzz FuzzCSVReader ./flows` explores further).
func FuzzCSVReader(f *testing.F) {
	f.Add([]byte("\xEF\xBB\xBFid,s,d\r\n1,\"a\nb\",1.5\r\n2,\"x\"\"y\",\r\n3,,\"\"\r\n\r\n"), true, byte(','), byte('"'), byte('\\'), byte('#'), false)
	f.Add([]byte("1;'it\\'s';NA\n# c\n2;'unterminated\n"), false, byte(';'), byte('\''), byte('\\'), byte('#'), true)
	f.Add([]byte("id\tat\n1\t2024-01-31T10:00:00Z\n\"\n"), true, byte('\t'), byte('"'), byte('"'), byte(0), false)
	f.Fuzz(func(t *testing.T, input []byte, header bool, delim, quote, escape, comment byte, latin1 bool) {
		opts := map[string]string{spec.CSVHeader: fmt.Sprint(header), spec.CSVNullValue: "NA"}
		if delim != 0 && delim != '\n' && delim != '\r' && delim < 0x80 {
			opts[spec.CSVDelimiter] = string(delim)
		}
		if quote < 0x80 && quote != '\n' && quote != '\r' {
			opts[spec.CSVQuote] = string(quote)
			if quote == 0 {
				opts[spec.CSVQuote] = ""
			}
		}
		if escape != 0 && escape < 0x80 && escape != '\n' && escape != '\r' {
			opts[spec.CSVEscape] = string(escape)
		}
		if comment != 0 && comment < 0x80 && comment != '\n' && comment != '\r' {
			opts[spec.CSVComment] = string(comment)
		}
		if latin1 {
			opts[spec.CSVEncoding] = "iso-8859-1"
		}
		checkRows(t, fuzzSource(t, spec.FormatCSV, opts, "_rescued"), input)
		checkRows(t, fuzzSource(t, spec.FormatCSV, opts, ""), input)
	})
}

// FuzzJSONReader: no input crashes the JSON reader, one object a line or multiline, over a
// schema of every primitive kind and over one of nested STRUCT, ARRAY and MAP columns (the seed
// corpus is in testdata/fuzz/FuzzJSONReader).
func FuzzJSONReader(f *testing.F) {
	f.Add([]byte(`{"id": 1, "s": "a", "d": 1.005, "at": "2024-01-31T12:00:00+02:00"}`+"\n[1]\nnot json\n"), false)
	f.Add([]byte("\xEF\xBB\xBF[\n {\"id\": 1, \"x\": {\"y\": [1, 2]}},\n 7,\n {\"id\": \"2\"}\n]\n"), true)
	f.Add([]byte("{\"id\": 1}\n{\"id\": \n"), true)
	f.Add([]byte("{\"id\": 1}\r{\"id\": 2}\r\r[{\"id\": 3}]\r{\"id\": 4,\r\"s\": \"x\"}\r\n{\"id\": 5,\r\"s\": \"y\"}\n"), false)
	f.Add([]byte(`{"id": 1, "tags": ["a", null, 3], "m": {"b": 2, "a": null, "c": "x"}, "st": {"a": 1, "l": [1.5, "2", null]}, "mm": {"7": [{"x": "2024-01-31"}, null], "q": []}}`+"\n"+
		`{"id": 2, "tags": [], "m": {}, "st": {"l": []}, "mm": {}}`+"\n"+`{"tags": [[1]], "m": [1], "st": [], "mm": {"1": {"x": 1}}}`+"\n"), false)
	f.Add([]byte("[{\"tags\": [\"a\"], \"m\": {\"k\": 1}},\n {\"st\": {\"l\": [1, [2]]}, \"mm\": {\"-3\": [{}]}}]\n"), true)
	f.Fuzz(func(t *testing.T, input []byte, multiline bool) {
		opts := map[string]string{}
		if multiline {
			opts[spec.JSONMultiline] = "true"
		}
		checkRows(t, fuzzSource(t, "json", opts, "_rescued"), input)
		checkRows(t, fuzzSource(t, "json", opts, ""), input)
		nested := fuzzSource(t, "json", opts, "_rescued")
		ns, err := schema.ParseDDL("id INT, tags ARRAY<STRING>, m MAP<STRING, BIGINT>, st STRUCT<a: INT, l: ARRAY<DOUBLE>>, mm MAP<INT, ARRAY<STRUCT<x: DATE>>>")
		if err != nil {
			t.Fatal(err)
		}
		nested.Schema = ns
		checkRows(t, nested, input)
	})
}

// FuzzJSONLineScanner: for any line, the scanner of jsonscan.go and the encoding/json path
// (parseDecoded) give the same row, bad values, rescued data and malformed-line verdict, with
// and without a rescued-data column (`go test -fuzz FuzzJSONLineScanner ./flows` explores
// further; TestScanMatchesDecoded and TestScanGenerated hold the named and generated cases).
func FuzzJSONLineScanner(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"n":-2,"s":"x","d":1.005,"big":1e2,"f":2.5e-3,"b":true,"day":"2024-02-29","at":"2024-01-31T10:00:00+02:00","st":{"x":1,"y":"a"},"sh":40000,"ti":-1,"fl":0.1,"bin":"raw"}`,
		` { "s" : "\ud83d\ude00\ud83d\u00e9\"\\\/\b\f\n\r\t" , "zz" : [ {} , [ ] , null ] } `,
		"{\"s\":\"\xff\xed\xa0\x80\",\"s\xc0\":1,\"\\u0069d\":\"42\"}",
		`{"id":9223372036854775808,"n":"7","d":"x","at":1.7e9,"b":"TRUE","day":1}`,
		`{"id":1,"id":2,"ID":3}`,
		"\xef\xbb\xbf{\"id\":1}",
		`{"id":007}`,
		`{"s":"abc`,
		`{"id":1}} x`,
		`[1,2]`,
	} {
		f.Add([]byte(seed))
	}
	s := scanSchema(f)
	plain, rescuing := newLineReader(s, "", "/in/f.json"), newLineReader(s, "_rescued", "/in/f.json")
	f.Fuzz(func(t *testing.T, line []byte) {
		checkParse(t, plain, string(line))
		checkParse(t, rescuing, string(line))
	})
}
