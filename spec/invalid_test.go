package spec

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .errors files under testdata/invalid")

// TestInvalidSpecs loads every testdata/invalid/*.yaml and compares the complete error list
// with the golden file beside it (same name, .errors). Run with -update to rewrite them.
func TestInvalidSpecs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			p, err := Load(file, nil)
			if err == nil || p != nil {
				t.Fatalf("Load succeeded, want errors")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, want Errors", err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".errors"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestManyMistakes pins the headline promise: one run reports every kind of mistake, each with
// its exact file:line:column and key path.
func TestManyMistakes(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "invalid", "many.yaml")
	_, err := Load(file, nil)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error is %T (%v), want Errors", err, err)
	}
	want := []struct{ pos, path, msg string }{
		{"12:35", "datasets[0].expectations[0].expect", "expectation valid_op does not compile: unknown name opp"},
		{"13:16", "datasets[0].expectations[1].name", `expectation "valid_op" is declared twice (first at 12:16)`},
		{"17:15", "datasets[1].apply_changes.source", "unknown dataset order_changes"},
		{"19:7", "datasets[1].apply_changes.sequnce_by", "unknown key sequnce_by"},
		{"22:5", "datasets[2]", "dataset a is part of a cycle: a -> b -> a"},
		{"27:5", "datasets[3]", "dataset b is part of a cycle: a -> b -> a"},
		{"30:11", "datasets[4].name", "dataset orders is declared twice: here and at " + file + ":15:11"},
		{"32:13", "datasets[4].source.path", "${missing_dir} is not set; also used at 36:14"},
		{"34:26", "datasets[4].source.schema", `invalid schema: expected ','`},
	}
	for _, w := range want {
		found := false
		for _, e := range es {
			if e.Pos.String() == file+":"+w.pos && e.Path == w.path && strings.HasPrefix(e.Msg, w.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("missing %s: %s: %s\nin:\n%v", w.pos, w.path, w.msg, err)
		}
	}
	for _, e := range es {
		if e.Path == "datasets[1].apply_changes.sequence_by" {
			// The misspelt key is one mistake: one error (the unknown key's, with its hint).
			t.Errorf("a misspelt sequence_by is reported missing too: %v", e)
		}
		if e.Path == "datasets[1].apply_changes.sequnce_by" && e.Hint != "did you mean `sequence_by`?" {
			t.Errorf("hint for the unknown key = %q", e.Hint)
		}
		if e.Path == "datasets[1].apply_changes.source" && e.Hint != "did you mean `orders_changes`?" {
			t.Errorf("hint for the unknown dataset = %q", e.Hint)
		}
	}
	for i := 1; i < len(es); i++ {
		a, b := es[i-1].Pos, es[i].Pos
		if a.Line > b.Line || a.Line == b.Line && a.Column > b.Column {
			t.Errorf("not sorted by position: %v before %v", a, b)
		}
	}
}
