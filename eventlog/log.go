package eventlog

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"tributary/delta"
)

// Log appends events of one update to the event log table. It is safe for concurrent use by the
// flows of an update.
type Log struct {
	table    *delta.Table
	origin   Origin
	mu       sync.Mutex
	pending  []Event
	sequence int64
	created  bool
}

// Open prepares the event log at dir (<storage>/system/events) for an update of the given
// pipeline. The table is created on the first Flush if it does not exist; sequence numbers
// continue after the events already in it.
func Open(dir, pipelineName, updateID string) (*Log, error) {
	l := &Log{table: delta.New(dir), origin: Origin{PipelineName: pipelineName, UpdateID: updateID}}
	snap, err := l.table.Snapshot(-1)
	switch {
	case errors.Is(err, delta.ErrNoTable):
	case err != nil:
		return nil, fmt.Errorf("eventlog: %w", err)
	default:
		l.created = true
		l.sequence = snap.NumRecords()
	}
	return l, nil
}

// Emit buffers one event; ID, Sequence, Timestamp and the pipeline/update origin are filled in.
// flow and dataset name the origin's flow and dataset ("" for update-level events).
func (l *Log) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sequence++
	o := l.origin
	o.FlowName, o.DatasetName = flow, dataset
	l.pending = append(l.pending, Event{
		ID: uuid.NewString(), Sequence: l.sequence, Timestamp: time.Now().UTC(), Level: level,
		EventType: eventType, Message: message, Origin: o, Details: details, Error: errText,
	})
}

// Flush commits the buffered events as one append to the event log table.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return nil
	}
	rows := make([][]any, len(l.pending))
	for i, e := range l.pending {
		rows[i] = e.Row()
	}
	for attempt := 0; ; attempt++ {
		var snap *delta.Snapshot
		if l.created {
			s, err := l.table.Snapshot(-1)
			if err != nil {
				return fmt.Errorf("eventlog: %w", err)
			}
			snap = s
		}
		add, err := l.table.WriteFile(Schema, rows)
		if err != nil {
			return fmt.Errorf("eventlog: %w", err)
		}
		tx := l.table.Begin(snap)
		if snap == nil {
			tx.SetMetadata(delta.Metadata{Name: "events", Description: "Tributary event log", Schema: Schema,
				Configuration: map[string]string{delta.ConfigAutoOptimizeMinFiles: strconv.Itoa(AutoOptimizeMinFiles)}})
		}
		tx.Add(add)
		_, err = tx.Commit("WRITE", map[string]any{"mode": "Append"})
		if err == nil {
			l.created = true
			l.pending = l.pending[:0]
			l.compact()
			return nil
		}
		if errors.Is(err, delta.ErrConflict) && attempt < 3 {
			l.created = true
			continue
		}
		return fmt.Errorf("eventlog: %w", err)
	}
}

// AutoOptimizeMinFiles is the pipelines.autoOptimize.minNumFiles of a new event log: every flush
// appends a small file, so the log is compacted once it holds this many.
const AutoOptimizeMinFiles = 20

// compact runs automatic OPTIMIZE of the event log table (delta.Table.AutoOptimize: on unless the
// table property pipelines.autoOptimize.managed is "false"). Its failure loses no event, so it is
// logged rather than returned.
func (l *Log) compact() {
	if _, err := l.table.AutoOptimize(); err != nil {
		slog.Warn("eventlog: automatic OPTIMIZE of the event log failed", "table", l.table.Dir, "err", err)
	}
}

// Read returns every event of the log at dir, ordered by sequence. A missing log is no events.
func Read(dir string) ([]Event, error) {
	t := delta.New(dir)
	snap, err := t.Snapshot(-1)
	if errors.Is(err, delta.ErrNoTable) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	rows, err := t.Rows(snap)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = FromRow(r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Sequence < out[j].Sequence })
	return out, nil
}
