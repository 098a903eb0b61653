// Package sqlengine runs the SQL of `query:` datasets on embedded DuckDB. It is the only package
// that imports DuckDB. Each dataset a query reads is registered, for the duration of one query,
// as a temporary view: over the Parquet files of its current Delta snapshot (read_parquet), or
// over rows handed in (views, change feeds, partitioned tables). Results come back as typed rows
// of the schema package (schema.Kind's Go values), so the delta writer stores them.
//
// Invariant: nothing a query does outlives Query; every relation is registered on one
// connection that is closed before Query returns.
package sqlengine
