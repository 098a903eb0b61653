package update

import (
	"sync"

	"tributary/eventlog"
	"tributary/spec"
)

// warnCounter is the Emitter of an update's flows and of their tables' maintenance: it records
// each event in the event log and counts the WARN events of each flow, which the summary reports
// (FlowResult.Warnings).
type warnCounter struct {
	log *eventlog.Log
	mu  sync.Mutex
	n   map[string]int // flow name -> WARN events since take
}

// Emit records the event in the event log, counting it when it is a flow's WARN.
func (w *warnCounter) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
	if level == eventlog.Warn && flow != "" {
		w.add(flow)
	}
	w.log.Emit(level, eventType, flow, dataset, message, details, errText)
}

// add counts a WARN event of flow.
func (w *warnCounter) add(flow string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[flow]++
}

// take returns the number of WARN events of flow counted since the last take, and starts again
// from zero. The events of the flow's quarantine table (its maintenance, under the table's name,
// spec.QuarantineSuffix) count as the flow's: the table has no line of its own in the summary.
func (w *warnCounter) take(flow string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := flow + spec.QuarantineSuffix
	n := w.n[flow] + w.n[q]
	delete(w.n, flow)
	delete(w.n, q)
	return n
}
