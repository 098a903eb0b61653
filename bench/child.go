package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"tributary/sqlengine"
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
// failure only. The process is started by a launcher (this binary with measureFlag), which
// measures it: see measureFlag for why. Before it starts, the files written so far (the
// generated input, the other side's output) are flushed to disk (sync(2)), so that neither side
// pays for the other's, or the generator's, write-back.
func runChild(ctx context.Context, name string, args ...string) (measure, error) {
	syscall.Sync()
	self, err := os.Executable()
	if err != nil {
		return measure{}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return measure{}, err
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, self, append([]string{measureFlag, name}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{w} // the launcher's file descriptor 3
	if err := cmd.Start(); err != nil {
		w.Close()
		return measure{}, err
	}
	w.Close()
	report, _ := io.ReadAll(r)
	err = cmd.Wait()
	if err != nil {
		return measure{}, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	var wallNs, maxrssKiB int64
	if _, err := fmt.Sscanf(string(report), "%d %d", &wallNs, &maxrssKiB); err != nil {
		return measure{}, fmt.Errorf("%s: the launcher reported %q: %w", name, report, err)
	}
	return measure{wall: time.Duration(wallNs), peakMiB: float64(maxrssKiB) / 1024}, nil // KiB on Linux
}

// measureFlag, as the first argument, makes the bench binary a launcher: `bench -measure NAME
// ARGS...` runs NAME with ARGS as its child, passes its output through, and writes the child's
// wall time (ns) and peak resident memory (ru_maxrss, KiB) to file descriptor 3. On Linux a
// process's ru_maxrss starts from the resident size of the process it was started from (exec
// keeps the high-water mark of the memory it replaces), so a child started by the bench itself,
// which holds DuckDB's comparisons, would report at least the bench's size; a child of the
// small launcher starts from the launcher's.
const measureFlag = "-measure"

// measureMain is the launcher; it returns the exit code: the child's, or 1.
func measureMain(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: bench -measure NAME [ARGS...]")
		return 1
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // it dies with the launcher
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() > 0 {
			return cmd.ProcessState.ExitCode()
		}
		return 1
	}
	var maxrss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss
	}
	report := os.NewFile(3, "measure")
	if report == nil {
		fmt.Fprintln(os.Stderr, "bench -measure: file descriptor 3 is not open")
		return 1
	}
	fmt.Fprintf(report, "%d %d\n", wall.Nanoseconds(), maxrss)
	report.Close()
	return 0
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
		var names []string
		if ents, lerr := baselineScripts.ReadDir("baseline"); lerr == nil {
			for _, e := range ents {
				names = append(names, e.Name())
			}
		}
		return fmt.Errorf("bench -baseline: no script %q: SCRIPT is the file name of one of bench/baseline's scripts (%s), not a path", args[0], strings.Join(names, ", "))
	}
	sqlText := string(text)
	vars := map[string]string{}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("bench -baseline: %q is not key=value", kv)
		}
		vars[k] = v
		sqlText = strings.ReplaceAll(sqlText, "${"+k+"}", v)
	}
	if i := strings.Index(sqlText, "${"); i >= 0 {
		return fmt.Errorf("bench -baseline %s: unset variable at %q", args[0], sqlText[i:min(len(sqlText), i+20)])
	}
	// The scripts write into ${out}: by hand as from runBaselineChild (which made it already,
	// before the timed child), it is made when missing.
	if out := vars["out"]; out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return fmt.Errorf("bench -baseline %s: %w", args[0], err)
		}
	}
	db, err := sqlengine.OpenDB("") // every connection in UTC, as the product's
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
