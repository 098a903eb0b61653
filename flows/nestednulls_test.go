package flows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

const nestedNullsSpec = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, addr STRUCT<city: STRING, geo: STRUCT<lat: BIGINT, lon: BIGINT>>, tags ARRAY<STRING>, seq BIGINT"
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op, seq]
      ignore_null_updates: true
      stored_as_scd_type: %d
`

// TestIgnoreNullUpdatesKeepsNestedFields: under ignore_null_updates a NULL field of a struct
// column keeps the stored field, at any depth, as a NULL column keeps the stored column
// (Databricks, APPLY CHANGES INTO, IGNORE NULL UPDATES: "columns with a null will retain their
// existing values in the target. This also applies to nested columns with a value of null").
// An array is replaced whole, a re-insert after a delete starts from nothing, and a late event
// is merged where its sequence belongs (semantics.md, the guiding rule), in one batch or two.
func TestIgnoreNullUpdatesKeepsNestedFields(t *testing.T) {
	t.Parallel()
	geo := func(lat, lon any) []any { return []any{lat, lon} }
	ev := func(op string, id int64, name any, addr any, tags any, seq int64) []any {
		return []any{op, id, name, addr, tags, seq}
	}
	batches := [][][]any{{
		ev("I", 1, "a", []any{"Paris", geo(int64(48), int64(2))}, []any{"x", "y"}, 1),
		ev("U", 1, nil, []any{nil, geo(nil, int64(3))}, []any{"z"}, 2), // city and lat kept
		ev("I", 2, "b", []any{"Rome", geo(int64(41), int64(12))}, nil, 1),
		ev("D", 2, nil, nil, nil, 2),
		ev("U", 2, nil, []any{nil, geo(int64(1), nil)}, nil, 3), // after a delete: nothing to keep
		ev("I", 3, "c", []any{"Oslo", geo(int64(59), int64(10))}, nil, 1),
		ev("U", 3, nil, []any{nil, nil}, nil, 4),
	}, {
		ev("U", 1, nil, []any{"Lyon", geo(nil, nil)}, nil, 3),
		ev("U", 3, nil, []any{"Bergen", geo(nil, int64(5))}, nil, 2), // late: city of seq 2 wins until seq 4
	}}
	for _, tc := range []struct {
		scd  int
		want [][]string // rows after each batch, sorted
	}{
		{1, [][]string{
			{"1 a [Paris [48 3]] [z]", "2 <nil> [<nil> [1 <nil>]] <nil>", "3 c [Oslo [59 10]] <nil>"},
			{"1 a [Lyon [48 3]] [z]", "2 <nil> [<nil> [1 <nil>]] <nil>", "3 c [Bergen [59 5]] <nil>"},
		}},
		{2, [][]string{
			{"1 a [Paris [48 2]] [x y] 1 2", "1 a [Paris [48 3]] [z] 2 <nil>",
				"2 <nil> [<nil> [1 <nil>]] <nil> 3 <nil>", "2 b [Rome [41 12]] <nil> 1 2",
				"3 c [Oslo [59 10]] <nil> 1 <nil>"},
			{"1 a [Lyon [48 3]] [z] 3 <nil>", "1 a [Paris [48 2]] [x y] 1 2", "1 a [Paris [48 3]] [z] 2 3",
				"2 <nil> [<nil> [1 <nil>]] <nil> 3 <nil>", "2 b [Rome [41 12]] <nil> 1 2",
				"3 c [Bergen [59 5]] <nil> 2 <nil>", "3 c [Oslo [59 10]] <nil> 1 2"},
		}},
	} {
		t.Run(fmt.Sprintf("scd%d", tc.scd), func(t *testing.T) {
			t.Parallel()
			p := loadPipeline(t, t.TempDir(), fmt.Sprintf(nestedNullsSpec, tc.scd))
			env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
			for i, b := range batches {
				appendEvents(t, p, b)
				if _, err := ApplyChanges(context.Background(), env, p.Dataset("items")); err != nil {
					t.Fatal(err)
				}
				_, rows := readTable(t, p, "items")
				var got []string
				for _, r := range rows {
					got = append(got, strings.TrimSuffix(fmt.Sprintln(r...), "\n"))
				}
				sort.Strings(got)
				if strings.Join(got, "\n") != strings.Join(tc.want[i], "\n") {
					t.Errorf("after batch %d:\n got %q\nwant %q", i+1, got, tc.want[i])
				}
			}
		})
	}
}
