package update

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/flows"
	"tributary/spec"
)

const followSpec = `name: t
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
      except_column_list: [op]
  - name: items_again
    apply_changes:
      source: changes
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
      except_column_list: [op]
`

// TestUpdateFollowsIngest: in an update, the first APPLY CHANGES target of a bronze table takes
// the fold its ingest made while landing the batch (flows.FollowedBatches), and its table holds
// what semantics.md says (per key the event of the highest sequence; a delete removes the key),
// as the second target, which reads the batch back from the bronze table, does; update after
// update, and after a refresh of the target alone, which reads back.
func TestUpdateFollowsIngest(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(followSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	type ev struct {
		op        string
		id, seq   int64
		name      string
		arrivedAt int
	}
	latest := map[int64]ev{}
	seqs := r.Perm(3000) // distinct sequences, in no order: late events
	next := 0
	for update := range 3 {
		var b strings.Builder
		for range 1000 {
			e := ev{op: "U", id: int64(1 + r.IntN(200)), seq: int64(seqs[next]), name: fmt.Sprintf("n%d", r.IntN(50))}
			next++
			if r.IntN(6) == 0 {
				e.op = "D"
			}
			fmt.Fprintf(&b, `{"op": %q, "id": %d, "name": %q, "seq": %d}`+"\n", e.op, e.id, e.name, e.seq)
			if cur, ok := latest[e.id]; !ok || e.seq > cur.seq {
				latest[e.id] = e
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "landing", fmt.Sprintf("%d.json", update)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		before := flows.FollowedBatches()
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
		if got := flows.FollowedBatches() - before; got != 1 {
			t.Fatalf("update %d: %d batches taken from the ingest's fold, want 1 (items)", update+1, got)
		}
		var want []string
		for _, e := range latest {
			if e.op != "D" {
				want = append(want, fmt.Sprintf("%d %s %d", e.id, e.name, e.seq))
			}
		}
		slices.Sort(want)
		for _, target := range []string{"items", "items_again"} {
			if got := targetRows(t, p, target); !slices.Equal(got, want) {
				t.Fatalf("update %d: %s holds %d rows, want %d; first rows %v, want %v", update+1, target, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
		}
	}
	// A full refresh of the target alone reads the bronze table back: nothing is landed.
	before := flows.FollowedBatches()
	if _, err := Run(context.Background(), p, Options{FullRefresh: []string{"items"}}); err != nil {
		t.Fatal(err)
	}
	if got := flows.FollowedBatches() - before; got != 0 {
		t.Fatalf("a refresh of items took %d folds, want 0", got)
	}
	if got, want := targetRows(t, p, "items"), targetRows(t, p, "items_again"); !slices.Equal(got, want) {
		t.Fatalf("after a full refresh items holds %d rows, items_again %d", len(got), len(want))
	}
}

// targetRows returns the rows of an SCD type 1 target of followSpec as "id name seq", sorted.
func targetRows(t *testing.T, p *spec.Pipeline, name string) []string {
	t.Helper()
	tb := delta.New(flows.TableDir(p.Storage, name))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tb.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	s := snap.Metadata.Schema
	id, nm, sq := s.Index("id"), s.Index("name"), s.Index("seq")
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d %s %d", r[id], r[nm], r[sq]))
	}
	slices.Sort(out)
	return out
}
