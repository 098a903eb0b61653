package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestLiveProgress: the terminal display redraws its block in place (cursor up, clear line) with
// each flow's latest state and rows.
func TestLiveProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	l := newLiveProgress(&b)
	l.update("bronze", "RUNNING", 0)
	l.update("silver", "QUEUED", 0)
	l.update("bronze", "COMPLETED", 12)
	out := b.String()
	if strings.Count(out, "\x1b[1A") != 1 || strings.Count(out, "\x1b[2A") != 1 {
		t.Errorf("cursor movements in %q", out)
	}
	last := out[strings.LastIndex(out, "\x1b[2A")+len("\x1b[2A"):]
	if !strings.Contains(last, "bronze                   COMPLETED  12 rows") || !strings.Contains(last, "silver                   QUEUED") {
		t.Errorf("last block %q", last)
	}
	if isTerminal(&b) {
		t.Error("a buffer is not a terminal")
	}
}

// TestPlainOutputWhenPiped: with output to a pipe, `run` prints plain lines only.
func TestPlainOutputWhenPiped(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	land(t, spec, "1.json", 1)
	out := mustRun(t, "run", spec)
	if strings.Contains(out, "\x1b[") || !strings.Contains(out, "items_raw                COMPLETED  1 row from 1 file") {
		t.Errorf("output %q: want the plain summary without escape sequences", out)
	}
}
