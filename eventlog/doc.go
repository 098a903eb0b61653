// Package eventlog writes and reads the runner's event log: a Delta table at
// <storage>/system/events with the columns of spec.md §3 and the event types and details shapes of
// the Delta Live Tables event log (semantics.md "Event log").
//
// Events are buffered and committed as the update goes (Flush at every update state change and
// at the end of every flow), so that a crashed update still leaves the events before the crash.
// An update whose process stopped before its end state stays unfinished in the log until the next
// update of its pipeline records an end for it (Log.Unfinished, Log.EmitFor): that one holds the
// storage lock, so no earlier update still runs.
package eventlog
