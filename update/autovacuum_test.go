package update

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestAutoVacuumSnapshotReaderFullRefresh: a table an apply_changes_from_snapshot flow reads
// keeps every version readable through automatic VACUUM, as metadata cleanup keeps its whole
// log: a full refresh of the flow applies each version again. Events i = 1..12 are id i%4,
// seq i, each its own version of raw; keys (id, seq) keep all 12.
func TestAutoVacuumSnapshotReaderFullRefresh(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, `name: snapvac
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
    table_properties:
      delta.deletedFileRetentionDuration: "interval 0 hours"
      delta.checkpointInterval: "4"
      pipelines.autoOptimize.minNumFiles: "2"
  - name: snap
    apply_changes_from_snapshot:
      source: raw
      keys: [id, seq]
`)
	for i := 1; i <= 12; i++ {
		landEvent(t, p, i, i%4, i)
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for i := 1; i <= 12; i++ {
		all = append(all, fmt.Sprintf("%d/%d", i%4, i))
	}
	slices.Sort(all)
	if got := idSeq(t, p, "snap"); !slices.Equal(got, all) {
		t.Fatalf("snap %v, want %v", got, all)
	}
	if _, err := Run(context.Background(), p, Options{FullRefresh: []string{"snap"}}); err != nil {
		t.Fatal(err)
	}
	if got := idSeq(t, p, "snap"); !slices.Equal(got, all) {
		t.Errorf("snap after its full refresh %v, want %v", got, all)
	}
}
