// Package update runs one pipeline update (semantics.md "Updates, flows, modes"): it takes the
// storage lock, records create_update and the update's states in the event log, sets up the
// tables, runs the flows in dependency order (independent flows in parallel) and reports each
// flow's progress and metrics, retrying failed flows in production mode (retry.go). The run modes
// build on it: Continuous (one update, a batch each time input changes), Dev (an update per edit
// of the spec or new input) and Schedule (triggered updates on a cron schedule, never two at
// once); Dev and Schedule hold the storage lock for their whole life (Hold).
package update
