package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"tributary/eventlog"
	"tributary/schema"
)

func newEventsCmd() *cobra.Command {
	var confs []string
	var format, updateID, typ string
	cmd := &cobra.Command{
		Use:   "events SPEC",
		Short: "Print the event log (all updates, or --update ID|latest; --type to filter)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := load(args[0], confs)
			if err != nil {
				return err
			}
			evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
			if err != nil {
				return failure(err)
			}
			if updateID == "latest" {
				updateID = ""
				for _, e := range evs {
					if e.EventType == eventlog.CreateUpdate {
						updateID = e.Origin.UpdateID
					}
				}
				if updateID == "" {
					return failure(fmt.Errorf("the event log of %s has no update yet: run the pipeline first", p.Name))
				}
			}
			if updateID != "" && !hasUpdate(evs, updateID) {
				return usageError(fmt.Errorf("--update %s: the event log has no such update; %s", updateID, recentUpdates(evs)))
			}
			if typ != "" && !knownTypes[typ] {
				return usageError(fmt.Errorf("--type %s: not an event type; use one of create_update, update_progress, dataset_definition, flow_definition, flow_progress, planning_information, user_action, maintenance_progress", typ))
			}
			var rows [][]any
			for _, e := range evs {
				if updateID != "" && e.Origin.UpdateID != updateID {
					continue
				}
				if typ != "" && e.EventType != typ {
					continue
				}
				rows = append(rows, e.Row())
			}
			if format == "table" {
				return writeEventTable(cmd, evs, rows)
			}
			return writeRows(cmd.OutOrStdout(), format, eventlog.Schema, rows)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&format, "format", "table", "table or jsonl")
	cmd.Flags().StringVar(&updateID, "update", "", "only this update's events (an update id, or latest)")
	cmd.Flags().StringVar(&typ, "type", "", "only events of this type (e.g. flow_progress)")
	return cmd
}

var knownTypes = map[string]bool{
	eventlog.CreateUpdate: true, eventlog.UpdateProgress: true, eventlog.DatasetDefinition: true, eventlog.FlowDefinition: true,
	eventlog.FlowProgress: true, eventlog.PlanningInformation: true, eventlog.UserAction: true,
	eventlog.MaintenanceProgress: true,
}

func hasUpdate(evs []eventlog.Event, id string) bool {
	for _, e := range evs {
		if e.Origin.UpdateID == id {
			return true
		}
	}
	return false
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

// writeEventTable prints the events people usually look at: time, level, type, origin and message.
func writeEventTable(cmd *cobra.Command, _ []eventlog.Event, rows [][]any) error {
	s, _ := schema.ParseDDL("timestamp TIMESTAMP, level STRING, event_type STRING, flow STRING, message STRING")
	out := make([][]any, len(rows))
	for i, r := range rows {
		e := eventlog.FromRow(r)
		msg := e.Message
		if e.EventType == eventlog.FlowProgress {
			if fp, ok := e.Details["flow_progress"].(map[string]any); ok {
				if m, ok := fp["metrics"]; ok {
					b, _ := json.Marshal(m)
					msg += " " + string(b)
				}
			}
		}
		var flow any
		if e.Origin.FlowName != "" {
			flow = e.Origin.FlowName
		}
		out[i] = []any{r[2], e.Level, e.EventType, flow, msg}
	}
	return writeRows(cmd.OutOrStdout(), "table", s, out)
}
