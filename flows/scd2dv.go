package flows

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// historyDeletes is the merge-on-read end of applyHistory (the target has
// delta.enableDeletionVectors, mergeOnRead): of each key the batch changed, the rows its keep
// does not keep (kvs[i].gone of them: the versions from the first one the batch changed on) are
// marked deleted where they lie (Delta PROTOCOL.md, "Deletion Vectors"), and its new rows
// (kvs[i].rows) go to new files, with the rows of the keys that have no file yet. No data file
// is rewritten, and the versions before the first changed one stay where they are, so a batch
// writes about as many rows as it changes versions, whatever the size of the table.
//
// A key's rows may then lie in several files: its state names the one written last, which holds
// its last version (the open one, which a batch of later events closes). The rows' positions
// come from reading the key columns and __START_AT of the files the state names for the changed
// keys; when those do not hold all of the rows to delete (a late event changed versions that an
// earlier batch wrote, or OPTIMIZE moved rows), the other files of the snapshot are read too.
//
// It returns the deletion vectors' removes and adds and the keys whose rows go to new files
// (positions in kvs, in key order). When the table does not hold exactly the rows to delete of
// each key, the state and the table disagree: an error names the dataset and how to rebuild.
func historyDeletes(env *Env, d *spec.Dataset, b *changeBatch, state *histState, kvs []changedKey, g *keyGroups, keyIdx []int, startIdx int, scd2 bool, nowMs int64) (dvChange, []int, error) {
	tgtSch := d.Schema
	var fresh []int
	first := map[string]bool{} // the files the state names for keys with rows to delete
	need := 0                  // rows to delete, over all keys
	for i, kv := range kvs {
		if kv.hk == nil || (!kv.diff && kv.hk.file != "") {
			continue // unchanged: its rows stay as they are
		}
		fresh = append(fresh, i)
		if kv.diff && kv.gone > 0 {
			need += kv.gone
			if f := state.resolve(kv.hk.file); f != "" {
				first[f] = true
			}
		}
	}
	if need == 0 {
		return dvChange{}, fresh, nil
	}
	// Read the key columns (and __START_AT) only; key columns first, as appendPicked expects.
	readSch := schema.Schema{}
	idx := make([]int, len(keyIdx))
	for j, k := range keyIdx {
		readSch.Fields = append(readSch.Fields, tgtSch.Fields[k])
		idx[j] = j
	}
	at := -1 // __START_AT in the rows read
	if scd2 {
		at = len(readSch.Fields)
		readSch.Fields = append(readSch.Fields, tgtSch.Fields[startIdx])
	}
	found := make([]atomic.Int32, len(kvs)) // rows to delete found, per key
	var total atomic.Int64
	// find returns the position in kvs of the key kb (encoded as appendPicked does) when the
	// batch deletes rows of it (which ones: its keep says). A key's rows lie next to each other
	// in a file, so it is looked up once per run of them (l holds the last one).
	type lookup struct {
		last []byte
		i    int
		ok   bool
	}
	find := func(l *lookup, kb []byte, first bool) (int, bool) {
		if first || !bytes.Equal(kb, l.last) {
			l.i, l.ok = g.index[string(kb)]
			l.last = append(l.last[:0], kb...)
			if l.ok {
				kv := &kvs[l.i]
				l.ok = kv.hk != nil && kv.diff && kv.gone > 0
			}
		}
		return l.i, l.ok
	}
	// Keys and __START_AT of BIGINT are read typed (delta.ReadLongColumns), without boxing.
	var longNames []string
	for _, fd := range readSch.Fields {
		if fd.Type.Kind != schema.Long {
			longNames = nil
			break
		}
		longNames = append(longNames, fd.Name)
	}
	// longKeys is, for a key of one BIGINT column, the keys with rows to delete by value: their
	// positions in kvs and which of their rows stay. An int64 map finds them faster than their
	// encodings in g.index, and holding the keep spares a visit to kvs per row. It is nil when a
	// keep's __START_AT is not a BIGINT.
	type longKey struct {
		i      int
		before int64 // rows whose __START_AT is before stay, when keep is set
		keep   bool
	}
	longKeys := sync.OnceValue(func() map[int64]longKey {
		out := map[int64]longKey{}
		for k, i := range g.index {
			kv := &kvs[i]
			if kv.hk == nil || !kv.diff || kv.gone == 0 {
				continue
			}
			key, err := decodeValues([]byte(k))
			if err != nil || len(key) != 1 {
				return nil
			}
			x, ok := key[0].(int64)
			if !ok || kv.keep.all {
				return nil
			}
			lk := longKey{i: i}
			if kv.keep.before != nil {
				if lk.before, lk.keep = kv.keep.before.(int64); !lk.keep {
					return nil
				}
			}
			out[x] = lk
		}
		return out
	})
	scan := func(files []delta.Add) ([][]uint64, error) {
		return eachFile(files, func(f delta.Add) ([]uint64, error) {
			var pos []uint64
			var kb []byte
			var l lookup
			if longNames != nil {
				cols, rowPos, ok, err := b.target.ReadLongColumns(f, longNames)
				if err != nil {
					return nil, err
				}
				if ok {
					var byLong map[int64]longKey
					if len(idx) == 1 && at >= 0 {
						byLong = longKeys()
					}
					for r, p := range rowPos {
						if byLong != nil {
							if lk, ok := byLong[cols[0][r]]; ok && !(lk.keep && cols[at][r] < lk.before) {
								pos = append(pos, uint64(p))
								found[lk.i].Add(1)
							}
							continue
						}
						kb = kb[:0]
						for j := range idx {
							kb = appendLong(kb, cols[j][r])
						}
						i, ok := find(&l, kb, r == 0)
						if ok && !(at < 0 && kvs[i].keep.all || at >= 0 && kvs[i].keep.keepsLong(cols[at][r])) {
							pos = append(pos, uint64(p))
							found[i].Add(1)
						}
					}
					total.Add(int64(len(pos)))
					return pos, nil
				}
			}
			rows, rowPos, err := b.target.ReadLiveFile(f, readSch) // without the rows already deleted
			if err != nil {
				return nil, err
			}
			for r, row := range rows {
				kb = appendPicked(kb[:0], row, idx)
				if i, ok := find(&l, kb, r == 0); ok && !kvs[i].keep.keeps(row, at) {
					pos = append(pos, uint64(rowPos[r]))
					found[i].Add(1)
				}
			}
			total.Add(int64(len(pos)))
			return pos, nil
		})
	}
	var files, rest []delta.Add
	for _, f := range b.snap.Files {
		if first[f.Path] {
			files = append(files, f)
		} else {
			rest = append(rest, f)
		}
	}
	positions, err := scan(files)
	if err != nil {
		return dvChange{}, nil, err
	}
	if total.Load() < int64(need) && len(rest) > 0 {
		more, err := scan(rest)
		if err != nil {
			return dvChange{}, nil, err
		}
		files, positions = append(files, rest...), append(positions, more...)
	}
	bad := 0
	for i := range kvs {
		if int(found[i].Load()) != kvs[i].gone && kvs[i].hk != nil && kvs[i].diff {
			bad++
		}
	}
	if bad > 0 {
		return dvChange{}, nil, fmt.Errorf("the CDC state of %s does not match its table: %d of the keys being changed do not have the rows their state names; run %s", d.Name, bad, RefreshHint(env.Pipeline, d.Name))
	}
	// Only the files with rows to delete change.
	var touched []delta.Add
	var sets [][]uint64
	for k, f := range files {
		if len(positions[k]) > 0 {
			touched, sets = append(touched, f), append(sets, positions[k])
		}
	}
	dv, err := markDeleted(env, d, b.target, touched, sets, nowMs)
	return dv, fresh, err
}
