package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRunFailure: a triggered update cancelled by a signal ends with exit 1 and a message that
// says so (not "context canceled"); other errors keep their text; success is no error.
func TestRunFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ee *exitError
	err := runFailure(ctx, fmt.Errorf("flow items: %w", context.Canceled))
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "the update was canceled (SIGINT or SIGTERM)") {
		t.Fatalf("cancelled: %v", err)
	}
	if err := runFailure(context.Background(), errors.New("flow items: boom")); !errors.As(err, &ee) || ee.code != 1 || err.Error() != "flow items: boom" {
		t.Fatalf("failed: %v", err)
	}
	if err := runFailure(ctx, nil); err != nil {
		t.Fatalf("success: %v", err)
	}
}

// TestFlagHintAndVersion: an unknown flag exits 2 naming the closest flag of the command;
// a long flag given with one dash is told to take two; --version prints the build's version.
func TestFlagHintAndVersion(t *testing.T) {
	t.Parallel()
	r := pipeline(t, nil, "run", "p.yaml", "--fullrefresh", "a")
	if r.code != 2 || !strings.Contains(r.stderr, "unknown flag: --fullrefresh (did you mean --full-refresh?)") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	for arg, want := range map[string]string{
		"-full-refresh-all": "unknown shorthand flag: 'f' in -full-refresh-all (long flags take two dashes: did you mean --full-refresh-all?)",
		"-contnuous":        "unknown shorthand flag: 'c' in -contnuous (long flags take two dashes: did you mean --continuous?)",
		"-conf=a=b":         "unknown shorthand flag: 'c' in -conf=a=b (long flags take two dashes: did you mean --conf?)",
		"-qqqq":             "unknown shorthand flag: 'q' in -qqqq\n",
	} {
		r = pipeline(t, nil, "run", "p.yaml", arg)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", arg, r.code, r.stderr, want)
		}
	}
	r = pipeline(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pipeline version ") {
		t.Fatalf("--version: exit %d, stdout %q", r.code, r.stdout)
	}
}
