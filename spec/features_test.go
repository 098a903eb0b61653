package spec

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// base is a valid spec with markers where cases put their lines. Marker lines are comments, so
// the base alone loads.
const base = `name: p
#TOP
datasets:
  - name: bronze
#BRONZE
    source:
      path: in
#FORMAT
#SCHEMA
#SRC
  - name: silver
    apply_changes:
      source: bronze
      keys: [id]
      sequence_by: seq
#AC
#MORE
`

// build fills the markers of base: each key of lines replaces its marker line; markers not given
// keep their defaults.
func build(lines map[string]string) string {
	defaults := map[string]string{
		"#FORMAT": "      format: json",
		"#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT"`,
	}
	out := base
	for _, m := range []string{"#TOP", "#BRONZE", "#FORMAT", "#SCHEMA", "#SRC", "#AC", "#MORE"} {
		v, ok := lines[m]
		if !ok {
			v, ok = defaults[m]
		}
		if !ok {
			v = m // leave the comment
		}
		out = strings.Replace(out, m, v, 1)
	}
	return out
}

// TestNotSupportedYet: every part of spec.md §1 that this release does not implement is refused
// with "... is not supported yet" at its exact place, never silently ignored and never called
// an unknown key.
func TestNotSupportedYet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		lines map[string]string
		want  string // "line:col: path: message"
	}{
		{"format avro", map[string]string{"#FORMAT": "      format: avro"},
			"8:15: datasets[0].source.format: format avro is not supported yet"},
		{"source table of a query", map[string]string{"#MORE": "  - name: gold\n    query: SELECT 1 AS id\n  - name: g2\n    source: {table: gold}"},
			"20:21: datasets[3].source.table: reading the table of a query dataset (gold) with `table:` is not supported yet"},
		{"snapshots of an inferred schema", map[string]string{"#SCHEMA": "", "#MORE": "  - name: snap\n    apply_changes_from_snapshot: {source: bronze, keys: [id]}"},
			"18:43: datasets[2].apply_changes_from_snapshot.source: reading dataset bronze, whose schema is inferred, is not supported yet (hint: declare `schema:` on dataset bronze"},
		{"json options", map[string]string{"#SRC": "      options: {primitivesAsString: true}"},
			"10:17: datasets[0].source.options.primitivesAsString: option primitivesAsString is not supported yet"},
		{"partition_by on apply_changes", map[string]string{"#MORE": "    partition_by: [op]"},
			"17:5: datasets[1].partition_by: partition_by is not supported yet for a dataset fed by apply_changes"},
		{"materialized_view from source", map[string]string{"#BRONZE": "    type: materialized_view"},
			"5:11: datasets[0].type: type materialized_view is not supported yet for a dataset fed by source"},
		{"view from apply_changes", map[string]string{"#MORE": "    type: view"},
			"17:11: datasets[1].type: type view is not supported yet for a dataset fed by apply_changes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("p.yaml", []byte(build(c.lines)), nil, nil)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want Errors", err)
			}
			if len(es) != 1 || !strings.HasPrefix(es[0].Error(), "p.yaml:"+c.want) {
				t.Fatalf("got:\n%v\nwant exactly one problem starting with:\np.yaml:%s", err, c.want)
			}
			if !strings.Contains(es[0].Msg, "not supported yet") || es[0].Hint == "" {
				t.Errorf("message %q, hint %q: want \"not supported yet\" and a hint", es[0].Msg, es[0].Hint)
			}
		})
	}
}

// TestTableProperties: a delta. or pipelines. key must be a known property (a misspelt one gets
// a did-you-mean at its position), a boolean one takes true or false in any case (stored in
// lower case), and other keys are the user's own.
func TestTableProperties(t *testing.T) {
	t.Parallel()
	props := func(lines ...string) string {
		return build(map[string]string{"#MORE": "    table_properties:\n      " + strings.Join(lines, "\n      ")})
	}
	p, err := Parse("p.yaml", []byte(props(`delta.enableDeletionVectors: "TRUE"`, `pipelines.autoOptimize.managed: False`,
		`delta.feature.timestampNtz: supported`, `owner: data-eng`, `delta.targetFileSize: 64mb`,
		`delta.deletedFileRetentionDuration: "interval 1 hours"`, `delta.checkpointInterval: "5"`, `pipelines.autoOptimize.minNumFiles: "20"`)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Datasets[1].TableProperties
	want := map[string]string{"delta.enableDeletionVectors": "true", "pipelines.autoOptimize.managed": "false",
		"delta.feature.timestampNtz": "supported", "owner": "data-eng", "delta.targetFileSize": "64mb",
		"delta.deletedFileRetentionDuration": "interval 1 hours", "delta.checkpointInterval": "5", "pipelines.autoOptimize.minNumFiles": "20"}
	if !maps.Equal(got, want) {
		t.Fatalf("table properties %v, want %v", got, want)
	}
	cases := []struct{ line, path, msg, hint string }{
		{`delta.enableDeletionVector: "true"`, "delta.enableDeletionVector", "unknown table property delta.enableDeletionVector", "did you mean `delta.enableDeletionVectors`?"},
		{`pipelines.cdc.tombstoneGCThresholdInSecond: "60"`, "pipelines.cdc.tombstoneGCThresholdInSecond", "unknown table property pipelines.cdc.tombstoneGCThresholdInSecond", "did you mean `pipelines.cdc.tombstoneGCThresholdInSeconds`"},
		{`delta.whatever: x`, "delta.whatever", "unknown table property delta.whatever", "name a property of your own without those prefixes"},
		{`delta.enableDeletionVectors: yes please`, "delta.enableDeletionVectors", `delta.enableDeletionVectors takes true or false, found "yes please"`, "write true or false"},
		{`delta.deletedFileRetentionDuration: soon`, "delta.deletedFileRetentionDuration", `"soon" is not an interval such as "interval 7 days" or "168h"`, `"interval 7 days"`},
		{`delta.logRetentionDuration: a month`, "delta.logRetentionDuration", `"a month" is not an interval such as "interval 7 days" or "168h"`, `"interval 30 days"`},
		{`delta.deletedFileRetentionDuration: "interval -1 days"`, "delta.deletedFileRetentionDuration", `"interval -1 days" is not an interval such as "interval 7 days" or "168h"`, `"interval 7 days"`},
		{`delta.checkpointInterval: ten`, "delta.checkpointInterval", `"ten" is not a whole number of commits, 1 or more`, `"10"`},
		{`delta.checkpointInterval: 0`, "delta.checkpointInterval", `"0" is not a whole number of commits, 1 or more`, `"10"`},
		{`delta.targetFileSize: big`, "delta.targetFileSize", `"big" is not a size in bytes, 1 or more`, `"128mb"`},
		{`pipelines.autoOptimize.minNumFiles: 1`, "pipelines.autoOptimize.minNumFiles", `"1" is not a whole number of files, 2 or more`, `"50"`},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(props(c.line)), nil, nil)
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Fatalf("%s: err = %v, want one problem", c.line, err)
		}
		e := es[0]
		if !strings.HasSuffix(e.Path, "table_properties."+c.path) || e.Msg != c.msg || !strings.Contains(e.Hint, c.hint) || e.Pos.Line != 18 {
			t.Errorf("%s: got %s (path %q, line %d, hint %q); want path ...%s, message %q, hint with %q, line 18", c.line, e.Error(), e.Path, e.Pos.Line, e.Hint, c.path, c.msg, c.hint)
		}
	}
}

// TestAccepted: the values this release does take, in every form the spec allows.
func TestAccepted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		lines map[string]string
		check func(p *Pipeline) error
	}{
		{"base", nil, func(p *Pipeline) error {
			ac := p.Dataset("silver").ApplyChanges
			if ac.StoredAsSCDType != 1 || ac.IgnoreNullUpdates || p.Development || p.Continuous {
				return fmt.Errorf("defaults: %+v", ac)
			}
			if p.Dataset("bronze").Type != StreamingTable || p.Dataset("silver").Type != StreamingTable {
				return fmt.Errorf("default types")
			}
			return nil
		}},
		{"explicit false and quoted numbers", map[string]string{
			"#TOP": "continuous: false\ndevelopment: \"true\"",
			"#AC":  "      stored_as_scd_type: \"1\"\n      ignore_null_updates: False",
		}, func(p *Pipeline) error {
			if !p.Development || p.Continuous {
				return fmt.Errorf("development %v continuous %v", p.Development, p.Continuous)
			}
			return nil
		}},
		{"streaming_table spelled out", map[string]string{"#BRONZE": "    type: streaming_table", "#MORE": "    type: STREAMING_TABLE"}, nil},
		{"json in capitals, empty options, modes", map[string]string{
			"#FORMAT": "      format: JSON", "#SRC": "      options: {}\n      mode: FAILFAST\n      rescued_data_column: _rescued",
		}, func(p *Pipeline) error {
			src := p.Dataset("bronze").Source
			if src.Format != "json" || src.Mode != ModeFailFast || src.RescuedDataColumn != "_rescued" || len(src.Options) != 0 {
				return fmt.Errorf("source %+v", src)
			}
			if got := p.Dataset("bronze").Schema.DDL(); got != "id BIGINT, op STRING, seq BIGINT, _rescued STRING" {
				return fmt.Errorf("bronze output %s", got)
			}
			return nil
		}},
		{"column_list keeps the keys", map[string]string{"#AC": "      column_list: [op]"}, func(p *Pipeline) error {
			if got := p.Dataset("silver").Schema.DDL(); got != "id BIGINT, op STRING" {
				return fmt.Errorf("column_list keeps the key: %s", got)
			}
			return nil
		}},
		{"table properties as numbers and booleans", map[string]string{
			"#MORE": "    table_properties:\n      pipelines.cdc.tombstoneGCThresholdInSeconds: 0\n      delta.enableChangeDataFeed: true",
		}, func(p *Pipeline) error {
			tp := p.Dataset("silver").TableProperties
			if tp[TombstoneGCProperty] != "0" || tp["delta.enableChangeDataFeed"] != "true" || p.Dataset("silver").TombstoneGCSeconds() != 0 {
				return fmt.Errorf("table properties %v", tp)
			}
			return nil
		}},
		{"deletion vectors", map[string]string{
			"#MORE": "    table_properties:\n      delta.enableDeletionVectors: true",
		}, func(p *Pipeline) error {
			if tp := p.Dataset("silver").TableProperties; tp["delta.enableDeletionVectors"] != "true" {
				return fmt.Errorf("table properties %v", tp)
			}
			return nil
		}},
		{"expectations with defaults", map[string]string{
			"#MORE": "    expectations:\n      - name: valid_op\n        expect: 'op in [\"I\", \"U\", \"D\"]'\n      - {name: key, expect: id != nil, on_violation: FAIL}",
		}, func(p *Pipeline) error {
			x := p.Dataset("silver").Expectations
			if len(x) != 2 || x[0].OnViolation != OnViolationWarn || x[1].OnViolation != OnViolationFail || x[1].Pos.Line != 20 {
				return fmt.Errorf("expectations %+v", x)
			}
			return nil
		}},
		{"yaml-language-server comment and anchors", map[string]string{
			"#TOP": "# yaml-language-server: $schema=../../schema/pipeline.schema.json\nconfiguration: &conf {a: b}",
		}, func(p *Pipeline) error {
			if p.Configuration["a"] != "b" {
				return fmt.Errorf("configuration %v", p.Configuration)
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("p.yaml", []byte(build(c.lines)), nil, nil)
			if err != nil {
				t.Fatalf("%v\nspec:\n%s", err, build(c.lines))
			}
			if c.check != nil {
				if err := c.check(p); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestApplyChangesOptions: SCD type 2 adds __START_AT / __END_AT of the sequence's type (a struct
// for several sequence columns); options that apply to one SCD type only are refused on the other.
func TestApplyChangesOptions(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#AC": "      stored_as_scd_type: 2\n      track_history_column_list: [op]\n      ignore_null_updates: true"})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	silver := p.Dataset("silver")
	if got := silver.Schema.DDL(); got != "id BIGINT, op STRING, seq BIGINT, __START_AT BIGINT, __END_AT BIGINT" {
		t.Errorf("SCD type 2 schema = %s", got)
	}
	if ac := silver.ApplyChanges; ac.StoredAsSCDType != 2 || !ac.IgnoreNullUpdates || len(ac.TrackHistoryColumnList) != 1 {
		t.Errorf("apply_changes = %+v", ac)
	}
	p, err = Parse("p.yaml", []byte(strings.Replace(build(map[string]string{"#AC": "      stored_as_scd_type: 2"}), "sequence_by: seq", "sequence_by: [seq, id]", 1)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("silver").Schema.DDL(); got != "id BIGINT, op STRING, seq BIGINT, __START_AT STRUCT<seq: BIGINT, id: BIGINT>, __END_AT STRUCT<seq: BIGINT, id: BIGINT>" {
		t.Errorf("struct sequence schema = %s", got)
	}
	for _, c := range []struct{ ac, want string }{
		{"      stored_as_scd_type: 2\n      apply_as_truncates: op == \"T\"", "apply_as_truncates applies to SCD type 1 only"},
		{"      track_history_column_list: [op]", "track_history_column_list applies to SCD type 2 only"},
		{"      stored_as_scd_type: 2\n      track_history_column_list: [op]\n      track_history_except_column_list: [op]", "cannot be used together"},
		{"      stored_as_scd_type: 2\n      track_history_column_list: [opp]", "unknown column opp"},
		{"      stored_as_scd_type: 2\n      track_history_column_list: [id]", "key id cannot be a tracked column (hint: remove it: a key never changes within its own history)"},
		{"      stored_as_scd_type: 2\n      track_history_except_column_list: [id]", "key id is never a tracked column, so excepting it says nothing (hint: remove it: the list names the non-key columns whose changes open no new version)"},
		{"      apply_as_truncates: op ==", "apply_as_truncates does not compile"},
	} {
		_, err := Parse("p.yaml", []byte(build(map[string]string{"#AC": c.ac})), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error = %v, want %q", c.ac, err, c.want)
		}
	}
}

// TestDeclaredTargetSchema: a dataset-level schema on an APPLY CHANGES target must name the
// columns the flow produces, with their types; under SCD type 2 it must contain __START_AT and
// __END_AT (issue: guard rails).
func TestDeclaredTargetSchema(t *testing.T) {
	t.Parallel()
	ok := "#MORE"
	for _, c := range []struct {
		ac, schema, want string
	}{
		{"      stored_as_scd_type: 2", `    schema: "id BIGINT, op STRING, seq BIGINT, __START_AT BIGINT, __END_AT BIGINT"`, ""},
		{"      stored_as_scd_type: 1", `    schema: "seq BIGINT, op STRING, id BIGINT"`, ""},
		{"      stored_as_scd_type: 2", `    schema: "id BIGINT, op STRING, seq BIGINT"`, "an SCD type 2 target's schema must contain __START_AT"},
		{"      stored_as_scd_type: 1", `    schema: "id BIGINT, op STRING, seq INT"`, "column seq is declared INT but the flow produces BIGINT"},
		{"      stored_as_scd_type: 1", `    schema: "id BIGINT, op STRING"`, "the schema does not declare seq"},
		{"      stored_as_scd_type: 1", `    schema: "id BIGINT, op STRING, seq BIGINT, extra STRING"`, "the schema declares extra, which the flow does not produce"},
	} {
		text := build(map[string]string{"#AC": c.ac, ok: c.schema})
		_, err := Parse("p.yaml", []byte(text), nil, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.schema, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error = %v, want %q", c.schema, err, c.want)
		}
	}
}
