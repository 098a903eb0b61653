package spec

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestCSVOptions: csv options are YAML scalars (`true` and "true" are the same), normalised;
// each bad value or unknown option is reported at its key with a did-you-mean hint, and the json
// reader still refuses options.
func TestCSVOptions(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{
		"#FORMAT": "      format: csv",
		"#SRC":    "      options: {header: TRUE, delimiter: \"\\t\", quote: \"\", escape: \"'\", null_value: NA, empty_value: \"\", comment: \"#\", encoding: Latin1}",
	})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"header": "true", "delimiter": "\t", "quote": "", "escape": "'", "null_value": "NA", "empty_value": "", "comment": "#", "encoding": "iso-8859-1"}
	if got := p.Datasets[0].Source.Options; !maps.Equal(got, want) {
		t.Fatalf("options = %q, want %q", got, want)
	}
	p, err = Parse("p.yaml", []byte(build(map[string]string{"#FORMAT": "      format: csv", "#SRC": `      options: {header: "true"}`})), nil, nil)
	if err != nil || p.Datasets[0].Source.Options["header"] != "true" {
		t.Fatalf("header \"true\": err %v", err)
	}

	_, err = Parse("p.yaml", []byte(build(map[string]string{
		"#FORMAT": "      format: csv",
		"#SRC":    "      options: {header: yes, delimiter: ab, encoding: utf-16, nullValue: x, quote: \",\"}",
	})), nil, nil)
	var es Errors
	if !errors.As(err, &es) || len(es) != 5 {
		t.Fatalf("err = %v, want 5 problems", err)
	}
	text := err.Error()
	for _, w := range []string{
		`datasets[0].source.options.delimiter: csv option delimiter: "ab" must be one ASCII character`,
		`datasets[0].source.options.encoding: csv option encoding: encoding "utf-16" is not supported yet`,
		`datasets[0].source.options.header: csv option header: "yes" is not true or false`,
		`datasets[0].source.options.quote: csv option quote is the delimiter ","`,
		"datasets[0].source.options.nullValue: unknown csv option nullValue (hint: did you mean `null_value`?)",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("problems lack %q:\n%s", w, text)
		}
	}
}

// TestStructColumns: a json source may declare STRUCT columns; a csv source may not.
func TestStructColumns(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT, a STRUCT<x: INT>"`})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Dataset("bronze").Schema.DDL(); got != "id BIGINT, op STRING, seq BIGINT, a STRUCT<x: INT>" {
		t.Fatalf("schema %s", got)
	}
	_, err = Parse("p.yaml", []byte(build(map[string]string{"#FORMAT": "      format: csv", "#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT, a STRUCT<x: INT>"`})), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "column a: STRUCT columns are not supported for format csv") {
		t.Fatalf("err = %v", err)
	}
}

// TestSparkOptionNames: an option spelt as Spark's readers or Auto Loader spell it (multiLine,
// sep, inferSchema, mode, rescuedDataColumn, cloudFiles.*) is refused with what to write instead,
// never with "remove it", which would silently change how the files are read.
func TestSparkOptionNames(t *testing.T) {
	t.Parallel()
	cases := []struct{ format, option, want string }{
		{"json", "multiLine: true", "unknown json option multiLine (hint: did you mean `multiline`?)"},
		{"json", "inferColumnTypes: false", "(hint: did you mean `infer_column_types`?)"},
		{"json", "cloudFiles.inferColumnTypes: false", "(hint: did you mean `infer_column_types`?)"},
		{"json", "mode: FAILFAST", "(hint: set `mode` of the source, beside `options:`"},
		{"json", "rescuedDataColumn: _r", "(hint: set `rescued_data_column` of the source"},
		{"csv", "sep: \";\"", "unknown csv option sep (hint: did you mean `delimiter`?)"},
		{"csv", "inferSchema: true", "(hint: did you mean `infer_column_types`?)"},
		{"csv", "mode: DROPMALFORMED", "(hint: set `mode` of the source"},
		{"csv", "charset: latin1", "(hint: did you mean `encoding`?)"},
		{"csv", "cloudFiles.format: csv", "(hint: set `format` of the source, beside `options:`"},
		{"json", "format: json", "(hint: set `format` of the source, beside `options:`"},
		{"csv", "timestampFormat: \"dd/MM/yyyy HH:mm\"", "unknown csv option timestampFormat (hint: a custom pattern is not supported: declare the column STRING and convert it in a SQL dataset"},
		{"json", "dateFormat: \"dd/MM/yyyy\"", "unknown json option dateFormat (hint: a custom pattern is not supported"},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(build(map[string]string{
			"#FORMAT": "      format: " + c.format,
			"#SRC":    "      options: {" + c.option + "}",
		})), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s options {%s}: err = %v, want %q", c.format, c.option, err, c.want)
		}
	}
}
