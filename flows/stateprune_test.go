package flows

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
	"tributary/spec"
)

// TestStatePruned: the CDC state folder keeps only what the target's last two APPLY CHANGES
// commits name (the manifest lastApply reads and the one its batch started from, with their
// segments). The manifests of earlier batches,
// the segments a full rewrite of the state replaced (after an OPTIMIZE of the target), and the
// segment, manifest and temporary file of a batch whose process was killed before its commit
// are removed by the next commit, so the folder does not grow with every batch; the target
// stays what the same batches give without them (SCD type 1 and 2, copy-on-write and
// merge-on-read).
func TestStatePruned(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		scd  int
		dv   bool
	}{{"scd1", 1, false}, {"scd1-dv", 1, true}, {"scd2", 2, false}, {"scd2-dv", 2, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(benchSpec, "except_column_list: [op]", fmt.Sprintf("except_column_list: [op]\n      stored_as_scd_type: %d", c.scd), 1)
			if c.dv {
				text += "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
			}
			pruned, twin := loadPipeline(t, t.TempDir(), text), loadPipeline(t, t.TempDir(), text)
			dir := StateDir(pruned.Storage, "target")
			r := rand.New(rand.NewPCG(11, 12))
			var seq int64
			for batch := range 6 {
				evs := changeEvents(r, 300, 120, &seq)
				if batch == 4 {
					for i := range evs[:40] { // late events
						evs[i][4] = evs[i][4].(int64) - 500
					}
				}
				for _, p := range []*spec.Pipeline{pruned, twin} {
					appendEvents(t, p, evs)
					// A new process for each batch, as `pipeline run` is.
					stateCache.Delete(StateDir(p.Storage, "target"))
					loadedStates.Delete(StateDir(p.Storage, "target"))
					histCache.Delete(StateDir(p.Storage, "target"))
					if _, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target")); err != nil {
						t.Fatalf("batch %d: %v", batch, err)
					}
					if batch == 2 {
						if _, err := delta.New(TableDir(p.Storage, "target")).Optimize(delta.OptimizeOptions{}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if batch == 3 {
					// What a batch killed after saving its state and before its commit leaves.
					for _, f := range []string{
						"segments/0f5e1d2c-3b4a-4958-8776-655443322110.keyed",
						"segments/.part-00000-crashed.c000.snappy.parquet.tmp",
						"manifests/7d6c5b4a-3928-4170-8695-a4b3c2d1e0f9.json",
						"manifests/.tmp-7d6c5b4a-3928-4170-8695-a4b3c2d1e0f9.json-123",
					} {
						if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), []byte("x"), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			// Kept: the manifest of the last commit and of the one before it (the state its batch
			// started from), with their segments.
			tb := delta.New(TableDir(pruned.Storage, "target"))
			snap, err := tb.Snapshot(-1)
			if err != nil {
				t.Fatal(err)
			}
			var wantManifests, wantSegments []string
			for _, v := range []int64{snap.Version, snap.Version - 1} {
				s, err := tb.Snapshot(v)
				if err != nil {
					t.Fatal(err)
				}
				id, _, _, err := lastApply(tb, s)
				if err != nil {
					t.Fatal(err)
				}
				m, err := (&stateLog{dir: dir}).readManifest(tb, id)
				if err != nil {
					t.Fatal(err)
				}
				wantManifests = append(wantManifests, id+".json")
				for _, s := range m.Segments {
					if !slices.Contains(wantSegments, s.Name) {
						wantSegments = append(wantSegments, s.Name)
					}
				}
			}
			slices.Sort(wantManifests)
			slices.Sort(wantSegments)
			if got := names(t, filepath.Join(dir, "segments")); !slices.Equal(got, wantSegments) {
				t.Errorf("segments folder holds %v, want only the last two manifests' %v", got, wantSegments)
			}
			if got := names(t, filepath.Join(dir, "manifests")); !slices.Equal(got, wantManifests) {
				t.Errorf("manifests folder holds %v, want only %v", got, wantManifests)
			}
			_, want2 := readTable(t, twin, "target")
			_, got2 := readTable(t, pruned, "target")
			if a, b := rowSet(want2), rowSet(got2); a != b {
				t.Fatalf("target after the leftovers of a killed batch:\n%s\nwithout them:\n%s", b, a)
			}
		})
	}
}

// names lists the files of dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}
