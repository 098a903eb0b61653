package flows

import (
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// applySCD1 applies a batch to an SCD type 1 target: one row per live key (semantics.md
// "APPLY CHANGES"). A truncate event removes every row at or below its sequence, and events at or
// below the highest truncate ever applied change nothing.
func applySCD1(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	if b.typed != nil {
		if freshSCD1(b) {
			return applySCD1Fresh(env, d, b, m)
		}
		red := b.typed.finish() // (freshSCD1 held when the batch was read)
		b.reduced, b.typed = &red, nil
	}
	p := env.Pipeline
	tgtSch := b.dataSch
	now := env.now()
	nowMs := now.UnixMilli()
	mor := mergeOnRead(b.snap)
	// The state of the batch's keys suffices, unless the batch truncates every key, or the state
	// must be written whole, or the table was rewritten under it (then the loop loads it whole).
	// A target without a state yet (the first batch) needs no keys.
	var want map[string]int
	if b.truncate == nil && b.stateID != "" {
		want = batchKeys(b)
	}
	var (
		state      *cdcState
		err        error
		red        reduceResult
		reduced    bool // red holds the batch's winners above the truncate sequence
		changes    []keyChange
		storedTies tieCount
		same       []keyChange // upserts at their live row's own sequence
		touched    map[string]*keyChange
		located    map[string]*keyChange // touched and same: the keys whose rows are read
		inserts    []*keyChange
	)
	for {
		state, err = loadState(StateDir(p.Storage, d.Name), b.target, b.snap, b.stateID, b.keySch, b.seqSch, nowMs, tombstoneGC(d), want)
		if err != nil {
			return m, err
		}
		state.mor = mor
		// Truncates: the batch's highest truncate raises the table's truncate sequence.
		trunc := state.truncate
		newTrunc := b.truncate != nil && (trunc == nil || schema.CompareTuple(b.truncate, trunc) > 0)
		if newTrunc {
			trunc = b.truncate
		}
		switch {
		case reduced: // the second pass: the same batch, the same truncate
		case b.reduced != nil:
			red = b.reduced.above(trunc)
		default:
			events := b.allEvents()
			if trunc != nil {
				live := events[:0:0]
				for _, ev := range events {
					if schema.CompareTuple(ev.seq, trunc) > 0 {
						live = append(live, ev)
					}
				}
				events = live
			}
			red = reduce(events)
		}
		reduced = true
		changes, storedTies, same = decide(red, state.entry)
		if newTrunc {
			for i := range state.slots {
				if sl := &state.slots[i]; sl.gone || sl.deleted {
					continue // an old tombstone: the truncate sequence now covers it
				}
				k := string(state.keyBytes(i))
				if _, won := red.keyIndex()[k]; won {
					continue
				}
				e := state.entryAt(i)
				if schema.CompareTuple(e.seq, trunc) > 0 {
					continue
				}
				changes = append(changes, keyChange{kb: k, what: truncateRow, entry: e})
			}
		}
		state.truncate = trunc

		// Copy-on-write: rewrite each file holding updated or deleted keys into one new file
		// (the state records the rename, not every relocated key), and write inserts to new files.
		touched, inserts = map[string]*keyChange{}, nil
		for i := range changes {
			ch := &changes[i]
			switch ch.what {
			case updateRow, deleteRow, truncateRow:
				touched[ch.kb] = ch
			case insertRow:
				inserts = append(inserts, ch)
			}
		}
		located = touched
		if len(same) > 0 {
			located = maps.Clone(touched)
			for i := range same {
				located[same[i].kb] = &same[i]
			}
		}
		if !state.needsFull(len(changes), b.snap, located) {
			break
		}
		want = nil
	}
	if err := state.ensureFiles(b.target, b.snap, tgtSch, b.keyIdx, located); err != nil {
		return m, err
	}
	sameTies, err := state.sameSeqTies(b.target, b.snap, tgtSch, b.keyIdx, same)
	if err != nil {
		return m, err
	}
	ties := red.tieCount()
	ties.merge(storedTies)
	ties.merge(sameTies)
	m.Ties = ties.n
	reportTies(env, d, b, ties)
	if mor {
		return applyMergeOnRead(env, d, b, m, state, changes, nowMs)
	}
	byFile := map[string]bool{}
	for _, ch := range touched {
		byFile[state.fileOf(ch.entry.slot)] = true
	}
	// Rewrite the files on several goroutines; touched is only read there.
	type rewritten struct {
		replacement
		cdcRows   [][]any
		cdcTypes  []string
		found     int
		ups, dels int64
	}
	var files []delta.Add
	for _, f := range b.snap.Files {
		if byFile[f.Path] {
			files = append(files, f)
		}
	}
	done, err := eachFile(files, func(f delta.Add) (rewritten, error) {
		var rw rewritten
		frows, _, err := b.target.ReadLiveFile(f, tgtSch)
		if err != nil {
			return rw, err
		}
		out := frows[:0:0]
		var kb []byte
		for _, r := range frows {
			kb = appendPicked(kb[:0], r, b.keyIdx)
			ch, ok := touched[string(kb)]
			if !ok {
				out = append(out, r)
				continue
			}
			rw.found++
			pre := append([]any(nil), r...) // not a view of the file's rows, which can then go
			if ch.what == updateRow {
				rw.cdcRows = append(rw.cdcRows, pre, ch.win.row)
				rw.cdcTypes = append(rw.cdcTypes, delta.ChangeUpdatePreimage, delta.ChangeUpdatePostimage)
				out = append(out, ch.win.row)
				rw.ups++
			} else {
				rw.cdcRows = append(rw.cdcRows, pre)
				rw.cdcTypes = append(rw.cdcTypes, delta.ChangeDelete)
				rw.dels++
			}
		}
		rw.replacement, err = writeReplacement(b.target, tgtSch, f, out, nowMs)
		return rw, err
	})
	if err != nil {
		return m, err
	}
	var cdcRows [][]any
	var cdcTypes []string
	var removes []delta.Remove
	var adds []delta.Add
	found := 0
	for i, rw := range done {
		state.rename(files[i].Path, rw.path)
		removes, adds = append(removes, rw.remove), append(adds, rw.adds...)
		cdcRows, cdcTypes = append(cdcRows, rw.cdcRows...), append(cdcTypes, rw.cdcTypes...)
		found += rw.found
		m.NumUpsertedRows += rw.ups
		m.NumDeletedRows += rw.dels
	}
	if found != len(touched) {
		return m, fmt.Errorf("the CDC state of %s names data files that do not hold %d of the keys being changed; run %s", d.Name, len(touched)-found, RefreshHint(p, d.Name))
	}
	// The inserts' change rows are the inserted rows: a batch that only inserts (the first
	// batch of a table) shares insertRows instead of copying it.
	insertRows := make([][]any, len(inserts))
	for i, ch := range inserts {
		insertRows[i] = ch.win.row
	}
	if len(cdcRows) == 0 {
		cdcRows = insertRows[:len(insertRows):len(insertRows)]
	} else {
		cdcRows = append(cdcRows, insertRows...)
	}
	cdcTypes = slices.Grow(cdcTypes, len(inserts))
	for range inserts {
		cdcTypes = append(cdcTypes, delta.ChangeInsert)
	}
	m.NumUpsertedRows += int64(len(inserts))
	m.NumOutputRows = m.NumUpsertedRows + m.NumDeletedRows

	// Write the inserts while each change is recorded in the state, then record where each
	// insert lives: writeRows places the rows of insertRows in order (rowPath), and the i-th is
	// the key of insSlots[i].
	var insAdds []delta.Add
	rowPath := make([]string, 0, len(insertRows))
	written := make(chan error, 1)
	go func() {
		var err error
		insAdds, err = writeRows(b.target, tgtSch, insertRows, func(_ []any, path string) { rowPath = append(rowPath, path) })
		written <- err
	}()
	changed := state.recordChanges(changes, nowMs)
	if err := <-written; err != nil {
		return m, err
	}
	insSlots := make([]int, 0, len(inserts))
	for i := range changes {
		if changes[i].what == insertRow {
			insSlots = append(insSlots, changed[i])
		}
	}
	lastPath, lastID := "", int32(0)
	for i, path := range rowPath {
		if path != lastPath {
			lastPath, lastID = path, state.fileID(path)
		}
		state.slots[insSlots[i]].file = lastID
	}
	adds = append(adds, insAdds...)
	err = finishBatch(d, b, &m, batchFiles{cdcRows: cdcRows, cdcTypes: cdcTypes, removes: removes, adds: adds},
		func() (string, []segment, map[string]string, error) { return state.save(changed) }, state.remember,
		map[string]string{
			"numTargetRowsInserted": strconv.Itoa(len(inserts)),
			"numTargetRowsUpdated":  strconv.FormatInt(m.NumUpsertedRows-int64(len(inserts)), 10),
			"numTargetRowsDeleted":  strconv.FormatInt(m.NumDeletedRows, 10),
		})
	return m, err
}

// recordChanges records each change of a batch in the state (a key's new sequence; a delete or
// truncate makes it a tombstone of commit time nowMs, without a row) and returns the slots it
// changed, the i-th that of changes[i]. Where the new rows live is recorded as they are written.
func (s *cdcState) recordChanges(changes []keyChange, nowMs int64) []int {
	changed := make([]int, 0, len(changes))
	// Room for the keys the state does not hold yet, at once rather than by doubling: a batch
	// of a million new keys would otherwise rehash the table and copy the slots and the arena
	// some twenty times. The arena gets about the key's size again for each sequence.
	fresh, keyBytes := 0, 0
	for i := range changes {
		if changes[i].entry == nil {
			fresh++
			keyBytes += len(changes[i].kb)
		}
	}
	if fresh > 0 {
		s.grow(len(s.slots) + fresh)
		s.slots = slices.Grow(s.slots, fresh)
		s.arena = slices.Grow(s.arena, 2*keyBytes)
	}
	// The changes go in groups: a group's keys are hashed and their buckets loaded first, so
	// that the cache misses of a million random buckets overlap instead of coming one by one.
	const group = 32
	var hashes [group]uint64
	var sb []byte
	for start := 0; start < len(changes); start += group {
		g := changes[start:min(start+group, len(changes))]
		mask := uint64(len(s.table) - 1)
		var sink uint64
		for k := range g {
			if g[k].what != truncateRow {
				hashes[k] = maphash.String(s.seed, g[k].kb)
				sink += s.table[hashes[k]&mask]
			}
		}
		s.sink += sink
		for k := range g {
			ch := &g[k]
			var j int
			if ch.what == truncateRow {
				j = ch.entry.slot
			} else {
				sb = appendValues(sb[:0], ch.win.seq)
				j = s.putHashed([]byte(ch.kb), hashes[k], sb, false)
			}
			if sl := &s.slots[j]; ch.what == truncateRow || ch.what == deleteRow || ch.what == tombstoneOnly {
				sl.deleted, sl.deletedAt = true, nowMs
				s.setRow(j, 0, -1, nil)
			} else {
				sl.deleted = false
			}
			changed = append(changed, j)
		}
	}
	return changed
}

// sameSeqTies returns the upserts in same (each at its live row's own sequence, a no-op) that
// carry a row other than the one the target holds: those are ties (semantics.md, Decision on
// ties), while an identical event is a re-delivery. A merge-on-read state compares with the row
// image it holds; otherwise the data files holding those keys are read.
func (s *cdcState) sameSeqTies(t *delta.Table, snap *delta.Snapshot, tgtSch schema.Schema, keyIdx []int, same []keyChange) (tieCount, error) {
	var ties tieCount
	byFile := map[string]map[string]*keyChange{}
	for i := range same {
		ch := &same[i]
		if j := ch.entry.slot; s.mor && s.slots[j].imgLen > 0 {
			row, err := decodeValues(s.imgBytes(j))
			if err != nil {
				return ties, err
			}
			if !sameRow(row, ch.win.row) {
				ties.add(storedTie(ch.win))
			}
			continue
		}
		p := s.fileOf(ch.entry.slot)
		if byFile[p] == nil {
			byFile[p] = map[string]*keyChange{}
		}
		byFile[p][ch.kb] = ch
	}
	var kb []byte
	for _, f := range snap.Files {
		keys := byFile[f.Path]
		if keys == nil {
			continue
		}
		rows, _, err := t.ReadLiveFile(f, tgtSch)
		if err != nil {
			return ties, err
		}
		for _, r := range rows {
			kb = appendPicked(kb[:0], r, keyIdx)
			if ch, ok := keys[string(kb)]; ok && !sameRow(r, ch.win.row) {
				ties.add(storedTie(ch.win))
			}
		}
	}
	return ties, nil
}

// storedTie is the tie of w, an upsert of the batch, with the other row the table holds at its
// key and sequence: a no-op.
func storedTie(w *event) tie {
	return tie{key: w.key, seq: w.seq, arrival: w.arrival, other: -1, rule: storedSeqKept}
}

// fileOf returns the data file that holds slot i's row now (renames followed), or "".
func (s *cdcState) fileOf(i int) string {
	return s.resolve(s.files[s.slots[i].file])
}

// ensureFiles makes sure that the data file the state names for each touched live key is live in
// the snapshot (and, for a merge-on-read state, that the state knows the row's position and
// image); when not (the table was rewritten by an operation that does not keep the state, such
// as optimize), it rebuilds the key-to-file index by reading the key columns of every file of the
// snapshot. A merge-on-read state that lacks the image of a live row (its rows were written
// copy-on-write) reads every column, for the images; one that holds every image reads the key
// columns only, and keeps the images: only OPTIMIZE rewrites a target's files outside its flow,
// and it moves rows without changing them (a schema change needs a full refresh).
func (s *cdcState) ensureFiles(t *delta.Table, snap *delta.Snapshot, tgtSch schema.Schema, keyIdx []int, touched map[string]*keyChange) error {
	if !s.stale(snap, touched) {
		return nil
	}
	keysOnly := !s.mor || s.hasImages()
	readSch, idx := tgtSch, keyIdx
	if keysOnly {
		readSch, idx = schema.Schema{}, make([]int, len(keyIdx))
		for i, j := range keyIdx {
			readSch.Fields = append(readSch.Fields, tgtSch.Fields[j])
			idx[i] = i
		}
	}
	var kb, img []byte
	for _, f := range snap.Files {
		rows, pos, err := t.ReadLiveFile(f, readSch)
		if err != nil {
			return err
		}
		id := s.fileID(f.Path)
		if keysOnly {
			s.placeKeys(rows, pos, idx, id)
			continue
		}
		for r, row := range rows {
			kb = appendPicked(kb[:0], row, idx)
			i := s.find(kb)
			if i < 0 || s.slots[i].gone {
				continue
			}
			img = appendValues(img[:0], row)
			s.setRow(i, id, pos[r], img)
		}
	}
	s.renames, s.rebuilt = nil, true
	return nil
}

// placeKeys records that the keys of rows (the key columns at idx) live in data file id, at the
// positions pos (merge-on-read states). Each key's lookup misses the cache (the state of a
// large table spans gigabytes), so the rows are split between GOMAXPROCS goroutines, whose
// misses overlap; each writes only the slots of its own rows' keys, and a key is in one row.
func (s *cdcState) placeKeys(rows [][]any, pos []int64, idx []int, id int32) {
	parts := min(runtime.GOMAXPROCS(0), max(1, len(rows)))
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(rows)/parts, (p+1)*len(rows)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kb []byte
			for r := lo; r < hi; r++ {
				kb = appendPicked(kb[:0], rows[r], idx)
				i := s.find(kb)
				if i < 0 || s.slots[i].gone {
					continue
				}
				s.slots[i].file = id
				if s.mor {
					s.slots[i].pos1 = uint64(pos[r] + 1)
				}
			}
		}()
	}
	wg.Wait()
}

// hasImages says whether the state holds the row image of every live key.
func (s *cdcState) hasImages() bool {
	for i := range s.slots {
		if sl := &s.slots[i]; !sl.gone && !sl.deleted && sl.imgLen == 0 {
			return false
		}
	}
	return true
}

// stale says whether the data file the state names for a touched key is not live in snap, or,
// for a merge-on-read state, whether the state does not know the row's position and image (a
// state written by copy-on-write batches, or a row in a rewritten file).
func (s *cdcState) stale(snap *delta.Snapshot, touched map[string]*keyChange) bool {
	live := make(map[string]bool, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	for _, ch := range touched {
		i := ch.entry.slot
		p := s.fileOf(i)
		if !live[p] {
			return true
		}
		if sl := &s.slots[i]; s.mor && (sl.pos1 == 0 || sl.imgLen == 0 || s.files[sl.file] != p) {
			return true
		}
	}
	return false
}

// batchKeys returns the encoded keys (appendValues) of the batch's events.
func batchKeys(b *changeBatch) map[string]int {
	if b.reduced != nil {
		return b.reduced.keyIndex()
	}
	out := make(map[string]int, b.eventCount())
	var kb []byte
	i := 0
	for _, part := range b.eventParts() {
		for j := range part {
			kb = appendValues(kb[:0], part[j].key)
			out[string(kb)] = i
			i++
		}
	}
	return out
}

// locate names where an event came from: the input file and line when the source is an ingest
// flow of this pipeline, else the source table version and row.
func locate(p *spec.Pipeline, source string, c *delta.Commit, o origin) string {
	if file, line, ok := ingestLine(p, source, c, o.row); ok {
		return file + ":" + strconv.FormatInt(line, 10)
	}
	return fmt.Sprintf("source table %s, version %d, row %d", source, o.version, o.row+1)
}

// ingestLine returns the input file and line of row (0-based) of commit c of the source table,
// when an ingest flow of p made that commit (its progress txn names the batch's offsets); ok is
// false otherwise, or when the offsets cannot be read.
func ingestLine(p *spec.Pipeline, source string, c *delta.Commit, row int64) (file string, line int64, ok bool) {
	if c == nil {
		return "", 0, false
	}
	for _, t := range c.Txns {
		if t.AppID != AppID(p, source) {
			continue
		}
		off, err := readOffsets(CheckpointDir(p.Storage, source), t.Version)
		if err != nil {
			return "", 0, false
		}
		if file, line, ok := off.find(row); ok {
			return file, line, true
		}
	}
	return "", 0, false
}

func indexes(s schema.Schema, names []string) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = s.Index(n)
	}
	return out
}

func pick(r []any, idx []int) []any {
	return pickInto(make([]any, len(idx)), r, idx)
}

// pickInto sets out[i] to r[idx[i]] and returns out, which has len(idx) elements.
func pickInto(out, r []any, idx []int) []any {
	for i, j := range idx {
		out[i] = r[j]
	}
	return out
}
