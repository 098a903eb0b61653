package update

import (
	"fmt"

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

// Optimizable reports whether OPTIMIZE may rewrite the files of dataset d's table, and why not.
// A streaming table fed by `source` keeps no index of its files. An SCD type 1 APPLY CHANGES
// target (from a change feed or from snapshots) rebuilds its key-to-file index when a file it
// names is no longer live (flows: cdcState.ensureFiles). Targets kept as per-key histories (SCD
// type 2, or SCD type 1 with ignore_null_updates) fail their next batch when a file they name was
// rewritten, so they are not optimized until their state rebuilds its index the same way.
func Optimizable(d *spec.Dataset) (bool, string) {
	const why = "its APPLY CHANGES state keeps per-key histories with the data file of each key, which OPTIMIZE would make stale"
	switch {
	case d.ApplyChanges != nil && (d.ApplyChanges.StoredAsSCDType == 2 || d.ApplyChanges.IgnoreNullUpdates):
		return false, why
	case d.ApplyChangesFromSnapshot != nil && d.ApplyChangesFromSnapshot.StoredAsSCDType == 2:
		return false, why
	}
	return true, ""
}

// autoOptimize compacts the table of dataset d after its flow committed, when the table's
// properties ask for it (delta.Table.AutoOptimize: pipelines.autoOptimize.managed, default on, and
// pipelines.autoOptimize.minNumFiles small files in a partition) and OPTIMIZE is safe for the
// dataset. It reports what it did as an INFO event; a failure is a WARN event, never a failed
// flow (the batch is committed already).
func autoOptimize(p *spec.Pipeline, d *spec.Dataset, events *eventlog.Log) {
	if ok, _ := Optimizable(d); !ok {
		return
	}
	res, err := delta.New(flows.TableDir(p.Storage, d.Name)).AutoOptimize()
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
