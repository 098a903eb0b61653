package spec

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunModeKeys: continuous, trigger_interval, schedule and retries are decoded, and each bad
// value is reported at its place with a hint.
func TestRunModeKeys(t *testing.T) {
	t.Parallel()
	top := "continuous: true\ntrigger_interval: 250ms\nschedule: \"CRON_TZ=Europe/Paris 0 6 * * *\"\nretries: {max_attempts: 4, initial_backoff: 2s, max_backoff: 30s}"
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#TOP": top})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Continuous || p.TriggerInterval != 250*time.Millisecond || p.Schedule != "CRON_TZ=Europe/Paris 0 6 * * *" ||
		p.Retries == nil || *p.Retries != (Retries{MaxAttempts: 4, InitialBackoff: 2 * time.Second, MaxBackoff: 30 * time.Second}) {
		t.Errorf("decoded continuous %v, trigger_interval %v, schedule %q, retries %+v", p.Continuous, p.TriggerInterval, p.Schedule, p.Retries)
	}
	p, err = Parse("p.yaml", []byte(build(map[string]string{"#TOP": "schedule: \"@hourly\"\nretries: {max_attempts: 2}"})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Retries.MaxAttempts != 2 || p.Retries.InitialBackoff != time.Second || p.Retries.MaxBackoff != time.Minute {
		t.Errorf("retries defaults: %+v", p.Retries)
	}

	cases := []struct{ name, top, want string }{
		{"bad interval", "trigger_interval: soon", `2:19: trigger_interval: "soon" is not a duration`},
		{"bad cron", `schedule: "61 * * * *"`, `2:11: schedule: schedule "61 * * * *"`},
		{"six fields", `schedule: "0 0 6 * * *"`, `2:11: schedule: schedule "0 0 6 * * *"`},
		{"never fires", `schedule: "0 0 30 2 *"`, `2:11: schedule: schedule "0 0 30 2 *": it never fires`},
		{"zero attempts", "retries: {max_attempts: 0}", "2:25: retries.max_attempts: max_attempts must be at least 1"},
		{"backoffs swapped", "retries: {initial_backoff: 1m, max_backoff: 1s}", "2:10: retries: max_backoff 1s is below initial_backoff 1m0s"},
		{"unknown retries key", "retries: {attempts: 3}", "2:11: retries.attempts: unknown key attempts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("p.yaml", []byte(build(map[string]string{"#TOP": c.top})), nil, nil)
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), "p.yaml:"+c.want) || es[0].Hint == "" {
				t.Fatalf("got %v; want one problem starting with p.yaml:%s, with a hint", err, c.want)
			}
		})
	}
}
