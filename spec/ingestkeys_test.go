package spec

import (
	"strings"
	"testing"
)

// TestIngestKeys: include_metadata adds _file_path STRING and _file_modification_time TIMESTAMP
// to the output; max_files_per_trigger must be 1 or more; both are refused for a Delta source and
// for snapshot files, and include_metadata refuses a declared column of the same name.
func TestIngestKeys(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#SRC": "      include_metadata: true\n      max_files_per_trigger: 3"})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := p.Dataset("bronze").Source
	if !src.IncludeMetadata || src.MaxFilesPerTrigger != 3 {
		t.Fatalf("source = %+v", src)
	}
	if got := p.Dataset("bronze").Schema.DDL(); got != "id BIGINT, op STRING, seq BIGINT, _file_path STRING, _file_modification_time TIMESTAMP" {
		t.Fatalf("schema %s", got)
	}
	for _, c := range []struct {
		lines map[string]string
		want  string
	}{
		{map[string]string{"#SRC": "      max_files_per_trigger: 0"}, "datasets[0].source.max_files_per_trigger: max_files_per_trigger must be 1 or more, found 0"},
		{map[string]string{"#SRC": "      include_metadata: true", "#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT, _file_path STRING"`},
			"datasets[0].source.include_metadata: include_metadata adds column _file_path, which is already declared"},
		{map[string]string{"#FORMAT": "      format: delta", "#SCHEMA": "", "#SRC": "      max_files_per_trigger: 2"},
			"datasets[0].source.max_files_per_trigger: max_files_per_trigger does not apply to `format: delta`"},
		{map[string]string{"#MORE": "  - name: snap\n    apply_changes_from_snapshot:\n      keys: [id]\n      source: {path: s, format: json, schema: \"id BIGINT\", include_metadata: true}"},
			"datasets[2].apply_changes_from_snapshot.source.include_metadata: include_metadata does not apply to snapshot files"},
	} {
		_, err := Parse("p.yaml", []byte(build(c.lines)), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v\nwant %s", err, c.want)
		}
	}
}

// TestSchemaEvolutionMode: the default is addNewColumns when the schema is inferred (with a
// _rescued_data column) and none when declared; addNewColumns with a declared schema is refused;
// none with an inferred schema has no rescued-data column; rescue adds one; names are matched
// case-insensitively and written in Auto Loader's spelling.
func TestSchemaEvolutionMode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lines         map[string]string
		mode, rescued string
		infer         bool
	}{
		{map[string]string{"#SCHEMA": "", "#MORE": "#"}, EvolutionAddNewColumns, DefaultRescuedDataColumn, true},
		{map[string]string{}, EvolutionNone, "", false},
		{map[string]string{"#SCHEMA": "", "#MORE": "#", "#SRC": "      schema_evolution_mode: NONE"}, EvolutionNone, "", true},
		{map[string]string{"#SRC": "      schema_evolution_mode: rescue"}, EvolutionRescue, DefaultRescuedDataColumn, false},
		{map[string]string{"#SRC": "      schema_evolution_mode: failonnewcolumns"}, EvolutionFailOnNewColumns, "", false},
	} {
		text := build(c.lines)
		if c.lines["#MORE"] == "#" { // no silver: it cannot read an inferred schema
			text = text[:strings.Index(text, "  - name: silver")]
		}
		p, err := Parse("p.yaml", []byte(text), nil, nil)
		if err != nil {
			t.Fatalf("%v: %v", c.lines, err)
		}
		src := p.Dataset("bronze").Source
		if src.SchemaEvolutionMode != c.mode || src.RescuedDataColumn != c.rescued || src.InferSchema != c.infer {
			t.Errorf("%v: mode %q rescued %q infer %v", c.lines, src.SchemaEvolutionMode, src.RescuedDataColumn, src.InferSchema)
		}
	}
	_, err := Parse("p.yaml", []byte(build(map[string]string{"#SRC": "      schema_evolution_mode: addNewColumns"})), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "datasets[0].source.schema_evolution_mode: schema_evolution_mode addNewColumns is not supported yet with a declared schema") {
		t.Fatalf("err = %v", err)
	}
}

// TestParquetSource: format parquet takes no options and no schema_evolution_mode rescue.
func TestParquetSource(t *testing.T) {
	t.Parallel()
	if _, err := Parse("p.yaml", []byte(build(map[string]string{"#FORMAT": "      format: parquet"})), nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lines map[string]string
		want  string
	}{
		{map[string]string{"#FORMAT": "      format: parquet", "#SRC": "      options: {mergeSchema: true}"}, "datasets[0].source.options.mergeSchema: option mergeSchema is not supported yet"},
		{map[string]string{"#FORMAT": "      format: parquet", "#SRC": "      schema_evolution_mode: rescue"}, "datasets[0].source.schema_evolution_mode: schema_evolution_mode rescue is not supported yet for format parquet"},
	} {
		_, err := Parse("p.yaml", []byte(build(c.lines)), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v\nwant %s", err, c.want)
		}
	}
}
