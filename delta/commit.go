package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// maxCommitAttempts bounds how many versions a transaction tries before giving up when other
// writers keep winning without conflicting.
const maxCommitAttempts = 100

// Transaction collects the actions of one commit and commits them atomically as version
// read.Version+1 (or a later version, after checking that the commits in between do not
// conflict). Build it with Table.Begin; it is not safe for concurrent use, and it commits once.
type Transaction struct {
	t                      *Table
	read                   *Snapshot
	metadata               *Metadata
	protocol               *Protocol
	readerFeat, writerFeat []string // of protocol
	adds                   []Add
	removes                []Remove
	cdcs                   []CDC
	txns                   []Txn
	extra                  map[string]any
	metrics                map[string]string
	committed              bool
}

// Begin starts a transaction that reads the table at read. read == nil creates the table: the
// transaction commits version 0 and needs SetMetadata.
func (t *Table) Begin(read *Snapshot) *Transaction {
	return &Transaction{t: t, read: read}
}

// SetMetadata replaces the table's metaData action (Delta PROTOCOL.md, "Change Metadata").
// When the transaction creates the table, an empty ID gets a new UUID, an empty CreatedTime the
// current time, Configuration gets "delta.enableChangeDataFeed":"true" unless the key is set,
// and the protocol defaults to DefaultProtocol. When m enables deletion vectors
// (ConfigEnableDeletionVectors) or its schema has a TIMESTAMP_NTZ column, and the table's
// protocol lacks the feature (deletionVectors, timestampNtz), the commit also writes the
// protocol of FeatureProtocol with it. On an existing table an empty ID and a zero
// CreatedTime are taken from the snapshot read.
func (tx *Transaction) SetMetadata(m Metadata) {
	m.Configuration = maps.Clone(m.Configuration)
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	if tx.read == nil {
		if m.ID == "" {
			m.ID = uuid.NewString()
		}
		if m.CreatedTime == 0 {
			m.CreatedTime = nowMillis()
		}
		if _, ok := m.Configuration[ConfigEnableChangeDataFeed]; !ok {
			m.Configuration[ConfigEnableChangeDataFeed] = "true"
		}
	} else {
		if m.ID == "" {
			m.ID = tx.read.Metadata.ID
		}
		if m.CreatedTime == 0 {
			m.CreatedTime = tx.read.Metadata.CreatedTime
		}
	}
	tx.metadata = &m
}

// SetProtocol sets the protocol action of the commit (Delta PROTOCOL.md, "Protocol
// Evolution"), without table features.
func (tx *Transaction) SetProtocol(p Protocol) {
	tx.protocol, tx.readerFeat, tx.writerFeat = &p, nil, nil
}

// SetProtocolFeatures sets the protocol action of the commit with its table features: reader
// features are written when p.MinReaderVersion is 3, writer features when p.MinWriterVersion is
// 7 (Delta PROTOCOL.md, "Table Features"). Commit refuses features this writer does not support.
func (tx *Transaction) SetProtocolFeatures(p Protocol, readerFeatures, writerFeatures []string) {
	tx.protocol = &p
	tx.readerFeat = append([]string(nil), readerFeatures...)
	tx.writerFeat = append([]string(nil), writerFeatures...)
}

// Add adds data files to the table (Delta PROTOCOL.md, "Add File and Remove File"). An add
// with a DeletionVector needs a table with the deletionVectors feature and stats with
// numRecords; Commit writes its stats with "tightBounds": false when the DV deletes any row
// (Delta PROTOCOL.md, "Per-file Statistics"). To replace the DV of a live file, remove it
// (RemoveFor, which carries the old DV) and add it with the new DV in one transaction.
func (tx *Transaction) Add(a ...Add) { tx.adds = append(tx.adds, a...) }

// Remove removes data files from the table; see Table.RemoveFor.
func (tx *Transaction) Remove(r ...Remove) { tx.removes = append(tx.removes, r...) }

// AddCDC adds change data files of this version (Delta PROTOCOL.md, "Add CDC File"); when a
// version has any, change data readers read only those.
func (tx *Transaction) AddCDC(c ...CDC) { tx.cdcs = append(tx.cdcs, c...) }

// SetAppTxn records version as the latest version of appID in the same commit as the data
// (Delta PROTOCOL.md, "Transaction Identifiers"). A later call for the same appID replaces the
// earlier one.
func (tx *Transaction) SetAppTxn(appID string, version int64) {
	for i := range tx.txns {
		if tx.txns[i].AppID == appID {
			tx.txns[i].Version, tx.txns[i].LastUpdated = version, nowMillis()
			return
		}
	}
	tx.txns = append(tx.txns, Txn{AppID: appID, Version: version, LastUpdated: nowMillis()})
}

// SetCommitInfo sets the free-form keys written into commitInfo (CommitInfo.Extra) and the
// operationMetrics (Spark's names are numFiles, numOutputRows, numOutputBytes,
// numTargetRowsInserted, ...; values are decimal strings).
func (tx *Transaction) SetCommitInfo(extra map[string]any, metrics map[string]string) {
	tx.extra = maps.Clone(extra)
	tx.metrics = maps.Clone(metrics)
}

// RemoveFor returns the remove action for the live file a: same path, partition values, size,
// stats and deletion vector (the logical file, Delta PROTOCOL.md "Action Reconciliation"),
// dataChange true, extendedFileMetadata true, and deletionTimestamp in milliseconds
// since the Unix epoch (0 means now).
func (t *Table) RemoveFor(a Add, deletionTimestamp int64) Remove {
	if deletionTimestamp == 0 {
		deletionTimestamp = nowMillis()
	}
	return Remove{
		Path: a.Path, DeletionTimestamp: deletionTimestamp, DataChange: true,
		ExtendedFileMetadata: true, PartitionValues: maps.Clone(a.PartitionValues),
		Size: a.Size, Stats: a.Stats, DeletionVector: a.DeletionVector,
	}
}

// Commit writes the transaction as the next version and returns that version. operation is
// the commitInfo operation ("WRITE", "MERGE", "CREATE TABLE", ...), params its
// operationParameters.
//
// The commit file is written to a temporary file in _delta_log, synced, and then published
// with os.Link under its version's name, which fails if the name exists (put-if-absent, the
// atomicity Delta PROTOCOL.md requires of log stores). When another writer won the version,
// Commit reads the winning commit and fails with an error wrapping ErrConflict that names it if
// it changes the metaData or the protocol, removes a file this transaction removes, sets a txn
// for an appId this transaction sets, adds files while this transaction changes the metaData,
// or is version 0 while this transaction creates the table; otherwise it tries the next version
// (up to 100 versions). Other errors: a transaction that was already committed, a new table
// without metadata, a schema or partition column problem, removing data from an append-only
// table, a table whose protocol needs writer features this package lacks.
func (tx *Transaction) Commit(operation string, params map[string]any) (int64, error) {
	if tx.committed {
		return -1, errors.New("delta: commit: the transaction was already committed")
	}
	if err := tx.validate(); err != nil {
		return -1, fmt.Errorf("delta: commit %s to %s: %w", operation, tx.t.Dir, err)
	}
	c := tx.commit(operation, params)
	content, err := encodeCommit(c)
	if err != nil {
		return -1, fmt.Errorf("delta: commit %s to %s: %w", operation, tx.t.Dir, err)
	}
	if err := os.MkdirAll(tx.t.logDir(), 0o755); err != nil {
		return -1, fmt.Errorf("delta: commit %s: %w", operation, err)
	}
	tmp := filepath.Join(tx.t.logDir(), fmt.Sprintf(".%s.json.tmp", uuid.NewString()))
	if err := writeFileSync(tmp, content); err != nil {
		return -1, fmt.Errorf("delta: commit %s: %w", operation, err)
	}
	defer os.Remove(tmp)

	v := int64(0)
	if tx.read != nil {
		v = tx.read.Version + 1
	}
	for attempt := 0; ; attempt++ {
		err := os.Link(tmp, tx.t.commitPath(v))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return -1, fmt.Errorf("delta: commit %s as version %d: %w", operation, v, err)
		}
		if attempt+1 >= maxCommitAttempts {
			return -1, fmt.Errorf("delta: commit %s: other writers won %d versions in a row (last %d); retry later", operation, maxCommitAttempts, v)
		}
		winner, err := tx.t.ReadCommit(v)
		if err != nil {
			return -1, fmt.Errorf("delta: commit %s: read the concurrent version %d: %w", operation, v, err)
		}
		if why := tx.conflict(winner); why != "" {
			return -1, fmt.Errorf("delta: commit %s to %s: version %d was committed concurrently and %s: %w", operation, tx.t.Dir, v, why, ErrConflict)
		}
		v++
	}
	if err := syncDir(tx.t.logDir()); err != nil {
		return -1, fmt.Errorf("delta: commit %s: %w", operation, err)
	}
	if v == 0 {
		if err := syncDir(tx.t.Dir); err != nil { // the new _delta_log folder
			return -1, fmt.Errorf("delta: commit %s: %w", operation, err)
		}
	}
	tx.committed = true
	meta := tx.metadata
	if meta == nil {
		meta = &tx.read.Metadata
	}
	if err := tx.t.checkpointAfter(v, meta.CheckpointInterval()); err != nil {
		// The commit stands; readers replay the JSON commits instead, and the next multiple of
		// the interval writes a checkpoint again.
		slog.Warn("delta: writing a checkpoint failed", "table", tx.t.Dir, "version", v, "err", err)
	}
	return v, nil
}

// commit builds the actions of the transaction.
func (tx *Transaction) commit(operation string, params map[string]any) *Commit {
	// As Delta Spark records it: an append that read nothing of the table. A MERGE reads the
	// table (its keys), even when it only inserts rows.
	blind := len(tx.removes) == 0 && len(tx.cdcs) == 0 && operation != "MERGE"
	info := CommitInfo{
		Timestamp: nowMillis(), Operation: operation, OperationParameters: params,
		IsBlindAppend: &blind, OperationMetrics: tx.metrics, EngineInfo: EngineInfo, Extra: tx.extra,
	}
	if tx.read != nil {
		rv := tx.read.Version
		info.ReadVersion = &rv
	}
	proto, rf, wf := tx.plannedProtocol()
	c := &Commit{
		Info: info, Protocol: proto, Metadata: tx.metadata,
		Txns: tx.txns, Adds: tx.adds, Removes: tx.removes, CDCs: tx.cdcs,
	}
	if proto != nil {
		if proto.MinReaderVersion >= 3 {
			c.readerFeatures = append([]string{}, rf...)
		}
		if proto.MinWriterVersion >= 7 {
			c.writerFeatures = append([]string{}, wf...)
		}
	}
	return c
}

// supportedWriterFeatures are the table features (writer version 7) this package writes
// correctly (Delta PROTOCOL.md, "Valid Feature Names in Table Features"): it honours
// delta.appendOnly and delta.enableChangeDataFeed, refuses tables with CHECK constraints, writes
// deletion vectors with the physical numRecords, writes TIMESTAMP_NTZ columns as
// TIMESTAMP(isAdjustedToUTC=false) with stats and partition values without zone. invariants and generatedColumns are accepted as
// on the legacy writer versions 2-4 (which imply them): the schema package keeps no column
// metadata, so delta.invariants and delta.generationExpression are neither seen nor enforced;
// tables this package creates have neither.
var supportedWriterFeatures = map[string]bool{
	"appendOnly": true, "changeDataFeed": true, "checkConstraints": true, FeatureDeletionVectors: true,
	"generatedColumns": true, "invariants": true, FeatureTimestampNTZ: true,
}

func (tx *Transaction) validate() error {
	meta := tx.metadata
	if tx.read == nil {
		if meta == nil {
			return errors.New("a new table needs SetMetadata")
		}
	} else if meta == nil {
		meta = &tx.read.Metadata
	}
	if tx.metadata != nil {
		if len(meta.Schema.Fields) == 0 {
			return errors.New("the schema has no column")
		}
		seen := map[string]bool{}
		for _, f := range meta.Schema.Fields {
			k := strings.ToLower(f.Name)
			if seen[k] {
				return fmt.Errorf("column %q appears twice (Delta column names are case-insensitive)", f.Name)
			}
			seen[k] = true
		}
		for _, p := range meta.PartitionColumns {
			i := meta.Schema.Index(p)
			if i < 0 {
				return fmt.Errorf("partition column %q is not a column of the schema (%s)", p, meta.Schema.DDL())
			}
			if t := meta.Schema.Fields[i].Type; t.Nested() {
				return fmt.Errorf("partition column %q is of type %s; partition by a column of a primitive type", p, t.DDL())
			}
		}
	}
	proto, readerFeatures, features := tx.plannedProtocol()
	if proto == nil && tx.read != nil {
		proto, readerFeatures, features = &tx.read.Protocol, tx.read.ReaderFeatures, tx.read.WriterFeatures
	}
	if proto != nil {
		if proto.MinWriterVersion > 7 || (proto.MinWriterVersion > 4 && proto.MinWriterVersion < 7) {
			return fmt.Errorf("the table needs writer version %d, which this writer does not support (it supports 1-4, and 7 with the features %s)", proto.MinWriterVersion, supportedFeatureList())
		}
		if proto.MinReaderVersion == 3 && proto.MinWriterVersion != 7 {
			return fmt.Errorf("reader version 3 needs writer version 7, not %d (Delta PROTOCOL.md, Reader Version Requirements)", proto.MinWriterVersion)
		}
		if proto.MinWriterVersion < 7 {
			features = nil
		}
		if proto.MinReaderVersion < 3 {
			readerFeatures = nil
		}
		for _, f := range features {
			if !supportedWriterFeatures[f] {
				return fmt.Errorf("the table needs writer feature %q, which this writer does not support (it supports %s)", f, supportedFeatureList())
			}
		}
		for _, f := range readerFeatures {
			if !hasFeature(features, f) {
				return fmt.Errorf("reader feature %q is not among the writer features %v; Delta PROTOCOL.md (Disabled Features) requires reader features in both lists", f, features)
			}
		}
	}
	dvEnabled := proto != nil && proto.MinWriterVersion == 7 && hasFeature(features, FeatureDeletionVectors)
	for i := range tx.adds {
		a := &tx.adds[i]
		if a.DeletionVector == nil {
			continue
		}
		if !dvEnabled {
			return fmt.Errorf("file %s has a deletion vector, but the table does not have the deletionVectors feature; set the table property %s to \"true\" first", a.Path, ConfigEnableDeletionVectors)
		}
		if a.DeletionVector.Cardinality > 0 {
			st, err := wideBoundsStats(a.Stats)
			if err != nil {
				return fmt.Errorf("file %s: %w", a.Path, err)
			}
			a.Stats = st
		}
	}
	for k := range meta.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			return fmt.Errorf("the table has CHECK constraint %q, which this writer cannot enforce", k)
		}
	}
	if strings.EqualFold(strings.TrimSpace(meta.Configuration[ConfigAppendOnly]), "true") {
		for _, r := range tx.removes {
			if r.DataChange {
				return fmt.Errorf("the table is append-only (%s=true) and cannot remove %s", ConfigAppendOnly, r.Path)
			}
		}
	}
	paths := make(map[string]bool, len(tx.adds))
	for _, a := range tx.adds {
		if a.Path == "" {
			return errors.New("an add action has an empty path")
		}
		if paths[a.Path] {
			return fmt.Errorf("file %s is added twice", a.Path)
		}
		paths[a.Path] = true
	}
	clear(paths)
	for _, r := range tx.removes {
		if paths[r.Path] {
			return fmt.Errorf("file %s is removed twice", r.Path)
		}
		paths[r.Path] = true
	}
	return nil
}

// supportedFeatureList names the writer features of supportedWriterFeatures, sorted.
func supportedFeatureList() string {
	names := slices.Sorted(maps.Keys(supportedWriterFeatures))
	return strings.Join(names, ", ")
}

// conflict says why the winning commit w conflicts with this transaction, or "" when the
// transaction can be committed after it.
func (tx *Transaction) conflict(w *Commit) string {
	switch {
	case tx.read == nil:
		return "created the table first"
	case w.Metadata != nil:
		return "changed the table metadata"
	case w.Protocol != nil:
		return "changed the table protocol"
	case tx.metadata != nil && len(w.Adds) > 0:
		return fmt.Sprintf("added %d files while this transaction changes the metadata", len(w.Adds))
	}
	if len(tx.removes) > 0 && len(w.Removes) > 0 {
		mine := make(map[string]bool, len(tx.removes))
		for _, r := range tx.removes {
			mine[r.Path] = true
		}
		for _, r := range w.Removes {
			if mine[r.Path] {
				return fmt.Sprintf("removed file %s, which this transaction removes too", r.Path)
			}
		}
	}
	for _, wt := range w.Txns {
		if slices.ContainsFunc(tx.txns, func(x Txn) bool { return x.AppID == wt.AppID }) {
			return fmt.Sprintf("set txn version %d for appId %q, which this transaction sets too", wt.Version, wt.AppID)
		}
	}
	return ""
}

// writeFileSync writes data to a new file name and syncs it to disk.
func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// syncDir syncs a folder so that the names created in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
