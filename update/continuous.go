package update

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"tributary/spec"
)

// ContinuousOptions tune a continuous update.
type ContinuousOptions struct {
	Options
	// Stop is closed to stop the update cleanly (the first SIGINT or SIGTERM): the batch in
	// flight finishes, then the update ends CANCELED. Cancelling the ctx of Continuous instead
	// (the second signal) stops the running flows at once; a flow stopped so commits nothing.
	Stop <-chan struct{}
	// Wake receives when input may have changed (file notifications, see package watch); nil
	// relies on polling alone.
	Wake <-chan struct{}
	// Interval is how often input is polled; 0 means the spec's trigger_interval, or
	// spec.DefaultTriggerInterval.
	Interval time.Duration
	// Batch, when set, is called after every batch with the datasets it ran (tests).
	Batch func(ran []string)
}

// settleTime is how recently an input file may have been modified for a continuous update to
// leave it for a later batch (flows.Env.Settle).
const settleTime = time.Second

// Continuous runs one continuous update of p (semantics.md "Continuous"): a first batch runs
// every selected flow, then each time input may have changed (Wake, or every Interval) the
// flows whose input changed run again with everything downstream of them. It returns nil once
// stopped (the update is then CANCELED), a *FlowError when a flow failed (after its retries; the
// update is FAILED), or the error that kept the update from starting.
func Continuous(ctx context.Context, p *spec.Pipeline, o ContinuousOptions) (*Result, error) {
	interval := o.Interval
	if interval <= 0 {
		interval = p.TriggerInterval
	}
	if interval <= 0 {
		interval = spec.DefaultTriggerInterval
	}
	if o.Cause == "" {
		o.Cause = "USER_ACTION"
	}
	// Files land while the update runs: one modified within settleTime may still be being
	// written, and is read by a later batch.
	o.Options.Settle = cmp.Or(o.Options.Settle, settleTime)
	s, err := begin(p, o.Options)
	if err != nil {
		return s.result(), err
	}
	defer s.close()
	fmt.Fprintf(s.opts.Out, "pipeline %s: continuous update %s; looking for new input every %s (stop with Ctrl-C)\n", p.Name, s.res.UpdateID, interval)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var last map[string]string
	first := true
	var settled <-chan time.Time // fires once files left unsettled have had the time to settle
	for {
		now := fingerprints(p)
		var only map[string]bool
		if !first {
			only = s.withDownstream(changedInputs(p, last, now))
		}
		if first || len(only) > 0 {
			if err := s.batch(ctx, only); err != nil {
				return s.res, err
			}
			if o.Batch != nil {
				var ran []string
				for _, name := range s.g.Order() {
					if s.runs(name, only) {
						ran = append(ran, name)
					}
				}
				o.Batch(ran)
			}
			last, first = now, false
			// A flow that left files for later runs again at the next poll, or once they had
			// the settle time (if sooner), whether or not its input changes meanwhile.
			settled = nil
			for name, fr := range s.res.Flows {
				if s.runs(name, only) && fr.Metrics.Unsettled > 0 {
					delete(last, name)
					if ac := p.Dataset(name).ApplyChanges; ac != nil {
						delete(last, ac.Source) // a view over the files it reads
					}
					settled = time.After(s.env.Settle)
				}
			}
		}
		if ctx.Err() != nil {
			return s.res, s.end(true)
		}
		select {
		case <-o.Stop:
			return s.res, s.end(true)
		default:
		}
		select {
		case <-o.Stop:
			return s.res, s.end(true)
		case <-ctx.Done():
			return s.res, s.end(true)
		case <-o.Wake:
		case <-ticker.C:
		case <-settled:
		}
	}
}
