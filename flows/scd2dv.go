package flows

import (
	"fmt"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// historyDeletes is the merge-on-read end of applyHistory (the target has
// delta.enableDeletionVectors, mergeOnRead). Each key the batch changed whose rows are in a data
// file has them all marked deleted there (Delta PROTOCOL.md, "Deletion Vectors"), and all its
// rows (kvs[i].rows: every version, see keyWorker.mor) go to new files, with the rows of the keys
// that have no file yet. A key's rows lie in the one file its state names, so their positions
// come from reading that file's key columns: no data file is rewritten, and the batch's work
// follows the keys it changes and their versions, plus a read of the key columns of the files
// they lie in, not the size of the table.
//
// It returns the deletion vectors' removes and adds and the keys whose rows go to new files
// (positions in kvs, in key order). A key its state places in a file that is not in the snapshot
// or holds no row of it is an error naming the dataset and how to rebuild its state.
func historyDeletes(env *Env, d *spec.Dataset, b *changeBatch, state *histState, kvs []changedKey, g *keyGroups, keyIdx []int, nowMs int64) (dvChange, []int, error) {
	tgtSch := d.Schema
	byPath := map[string]map[int]bool{} // the changed keys (positions in kvs) by their file
	var fresh []int
	for i, kv := range kvs {
		if kv.hk == nil {
			continue
		}
		if f := state.resolve(kv.hk.file); f != "" {
			if !kv.diff {
				continue // its rows stay as they are
			}
			keys := byPath[f]
			if keys == nil {
				keys = map[int]bool{}
				byPath[f] = keys
			}
			keys[i] = true
		}
		fresh = append(fresh, i)
	}
	var files []delta.Add
	for _, f := range b.snap.Files {
		if byPath[f.Path] != nil {
			files = append(files, f)
		}
	}
	if len(files) < len(byPath) {
		return dvChange{}, nil, fmt.Errorf("the CDC state of %s places keys being changed in data files the table does not hold; run %s", d.Name, RefreshHint(env.Pipeline, d.Name))
	}
	keySch := schema.Schema{}
	idx := make([]int, len(keyIdx))
	for j, k := range keyIdx {
		keySch.Fields = append(keySch.Fields, tgtSch.Fields[k])
		idx[j] = j
	}
	positions, err := eachFile(files, func(f delta.Add) ([]uint64, error) {
		rows, at, err := b.target.ReadLiveFile(f, keySch) // without the rows already deleted
		if err != nil {
			return nil, err
		}
		want := byPath[f.Path]
		found := make(map[int]bool, len(want))
		var pos []uint64
		var kb []byte
		for r, row := range rows {
			kb = appendPicked(kb[:0], row, idx)
			if i, ok := g.index[string(kb)]; ok && want[i] {
				pos = append(pos, uint64(at[r]))
				found[i] = true
			}
		}
		if len(found) < len(want) {
			return nil, fmt.Errorf("the CDC state of %s places %d of the keys being changed in data file %s, which holds no row of them; run %s", d.Name, len(want)-len(found), f.Path, RefreshHint(env.Pipeline, d.Name))
		}
		return pos, nil
	})
	if err != nil {
		return dvChange{}, nil, err
	}
	dv, err := markDeleted(env, d, b.target, files, positions, nowMs)
	return dv, fresh, err
}
