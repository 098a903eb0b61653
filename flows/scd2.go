package flows

import (
	"strconv"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// trackedColumns returns the positions (in the data schema) of the columns whose changes open a
// new SCD type 2 version: track_history_column_list, or all but track_history_except_column_list,
// or every non-key column.
func trackedColumns(d *spec.Dataset, data schema.Schema) []int {
	ac := d.ApplyChanges
	isKey := map[string]bool{}
	for _, k := range ac.Keys {
		isKey[k] = true
	}
	only := map[string]bool{}
	for _, c := range ac.TrackHistoryColumnList {
		only[c] = true
	}
	except := map[string]bool{}
	for _, c := range ac.TrackHistoryExceptColumnList {
		except[c] = true
	}
	var out []int
	for i, f := range data.Fields {
		switch {
		case isKey[f.Name], except[f.Name]:
		case len(only) > 0 && !only[f.Name]:
		default:
			out = append(out, i)
		}
	}
	return out
}

// seqValue is the value of __START_AT / __END_AT for a sequence: the value itself for one
// sequence_by column, a struct of them for several.
func seqValue(seq []any) any {
	switch {
	case seq == nil:
		return nil
	case len(seq) == 1:
		return seq[0]
	}
	return append([]any(nil), seq...)
}

// historyMode says how an APPLY CHANGES target kept as per-key histories turns a history into
// rows: SCD type 2 (a row per version, with __START_AT / __END_AT) or SCD type 1 with
// ignore_null_updates (the key's one row, or none).
type historyMode struct {
	scd2        bool
	tracked     []int // SCD type 2: the tracked data columns
	ignoreNulls bool
}

// fold computes a key's rows from its history, ignoring events at or below trunc (SCD type 1
// truncates). SCD type 1 rows carry a nil start, so that versionDiff matches them by key.
func (h historyMode) fold(events []histEvent, trunc []any) []version {
	if trunc != nil {
		live := events[:0:0]
		for _, e := range events {
			if schema.CompareTuple(e.seq, trunc) > 0 {
				live = append(live, e)
			}
		}
		events = live
	}
	if h.scd2 {
		return foldHistory(events, h.tracked, h.ignoreNulls)
	}
	var row []any
	for _, e := range events {
		switch {
		case e.delete:
			row = nil // a re-insert after a delete starts from nothing
		case row == nil || !h.ignoreNulls:
			row = append([]any(nil), e.row...)
		default:
			for i, v := range e.row {
				if v != nil {
					row[i] = v
				}
			}
		}
	}
	if row == nil {
		return nil
	}
	return []version{{row: row}}
}

// applySCD2 applies a batch to an SCD type 2 target.
func applySCD2(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	return applyHistory(env, d, b, m, historyMode{scd2: true, tracked: trackedColumns(d, b.dataSch), ignoreNulls: d.ApplyChanges.IgnoreNullUpdates})
}

// applySCD1History applies a batch to an SCD type 1 target with ignore_null_updates: a NULL in an
// update keeps the stored value, and by the guiding rule a late partial update still sets the
// columns whose value came from an older event, so the key's whole history is kept.
func applySCD1History(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	return applyHistory(env, d, b, m, historyMode{ignoreNulls: true})
}

// applyHistory applies a batch to a target kept as per-key histories. Each touched key's events
// are merged into its stored history and its rows recomputed from the whole history, so late
// events land where their sequence belongs; only keys whose rows changed are rewritten, in the
// files that hold them.
func applyHistory(env *Env, d *spec.Dataset, b *changeBatch, m Metrics, mode historyMode) (Metrics, error) {
	p := env.Pipeline
	ac := d.ApplyChanges
	tgtSch := d.Schema
	nowMs := env.now().UnixMilli()
	gc := int64(-1)
	if !mode.scd2 {
		gc = tombstoneGC(d)
	}
	state, err := loadHistState(StateDir(p.Storage, d.Name), b.target, b.snap, b.stateID, b.keySch, b.seqSch, b.dataSch, nowMs, gc)
	if err != nil {
		return m, err
	}
	toRow := func(v version) []any {
		if !mode.scd2 {
			return v.row
		}
		r := make([]any, 0, len(v.row)+2)
		r = append(r, v.row...)
		return append(r, seqValue(v.start), seqValue(v.end))
	}
	oldTrunc, trunc := state.truncate, state.truncate
	newTrunc := !mode.scd2 && b.truncate != nil && (trunc == nil || schema.CompareTuple(b.truncate, trunc) > 0)
	if newTrunc {
		trunc = b.truncate
	}

	// Group the batch by key, merge into the histories, recompute rows.
	byKey := map[string][]*event{}
	var order []string
	var kb []byte
	for i := range b.events {
		ev := &b.events[i]
		kb = appendValues(kb[:0], ev.key)
		if _, ok := byKey[string(kb)]; !ok {
			order = append(order, string(kb))
		}
		byKey[string(kb)] = append(byKey[string(kb)], ev)
	}
	if newTrunc {
		for k := range state.keys {
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
		}
	}
	type keyVersions struct {
		hk       *histKey
		old, cur []version
		isNew    bool
		diff     bool // the key's rows changed
	}
	changedKeys := map[string]*keyVersions{}
	byFile := map[string]bool{}
	var cdcRows [][]any
	var cdcTypes []string
	for _, k := range order {
		hk := state.keys[k]
		isNew := hk == nil
		if isNew {
			hk = &histKey{}
		}
		stored := state.eventsOf(hk)
		old := mode.fold(stored, oldTrunc)
		merged, changed := stored, false
		if evs := byKey[k]; len(evs) > 0 {
			var ties int64
			merged, changed, ties = mergeHistory(append([]histEvent(nil), stored...), evs)
			m.Ties += ties
		}
		if !changed && !newTrunc {
			continue
		}
		wasDeleted := hk.lastDelete
		hk.setEvents(merged)
		if n := len(merged); n > 0 && merged[n-1].delete {
			if !wasDeleted || hk.deletedAt == 0 {
				hk.deletedAt = nowMs
			}
		} else {
			hk.deletedAt = 0
		}
		cur := mode.fold(merged, trunc)
		rows, types, ups, dels := versionDiff(old, cur, toRow)
		state.keys[k] = hk
		changedKeys[k] = &keyVersions{hk: hk, old: old, cur: cur, isNew: isNew, diff: len(rows) > 0}
		if len(rows) == 0 {
			continue
		}
		cdcRows = append(cdcRows, rows...)
		cdcTypes = append(cdcTypes, types...)
		m.NumUpsertedRows += ups
		m.NumDeletedRows += dels
		if f := state.resolve(hk.file); f != "" {
			byFile[f] = true
		}
	}
	reportTies(env, d, m.Ties)
	m.NumOutputRows = m.NumUpsertedRows + m.NumDeletedRows
	state.truncate = trunc

	// Copy-on-write: each file holding keys whose rows changed is rewritten into one new file
	// with those keys' new rows (the state records the rename); keys without a file yet go to
	// new files.
	var removes []delta.Remove
	var adds []delta.Add
	keyIdx := indexes(tgtSch, ac.Keys)
	live := make(map[string]bool, len(b.snap.Files))
	for _, f := range b.snap.Files {
		live[f.Path] = true
	}
	for f := range byFile {
		if live[f] {
			continue
		}
		// The table was rewritten by an operation that does not keep the state (OPTIMIZE):
		// rebuild the key-to-file index from the snapshot, then place the changed keys again.
		if err := state.rebuildIndex(b.target, b.snap, tgtSch, keyIdx); err != nil {
			return m, err
		}
		byFile = map[string]bool{}
		for _, kv := range changedKeys {
			if f := state.resolve(kv.hk.file); f != "" && kv.diff {
				byFile[f] = true
			}
		}
		break
	}
	// The changed keys' rows, by the file that holds the key ("" for none yet), in key order.
	newRows := map[string][][]any{}
	for _, k := range order {
		if kv := changedKeys[k]; kv != nil {
			f := state.resolve(kv.hk.file)
			for _, v := range kv.cur {
				newRows[f] = append(newRows[f], toRow(v))
			}
		}
	}
	// Rewrite the files on several goroutines; changedKeys and newRows are only read there.
	var files []delta.Add
	for _, f := range b.snap.Files {
		if byFile[f.Path] {
			files = append(files, f)
		}
	}
	done, err := eachFile(files, func(f delta.Add) (replacement, error) {
		frows, _, err := b.target.ReadLiveFile(f, tgtSch) // without the rows a deletion vector deletes
		if err != nil {
			return replacement{}, err
		}
		out := frows[:0:0]
		var kb []byte
		for _, r := range frows {
			kb = appendPicked(kb[:0], r, keyIdx)
			if _, ok := changedKeys[string(kb)]; ok {
				continue // replaced below
			}
			out = append(out, r)
		}
		return writeReplacement(b.target, tgtSch, f, append(out, newRows[f.Path]...), nowMs)
	})
	if err != nil {
		return m, err
	}
	for i, r := range done {
		state.rename(files[i].Path, r.path)
		removes, adds = append(removes, r.remove), append(adds, r.adds...)
	}
	fresh := newRows[""]
	changedHist := map[string]*histKey{}
	for k, kv := range changedKeys {
		changedHist[k] = kv.hk
	}
	freshAdds, err := writeRows(b.target, tgtSch, fresh, func(r []any, path string) {
		kb = appendPicked(kb[:0], r, keyIdx)
		if hk := state.keys[string(kb)]; hk != nil {
			hk.file = path
		}
	})
	if err != nil {
		return m, err
	}
	adds = append(adds, freshAdds...)
	for _, kv := range changedKeys {
		if len(kv.cur) == 0 {
			kv.hk.file = ""
		}
	}
	err = finishBatch(d, b, &m, batchFiles{cdcRows: cdcRows, cdcTypes: cdcTypes, removes: removes, adds: adds},
		func() (string, []segment, map[string]string, error) { return state.save(changedHist) }, state.remember,
		map[string]string{
			"numTargetRowsUpserted": strconv.FormatInt(m.NumUpsertedRows, 10),
			"numTargetRowsDeleted":  strconv.FormatInt(m.NumDeletedRows, 10),
		})
	return m, err
}
