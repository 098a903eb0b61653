package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
)

// Snapshot is the state of a table at one version, computed by log replay (Delta PROTOCOL.md,
// "Action Reconciliation"). Timestamp is the commit time of Version in milliseconds since the
// Unix epoch (see Commit.Timestamp). Files are the live data files in the order they were first
// added (a later add of a live path replaces its entry in place). AppTxns maps each txn appId to
// its latest version. ReaderFeatures and WriterFeatures are the protocol's table features
// (reader version 3 / writer version 7 tables only). A Snapshot is a value: nothing changes it
// after it is returned.
type Snapshot struct {
	Version   int64
	Timestamp int64
	Protocol  Protocol
	Metadata  Metadata
	Files     []Add
	AppTxns   map[string]int64

	ReaderFeatures []string
	WriterFeatures []string
}

// NumRecords returns the number of rows in the snapshot: the sum of stats.numRecords over
// Files (Delta PROTOCOL.md, "Per-file Statistics"). Files without that statistic count as 0.
func (s *Snapshot) NumRecords() int64 {
	var n int64
	for _, f := range s.Files {
		if c, ok := f.NumRecords(); ok {
			n += c
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
// reconciled: a checkpoint reader would produce a replayState for the checkpoint's version and
// replay the JSON commits after it.
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
	index       map[string]int // live path -> position in files
	txns        map[string]int64
}

func newReplayState() *replayState {
	return &replayState{version: -1, index: map[string]int{}, txns: map[string]int64{}}
}

func (r *replayState) clone() *replayState {
	c := *r
	c.files = make([]Add, 0, len(r.index))
	c.index = make(map[string]int, len(r.index))
	for _, f := range r.files {
		if f.Path != "" {
			c.index[f.Path] = len(c.files)
			c.files = append(c.files, f)
		}
	}
	c.txns = maps.Clone(r.txns)
	return &c
}

// apply reconciles the actions of the next commit into the state: the latest protocol and
// metaData win, the latest txn version per appId wins, a remove drops the live file of its path
// and an add makes its path live (Delta PROTOCOL.md, "Action Reconciliation"). Removes are
// applied before adds, so a commit that removes and re-adds a path leaves it live.
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
	for _, rm := range c.Removes {
		if i, ok := r.index[rm.Path]; ok {
			r.files[i] = Add{}
			delete(r.index, rm.Path)
		}
	}
	for _, a := range c.Adds {
		if i, ok := r.index[a.Path]; ok {
			r.files[i] = a
			continue
		}
		r.index[a.Path] = len(r.files)
		r.files = append(r.files, a)
	}
	if len(r.files) > 64 && len(r.index) < len(r.files)/2 {
		*r = *r.clone() // compact the holes left by removes
	}
	r.version = c.Version
	r.timestamp = c.Timestamp()
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
	return s
}

// Snapshot returns the state of the table at version, or at the latest version when
// version < 0. It replays the commit files 00000000000000000000.json .. version.json (starting
// from the newest state this Table has already replayed when that is not past version). Errors:
// ErrNoTable when the table has no commit; an error naming the latest version when version does
// not exist yet; an error naming the version when a commit file is missing or malformed, or when
// the log does not start with a protocol and a metaData action.
func (t *Table) Snapshot(version int64) (*Snapshot, error) {
	latest, err := t.LatestVersion()
	if err != nil {
		return nil, err
	}
	if latest < 0 {
		return nil, fmt.Errorf("delta: %s: %w", t.Dir, ErrNoTable)
	}
	if version < 0 {
		version = latest
	}
	if version > latest {
		return nil, fmt.Errorf("delta: %s: version %d does not exist; the latest version is %d", t.Dir, version, latest)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.cache
	if st == nil || st.version > version {
		st = newReplayState()
	}
	if err := t.replay(st, version); err != nil {
		return nil, err
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
			if v == 0 && errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delta: %s: the log does not start at version 0 (reading checkpoints is not supported yet): %w", t.Dir, err)
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
