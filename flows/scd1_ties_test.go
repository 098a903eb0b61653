package flows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestSCD1TiesWithStoredRows: events of a later batch at the sequence a key already holds are ties
// when they differ from what is stored (semantics.md, Decision on ties): an upsert other than the
// live row (a no-op), an upsert at a tombstone's sequence (the delete wins) and a delete at a live
// row's sequence (the delete wins) are counted; an identical re-delivery is not. Copy-on-write and
// merge-on-read, with the state read again by a new process for the second batch. The WARN names
// the first tie of the batch (key 1, the first event of the second batch: row 1 of its data
// file), with its rule.
func TestSCD1TiesWithStoredRows(t *testing.T) {
	t.Parallel()
	for _, mor := range []bool{false, true} {
		extra := ""
		if mor {
			extra = "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
		}
		p := loadPipeline(t, t.TempDir(), fmt.Sprintf(reuseSpec, extra))
		rec := &tieRecorder{}
		env := &Env{Pipeline: p, Events: rec}
		batches := [][][]any{{
			{"U", int64(1), "a", int64(5)},
			{"D", int64(2), "gone", int64(5)},
			{"U", int64(3), "c", int64(5)},
			{"U", int64(4), "d", int64(5)},
			{"U", int64(5), "e", int64(5)},
		}, {
			{"U", int64(1), "a2", int64(5)},   // differs from the live row at 5: a tie, a no-op
			{"U", int64(2), "b", int64(5)},    // at the tombstone's sequence: a tie, the delete wins
			{"U", int64(3), "c", int64(5)},    // identical to the live row: a re-delivery, no tie
			{"D", int64(4), "gone", int64(5)}, // a delete at the live row's sequence: a tie, it wins
			{"U", int64(5), "e2", int64(6)},   // newer: an update, no tie
		}}
		wantTies := []int64{0, 3}
		for i, rows := range batches {
			appendEvents(t, p, rows)
			stateCache.Delete(StateDir(p.Storage, "target"))
			loadedStates.Delete(StateDir(p.Storage, "target"))
			m, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
			if err != nil {
				t.Fatalf("merge-on-read %v, batch %d: %v", mor, i+1, err)
			}
			if m.Ties != wantTies[i] {
				t.Errorf("merge-on-read %v, batch %d: %d ties, want %d", mor, i+1, m.Ties, wantTies[i])
			}
			msgs, details := rec.take()
			if i == 0 {
				if len(msgs) != 0 {
					t.Errorf("merge-on-read %v, batch 1: WARNs about ties %q", mor, msgs)
				}
				continue
			}
			checkTieWarnRows(t, fmt.Sprintf("merge-on-read %v, batch 2", mor), msgs, details, wantTie{
				ties: 3, key: "id=1", seq: "seq=5", file: sourceDataFiles(t, p)[1], line: 1, with: "what the table held",
				rule: "an upsert equal in sequence to what the table held already changed nothing",
			})
		}
		_, rows := readTable(t, p, "target")
		var got []string
		for _, row := range rows {
			got = append(got, fmt.Sprintf("%v|%v|%v", row...))
		}
		sort.Strings(got)
		if want := "1|a|5 3|c|5 5|e2|6"; strings.Join(got, " ") != want {
			t.Errorf("merge-on-read %v: target %q, want %q", mor, strings.Join(got, " "), want)
		}
	}
}
