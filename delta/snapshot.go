package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// Snapshot is the state of a table at one version, computed by log replay (Delta PROTOCOL.md,
// "Action Reconciliation"). Timestamp is the commit time of Version in milliseconds since the
// Unix epoch (see Commit.Timestamp). Files are the live logical files (data file and deletion
// vector) in the order they were first added (a later add of a live logical file replaces its
// entry in place, and so does a commit that replaces a file's deletion vector). AppTxns maps each txn appId to
// its latest version. ReaderFeatures and WriterFeatures are the protocol's table features
// (reader version 3 / writer version 7 tables only). Tombstones are the remove actions of logical
// files that are not live, sorted by path and DV unique id, kept for VACUUM (Delta PROTOCOL.md, "Action
// Reconciliation"); a snapshot loaded from a checkpoint has only the tombstones the checkpoint
// kept (those not yet expired when it was written). A Snapshot is a value: nothing changes it
// after it is returned.
type Snapshot struct {
	Version    int64
	Timestamp  int64
	Protocol   Protocol
	Metadata   Metadata
	Files      []Add
	AppTxns    map[string]int64
	Tombstones []Remove

	ReaderFeatures []string
	WriterFeatures []string
}

// NumRecords returns the number of rows in the snapshot: the sum over Files of stats.numRecords
// (the rows of the data file) minus the cardinality of the file's deletion vector (Delta
// PROTOCOL.md, "Per-file Statistics", "Deletion Vectors"). Files without that statistic count as
// 0.
func (s *Snapshot) NumRecords() int64 {
	var n int64
	for _, f := range s.Files {
		if c, ok := f.NumRecords(); ok {
			n += c - dvCardinality(f.DeletionVector)
		}
	}
	return n
}

// AppTxn returns the latest version recorded for appID by a txn action, and whether there is
// one (Delta PROTOCOL.md, "Transaction Identifiers").
func (s *Snapshot) AppTxn(appID string) (int64, bool) {
	v, ok := s.AppTxns[appID]
	return v, ok
}

// replayState is the mutable state of log replay. It is the one place where actions are
// reconciled: readCheckpoint produces a replayState for the checkpoint's version, and the JSON
// commits after it are applied to it.
type replayState struct {
	version     int64
	timestamp   int64
	protocol    Protocol
	readerFeat  []string
	writerFeat  []string
	metadata    Metadata
	hasProtocol bool
	hasMetadata bool
	files       []Add          // in order of first add; removed entries have Path == ""
	index       map[string]int // live logical file (fileKey) -> position in files
	txns        map[string]int64
	tombstones  map[string]Remove // removed logical file (fileKey) -> its latest remove; never a live one
}

// fileKey is the key of a logical file in log replay: its path and the unique id of its deletion
// vector (Delta PROTOCOL.md, "Action Reconciliation").
func fileKey(path string, dv *DeletionVector) string {
	if dv == nil {
		return path
	}
	return path + "\x00" + dv.UniqueID()
}

func newReplayState() *replayState {
	return &replayState{version: -1, index: map[string]int{}, txns: map[string]int64{}, tombstones: map[string]Remove{}}
}

// addFile makes the logical file of a live (replacing the entry of a live logical file in place)
// and drops its tombstone. slot, when >= 0, is the free position in files to put a new entry at
// (that of the logical file of the same path this commit removed).
func (r *replayState) addFile(a Add, slot int) {
	k := fileKey(a.Path, a.DeletionVector)
	delete(r.tombstones, k)
	if i, ok := r.index[k]; ok {
		r.files[i] = a
		return
	}
	if slot >= 0 && slot < len(r.files) && r.files[slot].Path == "" {
		r.index[k] = slot
		r.files[slot] = a
		return
	}
	r.index[k] = len(r.files)
	r.files = append(r.files, a)
}

// apply reconciles the actions of the next commit into the state: the latest protocol and
// metaData win, the latest txn version per appId wins, a remove drops the live logical file
// (path, DV unique id) it names and an add makes its logical file live (Delta PROTOCOL.md,
// "Action Reconciliation"). Removes are applied before adds, so a commit that removes and
// re-adds a path leaves it live, and a commit that removes (path, old DV) and adds (path, new DV)
// leaves only the new DV live, at the position the old one had in Files.
func (r *replayState) apply(c *Commit) {
	if c.Protocol != nil {
		r.protocol, r.hasProtocol = *c.Protocol, true
		r.readerFeat, r.writerFeat = c.readerFeatures, c.writerFeatures
	}
	if c.Metadata != nil {
		r.metadata, r.hasMetadata = *c.Metadata, true
	}
	for _, tx := range c.Txns {
		r.txns[tx.AppID] = tx.Version
	}
	var freed map[string]int // path -> the position its removed logical file had
	for _, rm := range c.Removes {
		k := fileKey(rm.Path, rm.DeletionVector)
		if i, ok := r.index[k]; ok {
			r.files[i] = Add{}
			delete(r.index, k)
			if freed == nil {
				freed = map[string]int{}
			}
			freed[rm.Path] = i
		}
		r.tombstones[k] = rm
	}
	for _, a := range c.Adds {
		slot, ok := freed[a.Path]
		if !ok {
			slot = -1
		}
		r.addFile(a, slot)
	}
	if len(r.files) > 64 && len(r.index) < len(r.files)/2 {
		r.compact() // the holes left by removes
	}
	r.version = c.Version
	r.timestamp = c.Timestamp()
}

// compact drops the holes that removes left in files.
func (r *replayState) compact() {
	files := make([]Add, 0, len(r.index))
	for _, f := range r.files {
		if f.Path != "" {
			r.index[fileKey(f.Path, f.DeletionVector)] = len(files)
			files = append(files, f)
		}
	}
	r.files = files
}

func (r *replayState) snapshot() *Snapshot {
	s := &Snapshot{
		Version:   r.version,
		Timestamp: r.timestamp,
		Protocol:  r.protocol,
		Metadata:  r.metadata,
		Files:     make([]Add, 0, len(r.index)),
		AppTxns:   maps.Clone(r.txns),

		ReaderFeatures: append([]string(nil), r.readerFeat...),
		WriterFeatures: append([]string(nil), r.writerFeat...),
	}
	s.Metadata.PartitionColumns = append([]string(nil), r.metadata.PartitionColumns...)
	s.Metadata.Configuration = maps.Clone(r.metadata.Configuration)
	s.Metadata.Schema.Fields = append(s.Metadata.Schema.Fields[:0:0], r.metadata.Schema.Fields...)
	for _, f := range r.files {
		if f.Path != "" {
			s.Files = append(s.Files, f)
		}
	}
	s.Tombstones = make([]Remove, 0, len(r.tombstones))
	for _, rm := range r.tombstones {
		s.Tombstones = append(s.Tombstones, rm)
	}
	slices.SortFunc(s.Tombstones, func(a, b Remove) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID())
	})
	return s
}

// Snapshot returns the state of the table at version, or at the latest version when
// version < 0. Log replay starts from the newest state this Table has already replayed, or from
// the newest readable checkpoint at or below version (Delta PROTOCOL.md, "Checkpoints"), or from
// version 0, and applies the JSON commits after it. Errors: ErrNoTable when the table has no
// commit; an error naming the latest version when version does not exist yet; an error naming
// the first version still in the log when version is older and no checkpoint covers it; an error
// naming the version when a commit file is missing or malformed, or when the log has no protocol
// or metaData action.
func (t *Table) Snapshot(version int64) (*Snapshot, error) {
	l, err := t.listLog()
	if err != nil {
		return nil, err
	}
	if len(l.commits) == 0 {
		return nil, fmt.Errorf("delta: %s: %w", t.Dir, ErrNoTable)
	}
	latest := l.commits[len(l.commits)-1]
	if version < 0 {
		version = latest
	}
	if version > latest {
		return nil, fmt.Errorf("delta: %s: version %d does not exist; the latest version is %d", t.Dir, version, latest)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.startState(l, version)
	if err != nil {
		return nil, err
	}
	if err := t.replay(st, version); err != nil {
		// A state cached before a metadata cleanup (CleanupExpiredLogs, by this process or
		// another) may need commits that are gone: replay again from a checkpoint.
		if st != t.cache || !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		t.cache = nil
		if st, err = t.startState(l, version); err != nil {
			return nil, err
		}
		if err := t.replay(st, version); err != nil {
			return nil, err
		}
	}
	if t.cache == nil || st.version >= t.cache.version {
		t.cache = st
	}
	return st.snapshot(), nil
}

// replay applies the commits st.version+1 .. upTo to st.
func (t *Table) replay(st *replayState, upTo int64) error {
	for v := st.version + 1; v <= upTo; v++ {
		c, err := t.ReadCommit(v)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delta: %s: version %d cannot be read: the commit file of version %d is missing (replaying from version %d): %w", t.Dir, upTo, v, st.version, err)
			}
			return err
		}
		st.apply(c)
	}
	if !st.hasProtocol || !st.hasMetadata {
		return fmt.Errorf("delta: %s: version %d has no protocol or metaData action in its log", t.Dir, upTo)
	}
	return nil
}

// checkpointFor returns the newest complete checkpoint at or below version, or nil.
func (l logListing) checkpointFor(version int64) *checkpointRef {
	for i := len(l.checkpoints) - 1; i >= 0; i-- {
		if l.checkpoints[i].version <= version {
			return &l.checkpoints[i]
		}
	}
	return nil
}

// startState returns the state log replay for version starts from: a cached state, the newest
// readable checkpoint at or below version, or an empty state when the log starts at version 0.
func (t *Table) startState(l logListing, version int64) (*replayState, error) {
	cached := t.cache
	usable := cached != nil && cached.version <= version
	cp := l.checkpointFor(version)
	if usable && (cp == nil || cached.version >= cp.version || version-cached.version <= 2*DefaultCheckpointInterval) {
		return cached, nil
	}
	var cpErr error
	for i := len(l.checkpoints) - 1; i >= 0; i-- {
		ref := l.checkpoints[i]
		if ref.version > version {
			continue
		}
		st, err := t.readCheckpoint(ref)
		if err == nil {
			return st, nil
		}
		if cpErr == nil {
			cpErr = err // try an older checkpoint, then the JSON commits
		}
	}
	if usable {
		return cached, nil
	}
	if len(l.commits) > 0 && l.commits[0] == 0 {
		return newReplayState(), nil
	}
	first := int64(-1)
	if len(l.commits) > 0 {
		first = l.commits[0]
	}
	if cpErr != nil {
		return nil, fmt.Errorf("delta: %s: the log starts at version %d and its checkpoint at or before version %d cannot be read: %w", t.Dir, first, version, cpErr)
	}
	if len(l.uuidNamed) > 0 {
		return nil, fmt.Errorf("delta: %s: the log starts at version %d and the only checkpoints are UUID-named V2 checkpoints, which this reader does not support", t.Dir, first)
	}
	return nil, fmt.Errorf("delta: %s: version %d is no longer available: the log starts at version %d (older commits were cleaned up) and no checkpoint covers version %d", t.Dir, version, first, version)
}
