package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
)

// APPLY CHANGES FROM SNAPSHOT (semantics.md): every new snapshot is a full copy of the source. The
// flow compares it with the previous snapshot (what the target holds: its rows under SCD type 1,
// its open versions under SCD type 2) and turns the difference into change events at the
// snapshot's sequence: an upsert for each key that is new or whose row changed, a delete for each
// key that is missing. Unchanged keys give no event, so they give no change rows. The events go
// through the APPLY CHANGES engines (applySCD1, applySCD2), which rewrite only the files holding
// touched keys and make the one commit per snapshot: data, change data, CDC state and progress.
//
// The sequence of a snapshot, and the progress recorded in the target's txn action (appId = the
// flow), is:
//   - for a dataset source, the version of the source table: each new version whose commit
//     changed data is one snapshot (the whole table at that version); versions that changed no
//     data (metadata, optimize) hold the same rows as the one before and are skipped;
//   - for a folder of files, the file's position (1, 2, 3, ...) in name order: the files of each
//     snapshot are listed in <storage>/checkpoints/<dataset>/offsets/<N>.json before the commit
//     that records txn version N, exactly as an ingest batch is, so that each file is applied
//     once across runs and crashes.

// pendingSnapshot is one snapshot the target has not applied yet.
type pendingSnapshot struct {
	seq   int64
	label string // "file ...", "version N of source table ..."
	// progress is what the commit records: Version (the txn version) and Metadata.ID (the source
	// table's id, checked on the next run; empty for files).
	progress *delta.Snapshot
	read     func() ([][]any, error) // the rows, each followed by its position (int64)
	where    func(pos int64) string  // names a row's place: file:line, or its row in the version
	file     *offsets                // the offsets to write before the commit (files only)
}

// snapshotFlow is one run of an APPLY CHANGES FROM SNAPSHOT flow.
type snapshotFlow struct {
	env    *Env
	d      *spec.Dataset
	engine *spec.Dataset // d as an APPLY CHANGES target, for the SCD engines
	target *delta.Table
	appID  string
	data   schema.Schema // the snapshot's columns: the target's without __START_AT / __END_AT
	keyIdx []int
	keySch schema.Schema
	seqSch schema.Schema
	expect *expectations.Set
	// rescued is the index in data of a folder source's rescued-data column, or -1.
	rescued int
	m       Metrics
}

// ApplySnapshots runs the APPLY CHANGES FROM SNAPSHOT flow of dataset d: it applies, one commit
// each and in order, every snapshot the target has not applied yet (new versions of the source
// dataset, or new files in the source folder), and reports IDLE when there is none.
func ApplySnapshots(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	s := d.ApplyChangesFromSnapshot
	f := &snapshotFlow{env: env, d: d, target: delta.New(TableDir(env.Pipeline.Storage, d.Name)), appID: AppID(env.Pipeline, d.Name)}
	f.m.Version = -1
	eng := *d
	eng.ApplyChanges = &spec.ApplyChanges{
		Source: s.Source, Keys: s.Keys, SequenceBy: []string{spec.SnapshotSequenceColumn},
		StoredAsSCDType: s.StoredAsSCDType, Pos: s.Pos,
		TrackHistoryColumnList: s.TrackHistoryColumnList, TrackHistoryExceptColumnList: s.TrackHistoryExceptColumnList,
	}
	f.engine = &eng
	f.data = dataSchema(f.engine)
	f.keyIdx = indexes(f.data, s.Keys)
	f.keySch, _, _ = f.data.Select(s.Keys)
	f.seqSch = schema.Schema{Fields: []schema.Field{{Name: spec.SnapshotSequenceColumn, Type: schema.Type{Kind: schema.Long}, Nullable: true}}}
	f.rescued = -1
	if s.Files != nil && s.Files.RescuedDataColumn != "" {
		f.rescued = f.data.Index(s.Files.RescuedDataColumn)
	}
	var err error
	if f.expect, err = expectationSet(d, f.data); err != nil {
		return f.m, err
	}

	snap, err := f.target.Snapshot(-1)
	if err != nil {
		return f.m, err
	}
	if err := f.checkSettings(snap); err != nil {
		return f.m, err
	}
	var pending []pendingSnapshot
	if s.Files != nil {
		pending, err = f.pendingFiles(snap)
	} else {
		pending, err = f.pendingVersions(snap)
	}
	if err != nil || len(pending) == 0 {
		f.m.Idle = err == nil
		return f.m, err
	}
	prev, err := f.previous(snap)
	if err != nil {
		return f.m, err
	}
	for _, ps := range pending {
		if err := ctx.Err(); err != nil {
			return f.m, err
		}
		badBefore := f.m.BadRecords
		next, err := f.apply(ctx, ps, prev)
		if inc := incomplete(err); inc != nil {
			// A compressed snapshot file still being written: it and the snapshots named after
			// it (applied in name order) wait for a later update, as a file still settling does.
			f.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, f.d.Name, f.d.Name,
				fmt.Sprintf("%s; it and the snapshots after it are left for an update after it is complete (write files elsewhere and move them in once complete)", inc.Error()),
				map[string]any{"file": inc.path}, "")
			// Not Unsettled, which has continuous and dev mode run the flow again within a
			// second: the next poll or change of input looks at the file again.
			f.m.BadRecords = badBefore // the lines it read count when it is applied
			f.m.Incomplete++
			if ps.file != nil && len(ps.file.Files) == 1 {
				w := ps.file.Files[0]
				f.env.markWaiting(f.d.Name, inc.path, w.Size, w.ModTime)
			}
			if f.m.Version < 0 {
				f.m.Idle = true
			}
			return f.m, nil
		}
		if err != nil {
			return f.m, err
		}
		prev = next
	}
	return f.m, nil
}

// checkSettings refuses a target built with other keys or another SCD type (its CDC state is
// keyed and shaped by them), built by apply_changes, or built from the other kind of source (its
// progress counts source versions or files) (issue: guard rails).
func (f *snapshotFlow) checkSettings(snap *delta.Snapshot) error {
	_, sourceID, was, err := lastApply(f.target, snap)
	if err != nil || was == nil {
		return err
	}
	s := f.d.ApplyChangesFromSnapshot
	hint := RefreshHint(f.env.Pipeline, f.d.Name)
	if len(was.SequenceBy) != 1 || was.SequenceBy[0] != spec.SnapshotSequenceColumn {
		return fmt.Errorf("%s was built by apply_changes (sequence_by %s), not from snapshots; its CDC state cannot follow: run %s to rebuild it", f.d.Name, settingText(was.SequenceBy), hint)
	}
	if fromFiles := sourceID == ""; fromFiles != (s.Files != nil) {
		return fmt.Errorf("%s was built from snapshots of another kind of source (a dataset, or a folder of files); its progress cannot follow: run %s to rebuild it", f.d.Name, hint)
	}
	for _, c := range []struct {
		what     string
		old, cur any
	}{
		{"keys", was.Keys, s.Keys},
		{"stored_as_scd_type", was.StoredAsSCDType, s.StoredAsSCDType},
	} {
		if fmt.Sprint(c.old) != fmt.Sprint(c.cur) {
			return fmt.Errorf("apply_changes_from_snapshot.%s of %s changed from %s to %s since the table was built; its CDC state cannot follow: run %s to rebuild it", c.what, f.d.Name, settingText(c.old), settingText(c.cur), hint)
		}
	}
	return nil
}

// pendingVersions lists the versions of the source table after the last one applied that changed
// data, each a snapshot whose sequence is the version.
func (f *snapshotFlow) pendingVersions(snap *delta.Snapshot) ([]pendingSnapshot, error) {
	p := f.env.Pipeline
	name := f.d.ApplyChangesFromSnapshot.Source
	srcDS := p.Dataset(name)
	if srcDS == nil {
		return nil, fmt.Errorf("apply_changes_from_snapshot source %q is not a dataset of this pipeline", name)
	}
	last, ok := snap.AppTxns[f.appID]
	if !ok {
		last = -1
	}
	dir := TableDir(p.Storage, name)
	latest, err := delta.New(dir).Snapshot(-1)
	if err != nil {
		return nil, err
	}
	_, sourceID, _, err := lastApply(f.target, snap)
	if err != nil {
		return nil, err
	}
	if sourceID != "" && sourceID != latest.Metadata.ID {
		return nil, fmt.Errorf("the source table %s was re-created (a full refresh) or renamed since %s last read it: it is another table than the one %s was built from; run %s to rebuild %s from it", name, f.d.Name, f.d.Name, RefreshWithReaders(p, f.d.Name), f.d.Name)
	}
	if !latest.Metadata.Schema.Equal(srcDS.Schema) {
		return nil, fmt.Errorf("the source table %s has the columns (%s), not the (%s) its spec gives; run %s", name, latest.Metadata.Schema.DDL(), srcDS.Schema.DDL(), RefreshHint(p, name, f.d.Name))
	}
	source := delta.New(dir) // read forward from the oldest pending version, replaying the log once
	var out []pendingSnapshot
	for v := last + 1; v <= latest.Version; v++ {
		c, err := source.ReadCommit(v)
		if err != nil {
			return nil, err
		}
		if !changesData(c) {
			continue
		}
		label := fmt.Sprintf("version %d of source table %s", v, name)
		out = append(out, pendingSnapshot{
			seq: v, label: label,
			read: func() ([][]any, error) {
				at, err := source.Snapshot(v)
				if err != nil {
					return nil, err
				}
				rows, err := source.Rows(at)
				if errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("%s needs a data file that is gone (VACUUM deletes the files that only versions older than the retention need, %s), and %s applies every version of %s in turn: run %s to rebuild %s and its readers: %w",
						label, delta.ConfigDeletedFileRetention, f.d.Name, name, RefreshWithReaders(p, name), name, err)
				}
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", label, err)
				}
				for i := range rows {
					rows[i] = append(rows[i], int64(i))
				}
				return rows, nil
			},
			where:    func(pos int64) string { return fmt.Sprintf("row %d", pos+1) },
			progress: &delta.Snapshot{Version: v, Metadata: latest.Metadata},
		})
	}
	return out, nil
}

// changesData reports whether a commit added or removed data (dataChange true).
func changesData(c *delta.Commit) bool {
	for _, a := range c.Adds {
		if a.DataChange {
			return true
		}
	}
	for _, r := range c.Removes {
		if r.DataChange {
			return true
		}
	}
	return false
}

// pendingFiles lists the files of the source folder that no committed snapshot applied, in name
// order, each a snapshot whose sequence is its position among all the files applied.
func (f *snapshotFlow) pendingFiles(snap *delta.Snapshot) ([]pendingSnapshot, error) {
	p := f.env.Pipeline
	src := f.d.ApplyChangesFromSnapshot.Files
	committed := snap.AppTxns[f.appID]
	ckpt := CheckpointDir(p.Storage, f.d.Name)
	seen, err := committedFiles(ckpt, committed)
	if err != nil {
		return nil, err
	}
	newest := ""
	for path := range seen {
		newest = max(newest, path)
	}
	base, files, dangling, err := listInputs(src.Path)
	if err != nil {
		return nil, err
	}
	reportDangling(f.env, f.d.Name, f.d.Name, dangling)
	if err := checkBase(ckpt, committed, base, f.d.Name, func() string { return RefreshWithReaders(p, f.d.Name) }); err != nil {
		return nil, err
	}
	var out []pendingSnapshot
	for _, in := range files {
		if old, read := seen[in.rel]; read {
			if old.Size != in.size || old.ModTime != in.modTime {
				f.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, f.d.Name, f.d.Name,
					fmt.Sprintf("snapshot file %s changed after it was applied (size %d → %d bytes); it is not applied again. Land snapshot files complete, under a new name each", pipelinePath(f.env.Pipeline, in.abs), old.Size, in.size),
					map[string]any{"file": in.abs}, "")
				f.m.ChangedFiles++
			}
			continue
		}
		if in.rel < newest {
			return nil, fmt.Errorf("snapshot file %s is new but sorts before %s, which was applied already: snapshots are applied in name order, and an older snapshot cannot follow a newer one. Move it out of %s, give it a name that sorts after %s to apply it as the newest snapshot, or run %s to rebuild %s from every file in name order",
				in.abs, newest, src.Path, newest, RefreshWithReaders(p, f.d.Name), f.d.Name)
		}
		if f.env.waitingFile(f.d.Name, in.abs, in.size, in.modTime) {
			// Found incomplete earlier in this update (continuous mode) and unchanged since:
			// it and the snapshots after it go on waiting, without a read or a WARN again.
			f.m.Incomplete++
			break
		}
		if f.env.settling(in.modTime) {
			// Still being written, perhaps: it and the snapshots after it (applied in name
			// order) wait for a later update.
			f.m.Unsettled++
			break
		}
		seq := committed + int64(len(out)) + 1
		out = append(out, pendingSnapshot{
			seq: seq, label: "snapshot file " + in.abs,
			read:     func() ([][]any, error) { return f.readFile(in) },
			where:    func(line int64) string { return fmt.Sprintf("%s:%d", in.abs, line) },
			progress: &delta.Snapshot{Version: seq},
			file:     &offsets{Batch: seq, Base: base, Files: []offsetFile{{Path: in.rel, Size: in.size, ModTime: in.modTime}}},
		})
	}
	return out, nil
}

// readFile reads one snapshot file as an ingest flow reads a file (semantics.md "Ingestion"):
// typed by the declared schema, a value that does not fit is NULL and reported, a line that is
// not JSON is a row of NULLs (dropped under mode dropmalformed; failfast fails). Each row is
// followed by its line number.
func (f *snapshotFlow) readFile(in inputFile) ([][]any, error) {
	src := f.d.ApplyChangesFromSnapshot.Files
	r, err := openInput(in.abs, readLines(src))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var rows [][]any
	warned := 0
	var failed error // a bad line under mode failfast; it names the file and line itself
	err = eachRow(src, in.abs, r, nil, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
		if len(bad) > 0 {
			f.m.BadRecords += int64(len(bad))
			where := fmt.Sprintf("%s:%d", pipelinePath(f.env.Pipeline, in.abs), lineNo) // as every WARN names a file
			if src.Mode == spec.ModeFailFast {
				failed = fmt.Errorf("%s: %s (mode: failfast; fix the line or use mode: permissive)", where, bad[0].Reason)
				if bad[0].Column != "" {
					failed = fmt.Errorf("%s: column %s: %s (mode: failfast; fix the value or use mode: permissive)", where, bad[0].Column, bad[0].Reason)
				}
				return failed
			}
			if warned < maxWarnEvents {
				warned++
				msg := fmt.Sprintf("%s: %s; the row is kept with NULLs", where, bad[0].Reason)
				switch {
				case !parsed && src.Mode == spec.ModeDropMalformed:
					msg = fmt.Sprintf("%s: dropped a malformed line (mode: dropmalformed): %s", where, bad[0].Reason)
				case bad[0].Column != "":
					msg = fmt.Sprintf("%s: column %s: %s; the value is NULL", where, bad[0].Column, bad[0].Reason)
				}
				f.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, f.d.Name, f.d.Name, msg, map[string]any{"file": in.abs, "line": lineNo}, "")
			}
			if !parsed && src.Mode == spec.ModeDropMalformed {
				return nil
			}
		}
		rows = append(rows, append(row, lineNo))
		return nil
	}, func(msg string) {
		msg = strings.ReplaceAll(msg, in.abs, pipelinePath(f.env.Pipeline, in.abs))
		f.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, f.d.Name, f.d.Name, msg, map[string]any{"file": in.abs}, "")
	})
	switch {
	case failed != nil:
		return nil, failed
	case damaged(err):
		// The rows after the damage are unknown: applied, the snapshot would delete their keys.
		return nil, fmt.Errorf("%w; a snapshot file is applied whole or not at all (write files elsewhere and move them in once complete)", err)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", in.abs, err)
	}
	f.m.Files++
	return rows, nil
}

// keyed is a snapshot (or the target's content) by key: rows in first-seen order.
type keyed struct {
	rows  map[string][]any
	order []string
}

// previous returns what the target holds: the previous snapshot, by key. Under SCD type 2 that
// is the open versions (__END_AT NULL), without __START_AT / __END_AT.
func (f *snapshotFlow) previous(snap *delta.Snapshot) (*keyed, error) {
	rows, err := f.target.Rows(snap)
	if err != nil {
		return nil, err
	}
	out := &keyed{rows: make(map[string][]any, len(rows))}
	n := len(f.data.Fields)
	scd2 := f.engine.ApplyChanges.StoredAsSCDType == 2
	dblKeys := doubleKeyCols(f.data, f.keyIdx)
	var kb []byte
	for _, r := range rows {
		if scd2 && r[n+1] != nil {
			continue // a closed version
		}
		r = r[:n:n]
		for _, j := range dblKeys {
			r[j], _ = canonicalDouble(r[j])
		}
		kb = schema.AppendKey(kb[:0], pick(r, f.keyIdx))
		if _, dup := out.rows[string(kb)]; !dup {
			out.order = append(out.order, string(kb))
		}
		out.rows[string(kb)] = r
	}
	return out, nil
}

// apply applies one snapshot against prev (the target's content) in one commit and returns the
// snapshot by key, the target's content after it. Once ctx is done it commits nothing (changeBatch.ctx).
func (f *snapshotFlow) apply(ctx context.Context, ps pendingSnapshot, prev *keyed) (*keyed, error) {
	rows, err := ps.read()
	if err != nil {
		return nil, err
	}
	nSource := len(rows)
	kept, q, err := f.expect.Check(rows)
	f.m.Quality.Add(q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ps.label, err)
	}
	cur, err := f.byKey(ps, kept)
	if err != nil {
		return nil, err
	}

	// The difference with the previous snapshot, as change events at the snapshot's sequence.
	seq := []any{ps.seq}
	var events []event
	for _, k := range cur.order {
		r := cur.rows[k]
		if old, ok := prev.rows[k]; ok && f.sameRow(old, r) {
			continue
		}
		events = append(events, event{key: pick(r, f.keyIdx), seq: seq, row: r, arrival: len(events)})
	}
	for _, k := range prev.order {
		if _, ok := cur.rows[k]; !ok {
			r := prev.rows[k]
			events = append(events, event{key: pick(r, f.keyIdx), seq: seq, row: r, delete: true, arrival: len(events)})
		}
	}

	snap, err := f.target.Snapshot(-1)
	if err != nil {
		return nil, err
	}
	stateID, _, _, err := lastApply(f.target, snap)
	if err != nil {
		return nil, err
	}
	b := &changeBatch{
		target: f.target, snap: snap, appID: f.appID, srcSnap: ps.progress, stateID: stateID,
		progress: ps.progress.Version, sourceID: ps.progress.Metadata.ID,
		events: events, dataSch: f.data, keyIdx: f.keyIdx, keySch: f.keySch, seqSch: f.seqSch, nSource: nSource,
		ctx: ctx,
	}
	if ps.file != nil {
		if err := writeOffsets(CheckpointDir(f.env.Pipeline.Storage, f.d.Name), ps.file); err != nil {
			return nil, fmt.Errorf("writing the offsets of snapshot %d: %w", ps.seq, err)
		}
	}
	var m Metrics
	if f.engine.ApplyChanges.StoredAsSCDType == 2 {
		m, err = applySCD2(f.env, f.engine, b, Metrics{Version: -1})
	} else {
		m, err = applySCD1(f.env, f.engine, b, Metrics{Version: -1})
	}
	if err != nil {
		return nil, fmt.Errorf("applying %s: %w", ps.label, err)
	}
	f.m.NumOutputRows += m.NumOutputRows
	f.m.NumUpsertedRows += m.NumUpsertedRows
	f.m.NumDeletedRows += m.NumDeletedRows
	f.m.Version = m.Version
	return cur, nil
}

// sameRow reports whether a key's row in a snapshot equals its row in the previous one. The
// rescued-data column of a folder source is compared without its _file_path, which names the
// snapshot's own file: a row read again from the next file, its rescued fields the same, is
// unchanged (the table keeps the path of the file that set it).
func (f *snapshotFlow) sameRow(old, cur []any) bool {
	if f.rescued < 0 || len(old) != len(cur) {
		return sameRow(old, cur)
	}
	for i := range cur {
		if i == f.rescued {
			if !sameRescued(old[i], cur[i]) {
				return false
			}
		} else if !schema.Equal(old[i], cur[i]) {
			return false
		}
	}
	return true
}

// sameRescued compares two rescued-data values (JSON objects) without their _file_path.
func sameRescued(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y map[string]any
	if json.Unmarshal([]byte(a.(string)), &x) != nil || json.Unmarshal([]byte(b.(string)), &y) != nil {
		return a == b
	}
	delete(x, "_file_path")
	delete(y, "_file_path")
	return reflect.DeepEqual(x, y)
}

// byKey indexes a snapshot's rows (each followed by its position) by key. A NULL in a key column
// and two different rows for one key fail the snapshot; identical repeats count once.
func (f *snapshotFlow) byKey(ps pendingSnapshot, rows [][]any) (*keyed, error) {
	n := len(f.data.Fields)
	out := &keyed{rows: make(map[string][]any, len(rows))}
	at := map[string]int64{}
	keys := f.d.ApplyChangesFromSnapshot.Keys
	nulls := make([]int64, len(keys))
	firstNull := make([]int64, len(keys))
	dblKeys := doubleKeyCols(f.data, f.keyIdx)
	var kb []byte
	for _, r := range rows {
		pos := r[n].(int64)
		r = r[:n:n]
		for _, j := range dblKeys {
			r[j], _ = canonicalDouble(r[j])
		}
		key := pick(r, f.keyIdx)
		null := false
		for j, v := range key {
			if v == nil {
				if nulls[j] == 0 {
					firstNull[j] = pos
				}
				nulls[j]++
				null = true
			}
		}
		if null {
			continue
		}
		kb = schema.AppendKey(kb[:0], key)
		k := string(kb)
		if old, dup := out.rows[k]; dup {
			if sameRow(old, r) {
				continue
			}
			return nil, fmt.Errorf("%s has two different rows for the key %s (at %s and %s); a snapshot holds one row per key: fix the snapshot, or name more columns in apply_changes_from_snapshot.keys of %s",
				ps.label, expectations.RowJSON(f.keySch, key), ps.where(at[k]), ps.where(pos), f.d.Name)
		}
		out.rows[k], at[k] = r, pos
		out.order = append(out.order, k)
	}
	var parts []string
	for j, c := range nulls {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%d row(s) have a NULL in the key column %s (first at %s)", c, keys[j], ps.where(firstNull[j])))
		}
	}
	if len(parts) > 0 {
		return nil, fmt.Errorf("%s: %s; nothing of this snapshot was applied. Fix the snapshot, or drop such rows with an expectation on %s (e.g. `%s != nil` with on_violation: drop)",
			ps.label, strings.Join(parts, "; "), f.d.Name, keys[0])
	}
	return out, nil
}
