package update

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tributary/eventlog"
	"tributary/expectations"
	"tributary/flows"
	"tributary/spec"
)

// setupWith is setup with extra top-level spec lines (after the name).
func setupWith(t *testing.T, top, lines string) *spec.Pipeline {
	t.Helper()
	p := setup(t, lines)
	text := strings.Replace(failSpec, "storage: ./storage\n", "storage: ./storage\n"+top+"\n", 1)
	if err := os.WriteFile(p.File, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Load(p.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// attemptEvents returns, per flow_progress event with an attempt, "flow LEVEL attempt".
func attemptEvents(t *testing.T, p *spec.Pipeline) []string {
	t.Helper()
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.EventType != eventlog.FlowProgress {
			continue
		}
		if a, ok := e.Details["flow_progress"].(map[string]any)["attempt"]; ok {
			out = append(out, fmt.Sprintf("%s %s %v", e.Origin.FlowName, e.Level, a))
		}
	}
	return out
}

// TestRetries: in production mode a flow failing with a transient error is run again with
// exponential backoff (each attempt and each retry an event) until it succeeds or runs out of
// attempts, by the spec's `retries:` or, without it, 3 attempts from 1s; an expectation with
// on_violation: fail, a NULL key or development mode is never retried.
func TestRetries(t *testing.T) {
	t.Parallel()
	const policy = "retries: {max_attempts: 4, initial_backoff: 1s, max_backoff: 3s}"
	transient := errors.New("disk hiccup")

	type rec struct {
		mu     sync.Mutex
		sleeps []time.Duration
	}
	run := func(p *spec.Pipeline, dev bool, failures int, ferr error) (*Result, error, []time.Duration) {
		r := &rec{}
		calls := 0
		opts := Options{Development: dev,
			sleep: func(ctx context.Context, d time.Duration) error {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.sleeps = append(r.sleeps, d)
				return nil
			},
			runFlow: func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error) {
				if d.Name == "changes" && calls < failures {
					calls++
					return flows.Metrics{Version: -1}, ferr
				}
				return flows.Run(ctx, env, d)
			},
		}
		res, err := Run(context.Background(), p, opts)
		return res, err, r.sleeps
	}
	good := `{"op": "I", "id": 1, "seq": 1}` + "\n"

	t.Run("transient then success", func(t *testing.T) {
		t.Parallel()
		p := setupWith(t, policy, good)
		res, err, sleeps := run(p, false, 3, transient)
		if err != nil || res.Flows["changes"].State != FlowCompleted || res.Flows["items"].Metrics.NumUpsertedRows != 1 {
			t.Fatalf("err %v, result %+v", err, res)
		}
		if !slices.Equal(sleeps, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}) {
			t.Errorf("backoffs %v, want [1s 2s 3s] (doubling, capped at max_backoff)", sleeps)
		}
		want := []string{"changes INFO 1", "changes WARN 1", "changes INFO 2", "changes WARN 2", "changes INFO 3", "changes WARN 3", "changes INFO 4", "items INFO 1"}
		if got := attemptEvents(t, p); !slices.Equal(got, want) {
			t.Errorf("attempt events %v\nwant %v", got, want)
		}
	})
	t.Run("out of attempts", func(t *testing.T) {
		t.Parallel()
		p := setupWith(t, policy, good)
		res, err, sleeps := run(p, false, 100, transient)
		var fe *FlowError
		if !errors.As(err, &fe) || res.Flows["changes"].State != FlowFailed || res.Flows["items"].State != FlowSkipped || len(sleeps) != 3 {
			t.Fatalf("err %v, sleeps %v", err, sleeps)
		}
	})
	t.Run("expectation fail is not retried", func(t *testing.T) {
		t.Parallel()
		p := setupWith(t, policy, `{"op": "X", "id": 1, "seq": 1}`+"\n")
		res, err, sleeps := run(p, false, 0, nil)
		var fail *expectations.FailError
		if !errors.As(err, &fail) || res.State != StateFailed || len(sleeps) != 0 {
			t.Fatalf("err %v, state %s, sleeps %v: want a FAILED update without retries", err, res.State, sleeps)
		}
		if got := attemptEvents(t, p); !slices.Equal(got, []string{"changes INFO 1"}) {
			t.Errorf("attempt events %v, want one attempt", got)
		}
	})
	t.Run("NULL key is not retried", func(t *testing.T) {
		t.Parallel()
		p := setupWith(t, policy, `{"op": "I", "id": null, "seq": 1}`+"\n")
		res, err, sleeps := run(p, false, 0, nil)
		if err == nil || res.Flows["items"].State != FlowFailed || len(sleeps) != 0 || !strings.Contains(err.Error(), "NULL") {
			t.Fatalf("err %v, sleeps %v: want items FAILED on the NULL key without retries", err, sleeps)
		}
	})
	t.Run("production default without retries:", func(t *testing.T) {
		// semantics.md: production mode retries by default; spec.DefaultRetries is 3 attempts
		// in all, waiting 1s then 2s.
		t.Parallel()
		p := setupWith(t, "", good)
		if p.Retries != nil {
			t.Fatalf("the spec has retries: %+v", p.Retries)
		}
		res, err, sleeps := run(p, false, 2, transient)
		if err != nil || res.Flows["changes"].State != FlowCompleted || !slices.Equal(sleeps, []time.Duration{time.Second, 2 * time.Second}) {
			t.Fatalf("err %v, result %+v, backoffs %v; want success on the third attempt after [1s 2s]", err, res, sleeps)
		}
		p = setupWith(t, "", good)
		if _, err, sleeps = run(p, false, 3, transient); err == nil || len(sleeps) != 2 {
			t.Fatalf("err %v, backoffs %v; want a failure after 3 attempts", err, sleeps)
		}
		p = setupWith(t, "retries: {max_attempts: 1}", good)
		if _, err, sleeps = run(p, false, 1, transient); err == nil || len(sleeps) != 0 {
			t.Fatalf("max_attempts 1: err %v, backoffs %v; want a failure without retries", err, sleeps)
		}
	})
	t.Run("stopped while waiting to retry", func(t *testing.T) {
		// A stop during the wait ends the flow STOPPED and the update CANCELED, as a stop
		// while it runs does (README "Run modes").
		t.Parallel()
		p := setupWith(t, policy, good)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := Options{
			sleep: func(ctx context.Context, d time.Duration) error {
				cancel()
				return ctx.Err()
			},
			runFlow: func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error) {
				if d.Name == "changes" {
					return flows.Metrics{Version: -1}, transient
				}
				return flows.Run(ctx, env, d)
			},
		}
		res, err := Run(ctx, p, opts)
		if !errors.Is(err, context.Canceled) || res.State != StateCanceled || res.Flows["changes"].State != FlowStopped {
			t.Fatalf("err %v, update %s, changes %s; want context.Canceled, CANCELED, STOPPED", err, res.State, res.Flows["changes"].State)
		}
	})
	t.Run("development mode never retries", func(t *testing.T) {
		t.Parallel()
		p := setupWith(t, policy, good)
		_, err, sleeps := run(p, true, 1, transient)
		if err == nil || len(sleeps) != 0 {
			t.Fatalf("err %v, sleeps %v: want a failure without retries", err, sleeps)
		}
	})
}

// TestRetryable: what may be retried.
func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("open x: too many open files"), true},
		{fmt.Errorf("wrapped: %w", &expectations.FailError{Expectation: "e"}), false},
		{fmt.Errorf("x: %w", flows.ErrSchemaChanged), false},
		{context.Canceled, false},
		{fmt.Errorf("connecting: %w", context.DeadlineExceeded), true}, // a connection's timeout
		{fmt.Errorf("dataset c: expectation %q (p.yaml:9:9) %w: unknown name nosuch", "e", flows.ErrBadExpectation), false},
		{errors.New("dataset d: sqlengine: Binder Error: Referenced column \"nosuch\" not found in FROM clause!"), false},
		{errors.New("dataset d: sqlengine: Catalog Error: Scalar Function with name nosuch does not exist!"), false},
		{errors.New("dataset d: sqlengine: IO Error: Cannot open file \"x.csv\": Too many open files"), true},
		{errors.New("dataset q: result column t: type TIME cannot be stored in a dataset yet; CAST it to BIGINT, INT, DOUBLE, DECIMAL(p,s), STRING, BOOLEAN, DATE, TIMESTAMP, or a LIST, MAP or STRUCT of those"), false},
		{errors.New("dataset q: result column ub: value out of range: 18446744073709551615 does not fit in BIGINT"), false},
		{errors.New("2 change event(s) have a NULL in the key column id (first at f:1); nothing of this batch was applied"), false},
		{errors.New("f:3: bad line (mode: failfast; fix the line or use mode: permissive)"), false},
	} {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if got := Backoff(spec.Retries{MaxAttempts: 9, InitialBackoff: time.Second, MaxBackoff: time.Minute}, 7); got != time.Minute {
		t.Errorf("Backoff of the 7th retry = %v, want the 1m cap", got)
	}
}

// TestFirstLine: the run summary shows an error's first line, and, when it ends in ":" (pgx
// lists a connection's attempts on the lines after it), the first attempt's line after it.
func TestFirstLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"one line", "one line"},
		{"first\nsecond", "first"},
		{"failed to connect to `user=postgres database=app`:\n\t127.0.0.1:5432 (127.0.0.1): server error: FATAL: the database system is starting up\n\t127.0.0.1:5432: tls error", "failed to connect to `user=postgres database=app`: 127.0.0.1:5432 (127.0.0.1): server error: FATAL: the database system is starting up"},
		{"ends:\n\n", "ends:"},
	} {
		if got := firstLine(c.in); got != c.want {
			t.Errorf("firstLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
