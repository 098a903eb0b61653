package update

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"tributary/dag"
	"tributary/delta"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// ResetAllowedProperty is the table property that, set to "false", turns a full refresh of the
// table into a normal update (as in Delta Live Tables).
const ResetAllowedProperty = "pipelines.reset.allowed"

// session is one update in progress: the lock, the event log, the graph and the result. A
// triggered update runs one batch of flows; a continuous update runs a batch each time new input
// lands.
type session struct {
	p        *spec.Pipeline
	opts     Options
	res      *Result
	lk       *lock // the lock this session took itself (nil under Options.Held)
	events   *eventlog.Log
	warns    *warnCounter // the Emitter of the flows and their maintenance: events, counting WARNs
	g        *dag.Graph
	env      *flows.Env
	selected map[string]bool // the datasets of the refresh selection; nil: every dataset
	noticed  bool            // a summary said the update's notices (Result.ResetDenied, Orphans)
	// cleaned is, per dataset, the version its table had when this update last ran its metadata
	// cleanup (cleanupLog): it runs again once a later checkpoint interval is reached.
	cleaned sync.Map  // dataset name -> int64
	start   time.Time // when the update began (autoVacuum: checkpoints written since)
	// final: the update ends with the next batch (a triggered update, Run): the events of its
	// last flow to end are committed with the update's end state, one event log commit rather
	// than two.
	final bool
}

func (s *session) result() *Result {
	if s == nil {
		return nil
	}
	return s.res
}

// state records the update's state s in the event log and commits the events so far, except
// for CREATED, INITIALIZING and SETTING_UP_TABLES, which the next state (milliseconds later,
// RUNNING or FAILED) commits with them: an update starts with one event log commit rather than
// four. A setting up that removes tables (a full refresh, which can take long) commits its
// SETTING_UP_TABLES before it removes them.
func (s *session) state(st, errText string) error {
	s.res.State = st
	level := eventlog.Info
	if st == StateFailed {
		level = eventlog.Error
	}
	s.events.Emit(level, eventlog.UpdateProgress, "", "", "Update "+s.res.UpdateID[:8]+" is "+st+".", map[string]any{"update_progress": map[string]any{"state": st}}, errText)
	if st == StateCreated || st == StateInitializing || st == StateSettingUpTables {
		return nil
	}
	return s.events.Flush()
}

// endUnfinished records an end for each earlier update of the pipeline that the event log shows
// as not ended (eventlog.Log.Unfinished): the session holds the storage lock, so their processes
// stopped (killed, or the machine went down) before they could record one. Each gets an
// update_progress event FAILED under its own id, as Delta Live Tables shows such an update,
// with details.update_progress {state, last_state, recorded_by_update}; they are committed
// with this update's first events. An event log that cannot be read for them does not stop the
// update: a WARN event says so, and the next update looks again.
func (s *session) endUnfinished() {
	unfinished, err := s.events.Unfinished()
	if err != nil {
		s.events.Emit(eventlog.Warn, eventlog.PlanningInformation, "", "", "Earlier updates that did not end were not looked for: "+err.Error()+"; an update killed before its end may still show as RUNNING.",
			nil, err.Error())
		return
	}
	for _, u := range unfinished {
		during := u.State
		if during == "" {
			during = StateCreated
		}
		msg := fmt.Sprintf("Update %s is FAILED: it ended without finishing, as its process stopped (killed, or the machine went down) while it was %s; the batches its flows committed stay, and update %s goes on from them.",
			short(u.UpdateID), during, short(s.res.UpdateID))
		s.events.EmitFor(u.UpdateID, eventlog.Error, eventlog.UpdateProgress, msg,
			map[string]any{"update_progress": map[string]any{"state": StateFailed, "last_state": during, "recorded_by_update": s.res.UpdateID}},
			"the update's process stopped before the update ended")
	}
}

// short is the first 8 characters of an update id, as messages show it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// close releases the lock the session took.
func (s *session) close() {
	if s.lk != nil {
		s.lk.release()
		s.lk = nil
	}
}

// begin starts an update: it takes the lock (unless Options.Held), opens the event log, records
// the definitions, applies full refreshes and sets up the tables, and leaves the update RUNNING.
// On a failure after the event log is open, the update is FAILED and the session (closed) is
// returned with the error.
func begin(p *spec.Pipeline, opts Options) (*session, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = 2
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Cause == "" {
		opts.Cause = "USER_ACTION"
	}
	s := &session{p: p, opts: opts, res: &Result{UpdateID: uuid.NewString(), Flows: map[string]*FlowResult{}}, start: time.Now()}
	if opts.Held != nil {
		opts.Held.lk.note(s.res.UpdateID)
	} else {
		lk, err := acquire(p.Storage, s.res.UpdateID)
		if err != nil {
			return nil, err
		}
		s.lk = lk
	}
	events, err := eventlog.Open(filepath.Join(p.Storage, "system", "events"), p.Name, s.res.UpdateID)
	if err != nil {
		s.close()
		return nil, err
	}
	s.events = events
	s.endUnfinished()
	if opts.Started != nil {
		opts.Started(events)
	}
	dev := p.Development || opts.Development
	events.Emit(eventlog.Info, eventlog.CreateUpdate, "", "", "Update "+s.res.UpdateID[:8]+" started by "+strings.ToLower(strings.ReplaceAll(opts.Cause, "_", " "))+".",
		map[string]any{"create_update": map[string]any{"cause": opts.Cause, "full_refresh": opts.FullRefreshAll, "full_refresh_selection": opts.FullRefresh,
			"refresh_selection": opts.Refresh, "development": dev}}, "")
	if err := s.state(StateCreated, ""); err != nil {
		s.close()
		return nil, err
	}
	fail := func(err error) (*session, error) {
		_ = s.state(StateFailed, err.Error())
		s.close()
		return s, err
	}
	if err := s.state(StateInitializing, ""); err != nil {
		s.close()
		return nil, err
	}
	g, err := p.Graph()
	if err != nil {
		return fail(err)
	}
	s.g = g
	for _, name := range g.Order() {
		d := p.Dataset(name)
		events.Emit(eventlog.Info, eventlog.DatasetDefinition, "", d.Name, "Dataset "+d.Name+" is defined as a "+string(d.Type)+".",
			map[string]any{"dataset_definition": map[string]any{"dataset_type": string(d.Type), "schema": d.Schema.DDL(), "comment": d.Comment}}, "")
		events.Emit(eventlog.Info, eventlog.FlowDefinition, d.Name, d.Name, "Flow "+d.Name+" is defined as "+flowType(d)+".",
			map[string]any{"flow_definition": map[string]any{"output_dataset": d.Name, "input_datasets": g.Deps(name), "flow_type": flowType(d), "schema": d.Schema.DDL()}}, "")
	}
	if len(opts.Refresh) > 0 {
		s.selected = map[string]bool{}
		for _, name := range append(append([]string(nil), opts.Refresh...), opts.FullRefresh...) {
			if p.Dataset(name) == nil {
				return fail(fmt.Errorf("--refresh: pipeline %s has no dataset %q", p.Name, name))
			}
			s.selected[name] = true
		}
	}
	if err := s.state(StateSettingUpTables, ""); err != nil {
		s.close()
		return nil, err
	}
	refresh := opts.FullRefresh
	if opts.FullRefreshAll {
		refresh = g.Order()
	}
	var reset []string
	for _, name := range refresh {
		d := p.Dataset(name)
		if d == nil {
			return fail(fmt.Errorf("--full-refresh: pipeline %s has no dataset %q", p.Name, name))
		}
		if d.FileView() {
			continue // nothing stored: its readers' full refresh reads its files again
		}
		if strings.EqualFold(d.TableProperties[ResetAllowedProperty], "false") {
			events.Emit(eventlog.Warn, eventlog.UserAction, name, name, "Dataset "+name+" is not fully refreshed: its table property "+ResetAllowedProperty+` is "false", so it is updated normally.`,
				map[string]any{"user_action": map[string]any{"action": "FULL_REFRESH_DENIED", "dataset": name}}, "")
			s.res.ResetDenied = append(s.res.ResetDenied, name)
			continue
		}
		reset = append(reset, name)
	}
	// A full refresh that an earlier update began and did not finish (it was killed while
	// removing tables) is finished first: its datasets may be half removed.
	pending, err := readPendingReset(p.Storage)
	if err != nil {
		return fail(err)
	}
	for _, name := range pending {
		d := p.Dataset(name)
		if d == nil || d.FileView() || slices.Contains(reset, name) || strings.EqualFold(d.TableProperties[ResetAllowedProperty], "false") {
			continue
		}
		// It runs in this update whatever the selection, or its table would stay empty.
		reset = append(reset, name)
		if s.selected != nil {
			s.selected[name] = true
		}
		if s.opts.Only != nil {
			s.opts.Only = maps.Clone(s.opts.Only)
			s.opts.Only[name] = true
		}
		events.Emit(eventlog.Info, eventlog.UserAction, name, name, "Dataset "+name+" is fully refreshed: an earlier update began its full refresh and did not finish it.",
			map[string]any{"user_action": map[string]any{"action": "FULL_REFRESH", "dataset": name, "resumed": true}}, "")
	}
	// Tables written under another pipeline's name are this one's only once rebuilt.
	if err := checkOwners(p, func(name string) bool { return slices.Contains(reset, name) }); err != nil {
		return fail(err)
	}
	if s.res.Orphans = orphanTables(p); len(s.res.Orphans) > 0 {
		events.Emit(eventlog.Warn, eventlog.PlanningInformation, "", "", orphanMessage(p, s.res.Orphans),
			map[string]any{"orphan_tables": s.res.Orphans}, "")
	}
	if s.res.OrphanSlots = orphanSlots(p); len(s.res.OrphanSlots) > 0 {
		events.Emit(eventlog.Warn, eventlog.PlanningInformation, "", "", orphanSlotsMessage(p, s.res.OrphanSlots),
			map[string]any{"orphan_replication_slots": s.res.OrphanSlots}, "")
	}
	if len(reset) > 0 {
		// Removing tables can take long: SETTING_UP_TABLES is committed first (state).
		if err := events.Flush(); err != nil {
			return fail(err)
		}
		if err := writePendingReset(p.Storage, reset); err != nil {
			return fail(err)
		}
	}
	for _, name := range reset {
		if err := flows.Reset(p, p.Dataset(name)); err != nil {
			return fail(err)
		}
		events.Emit(eventlog.Info, eventlog.UserAction, name, name, "Dataset "+name+" is fully refreshed: its table, checkpoint and CDC state were removed.", map[string]any{"user_action": map[string]any{"action": "FULL_REFRESH", "dataset": name}}, "")
	}
	if len(reset) > 0 || len(pending) > 0 {
		if err := os.Remove(filepath.Join(p.Storage, pendingResetFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("update: %w", err))
		}
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
	if err := s.state(StateRunning, ""); err != nil {
		s.close()
		return nil, err
	}
	for _, name := range g.Order() {
		if s.selected != nil && !s.selected[name] {
			s.res.Flows[name] = &FlowResult{State: FlowExcluded}
			s.flowProgress(eventlog.Info, name, "Flow "+name+" is EXCLUDED: it is not in the refresh selection.", progress(FlowExcluded, nil), "")
		}
	}
	s.warns = &warnCounter{log: events}
	s.env = &flows.Env{Pipeline: p, UpdateID: s.res.UpdateID, Events: s.warns, Now: opts.Now, Settle: opts.Settle}
	return s, nil
}

// runs reports whether the flow of name runs in a batch limited to only (nil: every flow).
func (s *session) runs(name string, only map[string]bool) bool {
	if s.selected != nil && !s.selected[name] {
		return false
	}
	if s.opts.Only != nil && !s.opts.Only[name] {
		return false
	}
	return only == nil || only[name]
}

// batch runs the flows selected (see runs) in dependency order, independent flows in parallel,
// with retries in production mode. A failed flow fails the update (state FAILED, *FlowError).
func (s *session) batch(ctx context.Context, only map[string]bool) error {
	p, g, events := s.p, s.g, s.events
	var ran []string
	for _, name := range g.Order() {
		if !s.runs(name, only) {
			continue
		}
		ran = append(ran, name)
		s.warns.take(name) // count this batch's warnings only
		s.res.Flows[name] = &FlowResult{State: FlowQueued}
		s.flowProgress(eventlog.Info, name, "Flow "+name+" is QUEUED.", progress(FlowQueued, nil), "")
	}
	// An ingest flow may fold the batch of an APPLY CHANGES target that runs after it in this
	// batch while it lands the rows (flows.Env.Runs); what no target took is dropped after.
	s.env.Runs = func(name string) bool { return s.runs(name, only) }
	defer s.env.DropFollowers()
	var mu sync.Mutex
	left := len(ran) // the flows not ended yet (a skipped flow never ends: the last flush stays)
	states := g.Run(ctx, s.opts.Parallel, func(ctx context.Context, name string) error {
		if !s.runs(name, only) {
			return nil
		}
		d := p.Dataset(name)
		s.flowProgress(eventlog.Info, name, "Flow "+name+" is STARTING.", progress(FlowStarting, nil), "")
		m, err := s.runWithRetries(ctx, d)
		if err == nil && m.Version >= 0 {
			t := delta.New(flows.TableDir(p.Storage, d.Name)) // one log replay for both
			autoOptimize(t, d, s.warns)
			s.cleanupLog(t, datasetTable(d), m.Version)
			if d.Quarantines() {
				s.maintainQuarantine(d)
			}
			if d.Source != nil && d.Source.Format == spec.FormatPostgres {
				s.maintainPostgresDropped(d)
			}
		}
		mu.Lock()
		left--
		last := left == 0
		fr := s.res.Flows[name]
		fr.Metrics, fr.Err, fr.Warnings = m, err, s.warns.take(name)
		switch {
		case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
			fr.State = FlowStopped
		case err != nil:
			fr.State = FlowFailed
		case m.Idle:
			fr.State = FlowIdle
		default:
			fr.State = FlowCompleted
		}
		mu.Unlock()
		switch {
		case fr.State == FlowStopped:
			s.flowProgress(eventlog.Warn, name, "Flow "+name+" is STOPPED: the update was canceled; nothing of its batch was committed.", progress(FlowStopped, nil), "")
		case err != nil:
			details := progress(FlowFailed, nil)
			if m.Quality.Expectations != nil {
				details["flow_progress"].(map[string]any)["data_quality"] = m.Quality.Details()
			}
			s.flowProgress(eventlog.Error, name, "Flow "+name+" has FAILED: "+err.Error(), details, err.Error())
		default:
			s.flowProgress(eventlog.Metrics, name, "Flow "+name+" is "+fr.State+".", progress(fr.State, &m), "")
		}
		if last && s.final && err == nil {
			return nil // committed with the update's end state (Run)
		}
		if ferr := events.Flush(); ferr != nil && err == nil {
			err = ferr
		}
		return err
	})
	failed := map[string]error{}
	for _, name := range ran {
		fr := s.res.Flows[name]
		if states[name] == dag.StateSkipped {
			fr.State = FlowSkipped
			cause := "an upstream flow failed"
			if ctx.Err() != nil {
				cause = "the update was canceled"
			}
			s.flowProgress(eventlog.Warn, name, "Flow "+name+" is SKIPPED: "+cause+".", progress(FlowSkipped, nil), "")
		}
		if fr.Err != nil && fr.State == FlowFailed {
			failed[name] = fr.Err
		}
	}
	// The notices of the update's start are said once: a continuous update prints a summary
	// each batch.
	res := s.res
	if s.noticed {
		shown := *s.res
		shown.ResetDenied, shown.Orphans, shown.OrphanSlots = nil, nil, nil
		res = &shown
	}
	printSummary(s.opts.Out, p, res, ran)
	s.noticed = true
	if len(failed) > 0 {
		ferr := &FlowError{Failed: failed}
		if err := s.state(StateFailed, ferr.Error()); err != nil {
			return errors.Join(ferr, err)
		}
		return ferr
	}
	if s.final {
		return nil // the update's end state commits the batch's last events
	}
	return events.Flush()
}

// end records the update's final state: CANCELED when canceled (and says so on the output, as
// a continuous update's usual end: what it committed stays), else COMPLETED.
func (s *session) end(canceled bool) error {
	if canceled {
		fmt.Fprintf(s.opts.Out, "pipeline %s: update %s CANCELED: stopped; every commit it made stays\n", s.p.Name, s.res.UpdateID)
		return s.state(StateCanceled, "")
	}
	return s.state(StateCompleted, "")
}

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// flowProgress records a flow_progress event of flow name and reports the flow's status and
// output rows to Options.Progress.
func (s *session) flowProgress(level, name, msg string, details map[string]any, errText string) {
	s.events.Emit(level, eventlog.FlowProgress, name, name, msg, details, errText)
	if s.opts.Progress == nil {
		return
	}
	fp, _ := details["flow_progress"].(map[string]any)
	status, _ := fp["status"].(string)
	var rows int64
	if m, ok := fp["metrics"].(map[string]any); ok {
		switch v := m["num_output_rows"].(type) {
		case int64:
			rows = v
		case int:
			rows = int64(v)
		}
	}
	s.opts.Progress(name, status, rows)
}
