package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestShowDoubleAsSpark: `show` prints a DOUBLE as Spark prints one (Java's Double.toString, as
// Dataset.show, to_json and the CSV writer write it), in every format and inside a STRUCT:
// 2.0, 1.0E20, 1.0E-4, 0.5, NaN, -Infinity.
func TestShowDoubleAsSpark(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "in"), "a.json", `{"id":1,"d":2,"s":{"x":1e20}}
{"id":2,"d":0.0001,"s":{"x":0.5}}
{"id":3,"d":"NaN","s":{"x":"-Infinity"}}
`)
	spec := filepath.Join(tmp, "pipeline.yaml")
	writeFile(t, tmp, "pipeline.yaml", `name: dbl
storage: ./storage
datasets:
  - name: t
    source: {path: ./in, format: json, schema: "id BIGINT, d DOUBLE, s STRUCT<x: DOUBLE>"}
`)
	mustRun(t, "run", spec)
	for format, want := range map[string]string{
		"jsonl": `{"id": 1, "d": 2.0, "s": {"x":1.0E20}}
{"id": 2, "d": 1.0E-4, "s": {"x":0.5}}
{"id": 3, "d": "NaN", "s": {"x":"-Infinity"}}
`,
		"csv": `id,d,s
1,2.0,"{""x"":1.0E20}"
2,1.0E-4,"{""x"":0.5}"
3,NaN,"{""x"":""-Infinity""}"
`,
	} {
		if got := mustRun(t, "show", spec, "t", "--format", format); got != want {
			t.Errorf("show --format %s:\n%s\nwant\n%s", format, got, want)
		}
	}
	table := mustRun(t, "show", spec, "t")
	for _, w := range []string{"| 2.0 ", "| 1.0E-4 ", "| NaN ", `{"x":1.0E20}`} {
		if !strings.Contains(table, w) {
			t.Errorf("show (table) has no %q:\n%s", w, table)
		}
	}
}
