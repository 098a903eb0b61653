package flows

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"tributary/delta"
	"tributary/spec"
)

// firstCommit returns, for a flow (reader) that reads the commits of the pipeline's table name
// (source, at its latest snapshot) after version last (-1: it has read none), a commit standing for versions that cannot be read
// one by one any more, and the version to read on from. A reader that read some versions reads
// on from last+1 (nil); one that read part of the versions metadata cleanup
// (delta.Table.CleanupExpiredLogs) deleted cannot go on: that is an error naming the full
// refresh (LogFloor keeps the versions the pipeline's readers need, so it takes a table changed
// by another program). A reader that has read nothing reads the versions one by one from the
// log's first while it starts at version 0 and every file they added is still there; otherwise
// it starts, as a Delta streaming read does, from a snapshot: the latest one when a file added
// by a version was compacted away and vacuumed since (OPTIMIZE, then VACUUM), else the one at
// the log's first version (which keeps its checkpoint). The stand-in is a commit at the
// snapshot's version whose adds are its files, all with dataChange true: an append-only
// table's rows up to that version.
func firstCommit(p *spec.Pipeline, source *delta.Table, latest *delta.Snapshot, name string, reader string, last int64) (*delta.Commit, int64, error) {
	first, err := source.FirstCommit()
	if err != nil || first < 0 {
		return nil, last + 1, err
	}
	if last >= 0 {
		if first > last+1 {
			return nil, 0, fmt.Errorf("%s read %s up to version %d, but the log of %s now starts at version %d (metadata cleanup deleted the versions between, %s); run %s to read %s again from its current snapshot", reader, name, last, name, first, delta.ConfigLogRetention, RefreshHint(p, reader), name)
		}
		return nil, last + 1, nil
	}
	var atFirst *delta.Snapshot // the snapshot at the log's first version, when it is not 0
	if first > 0 {
		if atFirst, err = source.Snapshot(first); err != nil {
			return nil, 0, err
		}
	}
	at := latest
	if vacuumed, err := removedAndGone(source, latest, atFirst, first); err != nil {
		return nil, 0, err
	} else if !vacuumed {
		if first == 0 {
			return nil, 0, nil
		}
		at = atFirst
	}
	c := &delta.Commit{Version: at.Version, Adds: make([]delta.Add, len(at.Files))}
	for i, a := range at.Files {
		a.DataChange = true
		c.Adds[i] = a
	}
	return c, at.Version, nil
}

// removedAndGone reports whether a logical file (a data file with its deletion vector) that is no
// longer in source's latest snapshot, and that
// a version from first on added or the snapshot atFirst at version first (nil for version 0)
// holds (added by commits metadata cleanup deleted), is gone from the table folder (vacuumed).
func removedAndGone(source *delta.Table, latest, atFirst *delta.Snapshot, first int64) (bool, error) {
	live := make(map[string]bool, len(latest.Files)) // logical files: path and deletion vector
	for _, a := range latest.Files {
		live[a.LogicalKey()] = true
	}
	if atFirst != nil {
		var removed []delta.Add
		for _, a := range atFirst.Files {
			if !live[a.LogicalKey()] {
				removed = append(removed, a)
			}
		}
		if gone, err := source.Missing(removed); err != nil || gone != "" {
			return gone != "", err
		}
	}
	for v := first; v <= latest.Version; v++ {
		c, err := source.ReadCommit(v)
		if err != nil {
			return false, err
		}
		var removed []delta.Add
		for _, a := range c.Adds {
			if a.DataChange && !live[a.LogicalKey()] {
				removed = append(removed, a)
			}
		}
		if gone, err := source.Missing(removed); err != nil || gone != "" {
			return gone != "", err
		}
	}
	return false, nil
}

// LogFloor returns the oldest version of dataset d's table (at snap) that a metadata cleanup
// (delta.Table.CleanupExpiredLogs) must keep so that every flow of p still finds in the log what
// it reads from there: the newest commit of d that records what its own flow reads back (the
// CDC state, the source table ids), and, for each flow reading d's commits (Readers), the
// version it reads next and the one before. A flow that has read nothing starts from d's snapshot
// (firstCommit). A table an apply_changes_from_snapshot flow reads is never cleaned up (0): each
// of its versions is a snapshot, and a full refresh reads them all again.
func LogFloor(p *spec.Pipeline, d *spec.Dataset, t *delta.Table, snap *delta.Snapshot) (int64, error) {
	floor := snap.Version
	if d.ApplyChanges != nil || d.ApplyChangesFromSnapshot != nil || (d.Query != nil && len(d.Query.Streams()) > 0) || (d.Source != nil && d.Source.Format == spec.FormatDelta) {
		for v := snap.Version; v >= 0; v-- {
			c, err := t.ReadCommit(v)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return 0, err
			}
			if flowRecord(c) {
				floor = v
				break
			}
		}
	}
	readers, err := Readers(p, d.Name)
	if err != nil {
		return 0, err
	}
	for _, r := range readers {
		switch {
		case r.Snapshots:
			return 0, nil
		case r.Started:
			// The version before too: the change data feed of a version without change data
			// files reads the files it removes, live in the version before (VACUUM keeps them).
			floor = min(floor, r.Next-1)
		}
	}
	return max(floor, 0), nil
}

// Reader is a flow of the pipeline that reads a dataset's table from its log: an APPLY CHANGES
// flow (Snapshots: an apply_changes_from_snapshot flow) or a `table:` source on it, or one
// STREAM(...) of it in a query.
type Reader struct {
	Dataset   string // the reading dataset
	Snapshots bool   // apply_changes_from_snapshot: every version is one of its snapshots
	// Started: it has read some versions, or it will read the log from its starting_version.
	Started bool
	// Next is the first version it will read from the log: the one after the last it read; 0
	// for a flow that has read nothing (its first read starts at version 0, or, when the log
	// can no longer be read from there, at a snapshot: firstCommit); a `table:` source's
	// starting_version, or -1 without one (its first read is the table's latest snapshot).
	Next int64
}

// Readers returns the flows of p that read dataset name's table from its log, with the first
// version each has not read yet (from the txn its table records: AppID, or streamAppID for a
// STREAM). Errors: a reader's table that cannot be read.
func Readers(p *spec.Pipeline, name string) ([]Reader, error) {
	same := func(n string) bool { return strings.EqualFold(n, name) }
	src := p.Dataset(name)
	var out []Reader
	for _, r := range p.Datasets {
		var ids []string
		snapshots, first, fromStart := false, int64(0), false
		switch {
		case r.ApplyChangesFromSnapshot != nil && same(r.ApplyChangesFromSnapshot.Source):
			ids, snapshots = append(ids, AppID(p, r.Name)), true
		case r.ApplyChanges != nil && same(r.ApplyChanges.Source) && !src.FileView():
			ids = append(ids, AppID(p, r.Name))
		case r.Source != nil && r.Source.Format == spec.FormatDelta && (same(r.Source.Table) || filepath.Clean(r.Source.Path) == TableDir(p.Storage, name)):
			ids, first = append(ids, AppID(p, r.Name)), r.Source.StartingVersion
			fromStart = first >= 0
		case r.Query != nil:
			for _, x := range r.Query.Streams() {
				if same(x) {
					ids = append(ids, streamAppID(p, r, x))
				}
			}
		}
		if len(ids) == 0 {
			continue
		}
		rs, err := delta.New(TableDir(p.Storage, r.Name)).Snapshot(-1)
		if err != nil && !errors.Is(err, delta.ErrNoTable) {
			return nil, err
		}
		for _, id := range ids {
			rd := Reader{Dataset: r.Name, Snapshots: snapshots, Started: fromStart, Next: first}
			if rs != nil {
				if last, ok := rs.AppTxns[id]; ok {
					rd.Started, rd.Next = true, last+1
				}
			}
			out = append(out, rd)
		}
	}
	return out, nil
}

// flowRecord reports whether commit c records what a flow reads back from its table's log:
// the CDC state of APPLY CHANGES, the source table ids of a `table:` source or a STREAM query.
func flowRecord(c *delta.Commit) bool {
	for _, k := range []string{stateKey, deltaSourceKey, streamSourcesKey} {
		if _, ok := c.Info.Extra[k]; ok {
			return true
		}
	}
	return false
}

// UnreadFrom returns the first version of dataset name's table that a flow of p reading it from
// its log (Readers) will read (0 for a flow that has read nothing), or -1 when no flow reads it
// from the log: what VACUUM keeps the files of (delta.VacuumOptions.KeepFromVersion).
func UnreadFrom(p *spec.Pipeline, name string) (int64, error) {
	readers, err := Readers(p, name)
	if err != nil {
		return -1, err
	}
	from := int64(-1)
	for _, r := range readers {
		if r.Next >= 0 && (from < 0 || r.Next < from) {
			from = r.Next
		}
	}
	return from, nil
}
