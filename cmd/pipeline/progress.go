package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// isTerminal reports whether w is a character device (a terminal) and TERM allows cursor
// movement: only then does `run` draw live progress.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// liveProgress draws one line per flow (state and rows written) on a terminal, redrawn in place
// each time a flow changes state; the update's summary follows once it ends.
type liveProgress struct {
	mu     sync.Mutex
	w      io.Writer
	order  []string
	status map[string]string
	rows   map[string]int64
	drawn  int
}

func newLiveProgress(w io.Writer) *liveProgress {
	return &liveProgress{w: w, status: map[string]string{}, rows: map[string]int64{}}
}

// update records the flow's status and rows and redraws the block (update.Options.Progress).
func (l *liveProgress) update(flow, status string, rows int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.status[flow]; !ok {
		l.order = append(l.order, flow)
	}
	l.status[flow] = status
	if rows > 0 {
		l.rows[flow] = rows
	}
	if l.drawn > 0 {
		fmt.Fprintf(l.w, "\x1b[%dA", l.drawn) // back to the first line of the block
	}
	for _, f := range l.order {
		fmt.Fprintf(l.w, "\x1b[2K  %-24s %-10s %d rows\n", f, l.status[f], l.rows[f])
	}
	l.drawn = len(l.order)
}

// done forgets the block, so that the next update draws a new one below the summary.
func (l *liveProgress) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order, l.status, l.rows, l.drawn = nil, map[string]string{}, map[string]int64{}, 0
}

// plainProgress writes a line per flow as it starts and as it ends (time, flow, status and, once
// it ends, the rows it wrote), for output that is not a terminal (a pipe, a log file): a long
// update shows how far it got as it goes, not only its summary at the end. QUEUED, STARTING
// and EXCLUDED are left out.
type plainProgress struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// update writes the line of a flow's new status (update.Options.Progress).
func (p *plainProgress) update(flow, status string, rows int64) {
	switch status {
	case "QUEUED", "STARTING", "EXCLUDED":
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%s %-24s %s", p.now().Format("15:04:05"), flow, status)
	if rows == 1 {
		line += " (1 row)"
	} else if rows > 0 {
		line += fmt.Sprintf(" (%d rows)", rows)
	}
	fmt.Fprintln(p.w, line)
}
