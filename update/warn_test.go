package update

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

// TestSummaryCountsWarnings: the summary's line of a flow says how many WARN events the flow
// logged in the update (as many as the event log holds of it: what its reads warned of, and its
// retried attempts), and a line after the flows gives the command that lists them; an update
// without warnings says nothing of them.
func TestSummaryCountsWarnings(t *testing.T) {
	t.Parallel()
	good := `{"op": "I", "id": 1, "seq": 1}` + "\n"
	for _, c := range []struct {
		name     string
		p        func(t *testing.T) *spec.Pipeline
		failures int // attempts of changes that fail with a transient error before it runs
		want     map[string]int
	}{
		{"none", func(t *testing.T) *spec.Pipeline { return setup(t, good) }, 0, map[string]int{"changes": 0, "items": 0}},
		{
			// Two files that spell a field in another case: a WARN for each.
			"reads", func(t *testing.T) *spec.Pipeline {
				p := setup(t, good+`{"op": "I", "id": 2, "seq": 2, "ID": 5}`+"\n")
				second := `{"op": "U", "id": 2, "seq": 3, "SEQ": 1}` + "\n"
				if err := os.WriteFile(filepath.Join(filepath.Dir(p.File), "landing", "2.json"), []byte(second), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			}, 0, map[string]int{"changes": 2, "items": 0},
		},
		{"a retried attempt", func(t *testing.T) *spec.Pipeline {
			return setupWith(t, "retries: {max_attempts: 2, initial_backoff: 1s, max_backoff: 1s}", good)
		}, 1, map[string]int{"changes": 1, "items": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := c.p(t)
			var out bytes.Buffer
			failures := c.failures
			opts := Options{Out: &out,
				sleep: func(context.Context, time.Duration) error { return nil },
				runFlow: func(ctx context.Context, env *flows.Env, d *spec.Dataset) (flows.Metrics, error) {
					if d.Name == "changes" && failures > 0 {
						failures--
						return flows.Metrics{Version: -1}, errors.New("disk hiccup")
					}
					return flows.Run(ctx, env, d)
				},
			}
			res, err := Run(context.Background(), p, opts)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
			if err != nil {
				t.Fatal(err)
			}
			logged := map[string]int{}
			for _, e := range evs {
				if e.Level == eventlog.Warn {
					logged[e.Origin.FlowName]++
				}
			}
			summary := out.String()
			for flow, n := range c.want {
				if got := res.Flows[flow].Warnings; got != n || logged[flow] != n {
					t.Errorf("flow %s: %d warnings in the result, %d WARN events in the log; want %d", flow, got, logged[flow], n)
				}
				var line string
				for l := range strings.SplitSeq(summary, "\n") {
					if strings.HasPrefix(l, "  "+flow+" ") {
						line = l
						break // the flow's line, not the data-quality table's
					}
				}
				want := fmt.Sprintf(", %d warning", n)
				if n == 1 {
					want += "\n"
				} else {
					want += "s\n"
				}
				if has := strings.HasSuffix(line+"\n", want); n > 0 && !has || n == 0 && strings.Contains(line, "warning") {
					t.Errorf("summary line of %s: %q; want it to end in %q", flow, line, strings.TrimSpace(want))
				}
			}
			hint := "  to see the warnings: `pipeline events " + p.File + " --update " + res.UpdateID[:8] + " --level WARN`\n"
			if strings.Contains(summary, hint) != (c.name != "none") {
				t.Errorf("summary:\n%s\nwant the line %q only when a flow had warnings", summary, hint)
			}
		})
	}
}

// TestWarnCounterQuarantine: the WARN events of a flow's quarantine table (its automatic
// maintenance, logged under the table's name) count as the flow's, which has the summary line;
// take starts both again from zero, and other flows' events are not counted.
func TestWarnCounterQuarantine(t *testing.T) {
	t.Parallel()
	log, err := eventlog.Open(t.TempDir(), "p", "u")
	if err != nil {
		t.Fatal(err)
	}
	w := &warnCounter{log: log}
	w.Emit(eventlog.Warn, eventlog.MaintenanceProgress, "orders"+spec.QuarantineSuffix, "orders"+spec.QuarantineSuffix, "Automatic VACUUM failed", nil, "x")
	w.Emit(eventlog.Warn, eventlog.FlowProgress, "orders", "orders", "a bad value", nil, "")
	w.Emit(eventlog.Info, eventlog.FlowProgress, "orders", "orders", "fine", nil, "")
	w.Emit(eventlog.Warn, eventlog.FlowProgress, "items", "items", "a bad value", nil, "")
	if got := w.take("orders"); got != 2 {
		t.Errorf("orders: %d warnings, want 2 (its own and its quarantine table's)", got)
	}
	if got := w.take("orders"); got != 0 {
		t.Errorf("orders after take: %d, want 0", got)
	}
	if got := w.take("items"); got != 1 {
		t.Errorf("items: %d, want 1", got)
	}
}
