package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTimestampNTZType: TIMESTAMP_NTZ parses from DDL (in any case, nested too) and from a Delta
// schemaString's "timestamp_ntz" (Delta PROTOCOL.md, "Primitive Types"), prints back as both,
// differs from TIMESTAMP, and is found inside nested types by HasNTZ.
func TestTimestampNTZType(t *testing.T) {
	t.Parallel()
	s, err := ParseDDL("a TIMESTAMP_NTZ, b timestamp_ntz, c TIMESTAMP, d ARRAY<STRUCT<x: TIMESTAMP_NTZ>>")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.DDL(), "a TIMESTAMP_NTZ, b TIMESTAMP_NTZ, c TIMESTAMP, d ARRAY<STRUCT<x: TIMESTAMP_NTZ>>"; got != want {
		t.Errorf("DDL = %q, want %q", got, want)
	}
	if !s.Fields[0].Type.IsNTZ() || s.Fields[2].Type.IsNTZ() || s.Fields[0].Type.Equal(s.Fields[2].Type) {
		t.Errorf("a is NTZ %v, c is NTZ %v, a equal to c %v; want true, false, false", s.Fields[0].Type.IsNTZ(), s.Fields[2].Type.IsNTZ(), s.Fields[0].Type.Equal(s.Fields[2].Type))
	}
	if !s.Fields[3].Type.HasNTZ() || s.Fields[2].Type.HasNTZ() {
		t.Errorf("HasNTZ(d) = %v, HasNTZ(c) = %v; want true, false", s.Fields[3].Type.HasNTZ(), s.Fields[2].Type.HasNTZ())
	}
	js := s.SparkJSON()
	if !strings.Contains(js, `{"name":"a","type":"timestamp_ntz"`) || !strings.Contains(js, `{"name":"c","type":"timestamp"`) {
		t.Errorf("SparkJSON = %s, want a as timestamp_ntz and c as timestamp", js)
	}
	back, err := ParseSparkJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) {
		t.Errorf("ParseSparkJSON(SparkJSON) = %s, want %s", back.DDL(), s.DDL())
	}
	if (Schema{Fields: []Field{{Name: "m", Type: MapOf(Type{Kind: String}, TimestampNTZ)}}}).HasNTZ() != true {
		t.Error("a MAP with TIMESTAMP_NTZ values: HasNTZ false, want true")
	}
}

// TestTimestampNTZValues: a TIMESTAMP_NTZ value is the wall clock read as if UTC; it is shown
// without zone, and JSON input takes text without zone only (Spark's JSON reader refuses a zone
// for TIMESTAMP_NTZ), while a TIMESTAMP column keeps taking and showing RFC 3339 UTC.
func TestTimestampNTZValues(t *testing.T) {
	t.Parallel()
	const wall = Timestamp(1706695200_123456) // 2024-01-31 10:00:00.123456
	for _, in := range []string{"2024-01-31T10:00:00.123456", "2024-01-31 10:00:00.123456", "2024-01-31t10:00:00.1234569"} {
		got, err := FromJSON(TimestampNTZ, in)
		if err != nil || got != wall {
			t.Errorf("FromJSON(TIMESTAMP_NTZ, %q) = %v, %v; want %d", in, got, err, wall)
		}
	}
	if got, err := FromJSON(TimestampNTZ, "2024-01-31"); err != nil || got != Timestamp(1706659200_000000) {
		t.Errorf("FromJSON(TIMESTAMP_NTZ, date) = %v, %v; want midnight 1706659200000000", got, err)
	}
	for in, want := range map[any]string{
		"2024-01-31T10:00:00Z":      "has a time zone",
		"2024-01-31T10:00:00+02:00": "has a time zone",
		"yesterday":                 "is not a timestamp without time zone",
		json.Number("1706695200"):   "is not a timestamp text for TIMESTAMP_NTZ",
	} {
		if _, err := FromJSON(TimestampNTZ, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromJSON(TIMESTAMP_NTZ, %v) error = %v, want one saying %q", in, err, want)
		}
	}
	// The same text in a TIMESTAMP column: an instant, its offset applied.
	if got, err := FromJSON(Type{Kind: TimestampKind}, "2024-01-31T12:00:00.123456+02:00"); err != nil || got != wall {
		t.Errorf("FromJSON(TIMESTAMP, +02:00) = %v, %v; want %d", got, err, wall)
	}
	if got := Text(TimestampNTZ, wall); got != "2024-01-31T10:00:00.123456" {
		t.Errorf("Text(TIMESTAMP_NTZ) = %q", got)
	}
	if got := string(AppendJSON(nil, TimestampNTZ, wall)); got != `"2024-01-31T10:00:00.123456"` {
		t.Errorf("AppendJSON(TIMESTAMP_NTZ) = %s", got)
	}
	if got := string(AppendJSON(nil, Type{Kind: TimestampKind}, wall)); got != `"2024-01-31T10:00:00.123456Z"` {
		t.Errorf("AppendJSON(TIMESTAMP) = %s", got)
	}
	st := Type{Kind: StructKind, Struct: &Schema{Fields: []Field{{Name: "at", Type: TimestampNTZ}}}}
	if got := string(AppendJSON(nil, st, []any{wall})); got != `{"at":"2024-01-31T10:00:00.123456"}` {
		t.Errorf("AppendJSON(STRUCT<at: TIMESTAMP_NTZ>) = %s", got)
	}
}
