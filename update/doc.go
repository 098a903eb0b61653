// Package update runs one pipeline update (semantics.md "Updates, flows, modes"): it takes the
// storage lock, records create_update and the update's states in the event log, sets up the
// tables, runs the flows in dependency order (independent flows in parallel) and reports each
// flow's progress and metrics.
package update
