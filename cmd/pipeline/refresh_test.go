package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFullRefresh: --full-refresh rebuilds the named datasets from all of their input; a target
// whose source was re-created is told to refresh too; a changed schema names every table to
// refresh; --full-refresh-all with a list is a usage error.
func TestFullRefresh(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	conf := exampleArgs(landing, storage)
	for _, f := range exampleFiles {
		copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", f), filepath.Join(landing, f))
	}
	mustRun(t, append([]string{"run", exampleSpec}, conf...)...)

	r := pipeline(t, nil, append([]string{"run", exampleSpec, "--full-refresh", "orders_changes"}, conf...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "the source table orders_changes was re-created") || !strings.Contains(r.stderr, "--full-refresh orders") {
		t.Fatalf("refreshing only the source: exit %d\n%s", r.code, r.stderr)
	}
	mustRun(t, append([]string{"run", exampleSpec, "--full-refresh", "orders_changes,orders"}, conf...)...)
	got := readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders", "--format", "jsonl"}, conf...)...))
	assertRows(t, "orders after the full refresh", got, rowsOf(t, afterBatch[3]...))
	if n := len(readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders_changes", "--format", "jsonl"}, conf...)...))); n != 12 {
		t.Errorf("orders_changes has %d rows after the full refresh, want 12", n)
	}

	mustRun(t, append([]string{"run", exampleSpec, "--full-refresh-all"}, conf...)...)
	got = readJSONL(t, mustRun(t, append([]string{"show", exampleSpec, "orders", "--format", "jsonl"}, conf...)...))
	assertRows(t, "orders after --full-refresh-all", got, rowsOf(t, afterBatch[3]...))

	if r := pipeline(t, nil, append([]string{"run", exampleSpec, "--full-refresh-all", "--full-refresh", "orders"}, conf...)...); r.code != 2 {
		t.Errorf("--full-refresh-all with a list: exit %d, want 2", r.code)
	}
	if r := pipeline(t, nil, append([]string{"run", exampleSpec, "--full-refresh", "ordres"}, conf...)...); r.code != 2 || !strings.Contains(r.stderr, `did you mean "orders"`) {
		t.Errorf("--full-refresh of an unknown dataset: exit %d, %s", r.code, r.stderr)
	}

	// A schema change is refused, naming the changed table and the tables that read it.
	text := strings.Replace(readString(t, exampleSpec), "seq BIGINT", "seq BIGINT, note STRING", 1)
	changed := filepath.Join(tmp, "changed.yaml")
	if err := os.WriteFile(changed, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r = pipeline(t, nil, append([]string{"run", changed}, conf...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "--full-refresh orders_changes,orders") {
		t.Fatalf("schema change: exit %d\n%s", r.code, r.stderr)
	}
	mustRun(t, append([]string{"run", changed, "--full-refresh", "orders_changes,orders"}, conf...)...)
}

// TestFullRefreshHintNamesReaders: a table whose source was re-created is told to refresh
// together with every table that reads it (a rebuilt table is a re-created source to its own
// readers), so one run of the suggested command rebuilds the chain; here the vaccinations
// example, whose silver table is read through its change data feed by a gold APPLY CHANGES
// target and a materialized view.
func TestFullRefreshHintNamesReaders(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing := filepath.Join(tmp, "landing")
	conf := exampleArgs(landing, filepath.Join(tmp, "storage"))
	for _, f := range []string{"batch-0001.json", "batch-0002.json"} {
		copyFile(t, filepath.Join(filepath.Dir(vaccinationsSpec), "landing", f), filepath.Join(landing, f))
	}
	mustRun(t, append([]string{"run", vaccinationsSpec}, conf...)...)

	r := pipeline(t, nil, append([]string{"run", vaccinationsSpec, "--full-refresh", "doses_changes"}, conf...)...)
	readers := "doses_by_country,doses_feed,doses_gold,vaccination_rate"
	if r.code != 1 || !strings.Contains(r.stderr, "the source table doses_changes was re-created") || !strings.Contains(r.stderr, "--full-refresh "+readers+" ") {
		t.Fatalf("refreshing only the bronze table: exit %d, want 1 and a hint naming --full-refresh %s\n%s", r.code, readers, r.stderr)
	}
	mustRun(t, append([]string{"run", vaccinationsSpec, "--full-refresh", readers}, conf...)...)
	show := func(ds string) []map[string]any {
		return readJSONL(t, mustRun(t, append([]string{"show", vaccinationsSpec, ds, "--format", "jsonl"}, conf...)...))
	}
	gold := rowsOf(t,
		`{"country": "FR", "population": 68000000, "doses": 51000000}`,
		`{"country": "DE", "population": 84000000, "doses": 63000000}`,
		`{"country": "ES", "population": 48000000, "doses": 12000000}`)
	assertRows(t, "doses_by_country", show("doses_by_country"), gold)
	assertRows(t, "doses_gold", show("doses_gold"), gold)
	assertRows(t, "vaccination_rate", show("vaccination_rate"), rowsOf(t,
		`{"country": "FR", "rate_pct": 75.0}`, `{"country": "DE", "rate_pct": 75.0}`, `{"country": "ES", "rate_pct": 25.0}`))
}
