package flows

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/expectations"
	"tributary/internal/fault"
	"tributary/schema"
	"tributary/spec"
)

// targetFileRows is the most rows an APPLY CHANGES commit puts in one data file.
const targetFileRows = 1_000_000

// defaultTombstoneGCSeconds is pipelines.cdc.tombstoneGCThresholdInSeconds when unset (semantics.md).
const defaultTombstoneGCSeconds = 172800

// origin is where an event came from: a version of the source table and its row index there.
type origin struct {
	version int64
	row     int64
}

// ApplyChanges runs the APPLY CHANGES flow (SCD type 1) of dataset d: it reads the commits of the
// source table that the target has not applied yet, checks the dataset's expectations on those
// change events, and applies them by the rules of semantics.md "APPLY CHANGES": per key the highest
// sequence wins, late and duplicate events change nothing, deletes leave tombstones. Only the data
// files that hold touched keys are rewritten. Data, change data (cdc) files, the CDC state manifest
// and the progress (txn appId = the flow, version = last source version) are one commit.
func ApplyChanges(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	m := Metrics{Version: -1}
	ac := d.ApplyChanges
	p := env.Pipeline
	srcDS := p.Dataset(ac.Source)
	if srcDS == nil {
		return m, fmt.Errorf("apply_changes source %q is not a dataset of this pipeline", ac.Source)
	}
	srcSch, tgtSch := srcDS.Schema, d.Schema
	target := delta.New(TableDir(p.Storage, d.Name))
	snap, err := target.Snapshot(-1)
	if err != nil {
		return m, err
	}
	appID := AppID(p, d.Name)
	last, ok := snap.AppTxns[appID]
	if !ok {
		last = -1
	}
	source := delta.New(TableDir(p.Storage, ac.Source))
	srcSnap, err := source.Snapshot(-1)
	if err != nil {
		return m, err
	}
	latest := srcSnap.Version
	stateID, sourceID, err := lastApply(target, snap)
	if err != nil {
		return m, err
	}
	if sourceID != "" && sourceID != srcSnap.Metadata.ID {
		return m, fmt.Errorf("the source table %s was re-created (a full refresh) since %s last read it; run %s to rebuild %s from it", ac.Source, d.Name, RefreshHint(p, d.Name), d.Name)
	}
	if latest <= last {
		m.Idle = true
		return m, nil
	}

	// 1. Read the new change events, in arrival order, each with its origin appended.
	var rows [][]any
	commits := map[int64]*delta.Commit{}
	nsrc := len(srcSch.Fields)
	for v := last + 1; v <= latest; v++ {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		c, err := source.ReadCommit(v)
		if err != nil {
			return m, err
		}
		commits[v] = c
		for _, r := range c.Removes {
			if r.DataChange {
				return m, fmt.Errorf("source table %s changed or deleted existing rows in version %d (operation %s); APPLY CHANGES reads an append-only source: run %s", ac.Source, v, c.Info.Operation, RefreshHint(p, d.Name))
			}
		}
		var idx int64
		for _, a := range c.Adds {
			if !a.DataChange {
				continue
			}
			fr, err := source.ReadFile(a.Path, srcSch)
			if err != nil {
				return m, err
			}
			for _, r := range fr {
				rows = append(rows, append(r, origin{version: v, row: idx}))
				idx++
			}
		}
	}

	// 2. Expectations check the incoming change events before they are applied.
	set, err := expectationSet(d, srcSch)
	if err != nil {
		return m, err
	}
	rows, m.Quality, err = set.Check(rows)
	if err != nil {
		return m, err
	}

	// 3. Events: keys, sequence, delete flag, target columns. NULL keys or sequences fail the batch.
	keyIdx := indexes(srcSch, ac.Keys)
	seqIdx := indexes(srcSch, ac.SequenceBy)
	projIdx := indexes(srcSch, tgtSch.Names())
	var delProg *expectations.Program
	if ac.ApplyAsDeletes != "" {
		if delProg, err = expectations.Compile(ac.ApplyAsDeletes, srcSch); err != nil {
			return m, fmt.Errorf("apply_as_deletes: %w", err)
		}
	}
	events := make([]event, len(rows))
	nullCols := append(append([]string(nil), ac.Keys...), ac.SequenceBy...)
	nullCounts := make([]int64, len(nullCols))
	nullAt := make([]origin, len(nullCols))
	anyNull := false
	for i, r := range rows {
		ev := event{key: pick(r, keyIdx), seq: pick(r, seqIdx), row: pick(r, projIdx), arrival: i}
		for j, v := range append(ev.key, ev.seq...) {
			if v == nil {
				if nullCounts[j] == 0 {
					nullAt[j] = r[nsrc].(origin)
				}
				nullCounts[j]++
				anyNull = true
			}
		}
		if delProg != nil {
			ev.delete, _ = delProg.Eval(r)
		}
		events[i] = ev
	}
	if anyNull {
		var parts []string
		for j, n := range nullCounts {
			if n == 0 {
				continue
			}
			kind := "key column"
			if j >= len(ac.Keys) {
				kind = "sequence_by column"
			}
			parts = append(parts, fmt.Sprintf("%d change event(s) have a NULL in the %s %s (first at %s)", n, kind, nullCols[j], locate(p, ac.Source, commits[nullAt[j].version], nullAt[j])))
		}
		return m, fmt.Errorf("%s; nothing of this batch was applied. Drop such events with an expectation on %s (e.g. `%s != nil` with on_violation: drop), then run again; the events are already in %s, so fixing the input files needs %s",
			strings.Join(parts, "; "), d.Name, nullCols[0], ac.Source, RefreshHint(p, ac.Source, d.Name))
	}

	// 4. Reduce to one winner per key and compare with the CDC state.
	gc := int64(defaultTombstoneGCSeconds)
	if s, ok := d.TableProperties["pipelines.cdc.tombstoneGCThresholdInSeconds"]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			gc = n
		}
	}
	now := env.now()
	keySch, _, _ := srcSch.Select(ac.Keys)
	seqSch, _, _ := srcSch.Select(ac.SequenceBy)
	state, err := loadState(StateDir(p.Storage, d.Name), target, snap, stateID, keySch, seqSch, now.UnixMilli(), gc*1000)
	if err != nil {
		return m, err
	}
	tgtKeyIdx := indexes(tgtSch, ac.Keys)
	if err := state.checkFiles(target, snap, tgtSch, tgtKeyIdx); err != nil {
		return m, err
	}
	red := reduce(events)
	changes, storedTies := decide(red, state.entries)
	m.Ties = red.ties + storedTies
	if m.Ties > 0 {
		env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
			fmt.Sprintf("%d change event(s) tied on key and sequence with a different event; a delete beat an upsert and, between upserts, the later arrival won", m.Ties),
			map[string]any{"ties": m.Ties}, "")
	}

	// 5. Copy-on-write: rewrite the files holding updated or deleted keys, add inserts.
	touched := map[string]*keyChange{}
	byFile := map[string]bool{}
	var inserts []*keyChange
	for i := range changes {
		ch := &changes[i]
		switch ch.what {
		case updateRow, deleteRow:
			touched[ch.kb] = ch
			byFile[ch.entry.file] = true
		case insertRow:
			inserts = append(inserts, ch)
		}
	}
	var out [][]any
	var cdcRows [][]any
	var cdcTypes []string
	var removes []delta.Remove
	var kb []byte
	found := 0
	nowMs := now.UnixMilli()
	for _, f := range snap.Files {
		if !byFile[f.Path] {
			continue
		}
		frows, err := target.ReadFile(f.Path, tgtSch)
		if err != nil {
			return m, err
		}
		for _, r := range frows {
			kb = schema.AppendKey(kb[:0], pick(r, tgtKeyIdx))
			ch, ok := touched[string(kb)]
			if !ok {
				out = append(out, r)
				continue
			}
			found++
			if ch.what == updateRow {
				cdcRows = append(cdcRows, r, ch.win.row)
				cdcTypes = append(cdcTypes, "update_preimage", "update_postimage")
				out = append(out, ch.win.row)
				m.NumUpsertedRows++
			} else {
				cdcRows = append(cdcRows, r)
				cdcTypes = append(cdcTypes, "delete")
				m.NumDeletedRows++
			}
		}
		removes = append(removes, target.RemoveFor(f, nowMs))
	}
	if found != len(touched) {
		return m, fmt.Errorf("the CDC state of %s names data files that do not hold %d of the keys being changed; run %s", d.Name, len(touched)-found, RefreshHint(p, d.Name))
	}
	for _, ch := range inserts {
		out = append(out, ch.win.row)
		cdcRows = append(cdcRows, ch.win.row)
		cdcTypes = append(cdcTypes, "insert")
		m.NumUpsertedRows++
	}
	m.NumOutputRows = m.NumUpsertedRows + m.NumDeletedRows

	// 6. Write data and change files; record where every written key now lives.
	changed := map[string]*cdcEntry{}
	var adds []delta.Add
	for start := 0; start < len(out); start += targetFileRows {
		end := min(start+targetFileRows, len(out))
		add, err := target.WriteFile(tgtSch, out[start:end])
		if err != nil {
			return m, err
		}
		adds = append(adds, add)
		for _, r := range out[start:end] {
			kb = schema.AppendKey(kb[:0], pick(r, tgtKeyIdx))
			e := state.entries[string(kb)]
			if e == nil {
				e = &cdcEntry{key: pick(r, tgtKeyIdx)}
				state.entries[string(kb)] = e
			}
			e.file = add.Path
			changed[string(kb)] = e
		}
	}
	for i := range changes {
		ch := &changes[i]
		e := state.entries[ch.kb]
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
	var cdcs []delta.CDC
	if len(cdcRows) > 0 {
		c, err := target.WriteCDCFile(tgtSch, cdcRows, cdcTypes)
		if err != nil {
			return m, err
		}
		cdcs = append(cdcs, c)
	}
	id, segs, err := state.save(changed)
	if err != nil {
		return m, err
	}
	fault.Point("apply.after-data-files")

	// 7. One commit: data, change data, state manifest and progress.
	tx := target.Begin(snap)
	tx.Remove(removes...)
	tx.Add(adds...)
	tx.AddCDC(cdcs...)
	tx.SetAppTxn(appID, latest)
	tx.SetCommitInfo(map[string]any{stateKey: id, sourceKey: srcSnap.Metadata.ID}, map[string]string{
		"numTargetRowsInserted": strconv.Itoa(len(inserts)),
		"numTargetRowsUpdated":  strconv.FormatInt(m.NumUpsertedRows-int64(len(inserts)), 10),
		"numTargetRowsDeleted":  strconv.FormatInt(m.NumDeletedRows, 10),
		"numSourceRows":         strconv.Itoa(len(events)),
		"numTargetFilesAdded":   strconv.Itoa(len(adds)),
		"numTargetFilesRemoved": strconv.Itoa(len(removes)),
	})
	v, err := tx.Commit("MERGE", map[string]any{"predicate": "APPLY CHANGES keys " + fmt.Sprint(ac.Keys) + " sequence_by " + fmt.Sprint(ac.SequenceBy)})
	if err != nil {
		return m, err
	}
	m.Version = v
	state.remember(id, segs)
	fault.Point("apply.after-commit")
	return m, nil
}

// checkFiles makes sure every live key's data file is live in the snapshot; when not (the table
// was rewritten by an operation that does not maintain the state), it rebuilds the file index by
// reading the key columns of the snapshot's files.
func (s *cdcState) checkFiles(t *delta.Table, snap *delta.Snapshot, tgtSch schema.Schema, keyIdx []int) error {
	live := make(map[string]bool, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	stale := false
	for _, e := range s.entries {
		if !e.deleted && !live[e.file] {
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
