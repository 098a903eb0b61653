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

// autoOptimize compacts the table of dataset d after its flow committed, when the table's
// properties ask for it (delta.Table.AutoOptimize: pipelines.autoOptimize.managed, default on, and
// pipelines.autoOptimize.minNumFiles small files in a partition). Every flow copes with a
// compaction: the APPLY CHANGES states rebuild their key-to-file index when a file they name is
// gone (flows: cdcState.ensureFiles, histState.rebuildIndex). It reports what it did as an INFO event; a failure is a WARN event, never a failed
// flow (the batch is committed already).
func autoOptimize(p *spec.Pipeline, d *spec.Dataset, events *eventlog.Log) {
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
