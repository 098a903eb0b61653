package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestNestedColumns: a json source may declare ARRAY and MAP columns, nested in each other and
// in structs; a csv source may not, and none may be a partition column.
func TestNestedColumns(t *testing.T) {
	t.Parallel()
	ddl := "id BIGINT, op STRING, seq BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, ARRAY<STRUCT<x: INT>>>"
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#SCHEMA": `      schema: "` + ddl + `"`})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("bronze").Schema.DDL(); got != ddl {
		t.Fatalf("schema %s", got)
	}
	_, err = Parse("p.yaml", []byte(build(map[string]string{"#FORMAT": "      format: csv", "#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT, tags ARRAY<STRING>, m MAP<STRING, INT>"`})), nil, nil)
	for _, want := range []string{"column tags: ARRAY columns are not supported for format csv", "column m: MAP columns are not supported for format csv"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	spec := `name: p
datasets:
  - name: e
    partition_by: [tags]
    source: {format: json, path: in, schema: "id BIGINT, tags ARRAY<STRING>"}
`
	_, err = Parse("p.yaml", []byte(spec), nil, nil)
	if want := "p.yaml:4:20: datasets[0].partition_by[0]: column tags is of type ARRAY<STRING>, which cannot be a partition column"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestNestedKeysAndHints: a MAP (or a column holding one) can be neither an APPLY CHANGES key
// nor its sequence_by, nor a FROM SNAPSHOT key; a csv source's schema_hints may not hint a
// nested type either. Each error names its place.
func TestNestedKeysAndHints(t *testing.T) {
	t.Parallel()
	spec := `name: p
datasets:
  - name: bronze
    source: {format: json, path: in, schema: "id MAP<STRING, INT>, seq ARRAY<MAP<STRING, INT>>, v STRING"}
  - name: t
    apply_changes: {source: bronze, keys: [id], sequence_by: seq}
  - name: s
    apply_changes_from_snapshot: {source: bronze, keys: [id]}
  - name: c
    source: {format: csv, path: in, schema_hints: "a STRING, m MAP<STRING, INT>"}
`
	_, err := Parse("p.yaml", []byte(spec), nil, nil)
	for _, want := range []string{
		"p.yaml:6:44: datasets[1].apply_changes.keys[0]: column id is of type MAP<STRING, INT>, which cannot be a key: a MAP has no order or equality",
		"p.yaml:6:62: datasets[1].apply_changes.sequence_by: column seq is of type ARRAY<MAP<STRING, INT>>, which cannot be a sequence_by column: a MAP has no order or equality",
		"p.yaml:8:58: datasets[2].apply_changes_from_snapshot.keys[0]: column id is of type MAP<STRING, INT>, which cannot be a key",
		"p.yaml:10:62: datasets[3].source.schema_hints: column m: MAP columns are not supported for format csv",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant %q", err, want)
		}
	}
}

// TestApplyChangesHintsFollowable: the hint of a MAP key names what an apply_changes flow can do:
// choose another column, or read a query streaming table that takes a value out of the MAP (an
// apply_changes flow reads no APPLY CHANGES target, whose commits update rows, but reads its
// change feed through a dataset with a `source:`); following either, the spec validates.
func TestApplyChangesHintsFollowable(t *testing.T) {
	t.Parallel()
	spec := `name: p
datasets:
  - name: bronze
    source: {format: json, path: in, schema: "id BIGINT, m MAP<STRING, INT>, seq BIGINT"}
  - name: flat
    type: streaming_table
    query: SELECT id, m['k'] AS k, seq FROM STREAM(bronze)
  - name: t
    apply_changes: {source: bronze, keys: [m], sequence_by: seq}
  - name: u
    apply_changes: {source: flat, keys: [k], sequence_by: seq}
`
	_, err := Parse("p.yaml", []byte(spec), nil, nil)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("err = %v, want the MAP key only", err)
	}
	if want := "choose a column of another type (a BIGINT, STRING, TIMESTAMP, or a STRUCT or ARRAY of such), or take a value out of the MAP in a query streaming table the flow reads (`SELECT m['k'] AS k, ... FROM STREAM(...)`)"; es[0].Path != "datasets[2].apply_changes.keys[0]" || es[0].Hint != want {
		t.Errorf("%s: hint %q, want %q", es[0].Path, es[0].Hint, want)
	}
	followed := `name: p
datasets:
  - name: bronze
    source: {format: json, path: in, schema: "id BIGINT, m MAP<STRING, INT>, seq BIGINT"}
  - name: silver
    apply_changes: {source: bronze, keys: [id], sequence_by: seq}
  - name: silver_feed
    source: {table: silver, read: change_feed}
  - name: u
    apply_changes: {source: silver_feed, keys: [id], sequence_by: _commit_version, apply_as_deletes: _change_type == "delete", except_column_list: [_change_type, _commit_version, _commit_timestamp]}
`
	if _, err := Parse("p.yaml", []byte(followed), nil, nil); err != nil {
		t.Errorf("the hint followed: %v", err)
	}
}
