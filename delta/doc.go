// Package delta reads and writes Delta Lake tables in a local folder, following Delta
// PROTOCOL.md (github.com/delta-io/delta): the tables it writes are read by Spark, delta-rs and
// DuckDB, and it reads the tables they write for the column types of package schema.
//
// The layering follows the protocol:
//
//   - actions.go: the actions of a commit (protocol, metaData, add, remove, cdc, txn,
//     commitInfo) and their JSON lines.
//   - log.go: the _delta_log folder: commit file names, listing versions and checkpoints,
//     reading one commit.
//   - snapshot.go: log replay (action reconciliation) into a Snapshot, starting from a cached
//     state, the newest checkpoint at or below the version, or version 0.
//   - checkpoint.go: classic and multi-part checkpoints (V1, and V2 sidecars named by a classic
//     checkpoint) and _last_checkpoint; a checkpoint is written every delta.checkpointInterval
//     commits.
//   - commit.go: Transaction, the atomic put-if-absent commit of version N (temp file + fsync +
//     os.Link) and the conflict check against concurrent winners.
//   - parquet_write.go, parquet_read.go, parquet_convert.go, stats.go, partition.go: data and
//     change data files (parquet-go), the conversion of other engines' encodings, per-file
//     statistics, Hive-style partition folders.
//   - parquet_columns.go, parquet_flat.go: data files of flat rows given column by column
//     (ColumnPart), their pages encoded straight from the columns (flatFile), byte for byte the
//     file parquet-go writes of the same rows.
//   - path.go: the URL-encoding of the paths in actions.
//   - scan.go, cdf.go: the rows of a snapshot, partition values, and the change data feed.
//   - history.go: DESCRIBE HISTORY and time travel by timestamp.
//   - optimize.go, vacuum.go, properties.go: maintenance (OPTIMIZE, automatic compaction,
//     VACUUM) and the table properties that tune it.
//
// Invariants: a commit file is never rewritten once it exists; data files are written (and
// synced) before the commit that adds them; every commit starts with commitInfo; a checkpoint is
// written under a temporary name and renamed, after its version is committed, and is never the
// only place a reader must look (readers fall back to older checkpoints and the JSON commits);
// OPTIMIZE only rearranges data (dataChange false); VACUUM never deletes a file of the latest
// snapshot; rows are []any holding the Go values the schema package documents (nil is NULL).
package delta
