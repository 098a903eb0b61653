package main

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the project's embedded DuckDB, for the baseline
)

//go:embed baseline/*.sql
var baselineScripts embed.FS

// baselineFlag, as the first argument, makes the bench binary run one baseline script instead:
// `bench -baseline SCRIPT key=value...`.
const baselineFlag = "-baseline"

// measure is the wall time and peak resident memory of one or more child processes.
type measure struct {
	wall    time.Duration
	peakMiB float64
}

// add sums wall times and keeps the higher peak.
func (m *measure) add(o measure) {
	m.wall += o.wall
	m.peakMiB = max(m.peakMiB, o.peakMiB)
}

// runChild runs name with args in its own process and measures it; its output is returned on
// failure only.
func runChild(ctx context.Context, name string, args ...string) (measure, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return measure{}, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	m := measure{wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.peakMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return m, nil
}

// runBaselineChild runs one baseline script in a child process of the bench binary itself.
func runBaselineChild(ctx context.Context, script string, vars map[string]string) (measure, error) {
	self, err := os.Executable()
	if err != nil {
		return measure{}, err
	}
	if out := vars["out"]; out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return measure{}, err
		}
	}
	args := []string{baselineFlag, script}
	for k, v := range vars {
		args = append(args, k+"="+v)
	}
	return runChild(ctx, self, args...)
}

// baselineMain is the child side: it runs the script baseline/SCRIPT with ${key} replaced by
// the values given, one statement at a time, on an in-memory DuckDB database.
func baselineMain(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("usage: bench -baseline SCRIPT [key=value...]")
	}
	text, err := baselineScripts.ReadFile("baseline/" + args[0])
	if err != nil {
		return err
	}
	sqlText := string(text)
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("bench -baseline: %q is not key=value", kv)
		}
		sqlText = strings.ReplaceAll(sqlText, "${"+k+"}", v)
	}
	if i := strings.Index(sqlText, "${"); i >= 0 {
		return fmt.Errorf("bench -baseline %s: unset variable at %q", args[0], sqlText[i:min(len(sqlText), i+20)])
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, stmt := range strings.Split(sqlText, ";\n") {
		if strings.TrimSpace(stripComments(stmt)) == "" {
			continue
		}
		if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
			return fmt.Errorf("bench -baseline %s: %w\n%s", args[0], err, stmt)
		}
	}
	return nil
}

// stripComments drops the `--` comment lines of a statement.
func stripComments(stmt string) string {
	var b strings.Builder
	for _, line := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
