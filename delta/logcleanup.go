package delta

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"tributary/internal/fault"
)

// LogCleanupResult is what CleanupExpiredLogs did.
type LogCleanupResult struct {
	// Checkpoint is the version of the checkpoint the log now starts from (its cutOffCheckpoint),
	// or -1 when nothing was expired.
	Checkpoint int64
	// Files are the names of the _delta_log files deleted, in the order they were deleted
	// (ascending version).
	Files []string
}

// CleanupExpiredLogs deletes the commit, checkpoint and checksum files of _delta_log that the
// table's delta.logRetentionDuration (default 30 days) has expired, as Delta PROTOCOL.md,
// "Metadata Cleanup", describes: the cutoff commit is the newest commit whose file is not newer
// than now minus the retention; the cutoff checkpoint is the newest complete checkpoint at or
// before it; every log file of a version before the cutoff checkpoint is deleted (and a log
// compaction file starting at or before it), oldest first, so that a crash part way leaves a log
// without a gap: readers start at its oldest checkpoint (FirstCommit), and the next cleanup
// deletes the commits before it. The cutoff checkpoint, its commit and everything after stay,
// so the latest snapshot and time travel to any version from the cutoff checkpoint on read as
// before; an older version then fails naming the first version the log keeps. keepFrom, when not
// nil, is asked (only when something has expired) for a version the caller still reads the log
// from: when it returns one >= 0 the cutoff commit is at most that version, so it and every later
// one stay; its error is returned, and nothing is deleted. Nothing is
// deleted when delta.enableExpiredLogCleanup is "false", when no checkpoint is old enough, or
// when the log holds nothing older than the cutoff checkpoint. _last_checkpoint, sidecar files
// and files whose names are not versions are left alone. Errors: a retention that does not
// parse (naming the property), and a file that cannot be listed or deleted (the files deleted
// before it stay deleted; the log is valid).
func (t *Table) CleanupExpiredLogs(now time.Time, keepFrom func() (int64, error)) (LogCleanupResult, error) {
	res := LogCleanupResult{Checkpoint: -1}
	snap, err := t.Snapshot(-1)
	if err != nil {
		return res, err
	}
	if !snap.Metadata.ExpiredLogCleanup() {
		return res, nil
	}
	retention, err := snap.Metadata.LogRetention()
	if err != nil {
		return res, err
	}
	cutoff := now.Add(-retention)
	l, err := t.listLog()
	if err != nil {
		return res, err
	}
	// The cutoff commit: commit files are written in version order, so the scan stops at the
	// first one newer than the cutoff.
	cutoffCommit := int64(-1)
	for _, v := range l.commits {
		st, err := os.Stat(t.commitPath(v))
		if err != nil {
			return res, fmt.Errorf("delta: metadata cleanup of %s: %w", t.Dir, err)
		}
		if st.ModTime().After(cutoff) {
			break
		}
		cutoffCommit = v
	}
	if cp := l.checkpointFor(cutoffCommit); cutoffCommit < 0 || cp == nil || cp.version <= l.commits[0] {
		return res, nil // nothing has expired: keepFrom need not be asked
	}
	if keepFrom != nil {
		from, err := keepFrom()
		if err != nil {
			return res, err
		}
		if from >= 0 {
			cutoffCommit = min(cutoffCommit, from)
		}
	}
	cp := l.checkpointFor(cutoffCommit)
	if cutoffCommit < 0 || cp == nil {
		return res, nil
	}
	entries, err := os.ReadDir(t.logDir())
	if err != nil {
		return res, fmt.Errorf("delta: metadata cleanup of %s: %w", t.Dir, err)
	}
	type expired struct {
		version int64
		name    string
	}
	var doomed []expired
	for _, e := range entries {
		if v, ok := expiredLogVersion(e.Name(), cp.version); ok {
			doomed = append(doomed, expired{v, e.Name()})
		}
	}
	if len(doomed) == 0 {
		return res, nil
	}
	// ReadDir sorts by name, which is by version for the 20-digit names; stable for the kinds
	// of one version.
	slices.SortStableFunc(doomed, func(a, b expired) int { return cmp.Compare(a.version, b.version) })
	res.Checkpoint = cp.version
	for i, d := range doomed {
		if err := os.Remove(filepath.Join(t.logDir(), d.name)); err != nil && !os.IsNotExist(err) {
			return res, fmt.Errorf("delta: metadata cleanup of %s: %w", t.Dir, err)
		}
		res.Files = append(res.Files, d.name)
		if i == len(doomed)/2 {
			fault.Point("cleanup.mid-delete")
		}
	}
	// Replay starts from the cutoff checkpoint (or later) from now on: a cached state older than
	// it could ask for a commit just deleted.
	t.mu.Lock()
	if t.cache != nil && t.cache.version < cp.version {
		t.cache = nil
	}
	t.mu.Unlock()
	return res, syncDir(t.logDir())
}

// expiredLogVersion returns the version of a _delta_log file name and whether metadata cleanup
// with the cutoff checkpoint at version cp deletes it: a commit ("%020d.json"), a checkpoint
// (classic, multi-part or UUID-named, complete or not) or a checksum file ("%020d.crc") of a
// version before cp, or a log compaction file ("%020d.%020d.compacted.json") starting at or
// before cp (Delta PROTOCOL.md, "Metadata Cleanup", step 3).
func expiredLogVersion(name string, cp int64) (int64, bool) {
	if len(name) < 21 || name[20] != '.' {
		return 0, false
	}
	v, err := strconv.ParseUint(name[:20], 10, 63)
	if err != nil {
		return 0, false
	}
	version := int64(v)
	rest := name[20:]
	switch {
	case rest == ".json", rest == ".crc", strings.HasPrefix(rest, ".checkpoint."):
		return version, version < cp
	case len(rest) == 1+20+len(".compacted.json") && strings.HasSuffix(rest, ".compacted.json"):
		if _, err := strconv.ParseUint(rest[1:21], 10, 63); err != nil {
			return 0, false
		}
		return version, version <= cp
	}
	return 0, false
}

// FirstCommit returns the first version of _delta_log a reader can start from: 0 until metadata
// cleanup (CleanupExpiredLogs) deletes the oldest versions, then the version of the oldest
// checkpoint the log keeps (a cleanup stopped part way may leave commits before it that cannot
// be read without the ones it deleted); the oldest commit when no checkpoint follows it; -1 when
// the table has no commit. Errors: the folder cannot be listed.
func (t *Table) FirstCommit() (int64, error) {
	l, err := t.listLog()
	if err != nil || len(l.commits) == 0 {
		return -1, err
	}
	first := l.commits[0]
	if first == 0 {
		return 0, nil
	}
	for _, cp := range l.checkpoints {
		if cp.version >= first {
			return cp.version, nil
		}
	}
	return first, nil
}

// Missing returns the path of the first of adds whose data file, or deletion vector file, is not
// in the table folder (a file VACUUM deleted after OPTIMIZE compacted it away, or after a later
// version gave the file a new deletion vector), or "" when every one is there. Errors: a path
// that does not resolve to a local file, a failed stat other than a missing file.
func (t *Table) Missing(adds []Add) (string, error) {
	for _, a := range adds {
		paths := []string{a.Path}
		if dv := a.DeletionVector; dv != nil && dv.StorageType != DVStorageInline {
			rel, err := dv.FilePath()
			if err != nil {
				return "", err
			}
			paths = append(paths, rel)
		}
		for _, p := range paths {
			name, err := localPath(t.Dir, p)
			if err != nil {
				return "", err
			}
			if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
				return p, nil
			} else if err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// LogicalKey identifies a logical file of a table: its path and the unique id of its deletion
// vector (Delta PROTOCOL.md, "Action Reconciliation"); the same data file with another deletion
// vector is another logical file.
func (a Add) LogicalKey() string { return fileKey(a.Path, a.DeletionVector) }
