package update

import (
	"strings"
	"testing"

	"tributary/expectations"
	"tributary/flows"
	"tributary/schema"
	"tributary/spec"
)

// TestPrintQuality: the table lists each expectation of each flow with its action and counts,
// flows in update order; flows without expectations print nothing.
func TestPrintQuality(t *testing.T) {
	s := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true}}}
	set := &expectations.Set{Dataset: "raw", Schema: s}
	for _, r := range []struct{ name, code, on string }{{"has_id", "id != nil", expectations.Quarantine}, {"small", "id < 10", expectations.Warn}} {
		p, err := expectations.Compile(r.code, s)
		if err != nil {
			t.Fatal(err)
		}
		set.Rules = append(set.Rules, expectations.Rule{Name: r.name, OnViolation: r.on, Program: p})
	}
	_, _, q, err := set.CheckQuarantine([][]any{{int64(1)}, {nil}, {int64(20)}})
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Flows: map[string]*FlowResult{"raw": {Metrics: flows.Metrics{Quality: q}}, "silver": {}}}
	var b strings.Builder
	printQuality(&b, res, []string{"silver", "raw"})
	want := "data quality:\n" +
		"  dataset  expectation  action      passed  failed\n" +
		"  raw      has_id       quarantine  2       1\n" +
		"  raw      small        warn        1       2\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	printQuality(&b, res, []string{"silver"})
	if b.String() != "" {
		t.Fatalf("no expectations printed %q", b.String())
	}
}

// TestSummaryQuarantined: a flow's summary line counts the rows its expectations quarantined
// and names the quarantine table that holds them.
func TestSummaryQuarantined(t *testing.T) {
	p := &spec.Pipeline{Name: "q", Datasets: []*spec.Dataset{{Name: "raw", Source: &spec.Source{Path: "/in", Format: "json"}}}}
	m := flows.Metrics{NumOutputRows: 2, Files: 1}
	m.Quality.QuarantinedRecords = 1
	res := &Result{UpdateID: "u1", Flows: map[string]*FlowResult{"raw": {State: FlowCompleted, Metrics: m}}}
	var b strings.Builder
	printSummary(&b, p, res, []string{"raw"})
	want := "pipeline q: update u1\n  raw                      COMPLETED  2 rows from 1 file, 1 quarantined (in raw_quarantine)\n"
	if b.String() != want {
		t.Fatalf("got:\n%q\nwant:\n%q", b.String(), want)
	}
}

// TestSummaryIncomplete: a flow's summary line says how many input files were left unread
// because they are not complete yet, which only the event log's WARNs name: a file cut short
// for good (a writer that died) would otherwise wait update after update unnoticed.
func TestSummaryIncomplete(t *testing.T) {
	p := &spec.Pipeline{Name: "q", Datasets: []*spec.Dataset{{Name: "raw", Source: &spec.Source{Path: "/in", Format: "json"}}}}
	for _, c := range []struct {
		n    int
		want string
	}{
		{1, "2 rows from 1 file, 1 file is not complete yet and was left unread (see `pipeline events`)"},
		{3, "2 rows from 1 file, 3 files are not complete yet and were left unread (see `pipeline events`)"},
	} {
		m := flows.Metrics{NumOutputRows: 2, Files: 1, Incomplete: c.n}
		res := &Result{UpdateID: "u1", Flows: map[string]*FlowResult{"raw": {State: FlowCompleted, Metrics: m}}}
		var b strings.Builder
		printSummary(&b, p, res, []string{"raw"})
		want := "pipeline q: update u1\n  raw                      COMPLETED  " + c.want + "\n"
		if b.String() != want {
			t.Fatalf("got:\n%q\nwant:\n%q", b.String(), want)
		}
	}
}

// TestSummaryUnsettled: in continuous and dev mode, a file modified less than a second before a
// batch lists it is left for a later batch (README "Run modes"); the summary line of the update
// that left it says so, rather than an IDLE with nothing more just after the file landed.
func TestSummaryUnsettled(t *testing.T) {
	p := &spec.Pipeline{Name: "q", Datasets: []*spec.Dataset{{Name: "raw", Source: &spec.Source{Path: "/in", Format: "json"}}}}
	for _, c := range []struct {
		n     int
		state string
		want  string
	}{
		{1, FlowIdle, "IDLE       1 file was modified just now (it may still be being written) and is left for a later batch"},
		{2, FlowIdle, "IDLE       2 files were modified just now (they may still be being written) and are left for a later batch"},
	} {
		m := flows.Metrics{Version: -1, Idle: true, Unsettled: c.n}
		res := &Result{UpdateID: "u1", Flows: map[string]*FlowResult{"raw": {State: c.state, Metrics: m}}}
		var b strings.Builder
		printSummary(&b, p, res, []string{"raw"})
		want := "pipeline q: update u1\n  raw                      " + c.want + "\n"
		if b.String() != want {
			t.Fatalf("got:\n%q\nwant:\n%q", b.String(), want)
		}
	}
}
