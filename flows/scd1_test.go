package flows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/schema"
	"tributary/spec"
)

const scd1Spec = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, name STRING, seq BIGINT"
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op, seq]
    table_properties:
      pipelines.cdc.tombstoneGCThresholdInSeconds: "%s"
`

func newSCD1(t *testing.T, gcSeconds string) *spec.Pipeline {
	t.Helper()
	return loadPipeline(t, t.TempDir(), fmt.Sprintf(scd1Spec, gcSeconds))
}

// ch is one change event: op, id, name ("" = NULL), seq.
func ch(op string, id int64, name string, seq int64) []any {
	var n any
	if name != "" {
		n = name
	}
	return []any{op, id, n, seq}
}

// tableRows returns the target's rows as "id=name" strings, sorted.
func tableRows(t *testing.T, p *spec.Pipeline) []string {
	t.Helper()
	_, rows := readTable(t, p, "items")
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d=%s", r[0].(int64), schema.Text(schema.Type{Kind: schema.String}, r[1])))
	}
	sort.Strings(out)
	return out
}

func apply(t *testing.T, p *spec.Pipeline, now time.Time, events ...[]any) (Metrics, error) {
	t.Helper()
	appendEvents(t, p, events)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: func() time.Time { return now }}
	return ApplyChanges(context.Background(), env, p.Dataset("items"))
}

// TestApplyChangesAcrossBatches follows the shared case 13 (tombstones, unknown keys) with every
// batch applied by a fresh flow run, so the CDC state must survive between runs.
func TestApplyChangesAcrossBatches(t *testing.T) {
	t.Parallel()
	p := newSCD1(t, "172800")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := apply(t, p, now, ch("D", 7, "", 5), ch("U", 8, "h", 2), ch("I", 9, "i", 1), ch("D", 9, "", 4), ch("I", 10, "j", 1))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumUpsertedRows != 2 || m.NumDeletedRows != 0 {
		t.Errorf("batch 1 metrics = %+v, want 2 upserted, 0 deleted", m)
	}
	if got, want := tableRows(t, p), []string{"10=j", "8=h"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after batch 1: %v, want %v", got, want)
	}
	m, err = apply(t, p, now.Add(time.Minute), ch("I", 7, "g", 3), ch("U", 9, "i-late", 3), ch("D", 10, "", 4), ch("I", 10, "j-new", 6))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tableRows(t, p), []string{"10=j-new", "8=h"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after batch 2: %v, want %v", got, want)
	}
	if m.NumUpsertedRows != 1 || m.NumDeletedRows != 0 {
		t.Errorf("batch 2 metrics = %+v, want 1 upserted (10 → j-new), 0 deleted", m)
	}
	// A re-delivered batch changes nothing.
	m, err = apply(t, p, now.Add(2*time.Minute), ch("I", 7, "g", 3), ch("U", 9, "i-late", 3), ch("D", 10, "", 4), ch("I", 10, "j-new", 6))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumOutputRows != 0 {
		t.Errorf("replayed batch wrote %d rows, want 0", m.NumOutputRows)
	}
}

// TestNullKeyFailsTheBatch: a NULL key fails the whole batch and nothing of it is applied.
func TestNullKeyFailsTheBatch(t *testing.T) {
	t.Parallel()
	p := newSCD1(t, "172800")
	now := time.Now()
	if _, err := apply(t, p, now, ch("I", 1, "a", 1)); err != nil {
		t.Fatal(err)
	}
	_, err := apply(t, p, now, ch("U", 1, "b", 2), []any{"I", nil, "x", int64(3)}, []any{"I", nil, "y", int64(4)}, []any{"I", int64(5), "z", nil})
	for _, want := range []string{"2 change event(s) have a NULL in the key column id", "1 change event(s) have a NULL in the sequence_by column seq", "nothing of this batch was applied"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error = %v, want it to say %q", err, want)
		}
	}
	if got := tableRows(t, p); strings.Join(got, ",") != "1=a" {
		t.Fatalf("table after the failed batch = %v, want [1=a]", got)
	}
}

// TestTombstoneGC: before pipelines.cdc.tombstoneGCThresholdInSeconds has passed a late insert
// below the delete's sequence is rejected; once the tombstone is older than the threshold it is
// purged and the same late insert brings the row back (semantics.md, the documented exception to
// the guiding rule).
func TestTombstoneGC(t *testing.T) {
	t.Parallel()
	p := newSCD1(t, "60")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := apply(t, p, t0, ch("I", 1, "a", 1), ch("D", 1, "", 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, p, t0.Add(30*time.Second), ch("I", 1, "late", 3)); err != nil {
		t.Fatal(err)
	}
	if got := tableRows(t, p); len(got) != 0 {
		t.Fatalf("within the threshold the late insert must be rejected; table = %v", got)
	}
	if _, err := apply(t, p, t0.Add(2*time.Minute), ch("I", 1, "later", 4)); err != nil {
		t.Fatal(err)
	}
	if got := tableRows(t, p); strings.Join(got, ",") != "1=later" {
		t.Fatalf("after the threshold the tombstone is purged; table = %v, want [1=later]", got)
	}
}
