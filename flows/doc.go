// Package flows runs the flows that fill a pipeline's datasets (semantics.md):
//   - ingest.go reads new files into a bronze streaming table (each file exactly once);
//   - applychanges.go reads a batch of change events for APPLY CHANGES; scd1.go applies it to an
//     SCD type 1 target (engine.go: the per-key reduction and the decision against the state);
//     scd2.go applies it to a target kept as per-key histories (SCD type 2, and SCD type 1 with
//     ignore_null_updates; history.go folds a history into rows);
//   - snapshot.go turns full snapshots into change events (APPLY CHANGES FROM SNAPSHOT);
//   - cdcstate.go, scd2state.go and statelog.go keep the CDC state;
//   - query.go runs `query:` datasets on DuckDB (package sqlengine): materialized views replaced
//     in one commit with a change feed of what changed, streaming tables over STREAM(x) (x's
//     version read is a txn action per stream source), views evaluated and not stored;
//   - follow.go folds the batch of an APPLY CHANGES target while the ingest flow of its bronze
//     table lands it, for the target to take when it runs next in the same update;
//   - deltasource.go reads a Delta table (by path, or another dataset's with `table:`) as appends
//     or as its change data feed.
//
// Invariants:
//   - One Delta commit per flow per batch: data files, change data files and the flow's progress
//     (a txn action: appId = the flow's id, version = the batch id or the last source version
//     read) are committed together, so a crash leaves all of a batch or none and a re-run never
//     applies a batch twice.
//   - Files read by an ingest flow are listed in <storage>/checkpoints/<flow>/offsets/<batch>.json
//     before the commit; only batches whose txn version is committed count as read.
//   - APPLY CHANGES keeps its CDC state (per-key sequence and tombstones, or per-key event
//     histories; which data file holds each key, with renames for rewritten files) under
//     <storage>/state/<dataset>/, versioned with the target: every commit of the target names the
//     state manifest written for it (commitInfo key "tributaryCdcState"). Only the manifest of
//     the last such commit is read; once a commit names its manifest, the folder is pruned to
//     that manifest and the one before it, with their segments.
package flows
