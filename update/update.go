package update

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"tributary/dag"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// Update states (semantics.md "Updates, flows, modes").
const (
	StateCreated         = "CREATED"
	StateInitializing    = "INITIALIZING"
	StateSettingUpTables = "SETTING_UP_TABLES"
	StateRunning         = "RUNNING"
	StateCompleted       = "COMPLETED"
	StateFailed          = "FAILED"
	StateCanceled        = "CANCELED"
)

// Flow states.
const (
	FlowQueued    = "QUEUED"
	FlowStarting  = "STARTING"
	FlowRunning   = "RUNNING"
	FlowCompleted = "COMPLETED"
	FlowFailed    = "FAILED"
	FlowSkipped   = "SKIPPED"
	FlowIdle      = "IDLE"
)

// Options tune an update.
type Options struct {
	// Parallel is how many flows may run at once (default 2).
	Parallel int
	// Out receives a short human summary; nil discards it.
	Out io.Writer
	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
	// FullRefresh lists datasets to rebuild from all of their input: their tables, checkpoints
	// and CDC state are removed before the update sets up tables (semantics.md "Refresh").
	FullRefresh []string
	// FullRefreshAll rebuilds every dataset.
	FullRefreshAll bool
}

// FlowResult is the outcome of one flow.
type FlowResult struct {
	State   string
	Metrics flows.Metrics
	Err     error
}

// Result is the outcome of an update.
type Result struct {
	UpdateID string
	State    string
	Flows    map[string]*FlowResult
}

// FlowError is returned when flows failed; the update's state is FAILED.
type FlowError struct {
	Failed map[string]error
}

// Error lists each failed flow with its error, one a line, flows sorted by name.
func (e *FlowError) Error() string {
	names := make([]string, 0, len(e.Failed))
	for n := range e.Failed {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("the update failed:")
	for _, n := range names {
		fmt.Fprintf(&b, "\n  flow %s: %v", n, e.Failed[n])
	}
	return b.String()
}

// Run runs one triggered update of p: every flow processes what is available when it starts.
// It returns the result and, when a flow failed, a *FlowError (the update is then FAILED); other
// errors (the storage is locked, the event log cannot be written) are returned as they are.
func Run(ctx context.Context, p *spec.Pipeline, opts Options) (*Result, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = 2
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	res := &Result{UpdateID: uuid.NewString(), Flows: map[string]*FlowResult{}}
	lk, err := acquire(p.Storage, res.UpdateID)
	if err != nil {
		return nil, err
	}
	defer lk.release()
	events, err := eventlog.Open(filepath.Join(p.Storage, "system", "events"), p.Name, res.UpdateID)
	if err != nil {
		return nil, err
	}
	state := func(s string, errText string) error {
		res.State = s
		level := eventlog.Info
		if s == StateFailed {
			level = eventlog.Error
		}
		events.Emit(level, eventlog.UpdateProgress, "", "", "Update "+res.UpdateID[:8]+" is "+s+".", map[string]any{"update_progress": map[string]any{"state": s}}, errText)
		return events.Flush()
	}
	events.Emit(eventlog.Info, eventlog.CreateUpdate, "", "", "Update "+res.UpdateID[:8]+" started by the CLI.",
		map[string]any{"create_update": map[string]any{"cause": "USER_ACTION", "full_refresh": opts.FullRefreshAll, "full_refresh_selection": opts.FullRefresh, "development": p.Development}}, "")
	if err := state(StateCreated, ""); err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		_ = state(StateFailed, err.Error())
		return res, err
	}
	if err := state(StateInitializing, ""); err != nil {
		return nil, err
	}
	g, err := p.Graph()
	if err != nil {
		return fail(err)
	}
	for _, name := range g.Order() {
		d := p.Dataset(name)
		events.Emit(eventlog.Info, eventlog.DatasetDefinition, "", d.Name, "Dataset "+d.Name+" is defined as a "+string(d.Type)+".",
			map[string]any{"dataset_definition": map[string]any{"dataset_type": string(d.Type), "schema": d.Schema.DDL(), "comment": d.Comment}}, "")
		events.Emit(eventlog.Info, eventlog.FlowDefinition, d.Name, d.Name, "Flow "+d.Name+" is defined as "+flowType(d)+".",
			map[string]any{"flow_definition": map[string]any{"output_dataset": d.Name, "input_datasets": g.Deps(name), "flow_type": flowType(d), "schema": d.Schema.DDL()}}, "")
	}
	if err := state(StateSettingUpTables, ""); err != nil {
		return nil, err
	}
	refresh := opts.FullRefresh
	if opts.FullRefreshAll {
		refresh = g.Order()
	}
	for _, name := range refresh {
		d := p.Dataset(name)
		if d == nil {
			return fail(fmt.Errorf("--full-refresh: pipeline %s has no dataset %q", p.Name, name))
		}
		if err := flows.Reset(p, d); err != nil {
			return fail(err)
		}
		events.Emit(eventlog.Info, eventlog.UserAction, name, name, "Dataset "+name+" is fully refreshed: its table, checkpoint and CDC state were removed.", map[string]any{"user_action": map[string]any{"action": "FULL_REFRESH", "dataset": name}}, "")
	}
	var setupErrs []error
	var changed []string
	for _, name := range g.Order() {
		if err := flows.Setup(p, p.Dataset(name)); err != nil {
			setupErrs = append(setupErrs, err)
			if errors.Is(err, flows.ErrSchemaChanged) {
				changed = append(changed, name)
			}
		}
	}
	if len(changed) > 0 {
		seen := map[string]bool{}
		var all []string
		for _, name := range g.Order() {
			for _, c := range changed {
				if name == c || contains(g.Descendants(c), name) {
					if !seen[name] {
						seen[name] = true
						all = append(all, name)
					}
				}
			}
		}
		setupErrs = append(setupErrs, fmt.Errorf("schema changes need a full refresh of the changed tables and the tables that read them: run %s", flows.RefreshHint(p, all...)))
	}
	if len(setupErrs) > 0 {
		return fail(errors.Join(setupErrs...))
	}
	if err := state(StateRunning, ""); err != nil {
		return nil, err
	}
	env := &flows.Env{Pipeline: p, UpdateID: res.UpdateID, Events: events, Now: opts.Now}
	var mu sync.Mutex
	for _, name := range g.Order() {
		res.Flows[name] = &FlowResult{State: FlowQueued}
		events.Emit(eventlog.Info, eventlog.FlowProgress, name, name, "Flow "+name+" is QUEUED.", progress(FlowQueued, nil), "")
	}
	states := g.Run(ctx, opts.Parallel, func(ctx context.Context, name string) error {
		d := p.Dataset(name)
		events.Emit(eventlog.Info, eventlog.FlowProgress, name, name, "Flow "+name+" is STARTING.", progress(FlowStarting, nil), "")
		events.Emit(eventlog.Info, eventlog.FlowProgress, name, name, "Flow "+name+" is RUNNING.", progress(FlowRunning, nil), "")
		m, err := flows.Run(ctx, env, d)
		if err == nil && m.Version >= 0 {
			autoOptimize(p, d, events)
		}
		mu.Lock()
		fr := res.Flows[name]
		fr.Metrics, fr.Err = m, err
		switch {
		case err != nil:
			fr.State = FlowFailed
		case m.Idle:
			fr.State = FlowIdle
		default:
			fr.State = FlowCompleted
		}
		mu.Unlock()
		if err != nil {
			details := progress(FlowFailed, nil)
			if m.Quality.Expectations != nil {
				details["flow_progress"].(map[string]any)["data_quality"] = m.Quality.Details()
			}
			events.Emit(eventlog.Error, eventlog.FlowProgress, name, name, "Flow "+name+" has FAILED: "+err.Error(), details, err.Error())
		} else {
			events.Emit(eventlog.Metrics, eventlog.FlowProgress, name, name, "Flow "+name+" is "+fr.State+".", progress(fr.State, &m), "")
		}
		if ferr := events.Flush(); ferr != nil && err == nil {
			err = ferr
		}
		return err
	})
	failed := map[string]error{}
	for _, name := range g.Order() {
		fr := res.Flows[name]
		if states[name] == dag.StateSkipped {
			fr.State = FlowSkipped
			cause := "an upstream flow failed"
			if ctx.Err() != nil {
				cause = "the update was canceled"
			}
			events.Emit(eventlog.Warn, eventlog.FlowProgress, name, name, "Flow "+name+" is SKIPPED: "+cause+".", progress(FlowSkipped, nil), "")
		}
		if fr.Err != nil {
			failed[name] = fr.Err
		}
	}
	printSummary(opts.Out, p, res, g.Order())
	if len(failed) > 0 {
		ferr := &FlowError{Failed: failed}
		if err := state(StateFailed, ferr.Error()); err != nil {
			return res, errors.Join(ferr, err)
		}
		return res, ferr
	}
	if ctx.Err() != nil {
		_ = state(StateCanceled, "")
		return res, ctx.Err()
	}
	if err := state(StateCompleted, ""); err != nil {
		return res, err
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func flowType(d *spec.Dataset) string {
	if d.ApplyChanges != nil {
		return "APPLY_CHANGES"
	}
	if d.ApplyChangesFromSnapshot != nil {
		return "APPLY_CHANGES_FROM_SNAPSHOT"
	}
	return "APPEND"
}

func progress(status string, m *flows.Metrics) map[string]any {
	fp := map[string]any{"status": status}
	if m != nil {
		for k, v := range m.Details() {
			fp[k] = v
		}
	}
	return map[string]any{"flow_progress": fp}
}

func printSummary(w io.Writer, p *spec.Pipeline, res *Result, order []string) {
	fmt.Fprintf(w, "pipeline %s: update %s\n", p.Name, res.UpdateID)
	for _, name := range order {
		fr := res.Flows[name]
		m := fr.Metrics
		detail := ""
		switch {
		case fr.State == FlowFailed:
			detail = firstLine(fr.Err.Error())
		case fr.State == FlowCompleted && (p.Dataset(name).ApplyChanges != nil || p.Dataset(name).ApplyChangesFromSnapshot != nil):
			detail = fmt.Sprintf("%d upserted, %d deleted", m.NumUpsertedRows, m.NumDeletedRows)
		case fr.State == FlowCompleted:
			detail = fmt.Sprintf("%s from %s", plural(m.NumOutputRows, "row"), plural(int64(m.Files), "file"))
		}
		if m.BadRecords > 0 {
			detail += fmt.Sprintf(", %s did not fit the schema (see `pipeline events`)", plural(m.BadRecords, "value or line", "values or lines"))
		}
		if m.ChangedFiles > 0 {
			detail += fmt.Sprintf(", %s changed after being read and were not read again", plural(int64(m.ChangedFiles), "file"))
		}
		if m.Quality.DroppedRecords > 0 {
			detail += fmt.Sprintf(", %d dropped by expectations", m.Quality.DroppedRecords)
		}
		fmt.Fprintf(w, "  %-24s %-10s %s\n", name, fr.State, detail)
	}
}

// plural writes "1 row" or "2 rows" (or the given plural form).
func plural(n int64, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
