package update

import (
	"strings"
	"testing"

	"tributary/expectations"
	"tributary/flows"
	"tributary/schema"
)

// TestPrintQualityViewReaders: a view over files read by two APPLY CHANGES flows has its
// expectations checked by each reader on the rows it read (README "Views over files"); the summary
// names the reader of each line, so that two readers' counts are not two identical-looking lines.
func TestPrintQualityViewReaders(t *testing.T) {
	s := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true}}}
	p, err := expectations.Compile("id != nil", s)
	if err != nil {
		t.Fatal(err)
	}
	set := &expectations.Set{Dataset: "changes", Schema: s, Rules: []expectations.Rule{{Name: "has_id", OnViolation: expectations.Drop, Program: p}}}
	_, q1, err := set.Check([][]any{{int64(1)}, {nil}})
	if err != nil {
		t.Fatal(err)
	}
	_, q2, err := set.Check([][]any{{int64(1)}, {int64(2)}, {nil}})
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Flows: map[string]*FlowResult{"a": {Metrics: flows.Metrics{Quality: q1}}, "b": {Metrics: flows.Metrics{Quality: q2}}}}
	var b strings.Builder
	printQuality(&b, res, []string{"a", "b"})
	want := "data quality:\n" +
		"  dataset              expectation  action  passed  failed\n" +
		"  changes (read by a)  has_id       drop    1       1\n" +
		"  changes (read by b)  has_id       drop    2       1\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
