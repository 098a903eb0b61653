package flows

import (
	"testing"

	"tributary/spec"
)

// TestRefreshHintRepeatsConf: the full-refresh command suggested in errors repeats the --conf
// values the run was given (they may point at another storage and landing folder), each word
// quoted for a shell when it needs it.
func TestRefreshHintRepeatsConf(t *testing.T) {
	p := &spec.Pipeline{File: "/tmp/my specs/pipeline.yaml", Overrides: map[string]string{"storage": "/data/st", "landing": "/in/it's here"}}
	got := RefreshHint(p, "orders", "orders_history")
	want := "`pipeline run '/tmp/my specs/pipeline.yaml' --full-refresh orders,orders_history --conf 'landing=/in/it'\\''s here' --conf storage=/data/st`"
	if got != want {
		t.Errorf("RefreshHint = %s\nwant          %s", got, want)
	}
	if got := RefreshHint(&spec.Pipeline{File: "/a/p.yaml"}, "t"); got != "`pipeline run /a/p.yaml --full-refresh t`" {
		t.Errorf("without --conf: %s", got)
	}
}

// TestRefreshHintResetDenied: a dataset whose table_properties set pipelines.reset.allowed to
// "false" is never reset by --full-refresh (its full refresh is a normal update, README "Refresh
// selection"), so the suggested command alone would fail again: the hint says to set the
// property to "true" first, naming those datasets only.
func TestRefreshHintResetDenied(t *testing.T) {
	p := &spec.Pipeline{File: "/a/p.yaml", Datasets: []*spec.Dataset{
		{Name: "orders", TableProperties: map[string]string{"pipelines.reset.allowed": "FALSE"}},
		{Name: "orders_history", TableProperties: map[string]string{"pipelines.reset.allowed": "true"}},
		{Name: "orders_changes", TableProperties: map[string]string{}},
	}}
	got := RefreshHint(p, "orders", "orders_history")
	want := "`pipeline run /a/p.yaml --full-refresh orders,orders_history` (after setting pipelines.reset.allowed to \"true\" in the table_properties of orders, whose full refresh it otherwise makes a normal update)"
	if got != want {
		t.Errorf("RefreshHint = %s\nwant          %s", got, want)
	}
	if got := RefreshHint(p, "orders_changes", "orders_history"); got != "`pipeline run /a/p.yaml --full-refresh orders_changes,orders_history`" {
		t.Errorf("no dataset denies a reset: %s", got)
	}
}
