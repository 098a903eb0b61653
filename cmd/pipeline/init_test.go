package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitTemplateIsTheExample: what `pipeline init` writes is the shop-orders example: the same
// change files, byte for byte, and the same spec but for its opening comment.
func TestInitTemplateIsTheExample(t *testing.T) {
	t.Parallel()
	example := filepath.Join("..", "..", "examples", "pipelines", "orders_cdc")
	files, err := filepath.Glob(filepath.Join(example, "landing", "*.json"))
	if err != nil || len(files) != 4 {
		t.Fatalf("the example's change files: %v, %v; want four", files, err)
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := template.ReadFile("template/landing/" + filepath.Base(f))
		if err != nil || string(got) != string(want) {
			t.Errorf("template/landing/%s differs from %s (%v)", filepath.Base(f), f, err)
		}
	}
	body := func(b []byte) string {
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "#") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	want, err := os.ReadFile(filepath.Join(example, "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := template.ReadFile("template/pipeline.yaml")
	if err != nil || body(got) != body(want) {
		t.Errorf("template/pipeline.yaml differs from the example's spec beyond its comments (%v)", err)
	}
	entries, err := template.ReadDir("template/landing")
	if err != nil || len(entries) != 4 {
		t.Errorf("the template has %d change files, want the example's four (%v)", len(entries), err)
	}
}

// TestInit: `pipeline init DIR` writes a pipeline that runs as it is and gives the example's
// orders (spec.md §2, "a new runnable pipeline with sample data"); it writes into an empty
// folder, and refuses one that holds anything (exit 2, nothing written).
func TestInit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	out := mustRun(t, "init", dir)
	spec := filepath.Join(dir, "pipeline.yaml")
	// The command as invoked (a path here), so that the printed lines run as they are.
	if !strings.Contains(out, "run it:     "+binary+" run "+spec+"\n") {
		t.Errorf("init says:\n%s\nwant the command that runs it, as invoked", out)
	}
	mustRun(t, "run", spec)
	got := readJSONL(t, mustRun(t, "show", spec, "orders", "--format", "jsonl"))
	assertRows(t, "orders", got, rowsOf(t,
		`{"order_id": 1001, "status": "shipped", "amount": 25.50, "seq": 5}`,
		`{"order_id": 1003, "status": "paid", "amount": 60.00, "seq": 7}`))

	r := pipeline(t, nil, "init", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("init into a folder with a pipeline: exit %d, %q; want 2 and a message that it is not empty", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "init", spec); r.code != 2 || !strings.Contains(r.stderr, "pipeline.yaml is a file; give a new folder") {
		t.Errorf("init onto a file: exit %d, %q; want 2 and a message that it is a file", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "init"); r.code != 2 || !strings.Contains(r.stderr, "usage: pipeline init DIR") {
		t.Errorf("init without a folder: exit %d, %q; want 2 and the usage", r.code, r.stderr)
	}
	empty := t.TempDir()
	mustRun(t, "init", empty)
	if _, err := os.Stat(filepath.Join(empty, "landing", "batch-0004.json")); err != nil {
		t.Errorf("init into an empty folder: %v", err)
	}
}
