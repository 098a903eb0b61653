package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestCycleHint: the hint of a cycle names what to change by what its members are: queries
// their query, APPLY CHANGES targets their source, a mix both.
func TestCycleHint(t *testing.T) {
	t.Parallel()
	const applyA = "  - name: a\n    apply_changes: {source: b, keys: [id], sequence_by: seq}\n"
	const applyB = "  - name: b\n    apply_changes: {source: a, keys: [id], sequence_by: seq}\n"
	cases := []struct {
		name, datasets string
		want           []string // the Msg and Hint of each cycle error, "msg | hint"
	}{
		{"queries", "  - name: a\n    query: SELECT * FROM b\n  - name: b\n    query: SELECT * FROM a\n", []string{
			"dataset a is part of a cycle: a -> b -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the query of a or b",
			"dataset b is part of a cycle: a -> b -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the query of a or b",
		}},
		{"a query reading itself", "  - name: a\n    query: SELECT * FROM a\n", []string{
			"dataset a is part of a cycle: a -> a | a dataset cannot read from itself, directly or through others; change what it reads: the query of a",
		}},
		{"apply_changes", applyA + applyB, []string{
			"dataset a is part of a cycle: a -> b -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the apply_changes.source of a or b",
			"dataset b is part of a cycle: a -> b -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the apply_changes.source of a or b",
		}},
		{"a query and apply_changes", "  - name: a\n    query: SELECT * FROM b\n" + applyB, []string{
			"dataset a is part of a cycle: a -> b -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the query of a, or the apply_changes.source of b",
			"dataset b is part of a cycle: a -> b -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the query of a, or the apply_changes.source of b",
		}},
		{"a table source, a snapshot and a query", "  - name: a\n    source: {table: c}\n  - name: b\n    apply_changes_from_snapshot: {source: a, keys: [id]}\n  - name: c\n    query: SELECT * FROM b\n", []string{
			"dataset a is part of a cycle: a -> b -> c -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the source.table of a, or the apply_changes_from_snapshot.source of b, or the query of c",
			"dataset b is part of a cycle: a -> b -> c -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the source.table of a, or the apply_changes_from_snapshot.source of b, or the query of c",
			"dataset c is part of a cycle: a -> b -> c -> a | a dataset cannot read from itself, directly or through others; change what one of them reads: the source.table of a, or the apply_changes_from_snapshot.source of b, or the query of c",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("p.yaml", []byte("name: p\ndatasets:\n"+c.datasets), nil, nil)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want Errors", err)
			}
			var got []string
			for _, e := range es {
				if strings.Contains(e.Msg, "cycle") {
					got = append(got, e.Msg+" | "+e.Hint)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("cycle errors:\n%s\nwant:\n%s\nall errors:\n%v", strings.Join(got, "\n"), strings.Join(c.want, "\n"), err)
			}
		})
	}
}
