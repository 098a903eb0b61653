package update

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

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
	FlowExcluded  = "EXCLUDED"
	FlowStopped   = "STOPPED"
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
	// Refresh, when not empty, selects the datasets the update runs (with those of FullRefresh):
	// the others are EXCLUDED in the event log and keep their tables as they are.
	Refresh []string
	// Development forces development mode (`pipeline dev`): failed flows are not retried.
	Development bool
	// Held is a storage lock the caller holds across several updates (`pipeline dev`,
	// `pipeline schedule`); nil makes the update take the lock itself.
	Held *Held
	// Cause is the create_update cause recorded in the event log (default USER_ACTION).
	Cause string
	// Started, when set, is called with the update's event log once it is open, so that a caller
	// running beside the update (a scheduler) can record events in it.
	Started func(Emitter)
	// Progress, when set, is called each time a flow changes status, with the rows it wrote
	// (for a live display on a terminal); it must be safe for concurrent use.
	Progress func(flow, status string, rows int64)
	// Only, when not nil, limits the flows run to these (their downstream included by the
	// caller); flows left out are not run and get no event. Continuous and dev mode use it.
	Only map[string]bool
	// Settle, when above zero, leaves for a later update the input files modified less than
	// Settle ago, which may still be being written (flows.Env.Settle). Continuous and dev mode
	// set it to settleTime when it is 0; a negative value reads every file at once.
	Settle time.Duration

	// sleep waits between retries (tests shorten it); nil means a timer honouring ctx.
	sleep func(ctx context.Context, d time.Duration) error
	// runFlow runs one flow (tests inject failures); nil means flows.Run.
	runFlow func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error)
}

// Emitter records events in an update's event log (eventlog.Log implements it).
type Emitter = flows.Emitter

// FlowResult is the outcome of one flow.
type FlowResult struct {
	State   string
	Metrics flows.Metrics
	Err     error
	// Warnings counts the WARN events of the flow's run in this update (in this batch, for a
	// continuous update): what its reads and writes warned of, its retried attempts, and its
	// table's maintenance that failed.
	Warnings int
}

// Result is the outcome of an update.
type Result struct {
	UpdateID string
	State    string
	Flows    map[string]*FlowResult
	// ResetDenied are the datasets a full refresh named whose table property
	// pipelines.reset.allowed is "false": they were updated normally instead.
	ResetDenied []string
	// Orphans are the tables in the storage that the pipeline wrote and no dataset of its spec
	// writes any more (datasets renamed or removed; see orphanTables).
	Orphans []string
	// OrphanSlots are the PostgreSQL replication slots this storage made or read for a postgres
	// source that no dataset of the spec has any more (see orphanSlots).
	OrphanSlots []string
}

// FlowError is returned when flows failed; the update's state is FAILED.
type FlowError struct {
	Failed map[string]error
}

// Unwrap returns the flows' errors, so that errors.Is and errors.As see them.
func (e *FlowError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, err := range e.Failed {
		out = append(out, err)
	}
	return out
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

// Run runs one triggered update of p: every selected flow processes what is available when it
// starts (Options.Refresh; the others are EXCLUDED). It returns the result and, when a flow
// failed, a *FlowError (the update is then FAILED); other errors (the storage is locked, the event
// log cannot be written) are returned as they are. When ctx is done before the flows finish, the
// flows not started are SKIPPED and the update is CANCELED.
func Run(ctx context.Context, p *spec.Pipeline, opts Options) (*Result, error) {
	s, err := begin(p, opts)
	if err != nil {
		return s.result(), err
	}
	defer s.close()
	s.final = true
	if err := s.batch(ctx, nil); err != nil {
		return s.res, err
	}
	if ctx.Err() != nil {
		_ = s.end(true)
		return s.res, ctx.Err()
	}
	return s.res, s.end(false)
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
	if d.Query != nil && d.Type == spec.MaterializedView {
		return "COMPLETE"
	}
	if d.Type == spec.View {
		return "VIEW"
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

// printSummary writes the update's summary to w: a line per flow of order (its state, what it
// wrote, what went wrong, how many warnings it had), with the command that lists the warnings
// when a flow had some, the update's notices, and the data-quality table.
func printSummary(w io.Writer, p *spec.Pipeline, res *Result, order []string) {
	fmt.Fprintf(w, "pipeline %s: update %s\n", p.Name, res.UpdateID)
	warned := false
	for _, name := range order {
		fr := res.Flows[name]
		m := fr.Metrics
		var parts []string
		switch {
		case fr.State == FlowFailed:
			parts = append(parts, firstLine(fr.Err.Error()))
		case fr.State == FlowStopped:
			parts = append(parts, "canceled: its batch in flight committed nothing")
			if m.NumOutputRows > 0 {
				parts = append(parts, plural(m.NumOutputRows, "row")+" committed by its batches before")
			}
		case fr.State == FlowCompleted && p.Dataset(name).FileView():
			parts = append(parts, "a view over files, read by "+strings.Join(readersOf(p, name), ", "))
		case fr.State == FlowCompleted && (p.Dataset(name).ApplyChanges != nil || p.Dataset(name).ApplyChangesFromSnapshot != nil):
			parts = append(parts, fmt.Sprintf("%d upserted, %d deleted", m.NumUpsertedRows, m.NumDeletedRows))
			if m.Files > 0 { // read from a view over files
				parts = append(parts, "from "+plural(int64(m.Files), "file"))
			}
		case fr.State == FlowCompleted && p.Dataset(name).Query != nil && m.Version < 0 && m.NumOutputRows == 0:
			parts = append(parts, "result unchanged, nothing committed")
		case fr.State == FlowCompleted && m.Files > 0:
			parts = append(parts, fmt.Sprintf("%s from %s", plural(m.NumOutputRows, "row"), plural(int64(m.Files), "file")))
		case fr.State == FlowCompleted:
			parts = append(parts, plural(m.NumOutputRows, "row"))
		}
		if m.BadRecords > 0 {
			parts = append(parts, fmt.Sprintf("%s did not fit the schema (see `pipeline events`)", plural(m.BadRecords, "value or line", "values or lines")))
		}
		if m.ChangedFiles == 1 {
			parts = append(parts, "1 file changed after it was read and was not read again")
		} else if m.ChangedFiles > 1 {
			parts = append(parts, fmt.Sprintf("%d files changed after they were read and were not read again", m.ChangedFiles))
		}
		if m.Incomplete == 1 {
			parts = append(parts, "1 file is not complete yet and was left unread (see `pipeline events`)")
		} else if m.Incomplete > 1 {
			parts = append(parts, fmt.Sprintf("%d files are not complete yet and were left unread (see `pipeline events`)", m.Incomplete))
		}
		if m.Unsettled == 1 {
			parts = append(parts, "1 file was modified just now (it may still be being written) and is left for a later batch")
		} else if m.Unsettled > 1 {
			parts = append(parts, fmt.Sprintf("%d files were modified just now (they may still be being written) and are left for a later batch", m.Unsettled))
		}
		if m.Quality.DroppedRecords > 0 {
			parts = append(parts, fmt.Sprintf("%d dropped by expectations", m.Quality.DroppedRecords))
		}
		if m.Quality.QuarantinedRecords > 0 {
			parts = append(parts, fmt.Sprintf("%d quarantined (in %s)", m.Quality.QuarantinedRecords, name+spec.QuarantineSuffix))
		}
		if fr.Warnings > 0 {
			parts = append(parts, plural(int64(fr.Warnings), "warning"))
			warned = true
		}
		fmt.Fprintf(w, "  %-24s %-10s %s\n", name, fr.State, strings.Join(parts, ", "))
	}
	if warned {
		fmt.Fprintf(w, "  to see the warnings: %s\n", flows.EventsHint(p, "--update "+res.UpdateID[:8]+" --level WARN"))
	}
	if len(res.Orphans) > 0 {
		fmt.Fprintf(w, "  %s\n", orphanMessage(p, res.Orphans))
	}
	if len(res.OrphanSlots) > 0 {
		fmt.Fprintf(w, "  %s\n", orphanSlotsMessage(p, res.OrphanSlots))
	}
	for _, name := range res.ResetDenied {
		fmt.Fprintf(w, "  %s was not fully refreshed: its table property %s is \"false\", so it was updated normally\n", name, ResetAllowedProperty)
	}
	printQuality(w, res, order)
}

// orphanSlots returns, sorted, the replication slots that the storage of p records as made or
// read by a postgres source (flows.PostgresSlotsDir) and that no postgres dataset of p uses
// (flows.PostgresNames): the slots of sources renamed or removed. Such a slot, while it exists
// on its database, keeps the server's WAL from being removed; nothing here reads it again.
func orphanSlots(p *spec.Pipeline) []string {
	entries, err := os.ReadDir(flows.PostgresSlotsDir(p.Storage))
	if err != nil {
		return nil
	}
	used := map[string]bool{}
	for _, d := range p.Datasets {
		if d.Source != nil && d.Source.Format == spec.FormatPostgres && d.Source.Postgres != nil {
			slot, _ := flows.PostgresNames(p, d)
			used[slot] = true
		}
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && !used[e.Name()] && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// orphanSlotsMessage says that the postgres sources of p that are gone may have left their
// replication slots on their databases, and how to drop them.
func orphanSlotsMessage(p *spec.Pipeline, slots []string) string {
	var drops []string
	for _, s := range slots {
		drops = append(drops, "SELECT pg_drop_replication_slot('"+s+"')")
	}
	return fmt.Sprintf("the replication slots %s were made or read by postgres sources that no dataset of pipeline %s has any more (renamed or removed): while such a slot exists on its database it keeps the server's write-ahead log from being removed, which can fill its disk. Once it is no longer needed, drop it on its database (%s), and its publication too (DROP PUBLICATION; by default it has the slot's name) unless another source still reads it, and remove the slot's file under %s",
		strings.Join(slots, ", "), p.Name, strings.Join(drops, "; "), flows.PostgresSlotsDir(p.Storage))
}

// orphanMessage says that the storage of p holds tables of p that no dataset writes any more.
func orphanMessage(p *spec.Pipeline, orphans []string) string {
	return fmt.Sprintf("the storage holds tables that pipeline %s wrote and no dataset of its spec writes any more (renamed or removed): %s; nothing reads or updates them, and they stay until their folders under %s are removed",
		p.Name, strings.Join(orphans, ", "), filepath.Join(p.Storage, "tables"))
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

// firstLine is the first line of an error's text s, for the run summary; when that line ends
// in ":" (a connection's error lists its attempts on the lines after it), the first line with
// text after it follows, trimmed.
func firstLine(s string) string {
	head, rest, ok := strings.Cut(s, "\n")
	if !ok || !strings.HasSuffix(head, ":") {
		return head
	}
	for _, l := range strings.Split(rest, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return head + " " + l
		}
	}
	return head
}

// readersOf names the APPLY CHANGES datasets of p that read the view over files view.
func readersOf(p *spec.Pipeline, view string) []string {
	var out []string
	for _, d := range p.Datasets {
		if d.ApplyChanges != nil && d.ApplyChanges.Source == view {
			out = append(out, d.Name)
		}
	}
	if len(out) == 0 {
		out = append(out, "no dataset")
	}
	return out
}
