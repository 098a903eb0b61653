package flows

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tributary/schema"
	"tributary/spec"
)

// dbzSchema is the source schema of the Debezium reader tests.
const dbzSchema = "id BIGINT, name STRING, amount DECIMAL(10,2), born DATE, seen TIMESTAMP, _op STRING, _ts_ms BIGINT, _source_lsn BIGINT, _source_txId BIGINT, _source_table STRING"

// dbzRow renders a parsed row as jsonl values separated by spaces.
func dbzRow(s schema.Schema, row []any) string {
	var b []byte
	for i, f := range s.Fields {
		if i > 0 {
			b = append(b, ' ')
		}
		b = schema.AppendJSON(b, f.Type, row[i])
	}
	if len(row) > len(s.Fields) {
		b = append(b, ' ')
		b = schema.AppendJSON(b, schema.Type{Kind: schema.String}, row[len(s.Fields)])
	}
	return string(b)
}

// TestDebeziumEnvelopes: every shape of a Debezium JSON event the reader accepts, one line each:
// the bare envelope, the JSON converter's schema/payload wrapper (its logical types decide how
// dates, timestamps and decimals read), a Kafka record {key, value} around either; tombstones in
// each shape give no row; each op (r, c, u, d, t) takes its image from the right place.
func TestDebeziumEnvelopes(t *testing.T) {
	t.Parallel()
	s, err := schema.ParseDDL(dbzSchema)
	if err != nil {
		t.Fatal(err)
	}
	src := &spec.Source{Format: spec.FormatDebezium, Schema: s}
	src.RescuedDataColumn = "_rescued"
	const source = `"source": {"lsn": 7, "txId": 3, "table": "people", "ts_ms": 1000}`
	wrapped := `{"schema": {"type": "struct", "fields": [
		{"type": "struct", "field": "before", "fields": [{"type": "int64", "field": "id"}]},
		{"type": "struct", "field": "after", "fields": [
			{"type": "int64", "field": "id"},
			{"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}, "field": "amount"},
			{"type": "int32", "name": "io.debezium.time.Date", "field": "born"},
			{"type": "int64", "name": "io.debezium.time.Timestamp", "field": "seen"}]}]},
		"payload": {"op": "c", "before": null, "after": {"id": 2, "amount": "MDk=", "born": 19753, "seen": 1706702400000}, ` + source + `, "ts_ms": 1001}}`
	tests := []struct {
		name string
		line string
		want string // "" for no row
		bad  string // the first bad value's reason, if any
	}{
		{"snapshot read, bare envelope",
			`{"op": "r", "before": null, "after": {"id": 1, "name": "ann", "amount": 25.5, "born": "2024-01-31", "seen": "2024-01-31T12:00:00Z"}, ` + source + `, "ts_ms": 1001}`,
			`1 "ann" 25.50 "2024-01-31" "2024-01-31T12:00:00.000000Z" "r" 1001 7 3 "people" null`, ""},
		{"create in the schema/payload wrapper, logical types", strings.ReplaceAll(wrapped, "\n", ""),
			`2 null 123.45 "2024-01-31" "2024-01-31T12:00:00.000000Z" "c" 1001 7 3 "people" null`, ""},
		{"Kafka record around the wrapper", `{"key": {"id": 2}, "value": ` + strings.ReplaceAll(wrapped, "\n", "") + `}`,
			`2 null 123.45 "2024-01-31" "2024-01-31T12:00:00.000000Z" "c" 1001 7 3 "people" null`, ""},
		{"update without before; numbers for DATE (days) and TIMESTAMP (microseconds)",
			`{"key": {"id": 1}, "value": {"op": "u", "before": null, "after": {"id": 1, "name": "bo", "born": 1, "seen": 1500000}, ` + source + `, "ts_ms": 1002}}`,
			`1 "bo" null "1970-01-02" "1970-01-01T00:00:01.500000Z" "u" 1002 7 3 "people" null`, ""},
		{"delete takes before (replica identity default: key only)",
			`{"op": "d", "before": {"id": 1, "name": null}, "after": null, ` + source + `, "ts_ms": 1003}`,
			`1 null null null null "d" 1003 7 3 "people" null`, ""},
		{"truncate has no image",
			`{"op": "t", "before": null, "after": null, ` + source + `, "ts_ms": 1004}`,
			`null null null null null "t" 1004 7 3 "people" null`, ""},
		{"fields the schema lacks are rescued",
			`{"op": "c", "after": {"id": 3, "extra": true}, "ts_ms": 5}`,
			`3 null null null null "c" 5 null null null "{\"_file_path\":\"f.json\",\"extra\":true}"`, ""},
		{"a value that does not fit is NULL and rescued",
			`{"op": "c", "after": {"id": "x"}, "ts_ms": 5}`,
			`null null null null null "c" 5 null null null "{\"_file_path\":\"f.json\",\"id\":\"x\"}"`, `"x" is not a whole number for BIGINT`},
		{"Kafka tombstone", `{"key": {"id": 1}, "value": null}`, "", ""},
		{"bare null tombstone", `null`, "", ""},
		{"tombstone in the wrapper", `{"schema": null, "payload": null}`, "", ""},
		{"unknown op is malformed", `{"op": "x", "after": {"id": 1}}`,
			`null null null null null null null null null null "{\"_corrupt_record\":\"{\\\"op\\\": \\\"x\\\", \\\"after\\\": {\\\"id\\\": 1}}\",\"_file_path\":\"f.json\"}"`, `op "x" is not a Debezium operation (c, r, u, d or t)`},
		{"create without after is malformed", `{"op": "c", "after": null}`, "", `the c event has no "after" row image`},
		{"not an event", `{"id": 1}`, "", "the line is not a Debezium event (no op, payload or value)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newDebeziumReader(src, "f.json")
			row, ok, bad, skip := r.parse([]byte(tc.line), 1)
			if tc.want == "" && tc.bad == "" {
				if !skip {
					t.Fatalf("want no row, got %s", dbzRow(s, row))
				}
				return
			}
			if skip {
				t.Fatal("the line was skipped as a tombstone")
			}
			if tc.bad != "" {
				if len(bad) == 0 || bad[0].Reason != tc.bad {
					t.Fatalf("bad = %+v, want reason %q", bad, tc.bad)
				}
			} else if len(bad) > 0 || !ok {
				t.Fatalf("unexpected bad values %+v (ok %v)", bad, ok)
			}
			if tc.want != "" {
				if got := dbzRow(s, row); got != tc.want {
					t.Fatalf("row\n got %s\nwant %s", got, tc.want)
				}
			}
		})
	}
}

// TestDebeziumUnscaled: Kafka Connect Decimal bytes are a big-endian two's complement unscaled
// value.
func TestDebeziumUnscaled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b     []byte
		scale int
		want  string
	}{
		{[]byte{0x30, 0x39}, 2, "123.45"},
		{[]byte{0xcf, 0xc7}, 2, "-123.45"},
		{[]byte{0x05}, 3, "0.005"},
		{[]byte{0xff}, 0, "-1"},
		{nil, 2, "0.00"},
	} {
		if got := unscaledText(tc.b, tc.scale); got != tc.want {
			t.Errorf("unscaledText(%x, %d) = %s, want %s", tc.b, tc.scale, got, tc.want)
		}
	}
}

const dbzPipeline = `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: debezium
      schema: "id BIGINT, name STRING, _op STRING, _source_lsn BIGINT"
  - name: target
    apply_changes:
      source: raw
      keys: [id]
      sequence_by: _source_lsn
      apply_as_deletes: _op == "d"
      except_column_list: [_op, _source_lsn]
`

// TestDebeziumIntoSCD1: Debezium files through bronze into an SCD type 1 table: snapshot reads
// insert, a primary-key change (delete of the old key, its tombstone, create of the new key)
// ends as one row under the new key, tombstones add no bronze row, a replayed older event
// changes nothing.
func TestDebeziumIntoSCD1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, dbzPipeline)
	landing := filepath.Join(dir, "landing")
	ev := func(op, before, after string, lsn int) string {
		return `{"key": {}, "value": {"op": "` + op + `", "before": ` + before + `, "after": ` + after + `, "source": {"lsn": ` + itoa(lsn) + `}, "ts_ms": 1}}`
	}
	write(t, filepath.Join(landing, "1.json"), []byte(strings.Join([]string{
		ev("r", "null", `{"id": 1, "name": "ann"}`, 10),
		ev("r", "null", `{"id": 2, "name": "bo"}`, 10),
		ev("c", "null", `{"id": 3, "name": "cy"}`, 20),
		ev("d", `{"id": 3, "name": null}`, "null", 30),
		`{"key": {"id": 3}, "value": null}`,
		ev("c", "null", `{"id": 4, "name": "cy"}`, 30),
		ev("u", "null", `{"id": 1, "name": "ann2"}`, 40),
	}, "\n")+"\n"))
	write(t, filepath.Join(landing, "2.json"), []byte(strings.Join([]string{
		ev("c", "null", `{"id": 3, "name": "cy"}`, 20), // replayed: older than the delete
		ev("d", `{"id": 2}`, "null", 50),
		`{"key": {"id": 2}, "value": null}`,
	}, "\n")+"\n"))
	env := &Env{Pipeline: p, Events: &recorder{}}
	m, err := Ingest(context.Background(), env, p.Dataset("raw"))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumOutputRows != 8 {
		t.Fatalf("bronze rows = %d, want 8 (10 lines, 2 tombstones skipped)", m.NumOutputRows)
	}
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	snap, rows := readTable(t, p, "target")
	var got []string
	for _, r := range rows {
		got = append(got, dbzRow(snap.Metadata.Schema, r))
	}
	sort.Strings(got)
	want := []string{`1 "ann2"`, `4 "cy"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("target rows %q, want %q", got, want)
	}
}

func itoa(n int) string { return schema.Text(schema.Type{Kind: schema.Long}, int64(n)) }

// TestDebeziumUnavailableValueWarns: Debezium's placeholder for a TOASTed value an update left
// unchanged (__debezium_unavailable_value, base64 for bytes) is stored as the text it is, and the
// file gets one WARN naming the columns that hold it, how many times, and REPLICA IDENTITY FULL,
// which makes the connector send the values; a file without it gets none.
func TestDebeziumUnavailableValueWarns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, dbzPipeline)
	landing := filepath.Join(dir, "landing")
	ev := func(op, after string, lsn int) string {
		return `{"op": "` + op + `", "before": null, "after": ` + after + `, "source": {"lsn": ` + itoa(lsn) + `}, "ts_ms": 1}`
	}
	write(t, filepath.Join(landing, "1.json"), []byte(strings.Join([]string{
		ev("c", `{"id": 1, "name": "long text"}`, 10),
		ev("u", `{"id": 1, "name": "__debezium_unavailable_value"}`, 20),
		ev("u", `{"id": 1, "name": "__debezium_unavailable_value"}`, 30),
	}, "\n")+"\n"))
	write(t, filepath.Join(landing, "2.json"), []byte(ev("c", `{"id": 2, "name": "b"}`, 40)+"\n"))
	rec := &recorder{}
	if _, err := Ingest(context.Background(), &Env{Pipeline: p, Events: rec}, p.Dataset("raw")); err != nil {
		t.Fatal(err)
	}
	want := `WARN landing/1.json: values of name (2) are Debezium's placeholder __debezium_unavailable_value, which its PostgreSQL connector sends for a TOASTed value an update left unchanged: they are stored as that text`
	if events := rec.all(); !strings.Contains(events, want) || !strings.Contains(events, "REPLICA IDENTITY FULL") || strings.Contains(events, "2.json") {
		t.Errorf("events:\n%s\nwant one WARN, about 1.json:\n%s", events, want)
	}
	// Only STRING and BINARY columns store the placeholder: an INT column refuses it (a bad
	// value of its own), so the WARN names the others alone.
	sch, err := schema.ParseDDL("id BIGINT, name STRING, n INT, blob BINARY, _op STRING")
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	line := `{"op": "u", "before": null, "after": {"id": 1, "name": "__debezium_unavailable_value", "n": "__debezium_unavailable_value", "blob": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="}}` + "\n"
	err = eachDebeziumRow(&spec.Source{Format: spec.FormatDebezium, Schema: sch}, "f.json", strings.NewReader(line), func(row []any, ok bool, bad []badValue, lineNo int64) error {
		if len(bad) != 1 || bad[0].Column != "n" {
			t.Errorf("bad values %+v, want one, of n", bad)
		}
		return nil
	}, func(msg string) { warned = append(warned, msg) })
	if err != nil || len(warned) != 1 || !strings.HasPrefix(warned[0], "f.json: values of blob (1), name (1) are Debezium's placeholder") {
		t.Errorf("err %v, WARNs %q; want one naming blob and name, not n", err, warned)
	}
}
