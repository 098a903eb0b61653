package flows

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
)

// Emitter receives events for the event log (see eventlog.Log.Emit).
type Emitter interface {
	Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string)
}

// Env is what a flow needs from the update that runs it.
type Env struct {
	Pipeline *spec.Pipeline
	UpdateID string
	Events   Emitter
	// Now returns the current time; tests may fix it. Nil means time.Now.
	Now func() time.Time
	// Settle, when above zero, leaves for a later batch the input files modified less than
	// Settle ago (by the wall clock; a time more than Settle ahead does not count), which may
	// still be being written: continuous and dev mode, which read files as they land, set it (a
	// file read while written is read in part, and its rest never, as it changed after it was
	// read). Metrics.Unsettled counts them.
	Settle time.Duration
	// Runs, when not nil, says whether the flow of a dataset runs in the update's current batch
	// of flows, after the flows it reads: an ingest flow then folds the batch of an APPLY
	// CHANGES target that reads its table while it lands it (see follower). The update sets it
	// before each batch of flows, and calls DropFollowers after.
	Runs func(flow string) bool

	// waiting holds the input files this update found incomplete (incompleteInput), by flow and
	// path, with the size and modification time they had then: a later batch of a continuous
	// update leaves such a file out without reading it again or repeating its WARN until it
	// changes (waitingFile).
	waitMu  sync.Mutex
	waiting map[string][2]int64

	// followers holds the folds ingest flows made for the APPLY CHANGES targets that run after
	// them, by target (putFollower, takeFollower).
	followMu  sync.Mutex
	followers map[string]*follower
}

// markWaiting records that flow found the input file at path, of size bytes modified at modMs,
// incomplete (not complete yet: left unread, with a WARN).
func (e *Env) markWaiting(flow, path string, size, modMs int64) {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	if e.waiting == nil {
		e.waiting = map[string][2]int64{}
	}
	e.waiting[flow+"\x00"+path] = [2]int64{size, modMs}
}

// waitingFile reports whether flow found the input file at path incomplete earlier in this
// update, and it has not changed since (same size and modification time): it is still
// incomplete, and reading it again would only say so again.
func (e *Env) waitingFile(flow, path string, size, modMs int64) bool {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	w, ok := e.waiting[flow+"\x00"+path]
	return ok && w == [2]int64{size, modMs}
}

// settling says whether a file modified at modMs (ms since the epoch) is within e.Settle of
// the wall clock's now, so may still be being written (a time further ahead is another clock's,
// or a copy's, not a write under way). Always false without Settle.
func (e *Env) settling(modMs int64) bool {
	if e.Settle <= 0 {
		return false
	}
	now := time.Now()
	return modMs > now.Add(-e.Settle).UnixMilli() && modMs <= now.Add(e.Settle).UnixMilli()
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// TableDir returns <storage>/tables/<dataset>, where the dataset's Delta table lives (spec.md §3).
func TableDir(storage, dataset string) string {
	return filepath.Join(storage, "tables", dataset)
}

// CheckpointDir returns <storage>/checkpoints/<flow>: an ingest flow's offsets log.
func CheckpointDir(storage, flow string) string {
	return filepath.Join(storage, "checkpoints", flow)
}

// StateDir returns <storage>/state/<dataset>: an APPLY CHANGES target's CDC state.
func StateDir(storage, dataset string) string {
	return filepath.Join(storage, "state", dataset)
}

// AppIDPrefix starts every txn appId the runner writes (AppID).
const AppIDPrefix = "tributary:"

// AppID is the txn appId under which the flow writing dataset records its progress (Delta
// PROTOCOL.md, "Transaction Identifiers"): "tributary:<pipeline>:<dataset>".
func AppID(p *spec.Pipeline, dataset string) string {
	return AppIDPrefix + p.Name + ":" + dataset
}

// Metrics is what a flow reports for one update (details.flow_progress of the event log).
type Metrics struct {
	// NumOutputRows is the number of rows written to the dataset's table (appended rows for an
	// ingest flow; inserted + updated + deleted rows for APPLY CHANGES).
	NumOutputRows int64
	// NumUpsertedRows and NumDeletedRows are APPLY CHANGES counts of rows inserted or updated,
	// and of visible rows deleted.
	NumUpsertedRows int64
	NumDeletedRows  int64
	// Ties counts events that tied on key and sequence with a different event (semantics.md).
	Ties int64
	// BadRecords counts input values or lines that did not fit the schema.
	BadRecords int64
	// ChangedFiles counts input files that changed after they were read (not read again).
	ChangedFiles int
	// Unsettled counts input files left for a later batch because they were modified less than
	// Env.Settle ago.
	Unsettled int
	// Incomplete counts input files left unread because they end before they are complete
	// (incompleteInput: still being written, most likely, or truncated), each with a WARN: an
	// update after they are complete reads them.
	Incomplete int
	// Files is the number of input files read.
	Files int
	// Idle is true when the flow found no new input.
	Idle    bool
	Quality expectations.Quality
	// Version is the table version committed, or -1.
	Version int64
	// more: an ingest batch left available files for the next batch (max_files_per_trigger).
	more bool
}

// Details returns m in the shape of details.flow_progress (without status).
func (m Metrics) Details() map[string]any {
	d := map[string]any{
		"metrics": map[string]any{
			"num_output_rows":   m.NumOutputRows,
			"num_upserted_rows": m.NumUpsertedRows,
			"num_deleted_rows":  m.NumDeletedRows,
			"num_bad_records":   m.BadRecords,
		},
	}
	if m.Quality.Expectations != nil {
		d["data_quality"] = m.Quality.Details()
	}
	return d
}

// ErrBadExpectation is wrapped by the error of an expectation that does not compile against
// the columns of the rows it checks, which a query dataset (or an inferred schema) knows only
// when its flow runs: a mistake in the spec, which running the flow again cannot fix.
var ErrBadExpectation = errors.New("does not compile")

// expectationSet compiles a dataset's expectations against the schema of the rows they check
// (the flow's input rows: semantics.md "Expectations").
func expectationSet(d *spec.Dataset, s schema.Schema) (*expectations.Set, error) {
	set := &expectations.Set{Dataset: d.Name, Schema: s}
	for _, e := range d.Expectations {
		p, err := expectations.Compile(e.Expect, s)
		if err != nil {
			// The columns of a query's result (or an inferred schema) are known only now: the
			// error names the expectation's place in the spec, as validation's errors do.
			return nil, fmt.Errorf("dataset %s: expectation %q (%s) %w: %w", d.Name, e.Name, e.Pos, ErrBadExpectation, err)
		}
		on := e.OnViolation
		if on == "" {
			on = expectations.Warn
		}
		set.Rules = append(set.Rules, expectations.Rule{Name: e.Name, OnViolation: on, Program: p})
	}
	return set, nil
}
