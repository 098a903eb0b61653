package update

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"tributary/eventlog"
	"tributary/spec"
)

// ScheduleOptions tune Schedule.
type ScheduleOptions struct {
	// Options apply to every update (Schedule sets Held, Cause and Started).
	Options
	// Stop is closed to stop the scheduler cleanly (the first signal): no update starts any more,
	// and the one running finishes. Cancelling the ctx of Schedule stops that one too (CANCELED).
	Stop <-chan struct{}
	// Log receives the scheduler's lines: the next run time, skipped ticks, failed updates.
	Log io.Writer
	// Ran, when set, is called after each update with its result (tests).
	Ran func(res *Result, err error)
	// Conf is the --conf map the spec is loaded with again before each update.
	Conf map[string]string
	// Load loads the spec file again before each update, with Conf; nil is spec.Load. The
	// CLI's also binds the queries against their inputs' columns, as `pipeline validate` does.
	Load func(path string, conf map[string]string) (*spec.Pipeline, error)
}

// Schedule runs triggered updates of p at the times of the cron expression expr
// (spec.ParseCron) until stopped, each with the spec file as it is then (loaded again with
// o.Conf; an invalid version is reported on Log and the last valid one runs), holding the
// storage lock all along so that no other update runs on the storage meanwhile. Updates never
// overlap: a tick that finds the previous update still running is skipped, and a WARN event in
// that update says so. A failed update is reported on Log and the schedule goes on. It returns nil once stopped, or the error that kept it from
// starting (a bad expression, the storage is locked).
func Schedule(ctx context.Context, p *spec.Pipeline, expr string, o ScheduleOptions) error {
	sched, err := spec.ParseCron(expr)
	if err != nil {
		return fmt.Errorf("update: schedule %q: %w", expr, err)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	held, err := Hold(p, "schedule")
	if err != nil {
		return err
	}
	defer held.Release()
	var (
		mu      sync.Mutex
		running bool // an update is running
		// announce: the next tick was computed while an update ran; the update announces it
		// once it ends, after its summary, so that the output reads in the order things happen.
		announce bool
		// announceAt is the tick the loop waits for, which the update announces.
		announceAt time.Time
		cur        Emitter
		pending    []time.Time // ticks skipped before the running update opened its event log
		wg         sync.WaitGroup
	)
	skip := func(e Emitter, tick time.Time) {
		e.Emit(eventlog.Warn, eventlog.UpdateProgress, "", "", fmt.Sprintf("The scheduled update of %s was skipped: this update was still running.", tick.Format(time.RFC3339)),
			map[string]any{"update_progress": map[string]any{"state": StateRunning}, "schedule": map[string]any{"skipped_tick": tick.UTC().Format(time.RFC3339), "cron": expr}}, "")
		if f, ok := e.(interface{ Flush() error }); ok {
			_ = f.Flush()
		}
	}
	for {
		next := sched.Next(time.Now())
		mu.Lock()
		if running {
			announce, announceAt = true, next
		} else {
			announceNext(o.Log, p, next, expr)
		}
		mu.Unlock()
		timer := time.NewTimer(time.Until(next))
		select {
		case <-o.Stop:
			timer.Stop()
			wg.Wait()
			return nil
		case <-ctx.Done():
			timer.Stop()
			wg.Wait()
			return nil
		case <-timer.C:
		}
		mu.Lock()
		if running {
			fmt.Fprintf(o.Log, "pipeline %s: the update of %s is skipped: the previous update is still running\n", p.Name, next.Format(time.RFC3339))
			if cur != nil {
				skip(cur, next)
			} else {
				pending = append(pending, next)
			}
			mu.Unlock()
			continue
		}
		running = true
		mu.Unlock()
		// Each update runs the spec as it is now, as a triggered update of Delta Live Tables
		// does: an edit made since the last one applies. An invalid edit is reported and the
		// last valid spec stays in force.
		if np, err := reload(p, o.Conf, o.Load); err != nil {
			fmt.Fprintf(o.Log, "pipeline %s: the spec is invalid; this update runs its last valid version:\n%v\n", p.Name, err)
		} else {
			p = np
		}
		p := p // the update's, unchanged by a later reload
		opts := o.Options
		opts.Held, opts.Cause = held, "SCHEDULED"
		opts.Started = func(e Emitter) {
			mu.Lock()
			defer mu.Unlock()
			cur = e
			for _, t := range pending {
				skip(e, t)
			}
			pending = nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Run(ctx, p, opts)
			mu.Lock()
			running, cur = false, nil
			if err != nil {
				// A failed update's error starts with "the update failed" already.
				msg := err.Error()
				if rest, ok := strings.CutPrefix(msg, "the update failed"); ok {
					msg = "the scheduled update failed" + rest
				} else {
					msg = "the scheduled update failed: " + msg
				}
				fmt.Fprintf(o.Log, "pipeline %s: %s\n", p.Name, msg)
			}
			if announce && ctx.Err() == nil && !closed(o.Stop) {
				announceNext(o.Log, p, announceAt, expr)
			}
			announce = false
			mu.Unlock()
			if o.Ran != nil {
				o.Ran(res, err)
			}
		}()
	}
}

// announceNext prints when the next scheduled update starts, on the scheduler's log.
func announceNext(log io.Writer, p *spec.Pipeline, next time.Time, expr string) {
	fmt.Fprintf(log, "pipeline %s: next update at %s (%s)\n", p.Name, next.Format(time.RFC3339), expr)
}

// closed reports whether ch is closed (a nil channel never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// reload loads the spec file of p again with conf (by load; nil is spec.Load) and checks it as
// an update would (its graph, an unchanged storage, which the scheduler holds the lock of).
func reload(p *spec.Pipeline, conf map[string]string, load func(string, map[string]string) (*spec.Pipeline, error)) (*spec.Pipeline, error) {
	np, err := loadSpec(load, p.File, conf)
	if err == nil {
		_, err = np.Graph()
	}
	if err == nil && np.Storage != p.Storage {
		err = fmt.Errorf("%s: the storage changed from %s to %s: stop `pipeline schedule` and start it again", p.File, p.Storage, np.Storage)
	}
	return np, err
}

// loadSpec loads the spec file path with conf by load, or by spec.Load when load is nil.
func loadSpec(load func(string, map[string]string) (*spec.Pipeline, error), path string, conf map[string]string) (*spec.Pipeline, error) {
	if load == nil {
		return spec.Load(path, conf)
	}
	return load(path, conf)
}
