// Package eventlog writes and reads the runner's event log: a Delta table at
// <storage>/system/events with the columns of spec.md §3 and the event types and details shapes of
// the Delta Live Tables event log (semantics.md "Event log").
//
// Events are buffered and committed as the update goes (Flush at every update state change and
// at the end of every flow), so that a crashed update still leaves the events before the crash.
package eventlog
