package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"tributary/internal/fault"
)

// Checkpoints (Delta PROTOCOL.md, "Checkpoints", "Checkpoint Schema", "Last Checkpoint File").
// This package reads classic (NNN.checkpoint.parquet) and multi-part checkpoints, with the V2
// spec's sidecar files when a classic checkpoint names them, and writes classic V1 checkpoints
// every delta.checkpointInterval commits.

// LastCheckpointFile is the name of the pointer to the newest checkpoint inside _delta_log.
const LastCheckpointFile = "_last_checkpoint"

// checkpointRef is one complete checkpoint: its version and its file names in _delta_log (one
// for a classic checkpoint, the parts in order for a multi-part one).
type checkpointRef struct {
	version int64
	files   []string
}

type checkpointName struct {
	version     int64
	part, parts int // 0, 0 for a classic checkpoint
	uuid        bool
}

// parseCheckpointName recognises "%020d.checkpoint.parquet", "%020d.checkpoint.%010d.%010d.parquet"
// and UUID-named "%020d.checkpoint.<uuid>.(json|parquet)".
func parseCheckpointName(name string) (checkpointName, bool) {
	const mid = ".checkpoint."
	if len(name) < 20+len(mid) || name[20:20+len(mid)] != mid {
		return checkpointName{}, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return checkpointName{}, false
	}
	rest := name[20+len(mid):]
	switch {
	case rest == "parquet":
		return checkpointName{version: v}, true
	case len(rest) == 10+1+10+len(".parquet") && rest[10] == '.' && rest[21:] == ".parquet":
		part, err1 := strconv.Atoi(rest[:10])
		parts, err2 := strconv.Atoi(rest[11:21])
		if err1 != nil || err2 != nil || part < 1 || part > parts {
			return checkpointName{}, false
		}
		return checkpointName{version: v, part: part, parts: parts}, true
	}
	for _, ext := range []string{".json", ".parquet"} {
		if u := rest[:max(0, len(rest)-len(ext))]; len(rest) > len(ext) && rest[len(u):] == ext {
			if _, err := uuid.Parse(u); err == nil {
				return checkpointName{version: v, uuid: true}, true
			}
		}
	}
	return checkpointName{}, false
}

// The checkpoint schema of Delta PROTOCOL.md "Checkpoint Schema", as Spark writes it: every
// field optional, maps with optional values, lists of optional elements.
type (
	cpTxn struct {
		AppID       *string `parquet:"appId,optional"`
		Version     *int64  `parquet:"version,optional"`
		LastUpdated *int64  `parquet:"lastUpdated,optional"`
	}
	cpDeletionVector struct {
		StorageType    *string `parquet:"storageType,optional"`
		PathOrInlineDv *string `parquet:"pathOrInlineDv,optional"`
		Offset         *int32  `parquet:"offset,optional"`
		SizeInBytes    *int32  `parquet:"sizeInBytes,optional"`
		Cardinality    *int64  `parquet:"cardinality,optional"`
		MaxRowIndex    *int64  `parquet:"maxRowIndex,optional"`
	}
	cpAdd struct {
		Path             *string            `parquet:"path,optional"`
		PartitionValues  map[string]*string `parquet:"partitionValues,optional"`
		Size             *int64             `parquet:"size,optional"`
		ModificationTime *int64             `parquet:"modificationTime,optional"`
		DataChange       *bool              `parquet:"dataChange,optional"`
		Tags             map[string]*string `parquet:"tags,optional"`
		DeletionVector   *cpDeletionVector  `parquet:"deletionVector,optional"`
		Stats            *string            `parquet:"stats,optional"`
	}
	cpRemove struct {
		Path                 *string            `parquet:"path,optional"`
		DeletionTimestamp    *int64             `parquet:"deletionTimestamp,optional"`
		DataChange           *bool              `parquet:"dataChange,optional"`
		ExtendedFileMetadata *bool              `parquet:"extendedFileMetadata,optional"`
		PartitionValues      map[string]*string `parquet:"partitionValues,optional"`
		Size                 *int64             `parquet:"size,optional"`
		DeletionVector       *cpDeletionVector  `parquet:"deletionVector,optional"`
	}
	cpFormat struct {
		Provider *string            `parquet:"provider,optional"`
		Options  map[string]*string `parquet:"options,optional"`
	}
	cpMetadata struct {
		ID               *string            `parquet:"id,optional"`
		Name             *string            `parquet:"name,optional"`
		Description      *string            `parquet:"description,optional"`
		Format           *cpFormat          `parquet:"format,optional"`
		SchemaString     *string            `parquet:"schemaString,optional"`
		PartitionColumns []*string          `parquet:"partitionColumns,optional,list"`
		Configuration    map[string]*string `parquet:"configuration,optional"`
		CreatedTime      *int64             `parquet:"createdTime,optional"`
	}
	cpProtocol struct {
		MinReaderVersion *int32    `parquet:"minReaderVersion,optional"`
		MinWriterVersion *int32    `parquet:"minWriterVersion,optional"`
		ReaderFeatures   []*string `parquet:"readerFeatures,optional,list"`
		WriterFeatures   []*string `parquet:"writerFeatures,optional,list"`
	}
	cpSidecar struct {
		Path        *string `parquet:"path,optional"`
		SizeInBytes *int64  `parquet:"sizeInBytes,optional"`
	}
	// cpRow is one row (one action) of the checkpoints this package writes.
	cpRow struct {
		Txn      *cpTxn      `parquet:"txn,optional"`
		Add      *cpAdd      `parquet:"add,optional"`
		Remove   *cpRemove   `parquet:"remove,optional"`
		MetaData *cpMetadata `parquet:"metaData,optional"`
		Protocol *cpProtocol `parquet:"protocol,optional"`
	}
	// cpReadRow is cpRow plus the V2 spec's sidecar action, for reading.
	cpReadRow struct {
		Txn      *cpTxn      `parquet:"txn,optional"`
		Add      *cpAdd      `parquet:"add,optional"`
		Remove   *cpRemove   `parquet:"remove,optional"`
		MetaData *cpMetadata `parquet:"metaData,optional"`
		Protocol *cpProtocol `parquet:"protocol,optional"`
		Sidecar  *cpSidecar  `parquet:"sidecar,optional"`
	}
)

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func i64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func flag(p *bool) bool { return p != nil && *p }

func strMap(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = str(v) // a NULL partition value reads as "", which Delta reads as NULL
	}
	return out
}

func ptrMap(m map[string]string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		if v == "" {
			out[k] = nil
			continue
		}
		out[k] = &v
	}
	return out
}

func strList(l []*string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, p := range l {
		out[i] = str(p)
	}
	return out
}

func ptrList(l []string) []*string {
	if l == nil {
		return nil
	}
	out := make([]*string, len(l))
	for i := range l {
		out[i] = &l[i]
	}
	return out
}

// descriptor returns the deletion vector of a checkpoint row, or nil when the struct is null
// or has no storage type.
func (d *cpDeletionVector) descriptor() *DeletionVector {
	if d == nil || d.StorageType == nil {
		return nil
	}
	dv := &DeletionVector{StorageType: *d.StorageType, PathOrInlineDv: str(d.PathOrInlineDv), Cardinality: i64(d.Cardinality)}
	if d.Offset != nil {
		o := *d.Offset
		dv.Offset = &o
	}
	if d.SizeInBytes != nil {
		dv.SizeInBytes = *d.SizeInBytes
	}
	return dv
}

// cpDV is the checkpoint struct of a deletion vector, nil for none.
func cpDV(dv *DeletionVector) *cpDeletionVector {
	if dv == nil {
		return nil
	}
	c := &cpDeletionVector{
		StorageType: ptr(dv.StorageType), PathOrInlineDv: ptr(dv.PathOrInlineDv),
		SizeInBytes: ptr(dv.SizeInBytes), Cardinality: ptr(dv.Cardinality),
	}
	if dv.Offset != nil {
		c.Offset = ptr(*dv.Offset)
	}
	return c
}

// readCheckpoint reads a checkpoint into a replay state at its version. The state's timestamp
// is that of the commit at the checkpoint's version when its file is still there, else the
// checkpoint file's modification time.
func (t *Table) readCheckpoint(ref checkpointRef) (*replayState, error) {
	stamp, err := checkpointStamp(t.logDir(), ref)
	if err == nil {
		if v, ok := checkpointCache.Load(t.logDir()); ok {
			if c := v.(*cachedCheckpoint); c.stamp == stamp {
				return c.state.clone(), nil
			}
		}
	}
	st, err := t.readCheckpointFiles(ref)
	if err == nil && stamp != "" {
		checkpointCache.Store(t.logDir(), &cachedCheckpoint{stamp: stamp, state: st.clone()})
	}
	return st, err
}

// checkpointCache keeps, per _delta_log folder, the replay state of the last checkpoint this
// process read, so that the many snapshots one update takes of a table (each through a Table
// of its own) parse its checkpoint once. A checkpoint file is written once and never changed;
// the stamp (names, sizes, modification times) tells a table re-created in the same folder.
var checkpointCache sync.Map // log dir -> *cachedCheckpoint

type cachedCheckpoint struct {
	stamp string
	state *replayState // never replayed further: readers get clones
}

// checkpointStamp identifies the files of checkpoint ref: each name, size and modification time.
func checkpointStamp(logDir string, ref checkpointRef) (string, error) {
	var b strings.Builder
	for _, name := range ref.files {
		fi, err := os.Stat(filepath.Join(logDir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %d %d;", name, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

// clone returns a copy of r that replay can change without changing r (actions are replaced by
// replay, never changed in place, so their maps are shared).
func (r *replayState) clone() *replayState {
	c := *r
	c.readerFeat, c.writerFeat = slices.Clone(r.readerFeat), slices.Clone(r.writerFeat)
	c.files = slices.Clone(r.files)
	c.index, c.txns, c.tombstones = maps.Clone(r.index), maps.Clone(r.txns), maps.Clone(r.tombstones)
	return &c
}

// readCheckpointFiles reads checkpoint ref (its parts and sidecars) into a replay state.
func (t *Table) readCheckpointFiles(ref checkpointRef) (*replayState, error) {
	st := newReplayState()
	var sidecars []string
	for _, name := range ref.files {
		sc, err := t.readCheckpointFile(st, filepath.Join(t.logDir(), name))
		if err != nil {
			return nil, fmt.Errorf("delta: checkpoint %s: %w", name, err)
		}
		sidecars = append(sidecars, sc...)
	}
	for _, sc := range sidecars {
		name, err := localPath(filepath.Join(t.logDir(), "_sidecars"), sc)
		if err != nil {
			return nil, fmt.Errorf("delta: checkpoint %d: sidecar %s: %w", ref.version, sc, err)
		}
		if _, err := t.readCheckpointFile(st, name); err != nil {
			return nil, fmt.Errorf("delta: checkpoint %d: sidecar %s: %w", ref.version, sc, err)
		}
	}
	if !st.hasProtocol || !st.hasMetadata {
		return nil, fmt.Errorf("delta: checkpoint %d of %s has no protocol or metaData action", ref.version, t.Dir)
	}
	st.version = ref.version
	if c, err := t.ReadCommit(ref.version); err == nil {
		st.timestamp = c.Timestamp()
	} else if fi, err := os.Stat(filepath.Join(t.logDir(), ref.files[0])); err == nil {
		st.timestamp = fi.ModTime().UnixMilli()
	}
	return st, nil
}

// readCheckpointFile folds the actions of one checkpoint (or sidecar) file into st and returns
// the paths of the sidecar files it names.
func (t *Table) readCheckpointFile(st *replayState, name string) ([]string, error) {
	f, pf, err := openParquet(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if pf.Root().Column("sidecar") == nil {
		// The schema this package writes: read without conversion when the file has it.
		return nil, readCheckpointRows(pf, func(row cpRow) error {
			return st.applyCheckpointRow(cpReadRow{Txn: row.Txn, Add: row.Add, Remove: row.Remove, MetaData: row.MetaData, Protocol: row.Protocol})
		})
	}
	var sidecars []string
	err = readCheckpointRows(pf, func(row cpReadRow) error {
		if row.Sidecar != nil && row.Sidecar.Path != nil {
			sidecars = append(sidecars, *row.Sidecar.Path)
		}
		return st.applyCheckpointRow(row)
	})
	return sidecars, err
}

// readCheckpointRows reads every row of a checkpoint file as a T and calls fn on it.
func readCheckpointRows[T any](pf *parquet.File, fn func(T) error) error {
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	buf := make([]T, 256)
	for {
		clear(buf)
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			if err := fn(row); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// applyCheckpointRow adds one checkpoint action to the state. A checkpoint holds each logical
// file (path, DV unique id) at most once (add or remove), so the order of the rows does not
// matter.
func (st *replayState) applyCheckpointRow(row cpReadRow) error {
	switch {
	case row.Protocol != nil:
		p := row.Protocol
		if p.MinReaderVersion != nil {
			st.protocol.MinReaderVersion = int(*p.MinReaderVersion)
		}
		if p.MinWriterVersion != nil {
			st.protocol.MinWriterVersion = int(*p.MinWriterVersion)
		}
		st.readerFeat, st.writerFeat = strList(p.ReaderFeatures), strList(p.WriterFeatures)
		st.hasProtocol = true
	case row.MetaData != nil:
		m := row.MetaData
		w := wireMetadata{
			ID: str(m.ID), Name: str(m.Name), Description: str(m.Description),
			SchemaString: str(m.SchemaString), PartitionColumns: strList(m.PartitionColumns),
			Configuration: strMap(m.Configuration), CreatedTime: m.CreatedTime,
		}
		if m.Format != nil {
			w.Format = wireFormat{Provider: str(m.Format.Provider), Options: strMap(m.Format.Options)}
		}
		md, err := w.metadata()
		if err != nil {
			return fmt.Errorf("metaData: %w", err)
		}
		if md.PartitionColumns == nil {
			md.PartitionColumns = []string{}
		}
		st.metadata, st.hasMetadata = md, true
	case row.Txn != nil && row.Txn.AppID != nil:
		st.txns[*row.Txn.AppID] = i64(row.Txn.Version)
	case row.Add != nil && row.Add.Path != nil:
		a := row.Add
		st.addFile(Add{
			Path: *a.Path, PartitionValues: strMap(a.PartitionValues), Size: i64(a.Size),
			ModificationTime: i64(a.ModificationTime), DataChange: flag(a.DataChange), Stats: str(a.Stats),
			Tags: nilIfEmpty(strMap(a.Tags)), DeletionVector: a.DeletionVector.descriptor(),
		}, -1)
	case row.Remove != nil && row.Remove.Path != nil:
		rm := row.Remove
		r := Remove{
			Path: *rm.Path, DeletionTimestamp: i64(rm.DeletionTimestamp), DataChange: flag(rm.DataChange),
			ExtendedFileMetadata: flag(rm.ExtendedFileMetadata), PartitionValues: strMap(rm.PartitionValues),
			Size: i64(rm.Size), DeletionVector: rm.DeletionVector.descriptor(),
		}
		st.tombstones[fileKey(r.Path, r.DeletionVector)] = r
	}
	return nil
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// lastCheckpoint is the content of _delta_log/_last_checkpoint (Delta PROTOCOL.md, "Last
// Checkpoint File Schema").
type lastCheckpoint struct {
	Version       int64 `json:"version"`
	Size          int64 `json:"size"`
	Parts         *int  `json:"parts,omitempty"`
	SizeInBytes   int64 `json:"sizeInBytes,omitempty"`
	NumOfAddFiles int64 `json:"numOfAddFiles,omitempty"`
}

// readLastCheckpoint returns the version _last_checkpoint names, or -1 when the file is missing
// or unreadable (readers must not rely on it: Delta PROTOCOL.md, "Last Checkpoint File").
func (t *Table) readLastCheckpoint() int64 {
	b, err := os.ReadFile(filepath.Join(t.logDir(), LastCheckpointFile))
	if err != nil {
		return -1
	}
	var lc lastCheckpoint
	if json.Unmarshal(b, &lc) != nil {
		return -1
	}
	return lc.Version
}

// WriteCheckpoint writes the classic checkpoint of snap, _delta_log/%020d.checkpoint.parquet
// (Delta PROTOCOL.md, "Checkpoints", V1 spec), and points _last_checkpoint at it unless that
// already names a newer checkpoint. The checkpoint holds the protocol, the metaData, the txn of
// each appId, the live files (with stats unless delta.checkpoint.writeStatsAsJson is "false")
// and the removes not yet expired by delta.deletedFileRetentionDuration; no commitInfo and no
// cdc. It is written to a temporary name, synced and renamed, so a reader never sees a partial
// checkpoint; writing the checkpoint of a version that has one already does nothing.
func (t *Table) WriteCheckpoint(snap *Snapshot) error {
	final := filepath.Join(t.logDir(), fmt.Sprintf("%020d.checkpoint.parquet", snap.Version))
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	retention, err := snap.Metadata.DeletedFileRetention()
	if err != nil {
		return err
	}
	expiry := nowMillis() - retention.Milliseconds()
	withStats := snap.Metadata.Configuration[ConfigWriteStatsAsJSON] != "false"

	rows := make([]cpRow, 0, 2+len(snap.AppTxns)+len(snap.Files)+len(snap.Tombstones))
	p := cpProtocol{MinReaderVersion: ptr(int32(snap.Protocol.MinReaderVersion)), MinWriterVersion: ptr(int32(snap.Protocol.MinWriterVersion))}
	if snap.Protocol.MinReaderVersion >= 3 {
		p.ReaderFeatures = ptrList(append([]string{}, snap.ReaderFeatures...))
	}
	if snap.Protocol.MinWriterVersion >= 7 {
		p.WriterFeatures = ptrList(append([]string{}, snap.WriterFeatures...))
	}
	rows = append(rows, cpRow{Protocol: &p})
	m := snap.Metadata.wire()
	cm := cpMetadata{
		ID: ptr(m.ID), SchemaString: ptr(m.SchemaString), PartitionColumns: ptrList(append([]string{}, m.PartitionColumns...)),
		Configuration: ptrMap(m.Configuration), CreatedTime: m.CreatedTime,
		Format: &cpFormat{Provider: ptr(m.Format.Provider), Options: ptrMap(m.Format.Options)},
	}
	if m.Name != "" {
		cm.Name = ptr(m.Name)
	}
	if m.Description != "" {
		cm.Description = ptr(m.Description)
	}
	rows = append(rows, cpRow{MetaData: &cm})
	apps := make([]string, 0, len(snap.AppTxns))
	for app := range snap.AppTxns {
		apps = append(apps, app)
	}
	slices.Sort(apps)
	for _, app := range apps {
		rows = append(rows, cpRow{Txn: &cpTxn{AppID: ptr(app), Version: ptr(snap.AppTxns[app])}})
	}
	numAdds := int64(0)
	for _, a := range snap.Files {
		ca := &cpAdd{
			Path: ptr(a.Path), PartitionValues: emptyPtrMap(a.PartitionValues), Size: ptr(a.Size),
			ModificationTime: ptr(a.ModificationTime), DataChange: ptr(false), Tags: ptrMap(a.Tags),
		}
		if withStats && a.Stats != "" {
			ca.Stats = ptr(a.Stats)
		}
		ca.DeletionVector = cpDV(a.DeletionVector)
		rows = append(rows, cpRow{Add: ca})
		numAdds++
	}
	for _, r := range snap.Tombstones {
		if r.DeletionTimestamp <= expiry {
			continue
		}
		rows = append(rows, cpRow{Remove: &cpRemove{
			Path: ptr(r.Path), DeletionTimestamp: ptr(r.DeletionTimestamp), DataChange: ptr(false),
			ExtendedFileMetadata: ptr(r.ExtendedFileMetadata), PartitionValues: emptyPtrMap(r.PartitionValues), Size: ptr(r.Size),
			DeletionVector: cpDV(r.DeletionVector),
		}})
	}

	tmp := filepath.Join(t.logDir(), fmt.Sprintf(".%s.checkpoint.parquet.tmp", uuid.NewString()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := parquet.NewGenericWriter[cpRow](f, parquet.Compression(&parquet.Snappy), parquet.CreatedBy("tributary", "", ""))
	if _, err := w.Write(rows); err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	done = true
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	if err := syncDir(t.logDir()); err != nil {
		return fmt.Errorf("delta: checkpoint %d: %w", snap.Version, err)
	}
	fault.Point("checkpoint.before-last-checkpoint")
	if t.readLastCheckpoint() >= snap.Version {
		return nil
	}
	b, _ := json.Marshal(lastCheckpoint{Version: snap.Version, Size: int64(len(rows)), SizeInBytes: fi.Size(), NumOfAddFiles: numAdds})
	tmp = filepath.Join(t.logDir(), fmt.Sprintf(".%s.last_checkpoint.tmp", uuid.NewString()))
	if err := writeFileSync(tmp, b); err != nil {
		return fmt.Errorf("delta: %s: %w", LastCheckpointFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(t.logDir(), LastCheckpointFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("delta: %s: %w", LastCheckpointFile, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// emptyPtrMap is ptrMap that keeps an empty map empty rather than NULL: partitionValues is
// required in add actions.
func emptyPtrMap(m map[string]string) map[string]*string {
	if m == nil {
		return map[string]*string{}
	}
	return ptrMap(m)
}

// checkpointAfter writes the checkpoint of version v when v is a multiple of the table's
// delta.checkpointInterval. A failure does not undo the commit: it is returned for the caller
// to report, and the next multiple tries again.
func (t *Table) checkpointAfter(v, interval int64) error {
	if v <= 0 || interval <= 0 || v%interval != 0 {
		return nil
	}
	fault.Point("checkpoint.before-write")
	snap, err := t.Snapshot(v)
	if err != nil {
		return err
	}
	return t.WriteCheckpoint(snap)
}
