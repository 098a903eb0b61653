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
		{"bad cron field", `schedule: "0 25 * * *"`, `2:11: schedule: schedule "0 25 * * *": hour field "25": end of range (25) above maximum (23)`},
		{"time zone alone", `schedule: "CRON_TZ=Europe/Paris"`, `2:11: schedule: schedule "CRON_TZ=Europe/Paris": CRON_TZ=Europe/Paris is followed by no schedule: write one after it, as in "CRON_TZ=Europe/Paris 0 6 * * *"`},
		{"TZ alone", `schedule: "TZ=UTC"`, `2:11: schedule: schedule "TZ=UTC": TZ=UTC is followed by no schedule`},
		{"every negative", `schedule: "@every -5s"`, `2:11: schedule: schedule "@every -5s": @every -5s: the interval must be at least 1s`},
		{"every under a second", `schedule: "CRON_TZ=UTC @every 500ms"`, `2:11: schedule: schedule "CRON_TZ=UTC @every 500ms": @every 500ms: the interval must be at least 1s`},
		{"every alone", `schedule: "@every"`, `2:11: schedule: schedule "@every": @every needs an interval after it`},
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

// FuzzParseCron: no text makes ParseCron panic (robfig/cron indexes some inputs out of range),
// and what it accepts has a next run time.
func FuzzParseCron(f *testing.F) {
	for _, seed := range []string{"CRON_TZ=Europe/Paris", "TZ=UTC", "TZ=", "CRON_TZ=UTC @every 1s", "@every -5s", "@every", "*/15 * * * *", "0 0 30 2 *", "@hourly", " TZ=UTC 0 6 * * *", "CRON_TZ=\t0 6 * * *"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		sched, err := ParseCron(expr)
		if err == nil && sched.Next(time.Now()).IsZero() {
			t.Errorf("%q: accepted with no next run time", expr)
		}
	})
}
