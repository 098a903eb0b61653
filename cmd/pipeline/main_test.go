package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// binary is the pipeline command built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pipeline-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "pipeline")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the pipeline command: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int // exit status; -1 when killed by a signal
}

// pipeline runs the built binary with args and extra environment variables.
func pipeline(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running pipeline %v: %v", args, err)
	}
	return r
}

// mustRun runs the binary and fails the test unless it exits 0.
// summaryOf is the summary of `run`'s output out: from its "pipeline NAME: update" line on,
// without the progress lines before it.
func summaryOf(out string) string {
	if i := strings.Index(out, "\npipeline "); i >= 0 {
		return out[i+1:]
	}
	return out
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := pipeline(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("pipeline %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// readJSONL parses one JSON object a line, numbers kept exact.
func readJSONL(t *testing.T, text string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("not a JSON object: %q: %v", line, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// canon renders a row over cols with numbers normalised by value (25.5 == 25.50), so that rows
// compare as the acceptance harness compares them.
func canon(row map[string]any, cols []string) string {
	var b strings.Builder
	for _, c := range cols {
		v, ok := row[c]
		b.WriteString(c)
		b.WriteByte('=')
		switch x := v.(type) {
		case json.Number:
			r, ok2 := new(big.Rat).SetString(string(x))
			if ok2 {
				b.WriteString("n:" + r.RatString())
			} else {
				b.WriteString("n:" + string(x))
			}
		case nil:
			if ok {
				b.WriteString("null")
			} else {
				b.WriteString("<missing>")
			}
		default:
			j, _ := json.Marshal(x)
			b.Write(j)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// assertRows compares rows as an unordered multiset over the columns of want (and fails on
// extra columns in got).
func assertRows(t *testing.T, label string, got, want []map[string]any) {
	t.Helper()
	if len(want) == 0 {
		if len(got) != 0 {
			t.Errorf("%s: want no rows, got %d: %v", label, len(got), got)
		}
		return
	}
	cols := make([]string, 0, len(want[0]))
	for c := range want[0] {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, r := range got {
		for c := range r {
			if _, ok := want[0][c]; !ok {
				t.Errorf("%s: unexpected column %q", label, c)
				return
			}
		}
	}
	var g, w []string
	for _, r := range got {
		g = append(g, canon(r, cols))
	}
	for _, r := range want {
		w = append(w, canon(r, cols))
	}
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("%s: rows differ\n got:\n  %s\nwant:\n  %s", label, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
}

func rowsOf(t *testing.T, lines ...string) []map[string]any {
	t.Helper()
	return readJSONL(t, strings.Join(lines, "\n"))
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFlagHelp: each command's --help names a flag's value by what it is (`--limit N`,
// `--timestamp T`), never by a word of its description, and prints no "(default -1)" for the
// flags whose -1 only means "not given" (their descriptions say the default in words).
func TestFlagHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"show", []string{"--limit N ", "--timestamp T ", "--version N ", "(default: all)"}},
		{"changes", []string{"--from-version N ", "--to-version M ", "(default: the latest)"}},
		{"run", []string{"      --continuous   "}},
		{"history", []string{"--limit N "}},
	} {
		out := mustRun(t, tc.cmd, "--help")
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s --help lacks %q:\n%s", tc.cmd, w, out)
			}
		}
		for _, bad := range []string{"(default -1)", "--timestamp pipeline", "--continuous continuous"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s --help has %q:\n%s", tc.cmd, bad, out)
			}
		}
	}
}

// TestReadCommandsWithoutConnection: the commands that only read what the pipeline stored (show,
// history, changes, events, graph) or maintain its tables (optimize, vacuum) run without a ${NAME} that only a postgres source's
// connection needs (its password lives in the environment of the runs); one the storage path
// needs is still an error, and run still needs them all.
func TestReadCommandsWithoutConnection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "pipeline.yaml")
	text := `name: reads
storage: ${STORE}
configuration:
  connection: ${TRIBUTARY_TEST_PGURL}
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT"}
  - name: orders_changes
    source: {format: postgres, connection: "${connection}", table: public.orders, schema: "id INT"}
`
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	store := "--conf=STORE=" + filepath.Join(dir, "storage")
	if r := pipeline(t, []string{"TRIBUTARY_TEST_PGURL=postgres://x@127.0.0.1:1/x"}, "run", spec, store, "--refresh", "raw"); r.code != 0 {
		t.Fatalf("run of raw alone: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"show", spec, "raw"}, {"history", spec, "raw"}, {"changes", spec, "raw", "--from-version", "0"}, {"events", spec}, {"graph", spec}, {"optimize", spec, "raw"}, {"vacuum", spec, "raw"}} {
		r := pipeline(t, nil, append(args, store)...)
		if r.code != 0 || strings.Contains(r.stderr, "TRIBUTARY_TEST_PGURL") {
			t.Errorf("%s without the connection's variable: exit %d\n%s%s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	if r := pipeline(t, nil, "show", spec, "raw"); r.code != 2 || !strings.Contains(r.stderr, "${STORE} is not set") {
		t.Errorf("show without the storage's variable: exit %d, want 2 and the unset ${STORE}:\n%s", r.code, r.stderr)
	}
	if r := pipeline(t, nil, "run", spec, store, "--refresh", "raw"); r.code != 2 || !strings.Contains(r.stderr, "${TRIBUTARY_TEST_PGURL} is not set") {
		t.Errorf("run without the connection's variable: exit %d, want 2 and the unset variable:\n%s", r.code, r.stderr)
	}
}
