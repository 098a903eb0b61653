package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaOfTableWithoutData: a first update that fails before its first batch commits
// (a failfast line that does not fit the declared type) leaves the table with the spec's schema
// and no data; once the spec declares the column's type that fits, the next update runs without
// a full refresh (the table takes the new schema, as a new table would) and reads the file. A
// table that holds data still refuses a changed schema, naming the full refresh.
func TestSchemaOfTableWithoutData(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "in"), "a.json", `{"id": 1, "code": "A7"}`+"\n")
	spec := `name: s
storage: ./storage
datasets:
  - name: raw
    source: {path: ./in, format: json, schema: "id BIGINT, code %s", mode: failfast}
`
	path := writeSpec(t, tmp, strings.Replace(spec, "%s", "BIGINT", 1))
	if r := pipeline(t, nil, "run", path); r.code != 1 || !strings.Contains(r.stderr, "mode: failfast") {
		t.Fatalf("first run: exit %d\n%s%s\nwant the failfast failure", r.code, r.stdout, r.stderr)
	}
	writeSpec(t, tmp, strings.Replace(spec, "%s", "STRING", 1))
	if r := pipeline(t, nil, "run", path); r.code != 0 {
		t.Fatalf("run with the fixed type: exit %d\n%s%s\nwant it to run without a full refresh", r.code, r.stdout, r.stderr)
	}
	assertRows(t, "raw", readJSONL(t, mustRun(t, "show", path, "raw", "--format", "jsonl")), rowsOf(t, `{"id": 1, "code": "A7"}`))
	writeSpec(t, tmp, strings.Replace(spec, "%s", "STRING, extra INT", 1))
	if r := pipeline(t, nil, "run", path); r.code == 0 || !strings.Contains(r.stderr, "the schema changed") || !strings.Contains(r.stderr, "--full-refresh raw") {
		t.Fatalf("a changed schema over data: exit %d\n%s%s\nwant the refusal with the full refresh", r.code, r.stdout, r.stderr)
	}
}
