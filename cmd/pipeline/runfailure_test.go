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
// --version prints the build's version.
func TestFlagHintAndVersion(t *testing.T) {
	t.Parallel()
	r := pipeline(t, nil, "run", "p.yaml", "--fullrefresh", "a")
	if r.code != 2 || !strings.Contains(r.stderr, "unknown flag: --fullrefresh (did you mean --full-refresh?)") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	r = pipeline(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pipeline version ") {
		t.Fatalf("--version: exit %d, stdout %q", r.code, r.stdout)
	}
}
