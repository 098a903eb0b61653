package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/internal/suggest"
	"tributary/schema"
	"tributary/spec"
)

func newEventsCmd() *cobra.Command {
	var confs []string
	var format, updateID, typ, level string
	var follow bool
	cmd := &cobra.Command{
		Use:   "events SPEC",
		Short: "Print the event log (all updates, or --update ID|latest; --type and --level to filter; --follow for new events as they come)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadStored(cmd.ErrOrStderr(), args[0], confs)
			if err != nil {
				return err
			}
			evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
			if err != nil {
				return failure(err)
			}
			// Nothing to print is not an answer: the storage is not the one the user meant, or no
			// update ran yet. --follow says so once (below, when its flags are valid) and waits
			// for the first.
			empty := fmt.Sprintf("the event log of %s has no update yet at %s: run %s first", p.Name, filepath.Join(p.Storage, "system", "events"), flows.RunHint(p))
			if len(evs) == 0 && !follow {
				return failure(errors.New(empty))
			}
			own := ownEvents(cmd.ErrOrStderr(), p, evs, updateID)
			// --update latest is this pipeline's latest update (specs that share a storage share
			// its event log). Followed, it is the latest as updates start: each new update of the
			// pipeline takes the place of the one before.
			latest := updateID == "latest"
			if latest {
				updateID = latestUpdate(evs, p.Name)
				if updateID == "" && !follow {
					return failure(fmt.Errorf("the event log of %s has no update of it yet: run %s first", p.Name, flows.RunHint(p)))
				}
			}
			if updateID != "" && !hasUpdate(evs, updateID) {
				// The short id the messages show ("Update 05bf5dbe is ..."): the one update it starts.
				updateID = updateByPrefix(evs, updateID)
			}
			if updateID != "" && !hasUpdate(evs, updateID) {
				return usageError(fmt.Errorf("--update %s: the event log has no such update; %s", updateID, recentUpdates(evs)))
			}
			if typ != "" && !slices.Contains(knownTypes, typ) {
				return usageError(notOneOf("--type", typ, "an event type", knownTypes))
			}
			level = strings.ToUpper(level)
			if level != "" && !slices.Contains(knownLevels, level) {
				return usageError(notOneOf("--level", level, "an event level", knownLevels))
			}
			keep := func(e eventlog.Event) bool {
				if latest && updateID == "" {
					return false // following: no update of this pipeline has started yet
				}
				return own(e) && (updateID == "" || e.Origin.UpdateID == updateID) && (typ == "" || e.EventType == typ) && (level == "" || e.Level == level)
			}
			var rows [][]any
			for _, e := range evs {
				if keep(e) {
					rows = append(rows, e.Row())
				}
			}
			if !follow {
				if format == "table" {
					return writeEventTable(cmd, evs, rows)
				}
				return writeRows(cmd.OutOrStdout(), format, eventlog.Schema, rows)
			}
			if format != "jsonl" && format != "table" {
				return usageError(fmt.Errorf("--format %q: use table or jsonl", format))
			}
			if len(evs) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "pipeline: %s; waiting for its events (Ctrl-C to stop)\n", empty)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			flowWidth := 0
			for _, d := range p.Datasets {
				flowWidth = max(flowWidth, runewidth.StringWidth(d.Name))
			}
			followed := keep
			if latest {
				seen := int64(-1)
				if len(evs) > 0 {
					seen = evs[len(evs)-1].Sequence
				}
				followed = func(e eventlog.Event) bool {
					if e.Sequence > seen && e.EventType == eventlog.CreateUpdate && e.Origin.PipelineName == p.Name {
						updateID = e.Origin.UpdateID
					}
					return keep(e)
				}
			}
			return followEvents(ctx, cmd.OutOrStdout(), filepath.Join(p.Storage, "system", "events"), format, evs, followed, flowWidth, time.Second)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&format, "format", "table", "table or jsonl")
	cmd.Flags().StringVar(&updateID, "update", "", "only this update's events (an update id, or latest)")
	cmd.Flags().StringVar(&typ, "type", "", "only events of this type (e.g. flow_progress)")
	cmd.Flags().StringVar(&level, "level", "", "only events of this level: INFO, WARN, ERROR or METRICS")
	cmd.Flags().BoolVar(&follow, "follow", false, "after the events so far, print new ones as updates log them, until interrupted (Ctrl-C)")
	return cmd
}

// followEvents prints the events of the log at dir that keep accepts: first those of evs (the
// log as read), then, until ctx ends, each new one as it is committed, checking the log's
// version every poll. jsonl prints one event a line; table the columns of the events table
// (eventTable) in its layout, its header first, then one line an event as `tail -f` would, the
// columns as wide as their longest possible values (flow: flowWidth, the longest dataset name,
// or the longest flow of evs). It returns nil when ctx ends (an interrupt).
func followEvents(ctx context.Context, w io.Writer, dir, format string, evs []eventlog.Event, keep func(eventlog.Event) bool, flowWidth int, poll time.Duration) error {
	if format != "jsonl" && format != "table" {
		return usageError(fmt.Errorf("--format %q: use table or jsonl", format))
	}
	bw := bufio.NewWriter(w)
	var widths []int
	if format == "table" {
		for _, e := range evs {
			flowWidth = max(flowWidth, runewidth.StringWidth(e.Origin.FlowName))
		}
		widths = eventTableWidths(flowWidth)
		writeTableLine(bw, eventTable.Names(), widths)
		writeTableRule(bw, widths)
	}
	last := int64(-1)
	emit := func(evs []eventlog.Event) error {
		for _, e := range evs {
			if e.Sequence <= last {
				continue
			}
			last = e.Sequence
			if !keep(e) {
				continue
			}
			if format == "jsonl" {
				if err := writeRows(bw, "jsonl", eventlog.Schema, [][]any{e.Row()}); err != nil {
					return err
				}
				continue
			}
			row := eventTableRow(e.Row())
			cells := make([]string, len(row))
			for i, f := range eventTable.Fields {
				cells[i] = tableEscaper.Replace(schema.Text(f.Type, row[i]))
			}
			writeTableLine(bw, cells, widths)
		}
		return bw.Flush()
	}
	if err := emit(evs); err != nil {
		return failure(err)
	}
	version := int64(-1)
	if snap, err := delta.New(dir).Snapshot(-1); err == nil {
		version = snap.Version
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		snap, err := delta.New(dir).Snapshot(-1)
		if err != nil || snap.Version == version {
			continue // no log yet, or nothing new
		}
		version = snap.Version
		evs, err := eventlog.Read(dir)
		if err != nil {
			return failure(err)
		}
		if err := emit(evs); err != nil {
			return failure(err)
		}
	}
}

// latestUpdate returns the id of the last update of the pipeline named name that evs (an event
// log, in order) records the start of, or "" when it records none.
func latestUpdate(evs []eventlog.Event, name string) string {
	id := ""
	for _, e := range evs {
		if e.EventType == eventlog.CreateUpdate && e.Origin.PipelineName == name {
			id = e.Origin.UpdateID
		}
	}
	return id
}

// eventMessage is an event's message, with a flow's metrics after it as in the events table.
func eventMessage(e eventlog.Event) string {
	msg := e.Message
	if e.EventType == eventlog.FlowProgress {
		if fp, ok := e.Details["flow_progress"].(map[string]any); ok {
			if m, ok := fp["metrics"]; ok {
				b, _ := json.Marshal(m)
				msg += " " + string(b)
			}
		}
	}
	return msg
}

// knownTypes are the event types --type takes, in the order the help names them.
var knownTypes = []string{
	eventlog.CreateUpdate, eventlog.UpdateProgress, eventlog.DatasetDefinition, eventlog.FlowDefinition,
	eventlog.FlowProgress, eventlog.PlanningInformation, eventlog.UserAction, eventlog.MaintenanceProgress,
}

// knownLevels are the event levels --level takes.
var knownLevels = []string{eventlog.Info, eventlog.Warn, eventlog.Error, eventlog.Metrics}

// notOneOf is the error of a flag given a value outside known: what it is not, the closest
// of known ("did you mean"), and all of them.
func notOneOf(flag, value, what string, known []string) error {
	msg := fmt.Sprintf("%s %s: not %s", flag, value, what)
	if near := suggest.Closest(value, known); len(near) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
	}
	return fmt.Errorf("%s; use one of %s", msg, strings.Join(known, ", "))
}

func hasUpdate(evs []eventlog.Event, id string) bool {
	for _, e := range evs {
		if e.Origin.UpdateID == id {
			return true
		}
	}
	return false
}

// updateByPrefix returns the id of the one update of evs whose id starts with prefix (the
// short id that messages print), or prefix itself when none or several do.
func updateByPrefix(evs []eventlog.Event, prefix string) string {
	found := ""
	for _, e := range evs {
		if id := e.Origin.UpdateID; strings.HasPrefix(id, prefix) && id != found {
			if found != "" {
				return prefix
			}
			found = id
		}
	}
	if found == "" {
		return prefix
	}
	return found
}

// recentUpdates names the last few update ids of the log, newest last.
func recentUpdates(evs []eventlog.Event) string {
	var ids []string
	for _, e := range evs {
		if e.EventType == eventlog.CreateUpdate {
			ids = append(ids, e.Origin.UpdateID)
		}
	}
	if len(ids) == 0 {
		return "the log has no update yet"
	}
	if len(ids) > 5 {
		ids = ids[len(ids)-5:]
	}
	return "recent updates: " + strings.Join(ids, ", ") + " (or use --update latest)"
}

// eventTable holds the columns of the events people usually look at (`pipeline events` in
// --format table, with --follow too): time, level, type, flow and message.
var eventTable, _ = schema.ParseDDL("timestamp TIMESTAMP, level STRING, event_type STRING, flow STRING, message STRING")

// eventTableRow is the row of eventTable of the event log's row r: the flow NULL when the event
// has none, the message with a flow's metrics (eventMessage).
func eventTableRow(r []any) []any {
	e := eventlog.FromRow(r)
	var flow any
	if e.Origin.FlowName != "" {
		flow = e.Origin.FlowName
	}
	return []any{r[2], e.Level, e.EventType, flow, eventMessage(e)}
}

// eventTableWidths are the widths of eventTable's columns when the events to come are not known
// (--follow): a timestamp's (microseconds, UTC), the longest level and event type, flowWidth
// (at least the header's), and the message's header (the last column is not padded).
func eventTableWidths(flowWidth int) []int {
	widths := []int{len("2006-01-02T15:04:05.000000Z"), len(eventlog.Metrics), 0, max(flowWidth, len("flow")), len("message")}
	for _, typ := range knownTypes {
		widths[2] = max(widths[2], len(typ))
	}
	return widths
}

// writeEventTable prints evs, the rows of the event log, as eventTable.
func writeEventTable(cmd *cobra.Command, _ []eventlog.Event, rows [][]any) error {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = eventTableRow(r)
	}
	return writeRows(cmd.OutOrStdout(), "table", eventTable, out)
}

// ownEvents returns which events of the log evs the events command prints for p, and tells w
// when the log holds updates of pipelines other than p's name (specs sharing the storage, or p
// renamed): with p's updates too, it keeps p's events and those of no pipeline, and the note names
// the others and how many of their events are left out; with none of p's, it keeps every event,
// and the note says whose they are (`--update latest` finds none of p's). An update given by id
// (not "latest") is printed whatever pipeline it is of.
func ownEvents(w io.Writer, p *spec.Pipeline, evs []eventlog.Event, updateID string) func(eventlog.Event) bool {
	all := func(eventlog.Event) bool { return true }
	mine := false
	var others []string
	left := 0
	for _, e := range evs {
		switch n := e.Origin.PipelineName; {
		case n == p.Name:
			mine = true
		case n != "":
			left++
			if !slices.Contains(others, n) {
				others = append(others, n)
			}
		}
	}
	if len(others) == 0 {
		return all
	}
	slices.Sort(others)
	names := strings.Join(others, ", ")
	if !mine {
		fmt.Fprintf(w, "pipeline: note: the event log in the storage %s holds the updates of pipeline %s and none of pipeline %s, which this spec names: what follows are %s's events\n",
			p.Storage, names, p.Name, names)
		return all
	}
	if updateID != "" && updateID != "latest" {
		return all
	}
	fmt.Fprintf(w, "pipeline: note: the storage %s is shared with pipeline %s: %d event(s) of their updates are left out (`pipeline events` with their spec, or --update ID, shows them)\n",
		p.Storage, names, left)
	return func(e eventlog.Event) bool {
		return e.Origin.PipelineName == p.Name || e.Origin.PipelineName == ""
	}
}
