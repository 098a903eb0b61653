package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// HistoryEntry is one version of the table's history, as DESCRIBE HISTORY shows it: the version,
// its commit time in milliseconds since the Unix epoch (see Commit.Timestamp) and its
// commitInfo (operation, operationParameters, operationMetrics, readVersion, isBlindAppend,
// engineInfo and any other key in Info.Extra).
type HistoryEntry struct {
	Version   int64
	Timestamp int64
	Info      CommitInfo
}

// History returns the versions of the table whose commit files are still in the log, newest
// first, at most limit of them (limit <= 0: all). Timestamps are made strictly increasing with
// the version (a commit whose clock ran behind its predecessor's is shown 1 ms after it), as
// Delta does for time travel. Versions a metadata cleanup running meanwhile deletes are left
// out, not an error.
func (t *Table) History(limit int) ([]HistoryEntry, error) {
	all, err := t.commitTimes()
	if err != nil {
		return nil, err
	}
	var out []HistoryEntry
	for i := len(all) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		c, err := t.ReadCommit(all[i].version)
		if errors.Is(err, fs.ErrNotExist) {
			break // this version and the older ones were cleaned up since they were listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, HistoryEntry{Version: all[i].version, Timestamp: all[i].ts, Info: c.Info})
	}
	return out, nil
}

type commitTime struct {
	version int64
	ts      int64 // ms, adjusted to increase strictly with the version
}

// commitTimes returns the commit time of every version still in the log, ascending.
func (t *Table) commitTimes() ([]commitTime, error) {
	vs, err := t.versions()
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("delta: %s: %w", t.Dir, ErrNoTable)
	}
	out := make([]commitTime, 0, len(vs))
	for _, v := range vs {
		c, err := t.ReadCommit(v)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // cleaned up while we listed
			}
			return nil, err
		}
		ts := c.Timestamp()
		if n := len(out); n > 0 && ts <= out[n-1].ts {
			ts = out[n-1].ts + 1
		}
		out = append(out, commitTime{version: v, ts: ts})
	}
	return out, nil
}

func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// VersionAsOf returns the version that time travel to ts (ms since the Unix epoch) reads: the
// newest version committed at or before ts (Spark's TIMESTAMP AS OF). A ts before the oldest
// version still in the log, or after the latest commit, is an error that names the range of
// commit times.
func (t *Table) VersionAsOf(ts int64) (int64, error) {
	all, err := t.commitTimes()
	if err != nil {
		return -1, err
	}
	first, last := all[0], all[len(all)-1]
	switch {
	case ts < first.ts:
		return -1, fmt.Errorf("delta: %s: timestamp %s is before the oldest version still in the log (version %d, committed %s)", t.Dir, formatMillis(ts), first.version, formatMillis(first.ts))
	case ts > last.ts:
		return -1, fmt.Errorf("delta: %s: timestamp %s is after the latest version (version %d, committed %s); use a timestamp at or before it", t.Dir, formatMillis(ts), last.version, formatMillis(last.ts))
	}
	v := first.version
	for _, c := range all {
		if c.ts > ts {
			break
		}
		v = c.version
	}
	return v, nil
}

// VersionAtOrAfter returns the first version committed at or after ts (ms since the Unix
// epoch): where a change data feed that starts at a timestamp begins (Spark's startingTimestamp).
// A ts after the latest commit is an error naming the latest commit time.
func (t *Table) VersionAtOrAfter(ts int64) (int64, error) {
	all, err := t.commitTimes()
	if err != nil {
		return -1, err
	}
	for _, c := range all {
		if c.ts >= ts {
			return c.version, nil
		}
	}
	last := all[len(all)-1]
	return -1, fmt.Errorf("delta: %s: timestamp %s is after the latest commit (version %d, committed %s)", t.Dir, formatMillis(ts), last.version, formatMillis(last.ts))
}
