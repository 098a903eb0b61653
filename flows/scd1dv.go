package flows

import (
	"fmt"
	"slices"
	"strconv"

	"tributary/delta"
	"tributary/spec"
)

// mergeOnRead says whether APPLY CHANGES into the SCD type 1 target of snapshot snap is
// merge-on-read: the table property delta.enableDeletionVectors is "true", so a batch marks the
// rows it replaces or deletes in deletion vectors (Delta PROTOCOL.md, "Deletion Vectors") and
// writes the new rows to new files, instead of rewriting every data file that holds a changed key
// (copy-on-write). The work of a batch then follows the batch's size, not the table's.
func mergeOnRead(snap *delta.Snapshot) bool {
	return snap.Metadata.DeletionVectors()
}

// applyMergeOnRead is the merge-on-read end of applySCD1: changes were decided against state,
// which knows, for every touched key, the data file, physical position and image of its row
// (stale and ensureFiles made sure). For each data file holding touched rows, the commit removes
// it with its old deletion vector and adds it back with a new one, the old positions and the
// touched ones (a file whose rows are all deleted is only removed); updated and inserted rows go
// to new files. The change data feed's preimages come from the row images.
func applyMergeOnRead(env *Env, d *spec.Dataset, b *changeBatch, m Metrics, state *cdcState, changes []keyChange, nowMs int64) (Metrics, error) {
	p, tgtSch := env.Pipeline, b.dataSch
	live := make(map[string]int, len(b.snap.Files))
	for i, f := range b.snap.Files {
		live[f.Path] = i
	}
	// The rows the batch deletes (by file), the rows it writes, and the change data feed.
	deleted := map[int][]uint64{}
	var rows, cdcRows [][]any
	var cdcTypes []string
	inserts, missing := 0, 0
	for i := range changes {
		ch := &changes[i]
		switch ch.what {
		case updateRow, deleteRow, truncateRow:
			j := ch.entry.slot
			sl := &state.slots[j]
			fi, ok := live[state.files[sl.file]]
			if !ok || sl.pos1 == 0 || sl.imgLen == 0 {
				missing++
				continue
			}
			pre, err := decodeValues(state.imgBytes(j))
			if err != nil || len(pre) != len(tgtSch.Fields) {
				return m, fmt.Errorf("the CDC state of %s holds a damaged row image; run %s", d.Name, RefreshHint(p, d.Name))
			}
			deleted[fi] = append(deleted[fi], sl.pos1-1)
			if ch.what == updateRow {
				cdcRows = append(cdcRows, pre, ch.win.row)
				cdcTypes = append(cdcTypes, delta.ChangeUpdatePreimage, delta.ChangeUpdatePostimage)
				rows = append(rows, ch.win.row)
				m.NumUpsertedRows++
			} else {
				cdcRows = append(cdcRows, pre)
				cdcTypes = append(cdcTypes, delta.ChangeDelete)
				m.NumDeletedRows++
			}
		case insertRow:
			rows = append(rows, ch.win.row)
			cdcRows = append(cdcRows, ch.win.row)
			cdcTypes = append(cdcTypes, delta.ChangeInsert)
			m.NumUpsertedRows++
			inserts++
		}
	}
	if missing > 0 {
		return m, fmt.Errorf("the CDC state of %s names data files that do not hold %d of the keys being changed; run %s", d.Name, missing, RefreshHint(p, d.Name))
	}
	m.NumOutputRows = m.NumUpsertedRows + m.NumDeletedRows

	// The deletion vectors: each file's old positions and the batch's, in snapshot order.
	var files []delta.Add
	var positions [][]uint64
	for fi, f := range b.snap.Files {
		if pos := deleted[fi]; len(pos) > 0 {
			files, positions = append(files, f), append(positions, pos)
		}
	}
	dv, err := markDeleted(env, d, b.target, files, positions, nowMs)
	if err != nil {
		return m, err
	}
	removes, adds := dv.removes, dv.adds

	// Record each change in the state, then write the new rows and record where each lives.
	changed := state.recordChanges(changes, nowMs)
	var kb, img []byte
	cur, at := "", int64(0)
	newAdds, err := writeRows(b.target, tgtSch, rows, func(r []any, path string) {
		if path != cur {
			cur, at = path, 0
		}
		kb = appendPicked(kb[:0], r, b.keyIdx)
		img = appendValues(img[:0], r)
		state.setRow(state.find(kb), state.fileID(path), at, img)
		at++
	})
	if err != nil {
		return m, err
	}
	adds = append(adds, newAdds...)
	err = finishBatch(d, b, &m, batchFiles{cdcRows: cdcRows, cdcTypes: cdcTypes, removes: removes, adds: adds},
		func() (string, []segment, map[string]string, error) { return state.save(changed) }, state.remember,
		map[string]string{
			"numTargetRowsInserted":           strconv.Itoa(inserts),
			"numTargetRowsUpdated":            strconv.FormatInt(m.NumUpsertedRows-int64(inserts), 10),
			"numTargetRowsDeleted":            strconv.FormatInt(m.NumDeletedRows, 10),
			"numTargetFilesAdded":             strconv.Itoa(len(newAdds)),
			"numTargetFilesRemoved":           strconv.Itoa(dv.filesRemoved),
			"numTargetDeletionVectorsAdded":   strconv.Itoa(dv.added),
			"numTargetDeletionVectorsUpdated": strconv.Itoa(dv.updated),
			"numTargetDeletionVectorsRemoved": strconv.Itoa(dv.removed),
		})
	return m, err
}

// dvChange is what marking rows deleted adds to a batch's commit (markDeleted).
type dvChange struct {
	removes []delta.Remove
	adds    []delta.Add // the files added back with their new deletion vectors
	// Deletion vectors added to files that had none, replaced, and dropped with their file;
	// files removed because every row of theirs is deleted.
	added, updated, removed, filesRemoved int
}

// markDeleted marks the rows at the 0-based physical positions pos[i] (any order) of data file
// files[i] deleted (Delta PROTOCOL.md, "Deletion Vectors"): each file is removed with its old
// deletion vector and added back with a new one holding the old positions and the new ones, or
// only removed when every row of it is then deleted. A position already deleted, or named twice,
// is an error naming target d's CDC state and how to rebuild it.
func markDeleted(env *Env, d *spec.Dataset, t *delta.Table, files []delta.Add, pos [][]uint64, nowMs int64) (dvChange, error) {
	var c dvChange
	var kept []delta.Add
	var sets [][]uint64
	for i, f := range files {
		old, err := t.ReadDeletionVector(f.DeletionVector)
		if err != nil {
			return c, err
		}
		merged, err := unionPositions(old, pos[i])
		if err != nil {
			return c, fmt.Errorf("the CDC state of %s names row %d of data file %s, which is already deleted; run %s", d.Name, merged[0], f.Path, RefreshHint(env.Pipeline, d.Name))
		}
		c.removes = append(c.removes, t.RemoveFor(f, nowMs))
		if n, ok := f.NumRecords(); ok && int64(len(merged)) >= n {
			c.filesRemoved++ // every row of the file is deleted: the file goes
			if f.DeletionVector != nil {
				c.removed++
			}
			continue
		}
		if f.DeletionVector != nil {
			c.updated++
		} else {
			c.added++
		}
		sets, kept = append(sets, merged), append(kept, f)
	}
	if len(sets) > 0 {
		dvs, err := t.WriteDeletionVectors(sets)
		if err != nil {
			return c, err
		}
		for k, f := range kept {
			f.DeletionVector, f.DataChange = dvs[k], true // the commit marks the stats' bounds loose
			c.adds = append(c.adds, f)
		}
	}
	return c, nil
}

// unionPositions returns the ascending union of old (ascending) and add (any order). When a
// position of add is in old or twice in add, it returns that position alone and an error.
func unionPositions(old, add []uint64) ([]uint64, error) {
	add = slices.Clone(add)
	slices.Sort(add)
	for k := 1; k < len(add); k++ {
		if add[k] == add[k-1] {
			return []uint64{add[k]}, fmt.Errorf("row %d deleted twice", add[k])
		}
	}
	out := make([]uint64, 0, len(old)+len(add))
	i, j := 0, 0
	for i < len(old) || j < len(add) {
		switch {
		case j == len(add) || (i < len(old) && old[i] < add[j]):
			out = append(out, old[i])
			i++
		case i < len(old) && old[i] == add[j]:
			return []uint64{add[j]}, fmt.Errorf("row %d deleted twice", add[j])
		default:
			out = append(out, add[j])
			j++
		}
	}
	return out, nil
}
