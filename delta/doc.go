// Package delta reads and writes Delta Lake tables in a local folder, following Delta
// PROTOCOL.md (github.com/delta-io/delta): the tables it writes are read by Spark, delta-rs and
// DuckDB, and it reads the tables they write for the column types of package schema.
//
// The layering follows the protocol:
//
//   - actions.go: the actions of a commit (protocol, metaData, add, remove, cdc, txn,
//     commitInfo) and their JSON lines.
//   - log.go: the _delta_log folder: commit file names, listing versions, reading one commit.
//   - snapshot.go: log replay (action reconciliation) into a Snapshot; the one place where a
//     checkpoint reader would plug in.
//   - commit.go: Transaction, the atomic put-if-absent commit of version N (temp file + fsync +
//     os.Link) and the conflict check against concurrent winners.
//   - parquet_write.go, parquet_read.go, parquet_convert.go, stats.go: data and change data
//     files (parquet-go), the conversion of other engines' encodings, per-file statistics.
//   - path.go: the URL-encoding of the paths in actions.
//   - scan.go, cdf.go: the rows of a snapshot, partition values, and the change data feed.
//
// Invariants: a commit file is never rewritten once it exists; data files are written (and
// synced) before the commit that adds them; every commit starts with commitInfo; rows are
// []any holding the Go values the schema package documents (nil is NULL). Checkpoints are not
// read or written yet: Snapshot replays the JSON commits from version 0.
package delta
