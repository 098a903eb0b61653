// Package flows runs the flows that fill a pipeline's datasets, one file per flow kind:
// ingest.go reads new files into a bronze streaming table (each file exactly once);
// scd1.go applies a change log to a keyed table (APPLY CHANGES, SCD type 1, semantics.md).
//
// Invariants:
//   - One Delta commit per flow per batch: data files, change data files and the flow's progress
//     (a txn action: appId = the flow's id, version = the batch id or the last source version
//     read) are committed together, so a crash leaves all of a batch or none and a re-run never
//     applies a batch twice.
//   - Files read by an ingest flow are listed in <storage>/checkpoints/<flow>/offsets/<batch>.json
//     before the commit; only batches whose txn version is committed count as read.
//   - APPLY CHANGES keeps its CDC state (per-key sequence, tombstones, which data file holds each
//     live key) under <storage>/state/<dataset>/, versioned with the target: every commit of the
//     target names the state manifest written for it (commitInfo key "tributaryCdcState").
package flows
