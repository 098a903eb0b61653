package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestQuarantine: on_violation quarantine is accepted on a dataset fed by a file source, refused
// as not supported yet on an APPLY CHANGES dataset, and a dataset may not take the name of a
// quarantine table; a query may read a quarantine table, as a table.
func TestQuarantine(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(build(map[string]string{
		"#SRC": "    expectations:\n      - {name: pos, expect: \"id > 0\", on_violation: quarantine}",
	})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Dataset("bronze").Quarantines() || p.QuarantineOf("bronze_quarantine") != p.Dataset("bronze") || p.QuarantineOf("silver_quarantine") != nil {
		t.Fatal("bronze should quarantine into bronze_quarantine")
	}

	_, err = Parse("p.yaml", []byte(build(map[string]string{
		"#MORE": "    expectations:\n      - {name: pos, expect: \"id > 0\", on_violation: quarantine}",
	})), nil, nil)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Error(), "datasets[1].expectations[0].on_violation: on_violation quarantine is not supported yet") {
		t.Fatalf("err = %v", err)
	}

	_, err = Parse("p.yaml", []byte(build(map[string]string{
		"#SRC":  "    expectations:\n      - {name: pos, expect: \"id > 0\", on_violation: quarantine}",
		"#MORE": "  - name: bronze_quarantine\n    source: {path: in2, format: json, schema: \"id BIGINT\"}",
	})), nil, nil)
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Error(), "dataset bronze_quarantine has the name of the quarantine table of dataset bronze") {
		t.Fatalf("err = %v", err)
	}
	// In another case too: table names are one without regard to case.
	_, err = Parse("p.yaml", []byte(build(map[string]string{
		"#SRC":  "    expectations:\n      - {name: pos, expect: \"id > 0\", on_violation: quarantine}",
		"#MORE": "  - name: Bronze_Quarantine\n    source: {path: in2, format: json, schema: \"id BIGINT\"}",
	})), nil, nil)
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Error(), "dataset Bronze_Quarantine has the name of the quarantine table of dataset bronze") {
		t.Fatalf("err = %v", err)
	}
	// A query reads the quarantine table (in any case, as SQL names tables), after the dataset
	// whose flow writes it; with STREAM or table_changes it is refused, saying how to read it.
	p, err = Parse("p.yaml", []byte(build(map[string]string{
		"#SRC":  "    expectations:\n      - {name: pos, expect: \"id > 0\", on_violation: quarantine}",
		"#MORE": "  - name: report\n    query: SELECT count(*) AS n FROM BRONZE_quarantine",
	})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Dataset("report").Query.Refs[0]; r.Name != "bronze_quarantine" || r.Quarantine != "bronze" || fmt.Sprint(g.Deps("report")) != "[bronze]" {
		t.Fatalf("report reads %+v, depends on %v; want bronze_quarantine of bronze, after bronze", r, g.Deps("report"))
	}
	_, err = Parse("p.yaml", []byte(build(map[string]string{
		"#SRC":  "    expectations:\n      - {name: pos, expect: \"id > 0\", on_violation: quarantine}",
		"#MORE": "  - name: report\n    type: streaming_table\n    query: SELECT * FROM STREAM(bronze_quarantine)",
	})), nil, nil)
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Error(), "bronze_quarantine is the quarantine table of dataset bronze, which a query reads whole (its current rows), not with STREAM or table_changes (hint: read it as a table: FROM bronze_quarantine)") {
		t.Fatalf("err = %v", err)
	}
	// The quarantine table of a dataset that does not quarantine is an unknown name, and the
	// error says why and what makes the table.
	_, err = Parse("p.yaml", []byte(build(map[string]string{
		"#MORE": "  - name: report\n    query: SELECT * FROM bronze_quarantine",
	})), nil, nil)
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Error(), "unknown dataset bronze_quarantine: dataset bronze has no quarantine table, since none of its expectations has on_violation: quarantine (hint: give an expectation of bronze `on_violation: quarantine`, or read bronze itself)") {
		t.Fatalf("err = %v", err)
	}
}

// TestInferredReads: a dataset cannot read as a table (`source: {table: ...}`) a dataset whose
// schema is inferred, nor an APPLY CHANGES target of one; an APPLY CHANGES flow can read it
// (TestApplyChangesFromInferred).
func TestInferredReads(t *testing.T) {
	t.Parallel()
	text := build(map[string]string{"#SCHEMA": "", "#MORE": "  - name: copy\n    source: {table: bronze}\n  - name: copy2\n    source: {table: silver}"})
	_, err := Parse("p.yaml", []byte(text), nil, nil)
	for _, w := range []string{
		"datasets[2].source.table: reading dataset bronze, whose schema is inferred, is not supported yet",
		"datasets[3].source.table: reading dataset silver, whose columns come from dataset bronze, whose schema is inferred, is not supported yet (hint: declare `schema:` on dataset bronze)",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v\nwant %s", err, w)
		}
	}
}
