package main

import (
	"os"
	"path/filepath"
	"testing"
)

// writeSpec writes text as dir/pipeline.yaml and returns its path.
func writeSpec(t *testing.T, dir, text string) string {
	t.Helper()
	spec := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// writeFile writes text to dir/name, creating its folders.
func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestQueryTimeZone runs a query that formats, truncates and splits a TIMESTAMP under several
// TZ settings: every run gives the UTC result, as all timestamps of the product are UTC.
func TestQueryTimeZone(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"UTC", "Asia/Tokyo", "America/Los_Angeles"} {
		t.Run(tz, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, dir, "landing/a.json", `{"ts":"2024-01-10 02:00:00"}`+"\n")
			spec := writeSpec(t, dir, `name: tz
datasets:
  - name: bronze
    source: {path: ./landing, format: json, schema: "ts TIMESTAMP"}
  - name: gold
    query: SELECT CAST(ts AS VARCHAR) AS s, date_trunc('day', ts) AS d, hour(ts) AS h, strftime(ts, '%Y-%m-%d %H') AS f FROM bronze
`)
			env := []string{"TZ=" + tz}
			if r := pipeline(t, env, "run", spec); r.code != 0 {
				t.Fatalf("run with TZ=%s: exit %d\n%s%s", tz, r.code, r.stdout, r.stderr)
			}
			r := pipeline(t, env, "show", spec, "gold", "--format", "jsonl")
			if r.code != 0 {
				t.Fatalf("show with TZ=%s: exit %d\n%s", tz, r.code, r.stderr)
			}
			assertRows(t, "gold with TZ="+tz, readJSONL(t, r.stdout), rowsOf(t,
				`{"s": "2024-01-10 02:00:00+00", "d": "2024-01-10T00:00:00.000000Z", "h": 2, "f": "2024-01-10 02"}`))
		})
	}
}
