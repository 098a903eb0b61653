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
	"sync"
	"time"
)

// ErrNoTable means the folder holds no Delta table: _delta_log has no commit file. Test it with
// errors.Is.
var ErrNoTable = errors.New("no table (no commit in _delta_log)")

// ErrConflict means a concurrent writer committed a version that conflicts with this
// transaction (Delta PROTOCOL.md leaves the rules to writers; see Transaction.Commit). The
// transaction's data files are not part of the table; redo the work on a new snapshot. Test it
// with errors.Is.
var ErrConflict = errors.New("delta: concurrent commit conflicts")

// LogDir is the name of the folder of the transaction log inside a table folder.
const LogDir = "_delta_log"

// Table is a Delta table in a local folder (Dir). New does no I/O. A Table is safe for use by
// several goroutines; it caches the state of the newest snapshot it has read so that the next
// Snapshot only replays the commits written since.
type Table struct {
	Dir string

	mu    sync.Mutex
	cache *replayState // state at cache.version; never shared with a Snapshot
}

// New returns the table in folder dir. It does no I/O: the folder may not exist yet.
func New(dir string) *Table { return &Table{Dir: dir} }

func (t *Table) logDir() string { return filepath.Join(t.Dir, LogDir) }

// commitPath is the name of the commit file of version v: _delta_log/%020d.json
// (Delta PROTOCOL.md, "Delta Log Entries").
func (t *Table) commitPath(v int64) string {
	return filepath.Join(t.Dir, LogDir, fmt.Sprintf("%020d.json", v))
}

// parseCommitName returns the version of a commit file name "00000000000000000012.json".
func parseCommitName(name string) (int64, bool) {
	if len(name) != 25 || name[20:] != ".json" {
		return 0, false
	}
	for i := 0; i < 20; i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	return v, err == nil
}

// versions lists the versions of the commit files in _delta_log, ascending; a missing
// _delta_log is an empty list.
func (t *Table) versions() ([]int64, error) {
	l, err := t.listLog()
	return l.commits, err
}

// logListing is what _delta_log holds: the versions of its commit files and its complete
// checkpoints, both ascending.
type logListing struct {
	commits     []int64
	checkpoints []checkpointRef
	uuidNamed   []int64 // versions of UUID-named (v2) checkpoints, which this package does not read
}

// listLog lists _delta_log once; a missing _delta_log is an empty listing.
func (t *Table) listLog() (logListing, error) {
	var l logListing
	entries, err := os.ReadDir(t.logDir())
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("delta: list %s: %w", t.logDir(), err)
	}
	multi := map[int64]map[int]map[int]string{} // version -> parts -> part -> name
	// ReadDir sorts by name, so by version.
	for _, e := range entries {
		name := e.Name()
		if v, ok := parseCommitName(name); ok {
			l.commits = append(l.commits, v)
			continue
		}
		cp, ok := parseCheckpointName(name)
		switch {
		case !ok:
		case cp.uuid:
			l.uuidNamed = append(l.uuidNamed, cp.version)
		case cp.parts == 0:
			l.checkpoints = append(l.checkpoints, checkpointRef{version: cp.version, files: []string{name}})
		default:
			if multi[cp.version] == nil {
				multi[cp.version] = map[int]map[int]string{}
			}
			if multi[cp.version][cp.parts] == nil {
				multi[cp.version][cp.parts] = map[int]string{}
			}
			multi[cp.version][cp.parts][cp.part] = name
		}
	}
	// A multi-part checkpoint counts only with all of its parts (Delta PROTOCOL.md,
	// "Checkpoints": readers must ignore multi-part checkpoints with missing parts).
	for v, byParts := range multi {
		for parts, names := range byParts {
			if len(names) != parts || slices.ContainsFunc(l.checkpoints, func(c checkpointRef) bool { return c.version == v }) {
				continue
			}
			ref := checkpointRef{version: v}
			for i := 1; i <= parts; i++ {
				ref.files = append(ref.files, names[i])
			}
			l.checkpoints = append(l.checkpoints, ref)
			break
		}
	}
	slices.SortFunc(l.checkpoints, func(a, b checkpointRef) int { return cmp.Compare(a.version, b.version) })
	return l, nil
}

// LatestVersion returns the newest committed version of the table, or -1 and a nil error when
// the table has no commit yet (no _delta_log or no commit file in it).
func (t *Table) LatestVersion() (int64, error) {
	vs, err := t.versions()
	if err != nil || len(vs) == 0 {
		return -1, err
	}
	return vs[len(vs)-1], nil
}

// Commit is the content of one commit file: the actions of one version, grouped by kind in the
// order they appear in the file (Delta PROTOCOL.md, "Actions"). Metadata and Protocol are nil
// when the version does not change them. Info is zero when the commit has no commitInfo.
type Commit struct {
	Version  int64
	Info     CommitInfo
	Adds     []Add
	Removes  []Remove
	CDCs     []CDC
	Txns     []Txn
	Metadata *Metadata
	Protocol *Protocol

	modTime                        int64 // ms; the commit file's modification time
	readerFeatures, writerFeatures []string
}

// Timestamp returns the time of the commit in milliseconds since the Unix epoch:
// commitInfo.inCommitTimestamp when present, else commitInfo.timestamp, else the commit file's
// modification time (Delta PROTOCOL.md, "Reader Requirements for AddCDCFile").
func (c *Commit) Timestamp() int64 {
	if ts := c.Info.commitTimestamp(); ts != 0 {
		return ts
	}
	return c.modTime
}

// ReadCommit reads and parses the commit file of version. A missing file is an error that wraps
// fs.ErrNotExist (and ErrNoTable when the table has no commit at all) and, for a version before
// the first the log keeps (CleanupExpiredLogs), names that first version; a malformed line is an
// error naming the file and the line.
func (t *Table) ReadCommit(version int64) (*Commit, error) {
	path := t.commitPath(version)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if vs, lerr := t.versions(); lerr == nil && len(vs) == 0 {
				return nil, fmt.Errorf("delta: %s: %w", t.Dir, ErrNoTable)
			} else if lerr == nil && version < vs[0] {
				return nil, fmt.Errorf("delta: %s: version %d is no longer in the log, which starts at version %d (metadata cleanup deletes commits older than the table's %s, default 30 days): %w", t.Dir, version, vs[0], ConfigLogRetention, err)
			} else if lerr == nil {
				return nil, fmt.Errorf("delta: %s: version %d does not exist (latest is %d): %w", t.Dir, version, vs[len(vs)-1], err)
			}
		}
		return nil, fmt.Errorf("delta: read version %d: %w", version, err)
	}
	c, err := decodeCommit(version, data)
	if err != nil {
		return nil, fmt.Errorf("delta: %s: %w", path, err)
	}
	if c.Info.commitTimestamp() == 0 {
		if st, err := os.Stat(path); err == nil {
			c.modTime = st.ModTime().UnixMilli()
		}
	}
	return c, nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }
