package update

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"tributary/eventlog"
	"tributary/expectations"
	"tributary/flows"
	"tributary/spec"
)

// Retryable reports whether a failed flow may succeed when run again: every error but an
// expectation with on_violation: fail or one that does not compile, a spec error, a schema
// change, a query naming what does not exist (DuckDB's binder and catalog errors), a
// cancellation, and the flows' validation errors that only new input or a full refresh can fix
// (NULL keys or sequences, duplicate snapshot keys, failfast lines, a re-created source, an
// out-of-order snapshot). Those flows errors carry no type of their own, so they are
// recognised by the remedy their message names.
func Retryable(err error) bool {
	var fe *expectations.FailError
	var se spec.Errors
	var sv *spec.Error
	switch {
	case err == nil, errors.As(err, &fe), errors.As(err, &se), errors.As(err, &sv),
		errors.Is(err, flows.ErrSchemaChanged), errors.Is(err, flows.ErrBadExpectation),
		errors.Is(err, context.Canceled):
		// A deadline of the flow's own (a connection's timeout) is retried: the server may
		// answer again; the update's stop is context.Canceled, and ends the retries.
		return false
	}
	msg := err.Error()
	for _, permanent := range []string{
		"nothing of this batch was applied", "nothing of this snapshot was applied", // NULL keys / sequences
		"a snapshot holds one row per key", "mode: failfast", "--full-refresh", "sorts before",
		// DuckDB's errors of the query's text: a column, table or function it names does not
		// exist, or a type does not fit (sqlengine passes their kind on).
		"sqlengine: Binder Error", "sqlengine: Parser Error", "sqlengine: Catalog Error",
		// A result column of a type no dataset stores, or a value its column cannot hold: the
		// same query gives them again.
		"cannot be stored in a dataset", "value out of range",
	} {
		if strings.Contains(msg, permanent) {
			return false
		}
	}
	return true
}

// Backoff is the wait before retry number n (1 for the first retry): initial doubled n-1 times,
// at most max.
func Backoff(r spec.Retries, n int) time.Duration {
	d := r.InitialBackoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// policy is the retry policy of the update: one attempt in development mode; else the spec's
// `retries:`, or spec.DefaultRetries without it.
func (s *session) policy() spec.Retries {
	switch {
	case s.p.Development || s.opts.Development:
		return spec.Retries{MaxAttempts: 1}
	case s.p.Retries == nil:
		return spec.DefaultRetries()
	}
	return *s.p.Retries
}

// runWithRetries runs the flow of d, retrying a retryable failure with exponential backoff;
// each attempt is a flow_progress event (RUNNING with details.flow_progress.attempt) and each
// failed attempt that is retried a WARN event naming the error and the wait.
func (s *session) runWithRetries(ctx context.Context, d *spec.Dataset) (flows.Metrics, error) {
	pol := s.policy()
	run := s.opts.runFlow
	if run == nil {
		run = flows.Run
	}
	sleep := s.opts.sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	name := d.Name
	for attempt := 1; ; attempt++ {
		details := progress(FlowRunning, nil)
		msg := "Flow " + name + " is RUNNING."
		if pol.MaxAttempts > 1 {
			details["flow_progress"].(map[string]any)["attempt"] = attempt
			details["flow_progress"].(map[string]any)["max_attempts"] = pol.MaxAttempts
			msg = fmt.Sprintf("Flow %s is RUNNING (attempt %d of %d).", name, attempt, pol.MaxAttempts)
		}
		s.flowProgress(eventlog.Info, name, msg, details, "")
		m, err := run(ctx, s.env, d)
		if err == nil || attempt >= pol.MaxAttempts || ctx.Err() != nil || !Retryable(err) {
			return m, err
		}
		wait := Backoff(pol, attempt)
		s.warns.add(name)
		s.flowProgress(eventlog.Warn, name,
			fmt.Sprintf("Flow %s failed (attempt %d of %d) and is retried in %s: %v", name, attempt, pol.MaxAttempts, wait, err),
			map[string]any{"flow_progress": map[string]any{"status": FlowRunning, "attempt": attempt, "max_attempts": pol.MaxAttempts, "retry_in_ms": wait.Milliseconds()}}, err.Error())
		_ = s.events.Flush()
		if serr := sleep(ctx, wait); serr != nil {
			// Stopped while waiting to retry: the flow is STOPPED (the update CANCELED), as it
			// would be stopped while running; its failure was reported above.
			return m, serr
		}
	}
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
