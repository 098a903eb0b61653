package eventlog

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"tributary/delta"
)

// Update states that end an update (semantics.md "Updates, flows, modes"): an update whose
// update_progress events include one of them has ended.
const (
	stateCompleted = "COMPLETED"
	stateFailed    = "FAILED"
	stateCanceled  = "CANCELED"
)

// Unfinished is an earlier update of the log's pipeline whose events hold no update_progress
// event with an end state (COMPLETED, FAILED, CANCELED): its process stopped without recording
// one (killed, or the machine went down), since an update that holds the storage lock is the
// only one running.
type Unfinished struct {
	UpdateID string
	// State is the update's last update_progress state (CREATED, ..., RUNNING); "" when it has
	// none.
	State string
}

// endedAppID is the appId of the txn action (Delta PROTOCOL.md, "Transaction Identifiers")
// whose version is the event sequence before which every update of the pipeline named
// pipeline has ended in the log: the Flush that commits the end state of an update that called
// Unfinished records the sequence after its last event.
func endedAppID(pipeline string) string { return "tributary.updates-ended/" + pipeline }

// Unfinished returns the earlier updates of the log's pipeline that have not ended (see the
// type), in the order they began. The caller records an end for each (EmitFor), and the log
// then counts every earlier update as ended: the Flush that commits this update's own end
// state records so in the event log table (a txn action), and the next update's Unfinished reads
// only the data files holding events after it (by their sequence statistics). An event log
// without that record (written before it existed) is read whole, once. After an error (a data
// file that cannot be read) the log records nothing of the kind. Unfinished reads the log as
// Open found it, once: a second call finds nothing.
func (l *Log) Unfinished() ([]Unfinished, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap := l.snap
	l.snap = nil
	if snap == nil {
		l.checked = l.checked || !l.created // no log yet: no update before this one
		return nil, nil
	}
	from, _ := snap.AppTxn(endedAppID(l.origin.PipelineName))
	var files []delta.Add
	for _, f := range snap.Files {
		if maxSequence(f) >= from {
			files = append(files, f)
		}
	}
	type update struct {
		created, last int64 // the sequences of its create_update and last update_progress
		state         string
		ended         bool
	}
	updates := map[string]*update{}
	get := func(id string) *update {
		u := updates[id]
		if u == nil {
			u = &update{created: -1, last: -1}
			updates[id] = u
		}
		return u
	}
	for _, f := range files {
		rows, err := l.table.FileRows(snap.Metadata, f)
		if err != nil {
			return nil, fmt.Errorf("eventlog: %w", err)
		}
		for _, r := range rows {
			seq, _ := r[1].(int64)
			typ := str(r[4])
			if seq < from || (typ != CreateUpdate && typ != UpdateProgress) {
				continue
			}
			e := FromRow(r)
			if e.Origin.PipelineName != l.origin.PipelineName || e.Origin.UpdateID == "" {
				continue
			}
			u := get(e.Origin.UpdateID)
			if typ == CreateUpdate {
				u.created = seq
				continue
			}
			st, _ := e.Details[UpdateProgress].(map[string]any)["state"].(string)
			switch st {
			case stateCompleted, stateFailed, stateCanceled:
				u.ended = true
			}
			if seq > u.last {
				u.last, u.state = seq, st
			}
		}
	}
	l.checked = true
	var ids []string
	for id, u := range updates {
		// An update that began before from has ended; one whose create_update is missing is
		// not an update of this log.
		if !u.ended && u.created >= from {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(updates[a].created, updates[b].created) })
	out := make([]Unfinished, len(ids))
	for i, id := range ids {
		out[i] = Unfinished{UpdateID: id, State: updates[id].state}
	}
	return out, nil
}

// maxSequence is the largest event sequence of the data file f by its statistics; a file
// without that statistic may hold any.
func maxSequence(f delta.Add) int64 {
	st, err := delta.ParseStats(f.Stats, Schema)
	if v, ok := st.Max["sequence"].(int64); ok && err == nil {
		return v
	}
	return math.MaxInt64
}

// EmitFor buffers one event of the update updateID of the log's pipeline, as Emit does for the
// log's own update: an update records with it the end of an earlier one that did not record its
// own (Unfinished).
func (l *Log) EmitFor(updateID, level, eventType, message string, details map[string]any, errText string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sequence++
	o := l.origin
	o.UpdateID = updateID
	l.pending = append(l.pending, Event{
		ID: uuid.NewString(), Sequence: l.sequence, Timestamp: time.Now().UTC(), Level: level,
		EventType: eventType, Message: message, Origin: o, Details: details, Error: errText,
	})
}

// endsUpdate reports whether events hold the end state (COMPLETED, FAILED, CANCELED) of the
// update updateID.
func endsUpdate(events []Event, updateID string) bool {
	for _, e := range events {
		if e.EventType != UpdateProgress || e.Origin.UpdateID != updateID {
			continue
		}
		switch st, _ := e.Details[UpdateProgress].(map[string]any)["state"].(string); st {
		case stateCompleted, stateFailed, stateCanceled:
			return true
		}
	}
	return false
}
