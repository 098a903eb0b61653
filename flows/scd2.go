package flows

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

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
	types       []schema.Type // the data columns' types (ignoreNulls keeps NULL struct fields)
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
		return foldHistory(events, h.tracked, h.ignoreNulls, h.types)
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
				row[i] = keepNull(row[i], v, columnType(h.types, i))
			}
		}
	}
	if row == nil {
		return nil
	}
	return []version{{row: row}}
}

// versions returns a key's versions before and after a batch changed its history from stored to
// merged (the two hold the same events before position first; SCD type 1 ignores first and
// folds both whole, with the truncates oldTrunc and trunc). cur are all the versions after;
// the first common of them are versions before as well, unchanged; old are the versions before
// that follow those. Both are built in the memory of oldBuf and curBuf when it is large enough.
func (h historyMode) versions(stored, merged []histEvent, first int, oldTrunc, trunc []any, oldBuf, curBuf []version) (old, cur []version, common int) {
	if !h.scd2 {
		return h.fold(stored, oldTrunc), h.fold(merged, trunc), 0
	}
	// The events before first fold the same way in both histories: fold them once. Of their
	// versions, the closed ones stay as they are; the open one (the last, when the last of
	// those events is an upsert) may still be closed or rewritten by what follows.
	if first < 0 {
		first = len(merged) // unchanged
	}
	cur = foldOnto(curBuf[:0], false, merged[:first], h.tracked, h.ignoreNulls, h.types)
	open := first > 0 && !merged[first-1].delete
	common = len(cur)
	old = oldBuf[:0]
	if open {
		common--
		old = append(old, cur[common])
	}
	old = foldOnto(old, open, stored[first:], h.tracked, h.ignoreNulls, h.types)
	cur = foldOnto(cur, open, merged[first:], h.tracked, h.ignoreNulls, h.types)
	return old, cur, common
}

// applySCD2 applies a batch to an SCD type 2 target.
func applySCD2(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	return applyHistory(env, d, b, m, historyMode{scd2: true, tracked: cheapFirst(trackedColumns(d, b.dataSch), b.dataSch), ignoreNulls: d.ApplyChanges.IgnoreNullUpdates, types: fieldTypes(b.dataSch)})
}

// applySCD1History applies a batch to an SCD type 1 target with ignore_null_updates: a NULL in an
// update keeps the stored value, and by the guiding rule a late partial update still sets the
// columns whose value came from an older event, so the key's whole history is kept.
func applySCD1History(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	return applyHistory(env, d, b, m, historyMode{ignoreNulls: true, types: fieldTypes(b.dataSch)})
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
	// Merge-on-read (the target has delta.enableDeletionVectors): the rows of a changed key that
	// keep does not keep are marked deleted where they are, and its new rows written to new
	// files (historyDeletes), so that the batch rewrites no data file.
	mor := mergeOnRead(b.snap)
	var state *histState
	var err error
	if pre := b.histPre; pre != nil {
		// Loaded while the batch was read (readChangeBatch), at the time it took.
		<-pre.done
		state, err, nowMs = pre.state, pre.err, pre.nowMs
		b.histPre = nil
	} else {
		state, err = loadHistState(StateDir(p.Storage, d.Name), b.target, b.snap, b.stateID, b.keySch, b.seqSch, b.dataSch, nowMs, historyGC(d))
	}
	if err != nil {
		return m, err
	}
	// SCD type 2 rows are carved from shared slabs: a batch makes a row per version of every
	// key it changes, and one allocation per row would make most of its garbage.
	slab := rowSlab{width: len(tgtSch.Fields), vals: newValueSlab()}
	toRow := func(v version) []any { return versionRow(&slab, mode, v) }
	oldTrunc, trunc := state.truncate, state.truncate
	newTrunc := !mode.scd2 && b.truncate != nil && (trunc == nil || schema.CompareTuple(b.truncate, trunc) > 0)
	if newTrunc {
		trunc = b.truncate
	}

	live := make(map[string]bool, len(b.snap.Files))
	for _, f := range b.snap.Files {
		live[f.Path] = true
	}
	var g *keyGroups
	var kvs []changedKey
	var ties tieCount
	var changedList []string
	var changedHKs []*histKey // changedList's histKeys, when known (nil: save looks them up)
	byFile := map[string]bool{}
	var cdcRows [][]any
	var cdcTypes []string
	var inserted [][][]any
	var freshInserts int64
	if b.hist != nil && (len(state.keys) > 0 || newTrunc) {
		// Folded into columns for a target without history, which has some after all (not
		// the case readChangeBatch chose it for): the general fold takes the batch.
		b.parts, b.hist = [][]event{b.hist.events()}, nil
	}
	if b.hist != nil {
		// The target's first batch, in columns: every key is new (histColumns.fold).
		var stop <-chan struct{}
		if b.ctx != nil {
			stop = b.ctx.Done()
		}
		fk := b.hist.fold(mode, nowMs, stop)
		b.hist = nil
		if fk.panicked != nil {
			panic(fk.panicked)
		}
		if b.ctx != nil && b.ctx.Err() != nil {
			return m, b.ctx.Err()
		}
		g, kvs, ties, freshInserts = &keyGroups{index: map[string]int{}}, fk.kvs, fk.ties, fk.ups
		changedList = slices.Grow(changedList, len(fk.keys))
		changedHKs = make([]*histKey, 0, len(fk.keys))
		state.fresh = true
		for _, nk := range fk.keys {
			changedList, changedHKs = append(changedList, nk.k), append(changedHKs, nk.hk)
		}
		// The state's save takes the keys from changedHKs; nothing else looks them up
		// (histState.unindexed).
		state.unindexed = len(fk.keys)
		m.NumUpsertedRows += fk.ups
	} else {
		// Group the batch by key (keys in order of first arrival, each key's events in arrival
		// order), merge into the histories, recompute rows.
		g = groupByKey(b.eventParts()...)
		order := g.keys
		if newTrunc {
			for k := range state.keys {
				if _, ok := g.index[k]; !ok {
					g.index[k] = len(order)
					order = append(order, k)
				}
			}
		}
		kvs = make([]changedKey, len(order))
		// The keys are folded in contiguous ranges, on a goroutine each when the batch has many
		// (keyRanges), each range by a keyWorker of its own: the workers share only what they read
		// (the state's keys, g, live) and kvs, each its own positions. Their change rows, changed
		// keys and new keys are joined in range order, so that the result is the serial one.
		ranges := keyRanges(g, len(order))
		workers := make([]*keyWorker, len(ranges))
		var wg sync.WaitGroup
		for w, r := range ranges {
			kw := &keyWorker{mode: mode, g: g, order: order, live: live, kvs: kvs, nowMs: nowMs, oldTrunc: oldTrunc, trunc: trunc, newTrunc: newTrunc}
			if b.ctx != nil {
				kw.stop = b.ctx.Done()
			}
			kw.state = *state
			kw.state.dec = nil // each worker decodes into memory of its own
			kw.slab = rowSlab{width: len(tgtSch.Fields), vals: newValueSlab()}
			// About a change row per event (an insert or a closed version and its successor): room
			// for as many as the range has events spares most of the growing.
			// The first range's arrays have room for all the ranges' rows, which are joined there.
			n := g.start[min(r[1], g.nBatch)] - g.start[min(r[0], g.nBatch)]
			if w == 0 {
				n = g.start[g.nBatch]
			}
			kw.cdcRows, kw.cdcTypes = make([][]any, 0, n), make([]string, 0, n)
			workers[w] = kw
			if len(ranges) == 1 {
				kw.run(r[0], r[1])
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				kw.run(r[0], r[1])
			}()
		}
		wg.Wait()
		for _, kw := range workers {
			if kw.panicked != nil {
				panic(kw.panicked)
			}
		}
		if b.ctx != nil && b.ctx.Err() != nil {
			// Stopped while folding: the workers left their ranges unfinished, and nothing is
			// written or committed (the next batch folds from the last commit's state).
			return m, b.ctx.Err()
		}
		for _, kw := range workers {
			if cdcRows == nil {
				cdcRows, cdcTypes, changedList = kw.cdcRows, kw.cdcTypes, kw.changedList
			} else {
				cdcRows, cdcTypes = append(cdcRows, kw.cdcRows...), append(cdcTypes, kw.cdcTypes...)
				changedList = append(changedList, kw.changedList...)
			}
			inserted = append(inserted, kw.inserted...)
			for f := range kw.byFile {
				byFile[f] = true
			}
			for _, nk := range kw.added {
				state.keys[nk.k] = nk.hk
			}
			ties.merge(kw.ties)
			m.NumUpsertedRows += kw.ups
			m.NumDeletedRows += kw.dels
			g.sink += kw.sink
		}
		// The events were grouped by key and are now in the histories: let the batch's event
		// structs go.
		g.byKey, b.events, b.parts = nil, nil, nil
	}
	m.Ties += ties.n
	reportTies(env, d, b, ties)
	m.NumOutputRows = m.NumUpsertedRows + m.NumDeletedRows
	state.truncate = trunc
	// Keys without a file yet go to new files; the changed keys of the files that hold them
	// are rewritten with them (copy-on-write, rewriteHistoryFiles) or marked deleted there and
	// written to new files too (merge-on-read, historyDeletes).
	keyIdx := indexes(tgtSch, ac.Keys)
	startIdx := len(b.dataSch.Fields) // __START_AT
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
		for _, kv := range kvs {
			if kv.hk == nil {
				continue
			}
			if f := state.resolve(kv.hk.file); f != "" && kv.diff {
				byFile[f] = true
			}
		}
		break
	}
	var removes []delta.Remove
	var adds []delta.Add
	var fresh []int // the keys whose rows go to new files (their positions in kvs, in key order)
	var dv dvChange
	if mor {
		if dv, fresh, err = historyDeletes(env, d, b, state, kvs, g, keyIdx, startIdx, mode.scd2, nowMs); err != nil {
			return m, err
		}
		removes, adds = dv.removes, dv.adds
	} else if removes, adds, fresh, err = rewriteHistoryFiles(env, d, b, tgtSch, state, mode, kvs, g, byFile, keyIdx, startIdx, trunc, toRow, nowMs); err != nil {
		return m, err
	}
	plan := planKeyRows(kvs, fresh)
	for _, kv := range kvs {
		if kv.hk != nil && !kv.hasRows {
			kv.hk.file = ""
		}
	}
	// The state names every key's file already: it is saved while the data files are written.
	// (saving also waits for the change data file below.)
	var saved struct {
		id      string
		segs    []segment
		renames map[string]string
		err     error
	}
	var saving sync.WaitGroup
	saving.Add(1)
	go func() {
		defer saving.Done()
		saved.id, saved.segs, saved.renames, saved.err = state.save(changedList, changedHKs)
	}()
	defer saving.Wait() // on every return: nothing touches the state after this batch
	files := batchFiles{cdcRows: cdcRows, cdcTypes: cdcTypes, inserted: inserted, freshInserts: freshInserts, removes: removes}
	if files.needsCDC() {
		// So is the change data file.
		var cdc delta.CDC
		var cdcErr error
		saving.Add(1)
		changes := files // its own copy: files gets its adds and cdcWritten meanwhile
		go func() {
			defer saving.Done()
			rows, types := changes.changes()
			cdc, cdcErr = b.target.WriteCDCFile(d.Schema, rows, types)
		}()
		files.cdcWritten = func() ([]delta.CDC, error) {
			saving.Wait()
			return []delta.CDC{cdc}, cdcErr
		}
	}
	written, err := writeKeyRows(b.target, tgtSch, kvs, plan)
	if err != nil {
		return m, err
	}
	files.adds = append(adds, written...)
	err = finishBatch(d, b, &m, files,
		func() (string, []segment, map[string]string, error) {
			saving.Wait()
			return saved.id, saved.segs, saved.renames, saved.err
		}, state.remember,
		historyMetrics(m, mor, dv, len(written)))
	return m, err
}

// historyMetrics is the operationMetrics of an applyHistory commit: the rows upserted and
// deleted and, for a merge-on-read target, the new data files (written of them), the files
// removed for good and what became of the deletion vectors (dv).
func historyMetrics(m Metrics, mor bool, dv dvChange, written int) map[string]string {
	out := map[string]string{
		"numTargetRowsUpserted": strconv.FormatInt(m.NumUpsertedRows, 10),
		"numTargetRowsDeleted":  strconv.FormatInt(m.NumDeletedRows, 10),
	}
	if mor {
		out["numTargetFilesAdded"] = strconv.Itoa(written)
		out["numTargetFilesRemoved"] = strconv.Itoa(dv.filesRemoved)
		out["numTargetDeletionVectorsAdded"] = strconv.Itoa(dv.added)
		out["numTargetDeletionVectorsUpdated"] = strconv.Itoa(dv.updated)
		out["numTargetDeletionVectorsRemoved"] = strconv.Itoa(dv.removed)
	}
	return out
}

// rewriteHistoryFiles is the copy-on-write end of applyHistory: each data file holding keys whose
// rows changed (byFile) is rewritten into one new file with those keys' new rows, the rows that
// stay kept from the file (rowKeep), and the state records the rename. It returns the removes
// and adds of the rewrites and the changed keys without a file (positions in kvs, in key
// order), whose rows go to new files.
func rewriteHistoryFiles(env *Env, d *spec.Dataset, b *changeBatch, tgtSch schema.Schema, state *histState, mode historyMode, kvs []changedKey, g *keyGroups, byFile map[string]bool, keyIdx []int, startIdx int, trunc []any, toRow func(version) []any, nowMs int64) (removes []delta.Remove, adds []delta.Add, fresh []int, err error) {
	// The changed keys by the file that holds the key (their positions in kvs, in key order) with
	// the number of their new rows; and the changed keys without a file yet.
	type fileKeys struct {
		keys []int
		rows int
	}
	byPath := map[string]*fileKeys{}
	for i, kv := range kvs {
		if kv.hk == nil {
			continue
		}
		if f := state.resolve(kv.hk.file); f != "" {
			fk := byPath[f]
			if fk == nil {
				fk = &fileKeys{}
				byPath[f] = fk
			}
			fk.keys, fk.rows = append(fk.keys, i), fk.rows+len(kv.rows)
			continue
		}
		if kv.keep.some() {
			// The key's file held its rows, but the index rebuilt from the table names no
			// file for it: its new file gets the rows of all its versions.
			vs := mode.fold(state.eventsOf(kv.hk), trunc)
			kvs[i].rows, kvs[i].keep = make([][]any, len(vs)), rowKeep{}
			for j, v := range vs {
				kvs[i].rows[j] = toRow(v)
			}
			state.encode(kv.hk)
		}
		fresh = append(fresh, i)
	}
	// The files rewritten, and the keys whose new rows go into them (placed): of those, the rows
	// their keep does not keep are dropped from every file rewritten, need of them in all.
	var files []delta.Add
	for _, f := range b.snap.Files {
		if byFile[f.Path] {
			files = append(files, f)
		}
	}
	placed := make([]bool, len(kvs))
	for _, f := range files {
		if fk := byPath[f.Path]; fk != nil {
			for _, i := range fk.keys {
				placed[i] = true
			}
		}
	}
	// changeOf says what the batch did to the key encoded in kb (see rewriteRows): its position
	// in kvs, or -1 for a key whose rows stay as they are.
	changeOf := func(kb []byte) (int, rowKeep, [][]any) {
		i, ok := g.index[string(kb)]
		if !ok || !placed[i] {
			return -1, rowKeep{}, nil
		}
		return i, kvs[i].keep, kvs[i].rows
	}
	// rewrite rewrites f, placing the rows of the keys of fk (nil: none), on several goroutines
	// (kvs, g.index, placed and byPath are only read there), counting each key's rows dropped.
	dropped := make([]atomic.Int32, len(kvs))
	short := func(i int) bool { return placed[i] && int(dropped[i].Load()) < kvs[i].gone }
	rewrite := func(f delta.Add, fk *fileKeys) (replacement, error) {
		frows, _, err := b.target.ReadLiveFile(f, tgtSch) // without the rows a deletion vector deletes
		if err != nil {
			return replacement{}, err
		}
		if fk == nil {
			fk = &fileKeys{}
		}
		place := make(map[int]bool, len(fk.keys))
		for _, i := range fk.keys {
			place[i] = true
		}
		out := rewriteRows(make([][]any, 0, len(frows)+fk.rows), frows, keyIdx, startIdx, changeOf, place, dropped)
		for _, i := range fk.keys {
			if place[i] { // the file held no row of the key
				out = append(out, kvs[i].rows...)
			}
		}
		return writeReplacement(b.target, tgtSch, f, out, nowMs)
	}
	done, err := eachFile(files, func(f delta.Add) (replacement, error) { return rewrite(f, byPath[f.Path]) })
	if err != nil {
		return nil, nil, nil, err
	}
	someShort := false
	for i := range kvs {
		if short(i) {
			someShort = true
			break
		}
	}
	if someShort {
		// Rows to drop lie in files the state names for no placed key: merge-on-read batches
		// (before delta.enableDeletionVectors was set back to false) spread the key's rows
		// over several files. Find them in the other files, and rewrite those too.
		loc := newRowLocator(b.target, tgtSch, kvs, g, keyIdx, startIdx, mode.scd2, short)
		var rest []delta.Add
		for _, f := range b.snap.Files {
			if !byFile[f.Path] {
				rest = append(rest, f)
			}
		}
		rest = loc.after(rest, func(int) bool { return true })
		positions, err := loc.scan(rest)
		if err != nil {
			return nil, nil, nil, err
		}
		var more []delta.Add
		for k, f := range rest {
			if len(positions[k]) > 0 {
				more = append(more, f)
			}
		}
		again, err := eachFile(more, func(f delta.Add) (replacement, error) { return rewrite(f, nil) })
		if err != nil {
			return nil, nil, nil, err
		}
		files, done = append(files, more...), append(done, again...)
	}
	bad := 0
	for i := range kvs {
		if placed[i] && int(dropped[i].Load()) != kvs[i].gone {
			bad++
		}
	}
	if bad > 0 {
		return nil, nil, nil, fmt.Errorf("the CDC state of %s does not match its table: %d of the keys being changed do not have the rows their state names; run %s", d.Name, bad, RefreshHint(env.Pipeline, d.Name))
	}
	for i, r := range done {
		state.rename(files[i].Path, r.path)
		removes, adds = append(removes, r.remove), append(adds, r.adds...)
	}
	return removes, adds, fresh, nil
}

// keyFile is a new data file of applyHistory: the keys whose rows it holds (positions in kvs,
// in key order), its rows' count and its name (delta.NewDataFileName).
type keyFile struct {
	keys []int
	rows int
	name string
}

// planKeyRows cuts the rows of the keys at positions fresh of kvs (in order) into new data
// files of about targetFileRows rows, cut between keys, so that a key's versions stay together
// in the one file the state names for it, and records that file in the state of each key with
// rows (before the file is written: writeKeyRows writes it). As writeRows does, rows enough for
// two files of parallelFileRows or more are cut into as many files as there are rewrite workers
// (or more, of at most targetFileRows each), written at once, of about equal rows (cutEvenly).
// Runs without rows make no file.
func planKeyRows(kvs []changedKey, fresh []int) []keyFile {
	sizes := make([]int, len(fresh))
	total := 0
	for j, i := range fresh {
		sizes[j] = kvs[i].rowCount()
		total += sizes[j]
	}
	parts := cutBetweenKeys(sizes, targetFileRows)
	if total >= 2*parallelFileRows {
		parts = cutEvenly(sizes, fileCount(total), targetFileRows)
	}
	var plan []keyFile
	for _, part := range parts {
		f := keyFile{keys: fresh[part[0]:part[1]], name: delta.NewDataFileName()}
		path := delta.EscapePath(f.name) // one string for every key of the file
		for _, i := range f.keys {
			if n := kvs[i].rowCount(); n > 0 {
				f.rows += n
				kvs[i].hk.file = path
			}
		}
		if f.rows > 0 {
			plan = append(plan, f)
		}
	}
	return plan
}

// writeKeyRows writes the files planKeyRows planned, at once on the rewrite workers, and returns
// their add actions in plan order. The keys of a batch folded in columns (changedKey.src: all of
// its keys, or none) are written from their columns (keyColumns), without boxing a value; their
// target is of histColumnsFor's shape, which delta.ColumnsWritable accepts.
func writeKeyRows(t *delta.Table, tgtSch schema.Schema, kvs []changedKey, plan []keyFile) ([]delta.Add, error) {
	return eachIndex(len(plan), func(j int) (delta.Add, error) {
		if keys := plan[j].keys; len(keys) > 0 && kvs[keys[0]].src != nil {
			return t.WriteFileFromColumns(plan[j].name, tgtSch, keyColumns(kvs, keys))
		}
		return t.WriteFileFrom(plan[j].name, tgtSch, keyRows(kvs, plan[j].keys))
	})
}

// keyColumns is keyRows for keys that were all folded in columns: the parts hand
// the versions' values over column by column (delta.ColumnPart), each part at most
// keyRowsPart rows.
func keyColumns(kvs []changedKey, keys []int) func() (delta.ColumnPart, error) {
	part := &versionColumns{refs: make([]versionRef, 0, keyRowsPart)}
	k, v := 0, 0 // the next row: key keys[k], its v-th version
	return func() (delta.ColumnPart, error) {
		part.refs = part.refs[:0]
		for len(part.refs) < keyRowsPart && k < len(keys) {
			kv := &kvs[keys[k]]
			n := min(int(kv.vTo-kv.vFrom)-v, keyRowsPart-len(part.refs))
			for _, ver := range kv.src.vers[int(kv.vFrom)+v : int(kv.vFrom)+v+n] {
				part.refs = append(part.refs, versionRef{c: kv.src.c, v: ver})
			}
			if v += n; v >= int(kv.vTo-kv.vFrom) {
				k, v = k+1, 0
			}
		}
		return part, nil
	}
}

// versionColumns is rows of the target (the data columns, __START_AT, __END_AT) as versions of
// keys folded in columns, given column by column.
type versionColumns struct {
	refs []versionRef
}

// versionRef is a version and the columns its values come from.
type versionRef struct {
	c *histBatch
	v histVersion
}

// Len is the number of rows.
func (p *versionColumns) Len() int { return len(p.refs) }

// Column fills column j of rows [from, to) (delta.ColumnPart): a data column's value of the
// event that holds the version's row, the sequence of the event that opened it (__START_AT),
// of the event that closed it or NULL while it is open (__END_AT).
func (p *versionColumns) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	refs := p.refs[from:to]
	if len(refs) == 0 {
		return
	}
	nd := len(refs[0].c.kinds)
	switch {
	case j == nd:
		for i, r := range refs {
			words[i] = r.c.seqs[r.v.open]
		}
	case j == nd+1:
		for i, r := range refs {
			if r.v.close < 0 {
				nulls[i] = true
			} else {
				words[i] = r.c.seqs[r.v.close]
			}
		}
	case refs[0].c.kinds[j] == schema.String:
		for i, r := range refs {
			if r.c.null(j, r.v.row) {
				nulls[i] = true
			} else {
				strs[i] = r.c.str(j, r.v.row)
			}
		}
	default:
		for i, r := range refs {
			if r.c.null(j, r.v.row) {
				nulls[i] = true
			} else {
				words[i] = r.c.wordOf(j, r.v.row)
			}
		}
	}
}

// keyRowsPart is the most rows keyRows hands over at once.
const keyRowsPart = 1 << 16

// keyRows returns the rows of the keys at positions keys in kvs, in order, in parts of at most
// keyRowsPart rows, for delta.Table.WriteFileFrom.
func keyRows(kvs []changedKey, keys []int) func() ([][]any, error) {
	var out [][]any
	k, v := 0, 0 // the next row: key keys[k], its v-th row
	return func() ([][]any, error) {
		out = out[:0]
		for len(out) < keyRowsPart && k < len(keys) {
			kv := &kvs[keys[k]]
			if v >= len(kv.rows) {
				k, v = k+1, 0
				continue
			}
			n := min(len(kv.rows)-v, keyRowsPart-len(out))
			out = append(out, kv.rows[v:v+n]...)
			v += n
		}
		return out, nil
	}
}

// changedKey is a key a batch changed (hk set), with the rows of its versions after it that its
// data files do not hold already. The files hold the rows of the versions before the batch;
// those that stay as they were (rowKeep) are kept from the file when it is rewritten
// (copy-on-write) or left where they are (merge-on-read), and rows holds the rows of the
// versions that follow.
type changedKey struct {
	hk   *histKey
	rows [][]any
	// src, when set, holds the rows instead of rows, as versions vFrom to vTo of a key folded
	// in columns (histColumns.fold): its rows are made as they are written (keyColumns).
	src        *freshPart
	vFrom, vTo int32
	keep       rowKeep
	gone       int  // how many rows of the versions before the batch keep does not keep
	hasRows    bool // the key has rows after the batch
	diff       bool // the key's rows changed
}

// rowCount returns the number of the key's rows after the batch that its data files do not
// hold already: of rows, or of its versions in src.
func (kv *changedKey) rowCount() int {
	if kv.src != nil {
		return int(kv.vTo - kv.vFrom)
	}
	return len(kv.rows)
}

// minKeysPerWorker is the fewest keys a batch folds on each goroutine of applyHistory: below
// twice that, its keys are folded on one (4,096; tests lower it).
var minKeysPerWorker = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(4096)
	return &n
}()

// keyRanges splits the positions [0, n) of a batch's keys (g; positions from g.nBatch on have
// no events) into contiguous ranges of about as many events each (a key weighs its events plus
// one), one per available core (at most four), each of at least minKeysPerWorker keys; it
// returns them as [from, to) pairs.
func keyRanges(g *keyGroups, n int) [][2]int {
	least := int(minKeysPerWorker.Load())
	workers := min(runtime.GOMAXPROCS(0), 4, n/least)
	if workers <= 1 {
		return [][2]int{{0, n}}
	}
	// A key's weight is its events plus one (the keys past nBatch have none).
	total := g.start[g.nBatch] + n
	weight := func(i int) int { return g.start[min(i, g.nBatch)] + i } // of the keys before i
	var out [][2]int
	from := 0
	for w := 1; w < workers; w++ {
		want := total * w / workers
		lo, hi := from, n
		for lo < hi {
			mid := (lo + hi) / 2
			if weight(mid) < want {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		// Each range keeps at least least keys, and leaves as many to each range after it.
		lo = min(max(lo, from+least), n-(workers-w)*least)
		out = append(out, [2]int{from, lo})
		from = lo
	}
	return append(out, [2]int{from, n})
}

// newKey is a key a keyWorker adds to the state: its encoded key and its history.
type newKey struct {
	k  string
	hk *histKey
}

// keyWorker folds a range of a batch's keys into their histories (applyHistory): for each key
// it merges the batch's events into the stored history, recomputes its versions and rows, and
// records the change. It writes kvs at its own positions and the keys' histKeys, and reads
// the rest; what it makes is its own until applyHistory joins the workers.
type keyWorker struct {
	mode            historyMode
	g               *keyGroups
	order           []string
	live            map[string]bool // the target's data files
	kvs             []changedKey
	nowMs           int64
	oldTrunc, trunc []any
	newTrunc        bool
	state           histState // a copy sharing keys, with a decoder of its own
	slab            rowSlab

	cdcRows     [][]any
	cdcTypes    []string
	inserted    [][][]any // the change rows of keys without versions before the batch: inserts
	changedList []string
	byFile      map[string]bool
	added       []newKey // the keys new to the state, in order
	ties        tieCount // the ties of the range's keys, and the first of them
	ups, dels   int64
	sink        int64
	panicked    any // what a fold on a goroutine of its own panicked with, and where
	// stop, when closed (the update's stop), ends the fold of the range before its end: the
	// batch then commits nothing (applyHistory).
	stop <-chan struct{}

	rowLists       [][]any // backing of the keys' row lists, carved like the rows
	oldBuf, curBuf []version
	mergeBuf       []histEvent
	offs           []int // scratch of tailOf
}

// toRow makes the target row of version v: carved from the worker's slabs for SCD type 2 (a
// batch makes a row per version of every key it changes, and one allocation per row would make
// most of its garbage), v.row itself for SCD type 1.
func (w *keyWorker) toRow(v version) []any {
	return versionRow(&w.slab, w.mode, v)
}

// versionRow is keyWorker.toRow with the slabs given.
func versionRow(slab *rowSlab, mode historyMode, v version) []any {
	if !mode.scd2 {
		return v.row
	}
	r := slab.row()
	for i, x := range v.row {
		r[i] = slab.vals.rebox(x)
	}
	n := len(v.row)
	r[n], r[n+1] = slab.vals.rebox(seqValue(v.start)), slab.vals.rebox(seqValue(v.end))
	return r
}

// rowsOf makes the rows of versions vs, in a list carved from rowLists.
func (w *keyWorker) rowsOf(vs []version) [][]any {
	if len(w.rowLists) < len(vs) {
		w.rowLists = make([][]any, max(len(vs), slabRows))
	}
	rows := w.rowLists[:len(vs):len(vs)]
	w.rowLists = w.rowLists[len(vs):]
	for j, v := range vs {
		rows[j] = w.toRow(v)
	}
	return rows
}

// deleted moves hk's tombstone time: set to now when its history comes to end in a delete it
// did not end in before (or without a time), cleared when it ends in an upsert.
func (w *keyWorker) deleted(hk *histKey, wasDeleted, isDeleted bool) {
	switch {
	case !isDeleted:
		hk.deletedAt = 0
	case !wasDeleted || hk.deletedAt == 0:
		hk.deletedAt = w.nowMs
	}
}

// changed records key k (position i, state hk) as changed by the batch, with the rows of its
// versions after it (rows; keep: those its file keeps, gone: how many of its stored rows keep
// does not keep) and the change rows from old to cur (rowsCur: the rows of cur).
func (w *keyWorker) changed(i int, k string, hk *histKey, rows [][]any, keep rowKeep, gone int, hasRows bool, old, cur []version, rowsCur [][]any) {
	w.changedList = append(w.changedList, k)
	var ups, dels int64
	if len(old) == 0 {
		// Every version is new: its change rows are its rows, as inserts (versionDiff), kept as
		// they are, after the other change rows (batchFiles.inserted).
		w.kvs[i] = changedKey{hk: hk, rows: rows, keep: keep, gone: gone, hasRows: hasRows, diff: len(cur) > 0}
		if len(cur) == 0 {
			return
		}
		w.inserted = append(w.inserted, rowsCur)
		ups = int64(len(cur))
	} else {
		n := len(w.cdcRows)
		w.cdcRows, w.cdcTypes, ups, dels = versionDiff(w.cdcRows, w.cdcTypes, old, cur, w.toRow, rowsCur)
		w.kvs[i] = changedKey{hk: hk, rows: rows, keep: keep, gone: gone, hasRows: hasRows, diff: len(w.cdcRows) > n}
		if len(w.cdcRows) == n {
			return
		}
	}
	w.ups += ups
	w.dels += dels
	f := w.state.lookup(hk.file)
	if f == "" && hk.file != "" {
		// A copy-on-write rewrite emptied the key's file while the key has rows in others
		// (merge-on-read spread them): the file named, not live, makes applyHistory rebuild the
		// key-to-file index from the table.
		f = hk.file
	}
	if f != "" {
		if w.byFile == nil {
			w.byFile = map[string]bool{}
		}
		w.byFile[f] = true
	}
}

// stopEvery is how many keys a keyWorker folds between two looks at its stop.
const stopEvery = 1024

// run folds the keys at positions [from, to). A panic is kept in w.panicked with the stack it
// was raised on, for applyHistory to raise again on its own goroutine (whose stack would not
// show where it came from).
func (w *keyWorker) run(from, to int) {
	defer func() {
		if r := recover(); r != nil {
			w.panicked = fmt.Sprintf("%v\n\nraised by a key worker at:\n%s", r, debug.Stack())
		}
	}()
	g, mode := w.g, w.mode
	for i := from; i < to; i++ {
		if (i-from)%stopEvery == 0 && w.stop != nil {
			select {
			case <-w.stop:
				return
			default:
			}
		}
		if (i-from)%touchAhead == 0 {
			for j := i; j < min(i+touchAhead, to, g.nBatch); j++ {
				w.sink += touchEvents(g.events(j))
			}
		}
		k := w.order[i]
		hk := w.state.keys[k]
		isNew := hk == nil
		if isNew {
			hk = &histKey{}
		}
		// A key whose stored events all come before the batch's, as most do, needs of them
		// only their end (tailOf) when its state is encoded and the fold keeps no NULLs.
		if evs := g.events(i); (hk.blob != nil || hk.fresh != nil) && mode.scd2 && !mode.ignoreNulls && len(evs) > 0 {
			var tail histTail
			var ok bool
			if tail, w.offs, ok = w.state.tailOf(hk, mode.tracked, w.offs); ok && allAfter(evs, tail.lastSeq) {
				added, _ := mergeHistoryInto(w.mergeBuf, nil, evs, &w.ties)
				wasDeleted := hk.lastDelete
				hk.blob = encodeHistEvents(append(make([]byte, 0, len(hk.blob)+40*len(added)), hk.blob...), added)
				hk.nEvents += len(added)
				hk.lastDelete = added[len(added)-1].delete
				w.deleted(hk, wasDeleted, hk.lastDelete)
				// The versions from the open one on, before and after; the rows of the versions
				// before it stay in the key's file.
				old, cur := w.oldBuf[:0], w.curBuf[:0]
				keep := rowKeep{all: true}
				if tail.open {
					v := version{start: tail.openStart, row: tail.openRow}
					old, cur = append(old, v), append(cur, v)
					keep = rowKeep{before: seqValue(tail.openStart)}
				}
				cur = foldOnto(cur, tail.open, added, mode.tracked, false, nil)
				w.oldBuf, w.curBuf, w.mergeBuf = old[:0], cur[:0], added[:0]
				rows := w.rowsOf(cur)
				w.changed(i, k, hk, rows, keep, len(old), len(cur) > 0 || hk.file != "", old, cur, rows)
				continue
			}
		}
		blob := hk.blob // the stored events encoded, before eventsOf decodes them
		stored := w.state.eventsOf(hk)
		merged, first := stored, -1
		if evs := g.events(i); len(evs) > 0 {
			merged, first = mergeHistoryInto(w.mergeBuf, stored, evs, &w.ties)
		}
		if first < 0 && !w.newTrunc {
			continue
		}
		wasDeleted := hk.lastDelete
		hk.setEvents(merged)
		w.deleted(hk, wasDeleted, len(merged) > 0 && merged[len(merged)-1].delete)
		old, cur, common := mode.versions(stored, merged, first, w.oldTrunc, w.trunc, w.oldBuf, w.curBuf)
		if cap(old) > cap(w.oldBuf) {
			w.oldBuf = old[:0]
		}
		if cap(cur) > cap(w.curBuf) {
			w.curBuf = cur[:0]
		}
		// Encode the events for the state's save while they are in the cache; the key keeps
		// them encoded only. When the batch only added events after the stored ones, the
		// encoding of those is kept and only the new ones are encoded.
		if first == len(stored) {
			w.state.encodeAppended(hk, blob, len(stored))
		} else {
			w.state.encode(hk)
		}
		if hk.events == nil && first >= 0 && cap(merged) >= cap(w.mergeBuf) {
			w.mergeBuf = merged[:0]
		}
		// The rows of the versions that stay as they were are in the key's file, when it has
		// one: a rewrite keeps them from there.
		from := 0
		var keep rowKeep
		if common > 0 && w.live[w.state.lookup(hk.file)] {
			// The versions that changed start after the common ones: at the first of the
			// versions before or after that follow them, if any.
			from, keep = common, rowKeep{all: true}
			if len(old) > 0 {
				keep = rowKeep{before: seqValue(old[0].start)}
			}
			if common < len(cur) && (keep.all || compareSeq(cur[common].start, old[0].start) < 0) {
				keep = rowKeep{before: seqValue(cur[common].start)}
			}
		}
		rows := w.rowsOf(cur[from:])
		if isNew {
			w.added = append(w.added, newKey{k, hk})
		}
		w.changed(i, k, hk, rows, keep, common-from+len(old), len(cur) > 0, old, cur[common:], rows[common-from:])
	}
}
