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
