package flows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/schema"
)

// TestInsertOnlyBatchWritesNoCDCFile: a batch that only inserts rows and removes no file commits
// without a change data file, and the change data feed still gives its rows as inserts (Delta
// PROTOCOL.md "Change Data Files": readers derive the inserts of a version without cdc files from
// its added files); a batch that updates or deletes rows writes one. The feed is checked against
// the rows semantics.md asks for, per target kind.
func TestInsertOnlyBatchWritesNoCDCFile(t *testing.T) {
	t.Parallel()
	scd1 := fmt.Sprintf(scd1Spec, "172800")
	scd1dv := scd1 + "      delta.enableDeletionVectors: \"true\"\n"
	scd1nulls := strings.Replace(scd1, "except_column_list: [op, seq]", "except_column_list: [op, seq]\n      ignore_null_updates: true", 1)
	batches := [][][]any{
		{ch("I", 1, "a", 10), ch("I", 2, "b", 11)}, // two new keys
		{ch("I", 3, "c", 12)},                      // one more new key: only an insert again
		{ch("U", 1, "a2", 13), ch("D", 2, "", 14)}, // an update and a delete
	}
	for _, tc := range []struct {
		name string
		spec string
		// want: per batch, whether it writes a cdc file and its change rows (sorted; id, name,
		// for SCD type 2 __START_AT and __END_AT, then the change type).
		cdc  []bool
		want [][]string
	}{
		{"scd1", scd1, []bool{false, false, true}, [][]string{
			{`1 "a" insert`, `2 "b" insert`},
			{`3 "c" insert`},
			{`1 "a" update_preimage`, `1 "a2" update_postimage`, `2 "b" delete`},
		}},
		{"scd1 deletion vectors", scd1dv, []bool{false, false, true}, [][]string{
			{`1 "a" insert`, `2 "b" insert`},
			{`3 "c" insert`},
			{`1 "a" update_preimage`, `1 "a2" update_postimage`, `2 "b" delete`},
		}},
		{"scd1 ignore_null_updates", scd1nulls, []bool{false, false, true}, [][]string{
			{`1 "a" insert`, `2 "b" insert`},
			{`3 "c" insert`},
			{`1 "a" update_preimage`, `1 "a2" update_postimage`, `2 "b" delete`},
		}},
		{"scd2", scd2Spec, []bool{false, false, true}, [][]string{
			{`1 "a" 10 null insert`, `2 "b" 11 null insert`},
			{`3 "c" 12 null insert`},
			// the update closes a at 13 and opens a2; the delete closes b at 14
			{`1 "a" 10 13 update_postimage`, `1 "a" 10 null update_preimage`, `1 "a2" 13 null insert`,
				`2 "b" 11 14 update_postimage`, `2 "b" 11 null update_preimage`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := loadPipeline(t, t.TempDir(), tc.spec)
			env := &Env{Pipeline: p, Events: nopEvents{}, Now: time.Now}
			tb := delta.New(TableDir(p.Storage, "items"))
			for i, batch := range batches {
				appendEvents(t, p, batch)
				m, err := ApplyChanges(context.Background(), env, p.Dataset("items"))
				if err != nil {
					t.Fatal(err)
				}
				c, err := tb.ReadCommit(m.Version)
				if err != nil {
					t.Fatal(err)
				}
				if c.Info.IsBlindAppend == nil || *c.Info.IsBlindAppend {
					t.Errorf("batch %d: isBlindAppend %v, want false: a MERGE reads the table (Delta Spark records false)", i+1, c.Info.IsBlindAppend)
				}
				if got := len(c.CDCs) > 0; got != tc.cdc[i] {
					t.Errorf("batch %d: cdc file written = %v, want %v (adds %d, removes %d)", i+1, got, tc.cdc[i], len(c.Adds), len(c.Removes))
				}
				s, rows, err := tb.Changes(m.Version, m.Version)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					var b []string
					for j, f := range s.Fields {
						switch f.Name {
						case "_commit_timestamp", "_commit_version":
						case "_change_type":
							b = append(b, r[j].(string))
						default:
							b = append(b, string(schema.AppendJSON(nil, f.Type, r[j])))
						}
					}
					got = append(got, strings.Join(b, " "))
				}
				sort.Strings(got)
				if strings.Join(got, "\n") != strings.Join(tc.want[i], "\n") {
					t.Errorf("batch %d: change data feed:\n got:\n  %s\nwant:\n  %s", i+1, strings.Join(got, "\n  "), strings.Join(tc.want[i], "\n  "))
				}
			}
		})
	}
}
