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
