package flows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"tributary/delta"
	"tributary/schema"
)

// stateKey is the commitInfo key under which an APPLY CHANGES commit names its CDC state manifest.
const stateKey = "tributaryCdcState"

// cdcEntry is the CDC state of one key of an APPLY CHANGES target.
type cdcEntry struct {
	key       []any // key values, in the order of `keys`
	seq       []any // sequence values, in the order of `sequence_by`
	deleted   bool  // a tombstone: the key's last event was a delete
	deletedAt int64 // commit time of the delete, ms since the epoch
	file      string
}

// cdcState is the CDC state of a target: every key ever seen (live or tombstone).
type cdcState struct {
	stateLog
	keySch   schema.Schema
	seqSch   schema.Schema
	entries  map[string]*cdcEntry
	truncate []any // the highest truncate sequence applied, or nil
}

// stateCache keeps, per state folder, the state as of the last commit this process made, so that
// the next batch of a long-running process does not read the segments again. An entry is taken
// out while a batch uses it and put back only after that batch committed, so a failed batch
// never leaves a half-applied state behind.
var stateCache sync.Map // state dir -> *cdcState

// remember caches s as the state named by manifest id, after the commit that names it.
func (s *cdcState) remember(id string, segments []segment, renames map[string]string) {
	s.id, s.segments, s.renames = id, segments, renames
	stateCache.Store(s.dir, s)
}

// gc drops tombstones older than gcMillis before nowMillis; gcMillis < 0 keeps them all.
func (s *cdcState) gc(nowMillis, gcMillis int64) {
	if gcMillis < 0 {
		return
	}
	for k, e := range s.entries {
		if e.deleted && e.deletedAt+gcMillis < nowMillis {
			delete(s.entries, k)
		}
	}
}

func (s *cdcState) segmentSchema() schema.Schema {
	out := schema.Schema{}
	out.Fields = append(out.Fields, s.keySch.Fields...)
	for i, f := range s.seqSch.Fields {
		out.Fields = append(out.Fields, schema.Field{Name: fmt.Sprintf("__seq_%d_%s", i, f.Name), Type: f.Type, Nullable: true})
	}
	out.Fields = append(out.Fields,
		schema.Field{Name: "__deleted", Type: schema.Type{Kind: schema.Boolean}, Nullable: true},
		schema.Field{Name: "__deleted_at", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		schema.Field{Name: "__file", Type: schema.Type{Kind: schema.String}, Nullable: true},
	)
	return out
}

// sourceKey is the commitInfo key under which an APPLY CHANGES commit records the id
// (metaData.id) of the source table it read, so that a re-created source is noticed.
const sourceKey = "tributarySourceTableId"

// settingsKey is the commitInfo key under which an APPLY CHANGES commit records the settings its
// CDC state depends on (keys, sequence_by, stored_as_scd_type, ignore_null_updates), so that a
// change of them is refused instead of misreading the state (issue: guard rails).
const settingsKey = "tributaryApplyChanges"

// applySettings are the settings recorded under settingsKey.
type applySettings struct {
	Keys              []string `json:"keys"`
	SequenceBy        []string `json:"sequence_by"`
	StoredAsSCDType   int      `json:"stored_as_scd_type"`
	IgnoreNullUpdates bool     `json:"ignore_null_updates"`
	// TrackHistory lists the columns whose changes open an SCD type 2 version (nil for SCD type
	// 1): a new list would make the stored history disagree with the one the list gives.
	TrackHistory []string `json:"track_history,omitempty"`
}

// lastApply finds the newest commit of the target (at or before snap.Version) made by an APPLY
// CHANGES batch and returns the state manifest id, the source table id and the settings it
// names (zero values if none).
func lastApply(table *delta.Table, snap *delta.Snapshot) (stateID, sourceID string, settings *applySettings, err error) {
	for v := snap.Version; v >= 0; v-- {
		c, err := table.ReadCommit(v)
		if err != nil {
			return "", "", nil, err
		}
		if s, ok := c.Info.Extra[stateKey].(string); ok {
			src, _ := c.Info.Extra[sourceKey].(string)
			if raw, ok := c.Info.Extra[settingsKey]; ok {
				b, _ := json.Marshal(raw)
				settings = &applySettings{}
				if err := json.Unmarshal(b, settings); err != nil {
					return "", "", nil, fmt.Errorf("commit %d of %s: %s: %w", v, table.Dir, settingsKey, err)
				}
			}
			return s, src, settings, nil
		}
	}
	return "", "", nil, nil
}

// loadState reads the CDC state for the target snapshot: the manifest id (from lastApply), or an
// empty state when id is "". Tombstones older than gcMillis before nowMillis are dropped (table
// property pipelines.cdc.tombstoneGCThresholdInSeconds).
func loadState(dir string, table *delta.Table, snap *delta.Snapshot, id string, keySch, seqSch schema.Schema, nowMillis, gcMillis int64) (*cdcState, error) {
	st := &cdcState{stateLog: stateLog{dir: dir, lastGC: nowMillis}, keySch: keySch, seqSch: seqSch, entries: map[string]*cdcEntry{}}
	if v, ok := stateCache.LoadAndDelete(dir); ok && id != "" {
		if c := v.(*cdcState); c.id == id && c.keySch.Equal(keySch) && c.seqSch.Equal(seqSch) {
			if nowMillis-c.lastGC > 60_000 {
				c.gc(nowMillis, gcMillis)
				c.lastGC = nowMillis
			}
			return c, nil
		}
	}
	if id == "" {
		if snap.NumRecords() > 0 {
			return nil, fmt.Errorf("the table %s has rows but no APPLY CHANGES state; run `pipeline run SPEC --full-refresh %s`", table.Dir, filepath.Base(table.Dir))
		}
		return st, nil
	}
	m, err := st.readManifest(table, id)
	if err != nil {
		return nil, err
	}
	nk, ns := len(keySch.Fields), len(seqSch.Fields)
	var kb []byte
	err = st.readSegments(m, st.segmentSchema(), func(_ int, rows [][]any) {
		for _, r := range rows {
			e := &cdcEntry{key: r[:nk:nk], seq: r[nk : nk+ns : nk+ns]}
			e.deleted, _ = r[nk+ns].(bool)
			e.deletedAt, _ = r[nk+ns+1].(int64)
			e.file, _ = r[nk+ns+2].(string)
			kb = schema.AppendKey(kb[:0], e.key)
			st.entries[string(kb)] = e
		}
	})
	if err != nil {
		return nil, err
	}
	st.segments, st.renames, st.id = m.Segments, m.Renames, id
	if st.truncate, err = decodeSeq(m.Truncate, seqSch, id); err != nil {
		return nil, err
	}
	st.gc(nowMillis, gcMillis)
	return st, nil
}

// save writes the entries changed by a batch as a new segment (or, when the log has grown past
// its base, every entry as one segment, files resolved and renames dropped) and a manifest; it
// returns the manifest id and the new log for remember.
func (s *cdcState) save(changed map[string]*cdcEntry) (string, []segment, map[string]string, error) {
	src := changed
	full := s.shouldCompact(int64(len(changed)))
	if full {
		src = s.entries
	}
	rows := make([][]any, 0, len(src))
	for _, e := range src {
		if full {
			e.file = s.resolve(e.file)
		}
		r := make([]any, 0, len(e.key)+len(e.seq)+3)
		r = append(r, e.key...)
		r = append(r, e.seq...)
		var file any
		if e.file != "" {
			file = e.file
		}
		r = append(r, e.deleted, e.deletedAt, file)
		rows = append(rows, r)
	}
	return s.write(s.segmentSchema(), rows, full, encodeSeq(s.truncate, s.seqSch))
}

// encodeSeq writes a sequence as JSON values in the jsonl form of spec.md §2 (nil for none).
func encodeSeq(seq []any, s schema.Schema) []json.RawMessage {
	var out []json.RawMessage
	for i, v := range seq {
		out = append(out, json.RawMessage(schema.AppendJSON(nil, s.Fields[i].Type, v)))
	}
	return out
}

// decodeSeq reads what encodeSeq wrote, typed by the sequence_by columns.
func decodeSeq(raw []json.RawMessage, s schema.Schema, id string) ([]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) != len(s.Fields) {
		return nil, fmt.Errorf("CDC state manifest %s: the truncate sequence has %d values for %d sequence_by columns", id, len(raw), len(s.Fields))
	}
	var out []any
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("CDC state manifest %s: %w", id, err)
		}
		tv, err := schema.FromJSON(s.Fields[i].Type, v)
		if err != nil {
			return nil, fmt.Errorf("CDC state manifest %s: truncate sequence: %w", id, err)
		}
		out = append(out, tv)
	}
	return out, nil
}
