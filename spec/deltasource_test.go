package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Delta tables of ../delta/testdata: cdf-table (id INT, name STRING, birthday DATE;
// partitioned by birthday; change data feed on, written by Spark) and basic_partitioned
// (letter STRING, number BIGINT, a_float DOUBLE; no change data feed).

// TestDeltaSourceAccepted: `format: delta` takes its columns from the table's log, adds the
// change feed's columns for `read: change_feed`, and defaults to `read: append` from the latest
// snapshot; `partition_by` names columns of a source dataset.
func TestDeltaSourceAccepted(t *testing.T) {
	t.Parallel()
	spec := `name: p
datasets:
  - name: changes
    source:
      format: delta
      path: ../delta/testdata/cdf-table
      read: change_feed
      starting_version: 0
  - name: rows
    partition_by: [letter]
    source: {format: DELTA, path: ../delta/testdata/basic_partitioned, skip_change_commits: true}
  - name: latest
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: _commit_version
      apply_as_deletes: _change_type == "delete"
      except_column_list: [_change_type, _commit_version, _commit_timestamp]
`
	p, err := Parse("p.yaml", []byte(spec), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Dataset("changes")
	if c.Source.Format != FormatDelta || c.Source.Read != ReadChangeFeed || c.Source.StartingVersion != 0 || c.Source.SkipChangeCommits {
		t.Errorf("changes: %+v", c.Source)
	}
	if got := c.Schema.DDL(); got != "id INT, name STRING, birthday DATE, _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP" {
		t.Errorf("changes: schema %s", got)
	}
	r := p.Dataset("rows")
	if r.Source.Read != ReadAppend || r.Source.StartingVersion != -1 || !r.Source.SkipChangeCommits || r.Schema.DDL() != "letter STRING, number BIGINT, a_float DOUBLE" {
		t.Errorf("rows: %+v, schema %s", r.Source, r.Schema.DDL())
	}
	if len(r.PartitionBy) != 1 || r.PartitionBy[0] != "letter" {
		t.Errorf("rows: partition_by %v", r.PartitionBy)
	}
	if got := p.Dataset("latest").Schema.DDL(); got != "id INT, name STRING, birthday DATE" {
		t.Errorf("latest: schema %s", got)
	}
}

// TestDeltaSourceErrors: every misuse is reported at its place, all at once.
func TestDeltaSourceErrors(t *testing.T) {
	t.Parallel()
	spec := `name: p
datasets:
  - name: a
    source:
      format: json
      path: in
      schema: "id BIGINT"
      read: change_feed
  - name: b
    source:
      format: delta
      path: ../delta/testdata/basic_partitioned
      read: change_feed
  - name: c
    source:
      format: delta
      path: ../delta/testdata/cdf-table
      schema: "id INT"
      mode: failfast
      read: change_feed
      skip_change_commits: true
      starting_version: -1
  - name: d
    source: {format: delta, path: ./no-such-table}
  - name: e
    partition_by: [nope, id]
    source: {format: json, path: in, schema: "id BIGINT"}
  - name: f
    partition_by: id
    source: {format: json, path: in, schema: "id BIGINT"}
  - name: g
    partition_by: {id: 1}
    source: {format: json, path: in, schema: "id BIGINT, x STRING"}
`
	_, err := Parse("p.yaml", []byte(spec), nil, nil)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v", err)
	}
	got := err.Error()
	for _, want := range []string{
		"p.yaml:8:7: datasets[0].source.read: read applies to `format: delta` only",
		"p.yaml:12:13: datasets[1].source.path: the Delta table at ",
		"has no change data feed (delta.enableChangeDataFeed is not true)",
		"p.yaml:18:7: datasets[2].source.schema: a Delta source takes its schema from the table's log",
		"p.yaml:19:7: datasets[2].source.mode: mode does not apply to `format: delta`",
		"p.yaml:21:7: datasets[2].source.skip_change_commits: skip_change_commits applies to `read: append` only",
		"p.yaml:22:25: datasets[2].source.starting_version: starting_version must be 0 or more, found -1",
		"p.yaml:24:35: datasets[3].source.path: cannot read the Delta table: ",
		"p.yaml:26:5: datasets[4].partition_by: every column of e is a partition column",
		"p.yaml:26:20: datasets[4].partition_by[0]: unknown column nope: dataset e has no such column",
		"p.yaml:29:5: datasets[5].partition_by: every column of f is a partition column",
		"p.yaml:32:19: datasets[6].partition_by: partition_by must be a list of column names",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if len(es) != 11 {
		t.Errorf("%d problems, want 11:\n%s", len(es), got)
	}
}

// TestDeltaSourceUnreadable: a Delta table this reader cannot read (column mapping by field id;
// by name it reads) is refused when the spec is loaded, as a type it does not support is,
// with a hint that says so rather than to point path at a Delta table's folder.
func TestDeltaSourceUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "mapped", "_delta_log")
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	commit := `{"metaData":{"id":"592de637-dd77-4aaa-af00-97d723a7f1f1","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"Super Name\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"delta.columnMapping.id\":1,\"delta.columnMapping.physicalName\":\"col-3877fd94-0973-4941-ac6b-646849a1ff65\"}}]}","partitionColumns":[],"configuration":{"delta.columnMapping.mode":"id","delta.columnMapping.maxColumnId":"1"},"createdTime":1699946083038}}
{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}
`
	if err := os.WriteFile(filepath.Join(log, "00000000000000000000.json"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `name: p
datasets:
  - name: a
    source: {format: delta, path: ./mapped}
  - name: b
    source: {format: delta, path: ./missing}
`
	_, err := Parse(filepath.Join(dir, "p.yaml"), []byte(spec), nil, nil)
	if err == nil {
		t.Fatal("a table with column mapping by id was accepted")
	}
	got := err.Error()
	for _, want := range []string{
		"p.yaml:4:35: datasets[0].source.path: cannot read the Delta table: delta: the table uses column mapping by field id (delta.columnMapping.mode = id), which this reader does not support (it reads column mapping by name)",
		`(hint: the table uses what this reader cannot read yet (README "Delta Lake: conformance" lists what it reads))`,
		"p.yaml:6:35: datasets[1].source.path: cannot read the Delta table: ",
		"(hint: point path at a Delta table's folder (the one holding _delta_log))",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
