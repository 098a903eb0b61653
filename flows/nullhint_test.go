package flows

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNullKeyHintFollowed: the error of a batch with NULL keys and sequences suggests one
// expectation that drops them all, and spares the truncate events, whose key is NULL by design:
// put on the target as the error writes it, the next run applies the batch, truncate included,
// instead of failing on the next column or dropping the truncate.
func TestNullKeyHintFollowed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const head = `name: script
storage: ./storage
datasets:
  - name: changes
    source: {path: ./landing, format: json, schema: "op STRING, id BIGINT, v STRING, seq BIGINT"}
  - name: target
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      apply_as_truncates: op == "T"
      except_column_list: [op]
`
	p := loadPipeline(t, dir, head)
	env := &Env{Pipeline: p, Events: nopEvents{}, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	appendEvents(t, p, [][]any{{"U", int64(1), "a", int64(1)}, {"U", int64(2), "b", int64(2)}})
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, p, [][]any{
		{"D", nil, nil, int64(3)},         // a delete that lost its key: dropped
		{"U", int64(3), "c", nil},         // an event without a sequence: dropped
		{"T", nil, nil, int64(4)},         // the truncate: kept, it removes 1 and 2
		{"U", int64(4), "d", int64(5)},    // after the truncate
		{"U", int64(1), "late", int64(3)}, // at or below the truncate: nothing
	})
	_, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
	m := regexp.MustCompile("e\\.g\\. `([^`]*)` with on_violation: drop").FindStringSubmatch(errString(err))
	if m == nil {
		t.Fatalf("err = %v, want the expectation to add", err)
	}
	if want := `(id != nil or op == "T") and seq != nil`; m[1] != want {
		t.Errorf("suggested %q, want %q", m[1], want)
	}
	p = loadPipeline(t, dir, head+"    expectations:\n      - {name: no_nulls, expect: '"+m[1]+"', on_violation: drop}\n")
	env.Pipeline = p
	if _, err := ApplyChanges(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatalf("with the expectation the error suggests: %v", err)
	}
	if got := strings.Join(canonTable(t, p), "\n"); got != `{"id":4,"seq":5,"v":"d"}` {
		t.Errorf("target:\n%s\nwant only key 4: the truncate applied, the events with NULLs dropped", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
