package flows

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tributary/schema"
	"tributary/spec"
)

// Debezium's logical type names (the `name` of a field in the JSON converter's schema) that
// change how a value is read.
const (
	dbzDate           = "io.debezium.time.Date"           // days since the epoch
	dbzTimestamp      = "io.debezium.time.Timestamp"      // milliseconds since the epoch
	dbzMicroTimestamp = "io.debezium.time.MicroTimestamp" // microseconds since the epoch
	dbzNanoTimestamp  = "io.debezium.time.NanoTimestamp"  // nanoseconds since the epoch
	dbzDecimal        = "org.apache.kafka.connect.data.Decimal"
	kafkaDate         = "org.apache.kafka.connect.data.Date"
	kafkaTimestamp    = "org.apache.kafka.connect.data.Timestamp"
)

// dbzField is what the converter's schema says of one field of the row image.
type dbzField struct {
	logical string // the logical type name, or ""
	scale   int    // for dbzDecimal
}

// debeziumReader turns lines of Debezium change events into rows of a declared schema: the row
// image's fields, then the envelope's (`_op`, `_ts_ms`, `_source_<field>`), then the rescued-data
// column when the source has one.
type debeziumReader struct {
	schema   schema.Schema
	rescued  string
	filePath string
	data     map[string]int // image columns by name
	// unavailable counts, by column, the values that are Debezium's placeholder for a TOASTed
	// value an update left unchanged (debeziumUnavailable).
	unavailable map[string]int
}

// isPlaceholder says whether v is Debezium's placeholder for an unchanged TOASTed value
// (debeziumUnavailable, as base64 for a BINARY column).
func isPlaceholder(v any, binary bool) bool {
	s, ok := v.(string)
	if binary {
		return ok && s == debeziumUnavailableBytes
	}
	return ok && s == debeziumUnavailable
}

// debeziumUnavailable is the text Debezium's PostgreSQL connector sends, by default
// (unavailable.value.placeholder), in place of a TOASTed value that an update left unchanged
// and the WAL does not hold; debeziumUnavailableBytes is the same for a bytea column, base64 as
// the JSON converter writes bytes.
const (
	debeziumUnavailable      = "__debezium_unavailable_value"
	debeziumUnavailableBytes = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
)

func newDebeziumReader(src *spec.Source, filePath string) *debeziumReader {
	r := &debeziumReader{schema: src.Schema, rescued: src.RescuedDataColumn, filePath: filePath, data: map[string]int{}}
	for i, f := range src.Schema.Fields {
		if !spec.IsDebeziumMetaColumn(f.Name) {
			r.data[f.Name] = i
		}
	}
	return r
}

// eachDebeziumRow reads a file of Debezium events, one a line, and calls fn with a row for each
// event; Kafka tombstones (null values) give no row. A last line with no line end whose JSON is
// cut short is an *incompleteInput: the file is still being written, most likely.
func eachDebeziumRow(src *spec.Source, filePath string, in io.Reader, fn rowFunc, warn func(string)) error {
	r := newDebeziumReader(src, filePath)
	defer func() {
		if len(r.unavailable) == 0 || warn == nil {
			return
		}
		var cols []string
		for _, c := range slices.Sorted(maps.Keys(r.unavailable)) {
			cols = append(cols, fmt.Sprintf("%s (%d)", c, r.unavailable[c]))
		}
		warn(fmt.Sprintf("%s: values of %s are Debezium's placeholder %s, which its PostgreSQL connector sends for a TOASTed value an update left unchanged: they are stored as that text, and an APPLY CHANGES target takes them for the column's value. To have the connector send such values, set REPLICA IDENTITY FULL on the table in PostgreSQL (Debezium's PostgreSQL connector, \"TOASTed values\")",
			filePath, strings.Join(cols, ", "), debeziumUnavailable))
	}()
	return eachLineEnded(in, func(line []byte, lineNo int64, ended bool) error {
		if !ended && cutJSON(string(line)) {
			// Being written, most likely: read once complete, as a JSON-lines file (cutLine).
			return &incompleteInput{path: filePath, reason: (&cutLine{line: lineNo}).Error()}
		}
		row, ok, bad, skip := r.parse(line, lineNo)
		if skip {
			return nil
		}
		return fn(row, ok, bad, lineNo)
	})
}

func (r *debeziumReader) width() int {
	if r.rescued != "" {
		return len(r.schema.Fields) + 1
	}
	return len(r.schema.Fields)
}

// parse converts one line. skip: the line is a Kafka tombstone. ok is false when the line is not
// a Debezium event (the row is then NULLs, the text rescued when there is a rescued column).
func (r *debeziumReader) parse(line []byte, lineNo int64) (row []any, ok bool, bad []badValue, skip bool) {
	row = make([]any, r.width())
	malformed := func(reason string) ([]any, bool, []badValue, bool) {
		if r.rescued != "" {
			row[len(r.schema.Fields)] = r.rescue(map[string]any{"_corrupt_record": string(line)})
		}
		return row, false, []badValue{{Line: lineNo, Reason: reason}}, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return malformed("the line is not valid JSON (" + err.Error() + "); it starts " + textStart(line))
	}
	if moreText(string(line), dec) {
		return malformed("the line has more text after its JSON value")
	}
	env, fields, tombstone, reason := unwrapDebezium(v)
	if tombstone {
		return nil, true, nil, true
	}
	if reason != "" {
		return malformed(reason)
	}
	op, _ := env["op"].(string)
	var image map[string]any
	var imageName string
	switch op {
	case "c", "r", "u":
		image, imageName = asObject(env["after"]), "after"
	case "d":
		image, imageName = asObject(env["before"]), "before"
	case "t":
		// a truncate has no row image: only the envelope's columns are set
	default:
		return malformed(fmt.Sprintf("op %s is not a Debezium operation (c, r, u, d or t)", jsonText(env["op"])))
	}
	if image == nil && op != "t" {
		return malformed(fmt.Sprintf("the %s event has no %q row image", op, imageName))
	}
	source := asObject(env["source"])
	var rescue map[string]any
	keep := func(name string, v any) {
		if r.rescued != "" {
			if rescue == nil {
				rescue = map[string]any{}
			}
			rescue[name] = v
		}
	}
	set := func(i int, name string, v any, f dbzField) {
		val, err := debeziumValue(r.schema.Fields[i].Type, v, f)
		if err != nil {
			bad = append(bad, badValue{Line: lineNo, Column: name, Reason: err.Error()})
			keep(name, v)
			return
		}
		row[i] = val
	}
	for i, f := range r.schema.Fields {
		switch {
		case f.Name == spec.DebeziumOpColumn:
			row[i] = op
		case f.Name == spec.DebeziumTsColumn:
			set(i, f.Name, env["ts_ms"], dbzField{logical: kafkaTimestamp})
		case strings.HasPrefix(f.Name, spec.DebeziumSourcePrefix) && spec.IsDebeziumMetaColumn(f.Name):
			field := strings.TrimPrefix(f.Name, spec.DebeziumSourcePrefix)
			logical := ""
			if field == "ts_ms" {
				logical = kafkaTimestamp
			}
			set(i, f.Name, source[field], dbzField{logical: logical})
		}
	}
	for name, v := range image {
		// Only a STRING or BINARY column stores the placeholder as it is; another type refuses
		// it (NULL, and a WARN of its own about the value).
		if i, known := r.data[name]; known && r.schema.Fields[i].Type.Kind == schema.String && isPlaceholder(v, r.schema.Fields[i].Type.IsBinary()) {
			if r.unavailable == nil {
				r.unavailable = map[string]int{}
			}
			r.unavailable[name]++
		}
		i, known := r.data[name]
		if !known {
			keep(name, v)
			continue
		}
		set(i, name, v, fields[name])
	}
	if rescue != nil {
		row[len(r.schema.Fields)] = r.rescue(rescue)
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Column < bad[j].Column })
	return row, true, bad, false
}

func (r *debeziumReader) rescue(m map[string]any) string {
	m["_file_path"] = r.filePath
	b, _ := json.Marshal(m)
	return string(b)
}

// unwrapDebezium finds the envelope in a line's JSON value: the envelope itself, the JSON
// converter's `{schema, payload}` wrapper around it, or a Kafka record `{key, value}` holding
// either. tombstone: the value is null (a Kafka tombstone). fields: what the converter's schema
// (when present) says of the row image's fields.
func unwrapDebezium(v any) (env map[string]any, fields map[string]dbzField, tombstone bool, reason string) {
	for range 4 {
		if v == nil {
			return nil, nil, true, ""
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, false, "the line is " + jsonKindName(v) + ", not a Debezium event"
		}
		if _, ok := m["op"]; ok {
			return m, fields, false, ""
		}
		if p, ok := m["payload"]; ok {
			if s, ok := m["schema"].(map[string]any); ok {
				fields = imageFields(s)
			}
			v = p
			continue
		}
		if val, ok := m["value"]; ok {
			v = val
			continue
		}
		return nil, nil, false, "the line is not a Debezium event (no op, payload or value)"
	}
	return nil, nil, false, "the line is not a Debezium event (nested too deep)"
}

// imageFields reads the logical types of the `after` (or `before`) fields from an envelope's
// schema.
func imageFields(s map[string]any) map[string]dbzField {
	out := map[string]dbzField{}
	list, _ := s["fields"].([]any)
	for _, x := range list {
		img := asObject(x)
		if img == nil || (img["field"] != "after" && img["field"] != "before") {
			continue
		}
		cols, _ := img["fields"].([]any)
		for _, c := range cols {
			col := asObject(c)
			name, _ := col["field"].(string)
			if name == "" {
				continue
			}
			f := dbzField{}
			f.logical, _ = col["name"].(string)
			if params := asObject(col["parameters"]); params != nil {
				if sc, ok := params["scale"].(string); ok {
					f.scale, _ = strconv.Atoi(sc)
				}
			}
			out[name] = f
		}
	}
	return out
}

// debeziumValue converts one JSON value of a Debezium event to a column's type. Numbers in DATE
// and TIMESTAMP columns follow Debezium's temporal types: a DATE is days since the epoch, a
// TIMESTAMP microseconds since the epoch (MicroTimestamp, PostgreSQL's default) unless the
// converter's schema names another unit; a DECIMAL given as base64 is Kafka Connect's Decimal
// (the unscaled value, big-endian), with the scale of the schema or of the column.
func debeziumValue(t schema.Type, v any, f dbzField) (any, error) {
	n, isNum := v.(json.Number)
	switch {
	case v == nil:
		return nil, nil
	case t.Kind == schema.DateKind && isNum:
		days, err := n.Int64()
		if err != nil {
			return nil, fmt.Errorf("%s is not a whole number of days for DATE", n)
		}
		if f.logical == kafkaTimestamp || f.logical == dbzTimestamp {
			days = floorDiv(days, 86_400_000)
		}
		return schema.Date(days), nil
	case t.Kind == schema.TimestampKind && isNum:
		x, err := n.Int64()
		if err != nil {
			return nil, fmt.Errorf("%s is not a whole number for TIMESTAMP", n)
		}
		switch f.logical {
		case dbzTimestamp, kafkaTimestamp:
			x *= 1000
		case dbzNanoTimestamp:
			x = floorDiv(x, 1000)
		case dbzDate, kafkaDate:
			x *= 86_400_000_000
		}
		return schema.Timestamp(x), nil
	case t.Kind == schema.DecimalKind:
		if s, ok := v.(string); ok && (f.logical == dbzDecimal || !looksNumeric(s)) {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a number nor a base64 Kafka Connect Decimal", s)
			}
			scale := t.Scale
			if f.logical == dbzDecimal {
				scale = f.scale
			}
			return schema.ParseDecimalValue(unscaledText(b, scale), t)
		}
	}
	return schema.FromJSON(t, v)
}

// unscaledText writes a big-endian two's complement unscaled value with scale digits after the
// point.
func unscaledText(b []byte, scale int) string {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	s := x.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func looksNumeric(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
