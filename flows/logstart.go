package flows

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"tributary/delta"
	"tributary/spec"
)

// firstCommit returns, for a flow (reader) that reads the commits of the pipeline's table name
// after version last (-1: it has read none), a commit standing for the versions metadata cleanup
// (delta.Table.CleanupExpiredLogs) deleted, and the version to read on from. While the log
// starts at version 0 it returns nil and last+1. A reader that has read nothing, of a log that
// starts later, gets a commit at the log's first version (which keeps its checkpoint) whose adds
// are the files of the snapshot there, all with dataChange true: an append-only table's rows up
// to that version, as a Delta streaming read begins with the table's snapshot. A reader that
// read part of the deleted versions cannot go on; that is an error naming the full refresh
// (LogFloor keeps the versions the pipeline's readers need, so it takes a table changed by
// another program).
func firstCommit(p *spec.Pipeline, source *delta.Table, name string, reader string, last int64) (*delta.Commit, int64, error) {
	first, err := source.FirstCommit()
	if err != nil || first <= last+1 {
		return nil, last + 1, err
	}
	if last >= 0 {
		return nil, 0, fmt.Errorf("%s read %s up to version %d, but the log of %s now starts at version %d (metadata cleanup deleted the versions between, %s); run %s to read %s again from its current snapshot", reader, name, last, name, first, delta.ConfigLogRetention, RefreshHint(p, reader), name)
	}
	snap, err := source.Snapshot(first)
	if err != nil {
		return nil, 0, err
	}
	c := &delta.Commit{Version: first, Adds: make([]delta.Add, len(snap.Files))}
	for i, a := range snap.Files {
		a.DataChange = true
		c.Adds[i] = a
	}
	return c, first, nil
}

// LogFloor returns the oldest version of dataset d's table (at snap) that a metadata cleanup
// (delta.Table.CleanupExpiredLogs) must keep so that every flow of p still finds in the log what
// it reads from there: the newest commit of d that records what its own flow reads back (the
// CDC state, the source table ids), and for each flow reading d's commits (APPLY CHANGES from
// d, STREAM(d), a `table:` source on d) that has read some, the version after the last it read.
// A flow that has read nothing starts from d's snapshot (firstCommit). A table an
// apply_changes_from_snapshot flow reads is never cleaned up (0): each of its versions is a
// snapshot, and a full refresh reads them all again.
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
	same := func(name string) bool { return strings.EqualFold(name, d.Name) }
	for _, r := range p.Datasets {
		var ids []string
		switch {
		case r.ApplyChangesFromSnapshot != nil && same(r.ApplyChangesFromSnapshot.Source):
			return 0, nil
		case r.ApplyChanges != nil && same(r.ApplyChanges.Source) && !d.FileView():
			ids = append(ids, AppID(p, r.Name))
		case r.Source != nil && same(r.Source.Table):
			ids = append(ids, AppID(p, r.Name))
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
		if errors.Is(err, delta.ErrNoTable) {
			continue
		}
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			if last, ok := rs.AppTxns[id]; ok {
				floor = min(floor, last+1)
			}
		}
	}
	return max(floor, 0), nil
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
