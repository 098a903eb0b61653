package spec

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestMergeKeys: YAML merge keys (`<<: *anchor`, `<<: [*a, *b]`) add the named mapping's keys
// that the mapping does not give itself, in flow and block style, ${} substituted in them as
// elsewhere; top-level keys starting with x- hold such anchors and mean nothing else. A `<<` of a
// scalar is an unknown key.
func TestMergeKeys(t *testing.T) {
	t.Parallel()
	const text = `name: t
storage: ./s
configuration:
  root: ./in
x-json: &json
  format: json
  schema: "id BIGINT, v STRING"
  path: ${root}/default
x-csv: &csv
  format: csv
  options: {header: true}
datasets:
  - name: a
    source: {<<: *json, path: "${root}/a"}
  - name: b
    source:
      <<: [*csv, *json]
      schema: "id BIGINT"
`
	p, err := Parse("p.yaml", []byte(text), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Dataset("a").Source, p.Dataset("b").Source
	if a.Format != "json" || a.Path != filepath.Join(p.Dir, "in", "a") || a.Schema.DDL() != "id BIGINT, v STRING" {
		t.Errorf("a: format %s, path %s, schema %s; want json, in/a (its own), id BIGINT, v STRING", a.Format, a.Path, a.Schema.DDL())
	}
	// *csv comes first in the list: its format wins over *json's; path from *json; schema its own.
	if b.Format != "csv" || b.Options["header"] != "true" || b.Path != filepath.Join(p.Dir, "in", "default") || b.Schema.DDL() != "id BIGINT" {
		t.Errorf("b: format %s, options %v, path %s, schema %s; want csv, header true, in/default, id BIGINT", b.Format, b.Options, b.Path, b.Schema.DDL())
	}
	_, err = Parse("p.yaml", []byte("name: t\ndatasets:\n  - name: a\n    source: {<<: 3, path: ./l, format: json, schema: \"id BIGINT\"}\n"), nil, nil)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Msg != "unknown key <<" {
		t.Errorf("a << of a scalar: %v, want the unknown key <<", err)
	}
}
