package flows

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/schema"
	"tributary/spec"
)

// TestApplyChangesScripts runs the data-driven scripts in testdata/applychanges: each declares a
// source schema and apply_changes options, then batches of change events (JSON lines, landed as
// one commit each) and the expected target after them (an unordered set of rows in the jsonl form
// of spec.md §2), or the error a batch must fail with. The expected rows come from semantics.md
// "APPLY CHANGES", worked out by hand in each script's comments.
//
//	# comment
//	schema: op STRING, id BIGINT, name STRING, seq BIGINT
//	option: stored_as_scd_type: 2          (any number of apply_changes lines)
//	batch                                   (JSON lines follow)
//	expect                                  (JSON lines follow: the whole target)
//	error: text the batch's error contains
func TestApplyChangesScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/applychanges/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, f := range files {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			t.Parallel()
			runScript(t, f)
		})
	}
}

type scriptStep struct {
	kind  string // "batch", "expect", "error"
	lines []string
	text  string
	line  int
}

func runScript(t *testing.T, path string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var ddl string
	var options []string
	var steps []*scriptStep
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "schema:"):
			ddl = strings.TrimSpace(strings.TrimPrefix(line, "schema:"))
		case strings.HasPrefix(line, "option:"):
			options = append(options, strings.TrimSpace(strings.TrimPrefix(line, "option:")))
		case line == "batch" || line == "expect":
			steps = append(steps, &scriptStep{kind: line, line: n})
		case strings.HasPrefix(line, "error:"):
			steps = append(steps, &scriptStep{kind: "error", text: strings.TrimSpace(strings.TrimPrefix(line, "error:")), line: n})
		case len(steps) > 0 && strings.HasPrefix(line, "{"):
			steps[len(steps)-1].lines = append(steps[len(steps)-1].lines, line)
		default:
			t.Fatalf("%s:%d: cannot read %q", path, n, line)
		}
	}
	specText := fmt.Sprintf(`name: script
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "%s"
  - name: target
    apply_changes:
      source: changes
%s
`, ddl, "      "+strings.Join(options, "\n      "))
	p := loadPipeline(t, t.TempDir(), specText)
	src := p.Dataset("changes").Schema
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	var lastErr error
	for _, st := range steps {
		switch st.kind {
		case "batch":
			lr := newLineReader(src, "", path)
			var rows [][]any
			for i, l := range st.lines {
				row, ok, bad := lr.parse([]byte(l), int64(i+1))
				if !ok || len(bad) > 0 {
					t.Fatalf("%s:%d: bad event %s: %v", path, st.line, l, bad)
				}
				rows = append(rows, row)
			}
			appendEvents(t, p, rows)
			_, lastErr = ApplyChanges(context.Background(), env, p.Dataset("target"))
			if lastErr != nil && (len(steps) == 0 || !nextIsError(steps, st)) {
				t.Fatalf("%s:%d: batch failed: %v", path, st.line, lastErr)
			}
		case "error":
			if lastErr == nil || !strings.Contains(lastErr.Error(), st.text) {
				t.Fatalf("%s:%d: error = %v, want it to contain %q", path, st.line, lastErr, st.text)
			}
		case "expect":
			got := canonTable(t, p)
			var want []string
			for _, l := range st.lines {
				want = append(want, canonJSON(t, l))
			}
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s:%d: target differs\n got:\n  %s\nwant:\n  %s", path, st.line, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		}
	}
}

func nextIsError(steps []*scriptStep, st *scriptStep) bool {
	for i, s := range steps {
		if s == st {
			return i+1 < len(steps) && steps[i+1].kind == "error"
		}
	}
	return false
}

// canonJSON re-encodes a JSON object with sorted keys and numbers as written.
func canonJSON(t *testing.T, text string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// canonTable renders the target's rows in the jsonl form of spec.md §2, canonicalised and sorted.
func canonTable(t *testing.T, p *spec.Pipeline) []string {
	t.Helper()
	snap, rows := readTable(t, p, "target")
	var out []string
	for _, r := range rows {
		b := []byte{'{'}
		for i, f := range snap.Metadata.Schema.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, fmt.Sprintf("%q:", f.Name)...)
			b = schema.AppendJSON(b, f.Type, r[i])
		}
		b = append(b, '}')
		out = append(out, canonJSON(t, string(b)))
	}
	sort.Strings(out)
	return out
}
