package update

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// Lock takes the storage lock of p for a maintenance command (optimize, vacuum) so that it does
// not run beside an update; what names the command in the lock file. It returns the function that
// releases the lock, or an error wrapping ErrLocked that names the holder.
func Lock(p *spec.Pipeline, what string) (func(), error) {
	lk, err := acquire(p.Storage, what)
	if err != nil {
		return nil, err
	}
	return lk.release, nil
}

// autoOptimize compacts t, the table of dataset d, after its flow committed, when the table's
// properties ask for it (delta.Table.AutoOptimize: pipelines.autoOptimize.managed, default on, and
// pipelines.autoOptimize.minNumFiles small files in a partition). Every flow copes with a
// compaction: the APPLY CHANGES states rebuild their key-to-file index when a file they name is
// gone (flows: cdcState.ensureFiles, histState.rebuildIndex). It reports what it did as an INFO event; a failure is a WARN event, never a failed
// flow (the batch is committed already).
func autoOptimize(t *delta.Table, d *spec.Dataset, events Emitter) {
	res, err := t.AutoOptimize()
	if err != nil {
		events.Emit(eventlog.Warn, eventlog.MaintenanceProgress, d.Name, d.Name,
			fmt.Sprintf("Automatic OPTIMIZE of %s failed: %v; the next update tries again.", d.Name, err), nil, err.Error())
		return
	}
	if res.Version < 0 {
		return
	}
	events.Emit(eventlog.Info, eventlog.MaintenanceProgress, d.Name, d.Name,
		fmt.Sprintf("Automatic OPTIMIZE of %s compacted %d files into %d (version %d).", d.Name, res.FilesRemoved, res.FilesAdded, res.Version),
		map[string]any{"maintenance_progress": map[string]any{
			"operation": "OPTIMIZE", "auto": true, "version": res.Version,
			"num_removed_files": res.FilesRemoved, "num_added_files": res.FilesAdded,
			"num_removed_bytes": res.BytesRemoved, "num_added_bytes": res.BytesAdded,
		}}, "")
}

// maintained is a table the automatic maintenance after a flow's commit looks after: a dataset's
// own (datasetTable; a quarantine table is one), or the dropped changes of a postgres source
// (droppedTable), which only its own flow reads, as a snapshot.
type maintained struct {
	d    *spec.Dataset // the events' flow and dataset, whose table_properties say whether VACUUM runs (managed)
	name string        // the table as the events' messages name it
	key  string        // its key in session.cleaned
	// logRead says flows of the pipeline may read the table from its log (flows.LogFloor,
	// autoVacuumFrom); without it no version before the latest is kept for a reader.
	logRead bool
}

// datasetTable is the table of dataset d, as maintained.
func datasetTable(d *spec.Dataset) maintained {
	return maintained{d: d, name: d.Name, key: d.Name, logRead: true}
}

// droppedTable is the table of the changes postgres source d's drop expectations left out
// (flows.PostgresDroppedDir), as maintained: no flow reads its log.
func droppedTable(p *spec.Pipeline, d *spec.Dataset) maintained {
	return maintained{d: d, name: "the dropped changes of " + d.Name + " (" + flows.PostgresDroppedDir(p.Storage, d.Name) + ")", key: "\x00postgres_dropped\x00" + d.Name}
}

// cleanupLog runs the metadata cleanup of t, the table m (delta.Table.CleanupExpiredLogs:
// commits and checkpoints older than its delta.logRetentionDuration, default 30 days), after its
// flow committed version: on the first commit of the table in this update, then once per
// checkpoint interval. It keeps what the pipeline's flows read from the log (flows.LogFloor). What
// it deleted is an INFO maintenance_progress event; a failure is a WARN event, never a failed flow.
func (s *session) cleanupLog(t *delta.Table, m maintained, version int64) {
	d := m.d
	snap, err := t.Snapshot(-1)
	if err == nil {
		n := snap.Metadata.CheckpointInterval()
		if last, ok := s.cleaned.Load(m.key); ok && last.(int64)/n == version/n {
			return
		}
		s.cleaned.Store(m.key, version)
		floor := func() (int64, error) { return snap.Version, nil }
		if m.logRead {
			floor = func() (int64, error) { return flows.LogFloor(s.p, d, t, snap) }
		}
		var res delta.LogCleanupResult
		if res, err = t.CleanupExpiredLogs(time.Now(), floor); err == nil && len(res.Files) > 0 {
			s.events.Emit(eventlog.Info, eventlog.MaintenanceProgress, d.Name, d.Name,
				fmt.Sprintf("Metadata cleanup of %s deleted %d expired log files; its log now starts at version %d.", m.name, len(res.Files), res.Checkpoint),
				map[string]any{"maintenance_progress": map[string]any{
					"operation": "METADATA CLEANUP", "auto": true, "version": snap.Version,
					"num_removed_files": len(res.Files), "log_start_version": res.Checkpoint,
				}}, "")
		}
	}
	if err != nil {
		s.warns.Emit(eventlog.Warn, eventlog.MaintenanceProgress, d.Name, d.Name,
			fmt.Sprintf("Metadata cleanup of %s failed: %v; a later update tries again.", m.name, err), nil, err.Error())
		return
	}
	s.autoVacuum(t, m, snap)
}

// autoVacuum runs VACUUM on t, the table m at snap, as Delta Live Tables' automatic
// maintenance does, when this update wrote one of its checkpoints (so about once every
// delta.checkpointInterval commits, however often updates run) and automatic maintenance is on
// (pipelines.autoOptimize.managed is not "false"): the files no version within the table's
// delta.deletedFileRetentionDuration (default 7 days) needs go (and those no version names, such
// as the data files of a write killed before its commit, once older than that), except those of
// versions a flow of the pipeline has not read yet (flows.UnreadFrom), as `pipeline vacuum` does,
// and every version of a table an apply_changes_from_snapshot flow reads (autoVacuumFrom). What it
// deleted is an INFO maintenance_progress event; a failure is a WARN event.
func (s *session) autoVacuum(t *delta.Table, m maintained, snap *delta.Snapshot) {
	d := m.d
	if on, _ := snap.Metadata.AutoOptimize(); !on || !managed(d) {
		return
	}
	n := snap.Metadata.CheckpointInterval()
	cp := filepath.Join(t.Dir, delta.LogDir, fmt.Sprintf("%020d.checkpoint.parquet", snap.Version/n*n))
	if st, err := os.Stat(cp); err != nil || st.ModTime().Before(s.start) {
		return // no checkpoint written by this update
	}
	from, err := int64(-1), error(nil)
	if m.logRead {
		from, err = autoVacuumFrom(s.p, d.Name)
	}
	var res delta.VacuumResult
	if err == nil {
		res, err = t.Vacuum(delta.VacuumOptions{Retain: -1, KeepFromVersion: from})
	}
	switch {
	case err != nil:
		s.warns.Emit(eventlog.Warn, eventlog.MaintenanceProgress, d.Name, d.Name,
			fmt.Sprintf("Automatic VACUUM of %s failed: %v; a later update tries again.", m.name, err), nil, err.Error())
	case len(res.Files) > 0:
		s.events.Emit(eventlog.Info, eventlog.MaintenanceProgress, d.Name, d.Name,
			fmt.Sprintf("Automatic VACUUM of %s deleted %d files (%d bytes) that no version of the last %s needs.", m.name, len(res.Files), res.Bytes, res.Retain),
			map[string]any{"maintenance_progress": map[string]any{
				"operation": "VACUUM", "auto": true, "version": snap.Version,
				"num_deleted_files": len(res.Files), "num_deleted_bytes": res.Bytes,
			}}, "")
	}
}

// autoVacuumFrom returns the first version of dataset name's table whose files automatic VACUUM
// keeps (delta.VacuumOptions.KeepFromVersion): those a flow of p has not read yet
// (flows.UnreadFrom), or every version (0) when an apply_changes_from_snapshot flow reads the
// table: each version is one of its snapshots, and its full refresh applies them all again (so
// metadata cleanup keeps that table's whole log too, flows.LogFloor).
func autoVacuumFrom(p *spec.Pipeline, name string) (int64, error) {
	readers, err := flows.Readers(p, name)
	if err != nil {
		return -1, err
	}
	for _, r := range readers {
		if r.Snapshots {
			return 0, nil
		}
	}
	return flows.UnreadFrom(p, name)
}

// managed reports whether dataset d's spec leaves automatic OPTIMIZE and VACUUM on: its
// table_properties do not set pipelines.autoOptimize.managed to "false" (as
// delta.Metadata.AutoOptimize reads the table's own).
func managed(d *spec.Dataset) bool {
	return !strings.EqualFold(strings.TrimSpace(d.TableProperties[delta.ConfigAutoOptimize]), "false")
}

// maintainQuarantine gives the quarantine table of dataset d (spec.QuarantineSuffix), which d's
// flow writes, the automatic maintenance of a dataset's table: OPTIMIZE, metadata cleanup and
// VACUUM, OPTIMIZE and VACUUM only when d's are on (managed). No flow reads it from its log. A missing table (no row quarantined yet) is left alone.
func (s *session) maintainQuarantine(d *spec.Dataset) {
	// The quarantine table has properties of its own (setupQuarantine); d's choice of automatic
	// maintenance is its too.
	q := &spec.Dataset{Name: d.Name + spec.QuarantineSuffix, TableProperties: map[string]string{}}
	if v, ok := d.TableProperties[delta.ConfigAutoOptimize]; ok {
		q.TableProperties[delta.ConfigAutoOptimize] = v
	}
	t := delta.New(flows.TableDir(s.p.Storage, q.Name))
	v, err := t.LatestVersion()
	if err != nil || v < 0 {
		return
	}
	if managed(q) {
		autoOptimize(t, q, s.warns)
	}
	if v, err = t.LatestVersion(); err == nil {
		s.cleanupLog(t, datasetTable(q), v)
	}
}

// maintainPostgresDropped gives the table of the changes postgres source d's drop expectations
// left out (flows.PostgresDroppedDir) the metadata cleanup and VACUUM of a dataset's table, VACUUM
// only when d's automatic maintenance is on (managed): d's flow compacts it itself, keeping the
// latest row of each key, which leaves the rows it replaced to VACUUM, with the data files of a
// run killed before its commit. A missing table (nothing dropped since the snapshot) is left alone.
func (s *session) maintainPostgresDropped(d *spec.Dataset) {
	t := delta.New(flows.PostgresDroppedDir(s.p.Storage, d.Name))
	v, err := t.LatestVersion()
	if err != nil || v < 0 {
		return
	}
	s.cleanupLog(t, droppedTable(s.p, d), v)
}
