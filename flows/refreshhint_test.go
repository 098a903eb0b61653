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
