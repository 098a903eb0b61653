package flows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/uuid"

	"tributary/delta"
	"tributary/schema"
)

// histState is the CDC state of an SCD type 2 target: per key, every distinct event (one per
// sequence value) and the data file holding the key's versions. Keeping the events, not only the
// versions, is what lets a late event be placed where its sequence belongs, exactly as in-order
// arrival would have placed it (semantics.md "APPLY CHANGES").
type histState struct {
	dir      string
	keySch   schema.Schema
	seqSch   schema.Schema
	dataSch  schema.Schema
	keys     map[string]*histKey
	segments []string
	id       string
	truncate []any // the highest truncate sequence applied (SCD type 1), or nil
}

type histKey struct {
	key    []any
	events []histEvent
	file   string
	// deletedAt is when the key's last event became a delete (ms), for tombstone GC of SCD
	// type 1 targets kept as histories; 0 otherwise.
	deletedAt int64
}

var histCache sync.Map // state dir -> *histState

// segmentSchema: key columns, __seq_<i>_<name>, __delete, the data columns as __v_<name>, __file.
// A segment holds every event of each key it names; a later segment replaces a key's events.
func (s *histState) segmentSchema() schema.Schema {
	out := schema.Schema{}
	out.Fields = append(out.Fields, s.keySch.Fields...)
	for i, f := range s.seqSch.Fields {
		out.Fields = append(out.Fields, schema.Field{Name: fmt.Sprintf("__seq_%d_%s", i, f.Name), Type: f.Type, Nullable: true})
	}
	out.Fields = append(out.Fields, schema.Field{Name: "__delete", Type: schema.Type{Kind: schema.Boolean}, Nullable: true})
	for _, f := range s.dataSch.Fields {
		out.Fields = append(out.Fields, schema.Field{Name: "__v_" + f.Name, Type: f.Type, Nullable: true})
	}
	out.Fields = append(out.Fields,
		schema.Field{Name: "__file", Type: schema.Type{Kind: schema.String}, Nullable: true},
		schema.Field{Name: "__deleted_at", Type: schema.Type{Kind: schema.Long}, Nullable: true})
	return out
}

// gc drops keys whose last event is a delete older than gcMillis (SCD type 1 tombstones).
func (s *histState) gc(nowMillis, gcMillis int64) {
	if gcMillis < 0 {
		return
	}
	for k, hk := range s.keys {
		if n := len(hk.events); n > 0 && hk.events[n-1].delete && hk.deletedAt > 0 && hk.deletedAt+gcMillis < nowMillis {
			delete(s.keys, k)
		}
	}
}

// loadHistState reads the state named by manifest id ("" for a new target). With gcMillis >= 0
// (SCD type 1 only), keys deleted longer than gcMillis ago are forgotten.
func loadHistState(dir string, table *delta.Table, snap *delta.Snapshot, id string, keySch, seqSch, dataSch schema.Schema, nowMillis, gcMillis int64) (*histState, error) {
	if v, ok := histCache.LoadAndDelete(dir); ok && id != "" {
		if c := v.(*histState); c.id == id && c.keySch.Equal(keySch) && c.seqSch.Equal(seqSch) && c.dataSch.Equal(dataSch) {
			c.gc(nowMillis, gcMillis)
			return c, nil
		}
	}
	st := &histState{dir: dir, keySch: keySch, seqSch: seqSch, dataSch: dataSch, keys: map[string]*histKey{}}
	if id == "" {
		if snap.NumRecords() > 0 {
			return nil, fmt.Errorf("the table %s has rows but no APPLY CHANGES state; run a full refresh of %s", table.Dir, filepath.Base(table.Dir))
		}
		return st, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifests", id+".json"))
	if err != nil {
		return nil, fmt.Errorf("reading the CDC state of %s: %w (the state folder %s was damaged; run a full refresh of %s)", table.Dir, err, dir, filepath.Base(table.Dir))
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("CDC state manifest %s: %w", id, err)
	}
	seg := delta.New(dir)
	sch := st.segmentSchema()
	nk, ns, nd := len(keySch.Fields), len(seqSch.Fields), len(dataSch.Fields)
	var kb []byte
	for _, name := range m.Segments {
		rows, err := seg.ReadFile(filepath.ToSlash(filepath.Join("segments", name)), sch)
		if err != nil {
			return nil, fmt.Errorf("reading CDC state segment %s: %w", name, err)
		}
		fresh := map[string]bool{}
		for _, r := range rows {
			kb = schema.AppendKey(kb[:0], r[:nk])
			k := string(kb)
			hk := st.keys[k]
			if !fresh[k] {
				fresh[k] = true
				hk = &histKey{key: r[:nk:nk]}
				st.keys[k] = hk
			}
			e := histEvent{seq: r[nk : nk+ns : nk+ns]}
			e.delete, _ = r[nk+ns].(bool)
			if !e.delete {
				e.row = r[nk+ns+1 : nk+ns+1+nd : nk+ns+1+nd]
			}
			hk.file, _ = r[nk+ns+1+nd].(string)
			hk.deletedAt, _ = r[nk+ns+2+nd].(int64)
			hk.events = append(hk.events, e)
		}
	}
	st.segments, st.id = m.Segments, id
	if st.truncate, err = decodeSeq(m.Truncate, seqSch, id); err != nil {
		return nil, err
	}
	st.gc(nowMillis, gcMillis)
	return st, nil
}

// save writes the keys changed by a batch (every event of each) as a new segment, or all keys
// past compactAfter segments, and a manifest; it returns the manifest id and its segments.
func (s *histState) save(changed map[string]*histKey) (string, []string, error) {
	segs := append([]string(nil), s.segments...)
	src := changed
	if len(segs)+1 > compactAfter {
		src, segs = s.keys, nil
	}
	if len(src) > 0 || len(segs) == 0 {
		var rows [][]any
		for _, hk := range src {
			var file any
			if hk.file != "" {
				file = hk.file
			}
			for _, e := range hk.events {
				r := make([]any, 0, len(hk.key)+len(e.seq)+2+len(s.dataSch.Fields))
				r = append(r, hk.key...)
				r = append(r, e.seq...)
				r = append(r, e.delete)
				if e.delete {
					r = append(r, make([]any, len(s.dataSch.Fields))...)
				} else {
					r = append(r, e.row...)
				}
				r = append(r, file, hk.deletedAt)
				rows = append(rows, r)
			}
		}
		segDir := filepath.Join(s.dir, "segments")
		if err := os.MkdirAll(segDir, 0o755); err != nil {
			return "", nil, err
		}
		add, err := delta.New(segDir).WriteFile(s.segmentSchema(), rows)
		if err != nil {
			return "", nil, fmt.Errorf("writing a CDC state segment: %w", err)
		}
		segs = append(segs, add.Path)
	}
	id := uuid.NewString()
	b, _ := json.Marshal(manifest{Segments: segs, Truncate: encodeSeq(s.truncate, s.seqSch)})
	if err := writeFileAtomic(filepath.Join(s.dir, "manifests", id+".json"), b); err != nil {
		return "", nil, fmt.Errorf("writing the CDC state manifest: %w", err)
	}
	return id, segs, nil
}

func (s *histState) remember(id string, segs []string) {
	s.id, s.segments = id, segs
	histCache.Store(s.dir, s)
}
