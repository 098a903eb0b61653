package spec

import (
	"fmt"
	"maps"
	"testing"
)

// TestDraft: ParseDraft returns a spec with problems as far as it decoded, with which datasets
// are sound (no problem of their own nor upstream, columns known) and which queries can be
// bound (name and query without problems); a valid spec's are all sound and bindable, and a
// spec that is no mapping has no pipeline.
func TestDraft(t *testing.T) {
	const head = "name: t\nstorage: ./s\ndatasets:\n"
	for _, c := range []struct {
		name, datasets string
		errors         int
		want           map[string]string // by dataset: "sound bindable", each true or false
	}{
		{"valid", `  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT"}
  - name: inf
    source: {path: ./l, format: json}
  - name: a
    query: SELECT id FROM raw
`, 0, map[string]string{"raw": "true false", "inf": "true false", "a": "true true"}},
		{"a misspelt key", `  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT"}
    coment: typo
  - name: a
    query: SELECT id FROM raw
    coment: typo
  - name: b
    query: SELECT id FROM a
`, 2, map[string]string{"raw": "true false", "a": "true true", "b": "true true"}},
		{"a misspelt key that shapes columns", `  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT"}
  - name: t
    apply_changes: {source: raw, keys: [id], sequence_by: id}
    schma: "id BIGINT, extra STRING"
  - name: a
    query: SELECT id FROM t
`, 1, map[string]string{"raw": "true false", "t": "false false", "a": "false true"}},
		{"query problems", `  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT"}
  - name: a
    query: SELECT id FROM raww
  - name: b
    query: SELECT id FROM raw
  - name: b
    query: SELECT id FROM raw
  - name: c
    query: SELECT id FROM raw
    source: {path: ./l, format: json, schema: "id BIGINT"}
`, 4, map[string]string{"raw": "true false", "a": "false false", "b": "true true", "b#2": "false false", "c": "false false"}},
		{"a broken expectation shapes no column", `  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT, op STRING, seq BIGINT"}
    expectations: [{name: e, expect: "id >", on_violation: drop}]
  - name: t
    apply_changes: {source: raw, keys: [id], sequence_by: seq}
  - name: a
    query: SELECT id FROM t
`, 1, map[string]string{"raw": "true false", "t": "true false", "a": "true true"}},
		{"a ${} not set", `  - name: raw
    source: {path: "${tributary_draft_unset}", format: json, schema: "id BIGINT"}
  - name: raw2
    source: {path: "${tributary_draft_unset}/x", format: json, schema: "id BIGINT"}
  - name: a
    query: SELECT id FROM raw2
`, 1, map[string]string{"raw": "false false", "raw2": "false false", "a": "false true"}},
		{"a cycle", `  - name: a
    query: SELECT id FROM b
  - name: b
    query: SELECT id FROM a
  - name: c
    query: SELECT 1 AS id
`, 2, map[string]string{"a": "false false", "b": "false false", "c": "true true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := ParseDraft("p.yaml", []byte(head+c.datasets), nil, nil)
			if len(d.Errors) != c.errors {
				t.Fatalf("%d problems, want %d:\n%v", len(d.Errors), c.errors, d.Errors)
			}
			got := map[string]string{}
			for _, ds := range d.Pipeline.Datasets {
				key := ds.Name
				if _, dup := got[key]; dup {
					key += "#2"
				}
				got[key] = fmt.Sprint(d.Sound(ds), d.Bindable(ds))
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("sound, bindable: %v, want %v\nproblems:\n%v", got, c.want, d.Errors)
			}
		})
	}
	d := ParseDraft("p.yaml", []byte("- a list\n"), nil, nil)
	if d.Pipeline != nil || len(d.Errors) != 1 {
		t.Errorf("a spec that is a list: pipeline %v, problems %v; want none and one problem", d.Pipeline, d.Errors)
	}
}
