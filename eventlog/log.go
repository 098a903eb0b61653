package eventlog

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	now      func() time.Time // the clock of housekeeping (tests move it on)
	// snap is the event log as Open found it, read once by Unfinished (nil after, or when there
	// was no log); checked: Unfinished was called, so the Flush of this update's end state
	// records that every update of the pipeline so far has ended.
	snap    *delta.Snapshot
	checked bool
}

// Open prepares the event log at dir (<storage>/system/events) for an update of the given
// pipeline. The table is created on the first Flush if it does not exist; sequence numbers
// continue after the events already in it.
func Open(dir, pipelineName, updateID string) (*Log, error) {
	l := &Log{table: delta.New(dir), origin: Origin{PipelineName: pipelineName, UpdateID: updateID}, now: time.Now}
	snap, err := l.table.Snapshot(-1)
	switch {
	case errors.Is(err, delta.ErrNoTable):
	case err != nil:
		return nil, fmt.Errorf("eventlog: %w", err)
	default:
		l.created, l.snap = true, snap
		l.sequence = snap.NumRecords()
		if err := l.keepBounded(snap); err != nil {
			return nil, fmt.Errorf("eventlog: %w", err)
		}
	}
	return l, nil
}

// Housekeeping is the configuration that keeps the event log's folder bounded however many
// updates run (every update commits several times): a checkpoint every 100 commits rather than
// 10, removed files vacuumed a day after their removal, commits and checkpoints deleted after 7
// days (Flush: delta.Table.Vacuum and delta.Table.CleanupExpiredLogs). Time travel on the event
// log reaches back about a day; its latest snapshot holds every event.
var Housekeeping = map[string]string{
	delta.ConfigCheckpointInterval:   "100",
	delta.ConfigDeletedFileRetention: "interval 1 days",
	delta.ConfigLogRetention:         "interval 7 days",
}

// keepBounded gives an event log created before Housekeeping existed the properties of it that it
// lacks (a SET TBLPROPERTIES commit); values already set are kept.
func (l *Log) keepBounded(snap *delta.Snapshot) error {
	m := snap.Metadata
	props := map[string]string{}
	for k, v := range Housekeeping {
		if _, ok := m.Configuration[k]; !ok {
			props[k] = v
		}
	}
	if len(props) == 0 {
		return nil
	}
	m.Configuration = maps.Clone(m.Configuration)
	maps.Copy(m.Configuration, props)
	tx := l.table.Begin(snap)
	tx.SetMetadata(m)
	_, err := tx.Commit("SET TBLPROPERTIES", map[string]any{"properties": props})
	return err
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

// Flush commits the buffered events as one append to the event log table. When they hold the
// end state of the log's update and Unfinished was called, the same commit records that every
// update of the pipeline so far has ended (see Unfinished).
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
	ended := l.checked && endsUpdate(l.pending, l.origin.UpdateID)
	for attempt := 0; ; attempt++ {
		var snap *delta.Snapshot
		before := int64(-1)
		if l.created {
			s, err := l.table.Snapshot(-1)
			if err != nil {
				return fmt.Errorf("eventlog: %w", err)
			}
			snap, before = s, s.Version
		}
		add, err := l.table.WriteFile(Schema, rows)
		if err != nil {
			return fmt.Errorf("eventlog: %w", err)
		}
		tx := l.table.Begin(snap)
		if snap == nil {
			conf := maps.Clone(Housekeeping)
			conf[delta.ConfigAutoOptimizeMinFiles] = strconv.Itoa(AutoOptimizeMinFiles)
			tx.SetMetadata(delta.Metadata{Name: "events", Description: "Tributary event log", Schema: Schema, Configuration: conf})
		}
		tx.Add(add)
		if ended {
			tx.SetAppTxn(endedAppID(l.origin.PipelineName), l.sequence+1)
		}
		v, err := tx.Commit("WRITE", map[string]any{"mode": "Append"})
		if err == nil {
			l.created = true
			l.pending = l.pending[:0]
			if c := l.compact(); c > v {
				v = c
			}
			l.housekeep(before, v)
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
func (l *Log) compact() int64 {
	res, err := l.table.AutoOptimize()
	if err != nil {
		slog.Warn("eventlog: automatic OPTIMIZE of the event log failed", "table", l.table.Dir, "err", err)
		return -1
	}
	return res.Version
}

// housekeep runs after a flush whose commits (versions after before, up to last) include one
// that wrote a checkpoint (a multiple of delta.checkpointInterval): it vacuums the event log
// (files removed longer ago than its delta.deletedFileRetentionDuration) and deletes the log
// files its delta.logRetentionDuration expired (delta.Table.CleanupExpiredLogs). Neither touches
// an event of the latest snapshot; a failure is logged, and the next checkpoint tries again.
func (l *Log) housekeep(before, last int64) {
	snap, err := l.table.Snapshot(last)
	if err != nil {
		slog.Warn("eventlog: reading the event log for its housekeeping failed", "table", l.table.Dir, "err", err)
		return
	}
	if n := snap.Metadata.CheckpointInterval(); last/n == max(before, 0)/n && before >= 0 {
		return
	}
	if _, err := l.table.Vacuum(delta.VacuumOptions{Retain: -1, KeepFromVersion: -1, Now: l.now()}); err != nil {
		slog.Warn("eventlog: vacuuming the event log failed", "table", l.table.Dir, "err", err)
	}
	if _, err := l.table.CleanupExpiredLogs(l.now(), nil); err != nil {
		slog.Warn("eventlog: deleting expired event log commits failed", "table", l.table.Dir, "err", err)
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
