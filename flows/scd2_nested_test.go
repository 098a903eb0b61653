package flows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"tributary/spec"
)

// TestSCD2NestedMatchesFlat: an SCD type 2 target with an ARRAY column (whose state keeps its
// events decoded, the keyed form not holding nested values) has the versions of one with the
// same values as strings, over batches of many keys with several events each, late ones among
// them: the memory one key's work reuses for the next must not be that of a key's kept events.
func TestSCD2NestedMatchesFlat(t *testing.T) {
	t.Parallel()
	const specFmt = `name: t
storage: ./storage
datasets:
  - name: changes
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, tags %s, seq BIGINT"
  - name: items
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
      stored_as_scd_type: 2
`
	nested := loadPipeline(t, t.TempDir(), fmt.Sprintf(specFmt, "ARRAY<STRING>"))
	flat := loadPipeline(t, t.TempDir(), fmt.Sprintf(specFmt, "STRING"))
	r := rand.New(rand.NewPCG(13, 14))
	seq := int64(1000)
	for range 4 {
		var nb, fb [][]any
		for range 300 {
			seq++
			s := seq
			if r.IntN(10) == 0 {
				s -= int64(1 + r.IntN(500)) // late
			}
			id, op, tag := int64(r.IntN(40)), "U", fmt.Sprint("t", r.IntN(3))
			if r.IntN(12) == 0 {
				op = "D"
			}
			nb = append(nb, []any{op, id, []any{tag}, s})
			fb = append(fb, []any{op, id, tag, s})
		}
		for i, pl := range []*spec.Pipeline{nested, flat} {
			appendEvents(t, pl, [][][]any{nb, fb}[i])
			env := &Env{Pipeline: pl, Events: nopEvents{}, Now: time.Now}
			if _, err := ApplyChanges(context.Background(), env, pl.Dataset("items")); err != nil {
				t.Fatal(err)
			}
		}
	}
	render := func(rows [][]any) string {
		out := make([]string, len(rows))
		for i, row := range rows {
			tags := row[1]
			if a, ok := tags.([]any); ok {
				tags = a[0]
			}
			out[i] = fmt.Sprintf("%v %v %v %v %v", row[0], tags, row[2], row[3], row[4])
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	_, nrows := readTable(t, nested, "items")
	_, frows := readTable(t, flat, "items")
	if len(frows) < 300 {
		t.Fatalf("only %d versions", len(frows))
	}
	if got, want := render(nrows), render(frows); got != want {
		t.Fatalf("nested target:\n%s\nflat target:\n%s", got, want)
	}
}
