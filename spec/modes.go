package spec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
)

// Retries is the `retries:` policy of production mode (semantics.md "Updates, flows, modes"): a
// failed flow is run again up to MaxAttempts times in all, waiting InitialBackoff, then twice
// as long each time, never more than MaxBackoff.
type Retries struct {
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

// DefaultRetries is the policy of production mode when the spec has no `retries:` (and the
// values of the keys `retries:` leaves out): 3 attempts in all, waiting 1s, then 2s, at most 1m
// (semantics.md: "Production (default) retries a failed flow with exponential backoff").
func DefaultRetries() Retries {
	return Retries{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Minute}
}

// DefaultTriggerInterval is how often continuous mode looks for new input when the spec gives no
// `trigger_interval` (file notifications usually wake it sooner).
const DefaultTriggerInterval = 5 * time.Second

var retriesKeys = keySet{known: []string{"max_attempts", "initial_backoff", "max_backoff"}}

// CronParser parses `schedule:` and `pipeline schedule --cron`: five fields, `@hourly`-style
// descriptors, `@every 1m`, and an optional `CRON_TZ=Area/City ` prefix.
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses expr with CronParser and refuses what robfig/cron would take but a schedule
// cannot run: a time-zone prefix with no schedule after it (`CRON_TZ=Europe/Paris` alone), an
// `@every` interval under one second (robfig/cron runs a shorter or negative one every second),
// and an expression that never fires (`0 0 30 2 *`: February has no 30th), for which robfig/cron
// finds no time in the next five years and a scheduler would have no next update to wait for.
// A five-field expression's error names the field at fault (minute, hour, day of month, month,
// day of week).
func ParseCron(expr string) (_ cron.Schedule, err error) {
	defer func() {
		// robfig/cron indexes its input unchecked in places: a form this function does not
		// refuse before it is an error too, never a crash of the scheduler that reloads a spec.
		if r := recover(); r != nil {
			err = fmt.Errorf("it cannot be read as a cron expression (%v)", r)
		}
	}()
	body := expr
	if tz, ok := cutTimeZone(expr); ok {
		rest := strings.TrimLeft(expr[len(tz):], " \t")
		if strings.TrimSpace(rest) == "" {
			return nil, fmt.Errorf("%s is followed by no schedule: write one after it, as in %q", strings.TrimSpace(tz), strings.TrimSpace(tz)+" 0 6 * * *")
		}
		body = rest
	}
	if strings.TrimSpace(body) == "@every" {
		return nil, errors.New("@every needs an interval after it, as in \"@every 10m\"")
	}
	if d, ok := strings.CutPrefix(strings.TrimSpace(body), "@every "); ok {
		if v, err := time.ParseDuration(strings.TrimSpace(d)); err == nil && v < time.Second {
			return nil, fmt.Errorf("@every %s: the interval must be at least 1s", strings.TrimSpace(d))
		}
	}
	sched, perr := CronParser.Parse(expr)
	if perr != nil {
		return nil, fieldAtFault(body, perr)
	}
	if sched.Next(time.Now()).IsZero() {
		return nil, errors.New("it never fires: no time in the next five years matches it")
	}
	return sched, nil
}

// cutTimeZone returns the `CRON_TZ=Area/City` (or `TZ=...`) prefix of expr, up to the first
// space or the end, when expr starts with one.
func cutTimeZone(expr string) (string, bool) {
	t := strings.TrimLeft(expr, " \t")
	if !strings.HasPrefix(t, "CRON_TZ=") && !strings.HasPrefix(t, "TZ=") {
		return "", false
	}
	n := len(expr) - len(t)
	if i := strings.IndexAny(t, " \t"); i >= 0 {
		return expr[:n+i], true
	}
	return expr, true
}

// cronFields names the fields of a five-field cron expression, in order.
var cronFields = []string{"minute", "hour", "day of month", "month", "day of week"}

// fieldAtFault adds to err, robfig/cron's error for a five-field expression body, the field it
// is about: the first whose value fails alone (the other fields `*`).
func fieldAtFault(body string, err error) error {
	fields := strings.Fields(body)
	if len(fields) != len(cronFields) {
		return err
	}
	for i := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = fields[i]
		if _, perr := CronParser.Parse(strings.Join(probe, " ")); perr != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i], fields[i], err)
		}
	}
	return err
}

// duration reads a Go duration (`5s`, `1m30s`) that must be positive.
func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	s, ok := d.nonEmpty(n, path)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v <= 0 {
		d.addAt(resolve(n), path, "write a positive duration such as 500ms, 5s or 1m", "%q is not a duration", s)
		return 0, false
	}
	return v, true
}

// schedule reads `schedule:`, checking it with CronParser.
func (d *decoder) schedule(n *yaml.Node, path string) (string, bool) {
	s, ok := d.nonEmpty(n, path)
	if !ok {
		return "", false
	}
	if _, err := ParseCron(s); err != nil {
		d.addAt(resolve(n), path, `write five fields ("*/15 * * * *"), a descriptor (@hourly, @daily, @every 10m), optionally after CRON_TZ=Europe/Paris`,
			"schedule %q: %v", s, err)
		return "", false
	}
	return s, true
}

// retries decodes `retries: {max_attempts, initial_backoff, max_backoff}`; unset fields take
// 3 attempts, 1s and 1m.
func (d *decoder) retries(n *yaml.Node, path string) *Retries {
	entries, ok := d.mapping(n, path, retriesKeys)
	if !ok {
		return nil
	}
	dr := DefaultRetries()
	r := &dr
	for _, e := range entries {
		switch e.name {
		case "max_attempts":
			if v, ok := d.integer(e.val, e.path); ok {
				if v < 1 {
					d.addAt(resolve(e.val), e.path, "write 1 for no retries", "max_attempts must be at least 1, found %d", v)
				} else {
					r.MaxAttempts = v
				}
			}
		case "initial_backoff":
			if v, ok := d.duration(e.val, e.path); ok {
				r.InitialBackoff = v
			}
		case "max_backoff":
			if v, ok := d.duration(e.val, e.path); ok {
				r.MaxBackoff = v
			}
		}
	}
	if r.MaxBackoff < r.InitialBackoff {
		d.addAt(resolve(n), path, "make max_backoff at least initial_backoff",
			"max_backoff %s is below initial_backoff %s", r.MaxBackoff, r.InitialBackoff)
	}
	return r
}

// String writes the policy as the spec would.
func (r Retries) String() string {
	return fmt.Sprintf("{max_attempts: %d, initial_backoff: %s, max_backoff: %s}", r.MaxAttempts, r.InitialBackoff, r.MaxBackoff)
}
