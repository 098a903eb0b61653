package flows

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// deltaSourceKey is the commitInfo key under which a batch read from a Delta source records the
// id (metaData.id) of the source table, so that a re-created source is noticed.
const deltaSourceKey = "tributaryDeltaSourceTableId"

// ReadDelta runs the flow of a streaming table fed by a Delta table (`source:` with
// `format: delta`). Each batch reads the source versions committed since the last batch, up to
// the source's latest version, and appends them in one commit whose txn (the flow's appId)
// records that version:
//   - `read: append`: the rows of the add actions with dataChange true; a version that removes
//     data (UPDATE, DELETE, MERGE) fails the flow naming it, or is skipped with
//     skip_change_commits. Versions that only rearrange files (OPTIMIZE) add nothing.
//   - `read: change_feed`: the source's change data feed (Table.Changes), with _change_type,
//     _commit_version and _commit_timestamp; for a `table:` source (another dataset of the
//     pipeline) without its update_preimage rows.
//
// The first batch starts at starting_version, or, without one, reads the latest snapshot's rows
// (for a change feed: as inserts of the snapshot's version) and continues after it, as a Spark
// streaming read of a Delta table does. Expectations check the rows read.
func ReadDelta(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	m := Metrics{Version: -1}
	p, src := env.Pipeline, d.Source
	target := delta.New(TableDir(p.Storage, d.Name))
	snap, err := target.Snapshot(-1)
	if err != nil {
		return m, err
	}
	appID := AppID(p, d.Name)
	last, started := snap.AppTxns[appID]
	source := delta.New(src.Path)
	srcSnap, err := source.Snapshot(-1)
	if err != nil {
		return m, fmt.Errorf("reading the source table %s: %w", src.Path, err)
	}
	if started {
		if id := lastDeltaSource(target, snap); id != "" && id != srcSnap.Metadata.ID {
			return m, fmt.Errorf("the source table %s was re-created (its id changed) since %s last read it; run %s to read it again from the start", src.Path, d.Name, RefreshWithReaders(p, d.Name))
		}
	}
	latest := srcSnap.Version
	from := last + 1
	if !started {
		from = src.StartingVersion
	}
	if from > latest {
		m.Idle = true
		return m, nil
	}
	if !started && from >= 0 {
		// starting_version names a version metadata cleanup may have deleted.
		if logStart, err := source.FirstCommit(); err != nil {
			return m, err
		} else if from < logStart {
			what := src.Path
			if src.Table != "" {
				what = src.Table
			}
			return m, fmt.Errorf("%s reads %s from starting_version %d, but the log of %s now starts at version %d (metadata cleanup deleted the versions before it, %s); set starting_version of %s to %d or more, or leave it out to read %s from its latest snapshot", d.Name, what, from, what, logStart, delta.ConfigLogRetention, d.Name, logStart, what)
		}
	}
	first := from
	if from < 0 {
		first = latest
	}

	var rows [][]any
	switch {
	case from < 0: // the first batch without starting_version: the latest snapshot
		if rows, err = source.Rows(srcSnap); err != nil {
			return m, err
		}
		if src.Read == spec.ReadChangeFeed {
			ts := schema.Timestamp(srcSnap.Timestamp * 1000)
			for i, r := range rows {
				rows[i] = append(r, delta.ChangeInsert, srcSnap.Version, ts)
			}
		}
	case src.Read == spec.ReadChangeFeed:
		var cs schema.Schema
		var fsc *delta.FeedSchemaChangeError
		if cs, rows, err = source.Changes(from, latest); errors.As(err, &fsc) {
			// As a Delta stream of a change feed stops at such a version: the reader starts
			// again past it, or from the table as it is now.
			if src.StartingVersion >= 0 {
				return m, fmt.Errorf("%w; %s reads the feed from starting_version %d, so set starting_version to %d (the first version past the change; version %d and the versions before it are then not read) and run %s", err, d.Name, src.StartingVersion, fsc.Version+1, fsc.Version, RefreshHint(p, d.Name))
			}
			return m, fmt.Errorf("%w; %s reads the feed from where it stopped, so run %s to read %s again from its current version", err, d.Name, RefreshHint(p, d.Name), src.Path)
		} else if err != nil {
			return m, vacuumedHint(err, p, d, src.Path, src.StartingVersion >= 0)
		}
		if !cs.Equal(d.Schema) {
			return m, fmt.Errorf("the change data feed of %s has the columns (%s) but %s was set up with (%s); run %s", src.Path, cs.DDL(), d.Name, d.Schema.DDL(), RefreshHint(p, d.Name))
		}
	default:
		for v := from; v <= latest; v++ {
			if err := ctx.Err(); err != nil {
				return m, err
			}
			c, err := source.ReadCommit(v)
			if err != nil {
				return m, vacuumedHint(err, p, d, src.Path, src.StartingVersion >= 0)
			}
			changes := false
			for _, r := range c.Removes {
				changes = changes || r.DataChange
			}
			if changes {
				if src.SkipChangeCommits {
					continue
				}
				return m, fmt.Errorf("source table %s updated or deleted rows in version %d (operation %s); `read: append` reads appends only: set `skip_change_commits: true` to skip such versions, or use `read: change_feed`", src.Path, v, c.Info.Operation)
			}
			vs, err := source.Snapshot(v)
			if err != nil {
				return m, err
			}
			for _, a := range c.Adds {
				if !a.DataChange {
					continue
				}
				fr, err := source.FileRows(vs.Metadata, a)
				if err != nil {
					return m, vacuumedHint(err, p, d, src.Path, src.StartingVersion >= 0)
				}
				rows = append(rows, fr...)
				m.Files++
			}
		}
	}
	if src.Table != "" && src.Read == spec.ReadChangeFeed {
		rows = withoutPreimages(rows, d.Schema.Index(delta.ChangeTypeColumn))
	}
	for _, r := range rows {
		if len(r) != len(d.Schema.Fields) {
			return m, fmt.Errorf("the source table %s has %d columns but %s was set up with (%s); run %s", src.Path, len(r), d.Name, d.Schema.DDL(), RefreshHint(p, d.Name))
		}
	}

	set, err := expectationSet(d, d.Schema)
	if err != nil {
		return m, err
	}
	kept, q, err := set.Check(rows)
	m.Quality.Add(q)
	if err != nil {
		return m, err
	}
	var adds []delta.Add
	if len(kept) > 0 {
		if adds, err = target.WriteData(snap.Metadata, kept); err != nil {
			return m, err
		}
	}
	m.NumOutputRows = int64(len(kept))
	tx := target.Begin(snap)
	tx.Add(adds...)
	tx.SetAppTxn(appID, latest)
	tx.SetCommitInfo(map[string]any{deltaSourceKey: srcSnap.Metadata.ID}, map[string]string{
		"numFiles": strconv.Itoa(len(adds)), "numOutputRows": strconv.Itoa(len(kept)),
		"sourceStartVersion": strconv.FormatInt(first, 10), "sourceEndVersion": strconv.FormatInt(latest, 10),
	})
	v, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "queryId": appID, "epochId": latest})
	if err != nil {
		return m, err
	}
	m.Version = v
	return m, nil
}

// lastDeltaSource returns the source table id the newest batch of the target recorded, or ""
// when no commit still in the log records one (the log before a checkpoint may be gone).
func lastDeltaSource(t *delta.Table, snap *delta.Snapshot) string {
	for v := snap.Version; v >= 0; v-- {
		c, err := t.ReadCommit(v)
		if err != nil {
			return ""
		}
		if id, ok := c.Info.Extra[deltaSourceKey].(string); ok {
			return id
		}
	}
	return ""
}

// vacuumedHint adds to err, when it says that a file of the source table is gone (VACUUM, or a
// log cleanup, removed what the versions d has not read yet need: d fell behind the source's
// retention), how d goes on: a full refresh reads the source again from its latest snapshot, as
// a first read does (from starting_version when d sets one: then a later one is needed), with
// the datasets that read d, which a rebuilt d is a new source to.
func vacuumedHint(err error, p *spec.Pipeline, d *spec.Dataset, source string, fromStartingVersion bool) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	how := fmt.Sprintf("run %s to read it again from its latest snapshot", RefreshWithReaders(p, d.Name))
	if fromStartingVersion {
		how = fmt.Sprintf("set a later starting_version on %s (one `pipeline history` of the source still reads) and run %s", d.Name, RefreshWithReaders(p, d.Name))
	}
	return fmt.Errorf("%s fell behind its source %s, whose files of the versions it has not read yet are gone (VACUUM deletes files older than the source's delta.deletedFileRetentionDuration): %s: %w", d.Name, source, how, err)
}
