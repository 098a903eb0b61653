package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestPlainOutputWhenPiped: with output to a pipe, `run` prints plain lines only: a line with the
// time as each flow runs and as it ends, then the summary.
func TestPlainOutputWhenPiped(t *testing.T) {
	t.Parallel()
	spec := modesDir(t, "")
	land(t, spec, "1.json", 1)
	out := mustRun(t, "run", spec)
	if strings.Contains(out, "\x1b[") || !strings.Contains(out, "items_raw                COMPLETED  1 row from 1 file") {
		t.Errorf("output %q: want the plain summary without escape sequences", out)
	}
	progress := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d items_raw +RUNNING\n\d\d:\d\d:\d\d items_raw +COMPLETED \(1 row\)\n(.|\n)*^pipeline modes: update `)
	if !progress.MatchString(out) {
		t.Errorf("output %q: want items_raw's RUNNING and COMPLETED lines before the summary", out)
	}
}

// TestPlainProgress: each status but QUEUED, STARTING and EXCLUDED is one line with the time,
// the flow and, when it wrote any, its rows.
func TestPlainProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &plainProgress{w: &b, now: func() time.Time { return time.Date(2026, 11, 30, 9, 5, 7, 0, time.UTC) }}
	for _, s := range [][2]string{{"bronze", "QUEUED"}, {"bronze", "STARTING"}, {"bronze", "RUNNING"}, {"gold", "EXCLUDED"}, {"bronze", "COMPLETED"}, {"silver", "FAILED"}} {
		rows := int64(0)
		if s[1] == "COMPLETED" {
			rows = 12
		}
		p.update(s[0], s[1], rows)
	}
	want := "09:05:07 bronze                   RUNNING\n09:05:07 bronze                   COMPLETED (12 rows)\n09:05:07 silver                   FAILED\n"
	if b.String() != want {
		t.Errorf("progress lines\n%q\nwant\n%q", b.String(), want)
	}
}
