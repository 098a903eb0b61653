package update

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tributary/eventlog"
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

// lagSpec: raw is compacted and vacuumed at each of its checkpoints (every 4 commits, nothing
// kept for time), and read from its log by an APPLY CHANGES flow, a STREAM query, a change feed
// `table:` source and an apply_changes_from_snapshot flow.
const lagSpec = `name: lag
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
    table_properties:
      delta.enableChangeDataFeed: "true"
      delta.deletedFileRetentionDuration: "interval 0 hours"
      delta.checkpointInterval: "4"
      pipelines.autoOptimize.minNumFiles: "2"
  - name: items
    apply_changes:
      source: raw
      keys: [id]
      sequence_by: seq
  - name: copy
    type: streaming_table
    query: SELECT id, seq FROM STREAM(raw)
  - name: feed
    source:
      table: raw
      read: change_feed
  - name: snap
    apply_changes_from_snapshot:
      source: raw
      keys: [id, seq]
`

// TestAutoVacuumLaggingReaders: the readers of raw read events 1-2, then are left out of 10
// updates (--refresh raw) during which raw is compacted and vacuumed at its checkpoints; they
// then read on without a gap. Events i = 1..12 are id i%4, seq i.
func TestAutoVacuumLaggingReaders(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, lagSpec)
	for i := 1; i <= 12; i++ {
		landEvent(t, p, i, i%4, i)
		var o Options
		if i > 2 {
			o.Refresh = []string{"raw"}
		}
		if _, err := Run(context.Background(), p, o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := 1; i <= 12; i++ {
		all = append(all, fmt.Sprintf("%d/%d", i%4, i))
	}
	slices.Sort(all)
	if got, want := idSeq(t, p, "items"), []string{"0/12", "1/9", "2/10", "3/11"}; !slices.Equal(got, want) {
		t.Errorf("items %v, want %v", got, want)
	}
	for _, name := range []string{"copy", "feed", "snap"} {
		if got := idSeq(t, p, name); !slices.Equal(got, all) {
			t.Errorf("%s %v, want %v", name, got, all)
		}
	}
}

// TestAutoVacuumLaggingDVReader: a merge-on-read APPLY CHANGES target (deletion vectors),
// compacted and vacuumed at its checkpoints with nothing kept for time, is read by a change feed
// `table:` source left out of batches 4-9 (--refresh raw items), while a VACUUM deletes files of
// versions it had read: it reads on without a gap. Batch 1 inserts ids 1-4 (seq 1); batch
// i = 2..9 updates id i%2+1 and inserts id 10+i (seq i).
func TestAutoVacuumLaggingDVReader(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, `name: lagdv
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT, v STRING"
  - name: items
    apply_changes:
      source: raw
      keys: [id]
      sequence_by: seq
    table_properties:
      delta.enableDeletionVectors: "true"
      delta.enableChangeDataFeed: "true"
      delta.deletedFileRetentionDuration: "interval 0 hours"
      delta.checkpointInterval: "3"
      pipelines.autoOptimize.minNumFiles: "2"
  - name: feed
    source:
      table: items
      read: change_feed
`)
	land := func(n int, o Options, lines ...string) {
		t.Helper()
		landLines(t, p, n, lines...)
		if _, err := Run(context.Background(), p, o); err != nil {
			t.Fatal(err)
		}
	}
	var first []string
	for id := 1; id <= 4; id++ {
		first = append(first, fmt.Sprintf(`{"op":"U","id":%d,"seq":1,"v":"a"}`, id))
	}
	land(1, Options{}, first...)
	for i := 2; i <= 9; i++ {
		var o Options
		if i >= 4 {
			o.Refresh = []string{"raw", "items"}
		}
		land(i, o, fmt.Sprintf(`{"op":"U","id":%d,"seq":%d,"v":"b%d"}`, i%2+1, i, i), fmt.Sprintf(`{"op":"U","id":%d,"seq":%d,"v":"n"}`, 10+i, i))
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e eventlog.Event) bool {
		return e.EventType == eventlog.MaintenanceProgress && strings.HasPrefix(e.Message, "Automatic VACUUM of items deleted")
	}) {
		t.Error("no automatic VACUUM of items deleted files")
	}
	wantItems := []string{"12/2", "13/3", "14/4", "15/5", "16/6", "17/7", "18/8", "19/9", "1/8", "2/9", "3/1", "4/1"}
	slices.Sort(wantItems)
	if got := idSeq(t, p, "items"); !slices.Equal(got, wantItems) {
		t.Errorf("items %v, want %v", got, wantItems)
	}
	wantFeed := []string{"1/1", "2/1", "3/1", "4/1"}
	for i := 2; i <= 9; i++ {
		wantFeed = append(wantFeed, fmt.Sprintf("%d/%d", i%2+1, i), fmt.Sprintf("%d/%d", 10+i, i))
	}
	slices.Sort(wantFeed)
	if got := idSeq(t, p, "feed"); !slices.Equal(got, wantFeed) {
		t.Errorf("feed %v, want %v", got, wantFeed)
	}
}
