package eventlog

import (
	"encoding/json"
	"time"

	"tributary/schema"
)

// Event types (semantics.md "Event log").
const (
	CreateUpdate        = "create_update"
	UpdateProgress      = "update_progress"
	FlowDefinition      = "flow_definition"
	DatasetDefinition   = "dataset_definition"
	FlowProgress        = "flow_progress"
	PlanningInformation = "planning_information"
	UserAction          = "user_action"
	// MaintenanceProgress reports table maintenance the runner did (automatic OPTIMIZE), with
	// details.maintenance_progress {operation, auto, version, num_removed_files, ...}.
	MaintenanceProgress = "maintenance_progress"
)

// Levels.
const (
	Info    = "INFO"
	Warn    = "WARN"
	Error   = "ERROR"
	Metrics = "METRICS"
)

// Origin says where an event comes from; empty strings are written as NULL.
type Origin struct {
	PipelineName string
	UpdateID     string
	FlowName     string
	DatasetName  string
}

// Event is one row of the event log. Details is the event's JSON object (for example
// {"flow_progress": {"status": "COMPLETED", "metrics": {...}}}); Error is the error text of
// failures, empty otherwise.
type Event struct {
	ID        string
	Sequence  int64
	Timestamp time.Time
	Level     string
	EventType string
	Message   string
	Origin    Origin
	Details   map[string]any
	Error     string
}

var originType = schema.Schema{Fields: []schema.Field{
	{Name: "pipeline_name", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "update_id", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "flow_name", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "dataset_name", Type: schema.Type{Kind: schema.String}, Nullable: true},
}}

// Schema is the event log table's schema: id STRING, sequence BIGINT, timestamp TIMESTAMP,
// level STRING, event_type STRING, message STRING, origin STRUCT<pipeline_name, update_id,
// flow_name, dataset_name: STRING>, details STRING (JSON), error STRING (spec.md §3).
var Schema = schema.Schema{Fields: []schema.Field{
	{Name: "id", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "sequence", Type: schema.Type{Kind: schema.Long}, Nullable: true},
	{Name: "timestamp", Type: schema.Type{Kind: schema.TimestampKind}, Nullable: true},
	{Name: "level", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "event_type", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "message", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "origin", Type: schema.Type{Kind: schema.StructKind, Struct: &originType}, Nullable: true},
	{Name: "details", Type: schema.Type{Kind: schema.String}, Nullable: true},
	{Name: "error", Type: schema.Type{Kind: schema.String}, Nullable: true},
}}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Row returns the event as a row of Schema.
func (e Event) Row() []any {
	var details any
	if e.Details != nil {
		b, _ := json.Marshal(e.Details)
		details = string(b)
	}
	return []any{
		e.ID, e.Sequence, schema.Timestamp(e.Timestamp.UnixMicro()), e.Level, e.EventType, e.Message,
		[]any{nullable(e.Origin.PipelineName), nullable(e.Origin.UpdateID), nullable(e.Origin.FlowName), nullable(e.Origin.DatasetName)},
		details, nullable(e.Error),
	}
}

// FromRow converts a row of Schema back to an Event. A details value that is not a JSON object
// is kept under the key "raw".
func FromRow(r []any) Event {
	e := Event{ID: str(r[0]), Level: str(r[3]), EventType: str(r[4]), Message: str(r[5]), Error: str(r[8])}
	if n, ok := r[1].(int64); ok {
		e.Sequence = n
	}
	if ts, ok := r[2].(schema.Timestamp); ok {
		e.Timestamp = time.UnixMicro(int64(ts)).UTC()
	}
	if o, ok := r[6].([]any); ok && len(o) == 4 {
		e.Origin = Origin{PipelineName: str(o[0]), UpdateID: str(o[1]), FlowName: str(o[2]), DatasetName: str(o[3])}
	}
	if d, ok := r[7].(string); ok {
		if json.Unmarshal([]byte(d), &e.Details) != nil {
			e.Details = map[string]any{"raw": d}
		}
	}
	return e
}
