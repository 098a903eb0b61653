package flows

import (
	"fmt"
	"strconv"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// applySCD1 applies a batch to an SCD type 1 target: one row per live key (semantics.md
// "APPLY CHANGES"). A truncate event removes every row at or below its sequence, and events at or
// below the highest truncate ever applied change nothing.
func applySCD1(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	p := env.Pipeline
	tgtSch := b.dataSch
	now := env.now()
	nowMs := now.UnixMilli()
	state, err := loadState(StateDir(p.Storage, d.Name), b.target, b.snap, b.stateID, b.keySch, b.seqSch, nowMs, tombstoneGC(d))
	if err != nil {
		return m, err
	}

	// Truncates: the batch's highest truncate raises the table's truncate sequence.
	trunc := state.truncate
	newTrunc := b.truncate != nil && (trunc == nil || schema.CompareTuple(b.truncate, trunc) > 0)
	if newTrunc {
		trunc = b.truncate
	}
	events := b.events
	if trunc != nil {
		live := events[:0:0]
		for _, ev := range events {
			if schema.CompareTuple(ev.seq, trunc) > 0 {
				live = append(live, ev)
			}
		}
		events = live
	}
	red := reduce(events)
	changes, storedTies := decide(red, state.entries)
	m.Ties = red.ties + storedTies
	reportTies(env, d, m.Ties)
	if newTrunc {
		for k, e := range state.entries {
			if _, won := red.winners[k]; won || schema.CompareTuple(e.seq, trunc) > 0 {
				continue
			}
			if e.deleted {
				continue // an old tombstone: the truncate sequence now covers it
			}
			changes = append(changes, keyChange{kb: k, what: truncateRow, entry: e})
		}
	}

	// Copy-on-write: rewrite each file holding updated or deleted keys into one new file (the
	// state records the rename, not every relocated key), and write inserts to new files.
	touched := map[string]*keyChange{}
	var inserts []*keyChange
	for i := range changes {
		ch := &changes[i]
		switch ch.what {
		case updateRow, deleteRow, truncateRow:
			touched[ch.kb] = ch
		case insertRow:
			inserts = append(inserts, ch)
		}
	}
	if err := state.ensureFiles(b.target, b.snap, tgtSch, b.keyIdx, touched); err != nil {
		return m, err
	}
	byFile := map[string]bool{}
	for _, ch := range touched {
		byFile[state.resolve(ch.entry.file)] = true
	}
	var cdcRows [][]any
	var cdcTypes []string
	var removes []delta.Remove
	var adds []delta.Add
	var kb []byte
	found := 0
	for _, f := range b.snap.Files {
		if !byFile[f.Path] {
			continue
		}
		frows, err := b.target.ReadFile(f.Path, tgtSch)
		if err != nil {
			return m, err
		}
		out := frows[:0:0]
		for _, r := range frows {
			kb = schema.AppendKey(kb[:0], pick(r, b.keyIdx))
			ch, ok := touched[string(kb)]
			if !ok {
				out = append(out, r)
				continue
			}
			found++
			if ch.what == updateRow {
				cdcRows = append(cdcRows, r, ch.win.row)
				cdcTypes = append(cdcTypes, delta.ChangeUpdatePreimage, delta.ChangeUpdatePostimage)
				out = append(out, ch.win.row)
				m.NumUpsertedRows++
			} else {
				cdcRows = append(cdcRows, r)
				cdcTypes = append(cdcTypes, delta.ChangeDelete)
				m.NumDeletedRows++
			}
		}
		rm, add, err := replaceFile(b.target, tgtSch, f, out, &state.stateLog, nowMs)
		if err != nil {
			return m, err
		}
		removes, adds = append(removes, rm), append(adds, add...)
	}
	if found != len(touched) {
		return m, fmt.Errorf("the CDC state of %s names data files that do not hold %d of the keys being changed; run %s", d.Name, len(touched)-found, RefreshHint(p, d.Name))
	}
	insertRows := make([][]any, 0, len(inserts))
	for _, ch := range inserts {
		insertRows = append(insertRows, ch.win.row)
		cdcRows = append(cdcRows, ch.win.row)
		cdcTypes = append(cdcTypes, delta.ChangeInsert)
		m.NumUpsertedRows++
	}
	m.NumOutputRows = m.NumUpsertedRows + m.NumDeletedRows

	// Write the inserts; record where each inserted key lives.
	changed := map[string]*cdcEntry{}
	insAdds, err := writeRows(b.target, tgtSch, insertRows, func(r []any, path string) {
		kb = schema.AppendKey(kb[:0], pick(r, b.keyIdx))
		e := state.entries[string(kb)]
		if e == nil {
			e = &cdcEntry{key: pick(r, b.keyIdx)}
			state.entries[string(kb)] = e
		}
		e.file = path
		changed[string(kb)] = e
	})
	if err != nil {
		return m, err
	}
	adds = append(adds, insAdds...)
	for i := range changes {
		ch := &changes[i]
		e := state.entries[ch.kb]
		if ch.what == truncateRow {
			e.deleted, e.deletedAt, e.file = true, nowMs, ""
			changed[ch.kb] = e
			continue
		}
		if e == nil {
			e = &cdcEntry{key: ch.win.key}
			state.entries[ch.kb] = e
		}
		e.seq = ch.win.seq
		e.deleted = ch.what == deleteRow || ch.what == tombstoneOnly
		if e.deleted {
			e.deletedAt = nowMs
			e.file = ""
		}
		changed[ch.kb] = e
	}
	state.truncate = trunc
	err = finishBatch(d, b, &m, batchFiles{cdcRows: cdcRows, cdcTypes: cdcTypes, removes: removes, adds: adds},
		func() (string, []segment, map[string]string, error) { return state.save(changed) }, state.remember,
		map[string]string{
			"numTargetRowsInserted": strconv.Itoa(len(inserts)),
			"numTargetRowsUpdated":  strconv.FormatInt(m.NumUpsertedRows-int64(len(inserts)), 10),
			"numTargetRowsDeleted":  strconv.FormatInt(m.NumDeletedRows, 10),
		})
	return m, err
}

// ensureFiles makes sure that the data file the state names for each touched live key is live in
// the snapshot; when one is not (the table was rewritten by an operation that does not keep the
// state, such as optimize), it rebuilds the key-to-file index by reading the key columns of every
// file of the snapshot.
func (s *cdcState) ensureFiles(t *delta.Table, snap *delta.Snapshot, tgtSch schema.Schema, keyIdx []int, touched map[string]*keyChange) error {
	live := make(map[string]bool, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	stale := false
	for _, ch := range touched {
		if !live[s.resolve(ch.entry.file)] {
			stale = true
			break
		}
	}
	if !stale {
		return nil
	}
	var kb []byte
	for _, f := range snap.Files {
		rows, err := t.ReadFile(f.Path, tgtSch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			kb = schema.AppendKey(kb[:0], pick(r, keyIdx))
			if e := s.entries[string(kb)]; e != nil {
				e.file = f.Path
			}
		}
	}
	s.renames, s.rebuilt = nil, true
	return nil
}

// locate names where an event came from: the input file and line when the source is an ingest
// flow of this pipeline, else the source table version and row.
func locate(p *spec.Pipeline, source string, c *delta.Commit, o origin) string {
	fallback := fmt.Sprintf("source table %s, version %d, row %d", source, o.version, o.row+1)
	if c == nil {
		return fallback
	}
	for _, t := range c.Txns {
		if t.AppID != AppID(p, source) {
			continue
		}
		off, err := readOffsets(CheckpointDir(p.Storage, source), t.Version)
		if err != nil {
			return fallback
		}
		if at := off.locate(o.row); at != "" {
			return at
		}
	}
	return fallback
}

func indexes(s schema.Schema, names []string) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = s.Index(n)
	}
	return out
}

func pick(r []any, idx []int) []any {
	out := make([]any, len(idx))
	for i, j := range idx {
		out[i] = r[j]
	}
	return out
}
