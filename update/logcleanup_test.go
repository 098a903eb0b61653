package update

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/flows"
	"tributary/spec"
)

const cleanupSpec = `name: lc
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
    table_properties:
      delta.logRetentionDuration: "interval 1 hours"
  - name: items
    apply_changes:
      source: raw
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
  - name: copy
    type: streaming_table
    query: SELECT id, seq FROM STREAM(raw)
`

// cleanupPipeline writes specText and an empty landing folder into a new folder and loads it.
func cleanupPipeline(t *testing.T, specText string) *spec.Pipeline {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(specText), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Load(filepath.Join(dir, "pipeline.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// landEvent lands file NN.json of p holding the change event {op U, id, seq}.
func landEvent(t *testing.T, p *spec.Pipeline, n int, id, seq int) {
	t.Helper()
	landLines(t, p, n, fmt.Sprintf(`{"op": "U", "id": %d, "seq": %d}`, id, seq))
}

// landLines lands file NN.json of p holding lines, one JSON object each.
func landLines(t *testing.T, p *spec.Pipeline, n int, lines ...string) {
	t.Helper()
	name := filepath.Join(filepath.Dir(p.File), "landing", fmt.Sprintf("%02d.json", n))
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ageLog sets the modification time of the commit files of tbl up to version last (all of them
// when last < 0) age back (two hours: older than an hour's delta.logRetentionDuration).
func ageLog(t *testing.T, tbl *delta.Table, last int64, age time.Duration) {
	t.Helper()
	if last < 0 {
		var err error
		if last, err = tbl.LatestVersion(); err != nil {
			t.Fatal(err)
		}
	}
	aged := time.Now().Add(-age)
	for v := int64(0); v <= last; v++ {
		if err := os.Chtimes(filepath.Join(tbl.Dir, delta.LogDir, fmt.Sprintf("%020d.json", v)), aged, aged); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMetadataCleanupKeepsWhatFlowsRead: a bronze table with an hour's delta.logRetentionDuration
// is cleaned up after its flow commits (Delta PROTOCOL.md, "Metadata Cleanup"), but never past a
// version its readers (an APPLY CHANGES flow and a STREAM query) have not read, even when they
// were left out of the updates meanwhile (--refresh raw): they then read on without a gap. A full
// refresh of the readers, when the log no longer starts at version 0, starts from the snapshot at
// the log's first version, as a Delta streaming read does: the tables come out as the semantics
// give them from all 25 change events.
func TestMetadataCleanupKeepsWhatFlowsRead(t *testing.T) {
	t.Parallel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := cleanupPipeline(t, cleanupSpec)
	land := func(i int) { landEvent(t, p, i, i%5, i) }
	run := func(o Options) {
		t.Helper()
		if _, err := Run(context.Background(), p, o); err != nil {
			t.Fatal(err)
		}
	}
	raw := delta.New(flows.TableDir(p.Storage, "raw"))
	latest := func() int64 {
		t.Helper()
		v, err := raw.LatestVersion()
		must(err)
		return v
	}
	for i := 1; i <= 12; i++ {
		land(i)
		run(Options{})
	}
	read := latest() // what items and copy have read
	for i := 13; i <= 24; i++ {
		land(i)
		run(Options{Refresh: []string{"raw"}})
	}
	ageLog(t, raw, -1, 2*time.Hour)
	land(25)
	run(Options{Refresh: []string{"raw"}})

	// Every commit up to the one before 25's is expired, but the readers read on from read+1 (and
	// a change data feed would read the version before): the log starts at the newest
	// checkpoint at or before version read.
	first, err := raw.FirstCommit()
	must(err)
	if want := read / 10 * 10; first != want || want == 0 {
		t.Fatalf("raw's log starts at version %d, want %d (the checkpoint at or before version %d, the last the readers read)", first, want, read)
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	must(err)
	cleanups := 0
	for _, e := range evs {
		if e.EventType == eventlog.MaintenanceProgress && strings.Contains(e.Message, "Metadata cleanup of raw deleted") {
			cleanups++
		}
	}
	if cleanups != 1 {
		t.Errorf("%d metadata cleanup events for raw, want 1", cleanups)
	}

	// The latest change per key of the 25 events (id i%5, seq i): 25, 21, 22, 23, 24.
	wantItems := []string{"0/25", "1/21", "2/22", "3/23", "4/24"}
	var wantCopy []string
	for i := 1; i <= 25; i++ {
		wantCopy = append(wantCopy, fmt.Sprintf("%d/%d", i%5, i))
	}
	slices.Sort(wantCopy)
	check := func(when string) {
		t.Helper()
		if got := idSeq(t, p, "items"); !slices.Equal(got, wantItems) {
			t.Errorf("%s: items %v, want %v", when, got, wantItems)
		}
		if got := idSeq(t, p, "copy"); !slices.Equal(got, wantCopy) {
			t.Errorf("%s: copy %v, want %v", when, got, wantCopy)
		}
	}
	run(Options{})
	check("readers reading on")
	run(Options{FullRefresh: []string{"items", "copy"}})
	check("readers fully refreshed from the snapshot at the log's first version")
}

// idSeq returns the id/seq pairs of dataset's table, sorted.
func idSeq(t *testing.T, p *spec.Pipeline, dataset string) []string {
	t.Helper()
	tbl := delta.New(flows.TableDir(p.Storage, dataset))
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	id, seq := snap.Metadata.Schema.Index("id"), snap.Metadata.Schema.Index("seq")
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%v/%v", r[id], r[seq]))
	}
	slices.Sort(out)
	return out
}

// TestMetadataCleanupSnapshotSource: a table an apply_changes_from_snapshot flow reads keeps its
// whole log whatever its retention (flows.LogFloor): each of its versions is a snapshot, and a
// full refresh reads them all again to rebuild the history.
func TestMetadataCleanupSnapshotSource(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, strings.Replace(cleanupSpec, `  - name: items
    apply_changes:
      source: raw
      keys: [id]
      sequence_by: seq
      apply_as_deletes: op == "D"
`, `  - name: items
    apply_changes_from_snapshot:
      source: raw
      keys: [id, seq]
      stored_as_scd_type: 2
`, 1))
	raw := delta.New(flows.TableDir(p.Storage, "raw"))
	for i := 1; i <= 25; i++ {
		landEvent(t, p, i, i%5, i)
		if i == 24 {
			ageLog(t, raw, -1, 2*time.Hour)
		}
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if first, err := raw.FirstCommit(); err != nil || first != 0 {
		t.Fatalf("raw's log starts at version %d (%v), want 0: a snapshot flow reads it", first, err)
	}
}

// TestFullRefreshAfterVacuum: once a bronze table's small files were compacted (automatic
// OPTIMIZE) and vacuumed, the files its first versions added are gone; a full refresh of its
// readers (APPLY CHANGES, a STREAM query) then starts from its latest snapshot, as a Delta
// streaming read does, rather than failing on a missing file, and rebuilds the tables the
// semantics give from all the change events.
func TestFullRefreshAfterVacuum(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, strings.Replace(cleanupSpec, `      delta.logRetentionDuration: "interval 1 hours"`, `      delta.deletedFileRetentionDuration: "interval 0 hours"
      pipelines.autoOptimize.minNumFiles: "2"`, 1))
	for i := 1; i <= 7; i++ {
		landEvent(t, p, i, i%3, i)
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	raw := delta.New(flows.TableDir(p.Storage, "raw"))
	res, err := raw.Vacuum(delta.VacuumOptions{Retain: 0, KeepFromVersion: -1, Now: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) == 0 {
		t.Fatal("VACUUM deleted no file: the test needs compacted files gone")
	}
	if _, err := Run(context.Background(), p, Options{FullRefresh: []string{"items", "copy"}}); err != nil {
		t.Fatal(err)
	}
	// id i%3, seq i for i = 1..7: the latest per key is 6 (id 0), 7 (id 1), 5 (id 2).
	if got, want := idSeq(t, p, "items"), []string{"0/6", "1/7", "2/5"}; !slices.Equal(got, want) {
		t.Errorf("items %v, want %v", got, want)
	}
	var want []string
	for i := 1; i <= 7; i++ {
		want = append(want, fmt.Sprintf("%d/%d", i%3, i))
	}
	slices.Sort(want)
	if got := idSeq(t, p, "copy"); !slices.Equal(got, want) {
		t.Errorf("copy %v, want %v", got, want)
	}
}

// TestReaders: the flows reading a table from its log, with the first version each has not read:
// none read before the first update, the version after raw's latest once they ran.
func TestReaders(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, cleanupSpec)
	landEvent(t, p, 1, 1, 1)
	show := func(rs []flows.Reader) string { return fmt.Sprintf("%+v", rs) }
	rs, err := flows.Readers(p, "raw")
	if want := "[{Dataset:items Snapshots:false Started:false Next:0} {Dataset:copy Snapshots:false Started:false Next:0}]"; err != nil || show(rs) != want {
		t.Fatalf("before the first update: %s, %v; want %s", show(rs), err, want)
	}
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	latest, _ := delta.New(flows.TableDir(p.Storage, "raw")).LatestVersion()
	rs, err = flows.Readers(p, "raw")
	if want := fmt.Sprintf("[{Dataset:items Snapshots:false Started:true Next:%d} {Dataset:copy Snapshots:false Started:true Next:%d}]", latest+1, latest+1); err != nil || show(rs) != want {
		t.Fatalf("after an update: %s, %v; want %s", show(rs), err, want)
	}
	if rs, err := flows.Readers(p, "items"); err != nil || len(rs) != 0 {
		t.Fatalf("readers of items: %s, %v; want none", show(rs), err)
	}
}

// TestStartingVersionBeforeLogStart: the pipeline's metadata cleanup keeps the versions a `table:`
// source that has read nothing will read from its starting_version (it is left out by --refresh
// meanwhile); when another program's cleanup deleted them, it fails naming the dataset, the
// first version the log keeps and the fix.
func TestStartingVersionBeforeLogStart(t *testing.T) {
	t.Parallel()
	const specText = `name: lc
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
    table_properties:
      delta.logRetentionDuration: "interval 1 hours"
  - name: tap
    source:
      table: raw
      starting_version: 0
`
	p := cleanupPipeline(t, specText)
	for i := 1; i <= 12; i++ { // raw: versions 0 (its creation with the first file) to 11
		landEvent(t, p, i, i, i)
		if _, err := Run(context.Background(), p, Options{Refresh: []string{"raw"}}); err != nil {
			t.Fatal(err)
		}
	}
	raw := delta.New(flows.TableDir(p.Storage, "raw"))
	ageLog(t, raw, 11, 2*time.Hour)
	landEvent(t, p, 13, 13, 13)
	if _, err := Run(context.Background(), p, Options{Refresh: []string{"raw"}}); err != nil {
		t.Fatal(err)
	}
	// The pipeline's own cleanup keeps what tap will read, from its starting_version on.
	if first, err := raw.FirstCommit(); err != nil || first != 0 {
		t.Fatalf("raw's log starts at %d (%v); want 0: tap reads it from starting_version 0", first, err)
	}
	// Another program's cleanup (Spark's, say) does not know tap.
	if _, err := raw.CleanupExpiredLogs(time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if first, err := raw.FirstCommit(); err != nil || first != 10 {
		t.Fatalf("raw's log starts at %d (%v); want 10, its checkpoint", first, err)
	}
	_, err := Run(context.Background(), p, Options{Development: true})
	if err == nil || !strings.Contains(err.Error(), "tap reads raw from starting_version 0, but the log of raw now starts at version 10") ||
		!strings.Contains(err.Error(), "set starting_version of tap to 10 or more") {
		t.Fatalf("tap from a deleted starting_version: %v", err)
	}
}

// TestFreshReaderAfterDVVacuum: a deletion vector of the snapshot at the log's first version
// that a later batch replaced (merge-on-read APPLY CHANGES) and VACUUM deleted cannot be read: a
// STREAM reader that has read nothing (a full refresh) starts from the latest snapshot instead.
// Batches 2-7 update ids 1 and 2 (seq 2-7) and insert ids 12-17; batch 8 updates id 3, whose
// file's deletion vector then changes: the latest rows are ids 1 (b6), 2 (b7), 3 (c8), 4 (a) and
// 12-17 (n).
func TestFreshReaderAfterDVVacuum(t *testing.T) {
	t.Parallel()
	const specText = `name: dv
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
      apply_as_deletes: op == "D"
    table_properties:
      delta.enableDeletionVectors: "true"
      delta.logRetentionDuration: "interval 1 hours"
      delta.deletedFileRetentionDuration: "interval 0 hours"
      delta.checkpointInterval: "3"
  - name: feed
    type: streaming_table
    skip_change_commits: true
    query: SELECT id, seq, v FROM STREAM(items)
`
	p := cleanupPipeline(t, specText)
	land := func(n int, lines ...string) {
		t.Helper()
		landLines(t, p, n, lines...)
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var first []string
	for id := 1; id <= 4; id++ {
		first = append(first, fmt.Sprintf(`{"op":"U","id":%d,"seq":1,"v":"a"}`, id))
	}
	land(1, first...)
	for i := 2; i <= 7; i++ {
		land(i, fmt.Sprintf(`{"op":"U","id":%d,"seq":%d,"v":"b%d"}`, i%2+1, i, i), fmt.Sprintf(`{"op":"U","id":%d,"seq":%d,"v":"n"}`, 10+i, i))
	}
	items := delta.New(flows.TableDir(p.Storage, "items"))
	ageLog(t, items, -1, 2*time.Hour)
	land(8, `{"op":"U","id":3,"seq":8,"v":"c8"}`)
	if first, err := items.FirstCommit(); err != nil || first == 0 {
		t.Fatalf("items' log starts at %d (%v); want it cleaned up", first, err)
	}
	if _, err := items.Vacuum(delta.VacuumOptions{Retain: 0, KeepFromVersion: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Options{FullRefresh: []string{"feed"}, Development: true}); err != nil {
		t.Fatal(err)
	}
	feed := delta.New(flows.TableDir(p.Storage, "feed"))
	snap, err := feed.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := feed.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v:%v", r[0], r[2]))
	}
	slices.Sort(got)
	want := []string{"12:n", "13:n", "14:n", "15:n", "16:n", "17:n", "1:b6", "2:b7", "3:c8", "4:a"}
	if !slices.Equal(got, want) {
		t.Fatalf("feed after its full refresh: %v; want %v", got, want)
	}
}

// TestAutoVacuum: an update that writes a checkpoint of a table also vacuums it, as Delta Live
// Tables' automatic maintenance does: with a zero delta.deletedFileRetentionDuration, the small
// files automatic OPTIMIZE compacted away in earlier updates are deleted (an INFO
// maintenance_progress event says so), never what the readers have not read, and the readers'
// tables are what the semantics give from every change event.
func TestAutoVacuum(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, strings.Replace(cleanupSpec, `      delta.logRetentionDuration: "interval 1 hours"`, `      delta.deletedFileRetentionDuration: "interval 0 hours"
      delta.checkpointInterval: "4"
      pipelines.autoOptimize.minNumFiles: "2"`, 1))
	raw := delta.New(flows.TableDir(p.Storage, "raw"))
	added := map[string]bool{}
	for i := 1; i <= 12; i++ {
		landEvent(t, p, i, i%4, i)
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
		v, err := raw.LatestVersion()
		if err != nil {
			t.Fatal(err)
		}
		for ; v >= 0; v-- {
			c, err := raw.ReadCommit(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range c.Adds {
				added[a.Path] = true
			}
		}
	}
	var onDisk int
	es, err := os.ReadDir(raw.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".parquet") {
			onDisk++
		}
	}
	if onDisk >= len(added) {
		t.Fatalf("%d of the %d data files raw's commits added are on disk: automatic VACUUM deleted none", onDisk, len(added))
	}
	evs, err := eventlog.Read(filepath.Join(p.Storage, "system", "events"))
	if err != nil {
		t.Fatal(err)
	}
	vacuums := 0
	for _, e := range evs {
		if e.EventType == eventlog.MaintenanceProgress && strings.HasPrefix(e.Message, "Automatic VACUUM of raw deleted") {
			vacuums++
		}
	}
	if vacuums == 0 {
		t.Error("no maintenance_progress event of an automatic VACUUM of raw")
	}
	// id i%4, seq i for i = 1..12: the latest per key is 12 (id 0), 9 (1), 10 (2), 11 (3).
	if got, want := idSeq(t, p, "items"), []string{"0/12", "1/9", "2/10", "3/11"}; !slices.Equal(got, want) {
		t.Errorf("items %v, want %v", got, want)
	}
	var want []string
	for i := 1; i <= 12; i++ {
		want = append(want, fmt.Sprintf("%d/%d", i%4, i))
	}
	slices.Sort(want)
	if got := idSeq(t, p, "copy"); !slices.Equal(got, want) {
		t.Errorf("copy %v, want %v", got, want)
	}
	// A full refresh of the readers reads raw from its latest snapshot, all 12 events.
	if _, err := Run(context.Background(), p, Options{FullRefresh: []string{"items", "copy"}}); err != nil {
		t.Fatal(err)
	}
	if got := idSeq(t, p, "copy"); !slices.Equal(got, want) {
		t.Errorf("copy after a full refresh %v, want %v", got, want)
	}
}

// quarantineSpec is a pipeline whose one dataset, raw, quarantines rows with an id below 1.
const quarantineSpec = `name: lq
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "op STRING, id BIGINT, seq BIGINT"
    expectations:
      - {name: positive, expect: "id > 0", on_violation: quarantine}
`

// TestQuarantineMaintenance: a dataset's quarantine table, which its flow writes, gets the
// maintenance of a dataset's table: past the default 30 days, metadata cleanup deletes its
// commits before its checkpoint at 10, and every quarantined row stays.
func TestQuarantineMaintenance(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, quarantineSpec)
	q := delta.New(flows.TableDir(p.Storage, "raw"+spec.QuarantineSuffix))
	for i := 1; i <= 13; i++ {
		landEvent(t, p, i, -i, i) // one quarantined row a file
		if i == 13 {
			ageLog(t, q, -1, 40*24*time.Hour)
		}
		if _, err := Run(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if first, err := q.FirstCommit(); err != nil || first != 10 {
		t.Fatalf("the quarantine table's log starts at %d (%v); want 10, its checkpoint", first, err)
	}
	snap, err := q.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := q.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 13 {
		t.Fatalf("%d quarantined rows, want 13", len(rows))
	}
}

// TestQuarantineMaintenanceManaged: automatic OPTIMIZE of a quarantine table follows its
// dataset's pipelines.autoOptimize.managed, as the dataset's own table does: on by default, its
// 50 small files (pipelines.autoOptimize.minNumFiles' default) are compacted into one; with
// "false" in the dataset's table_properties, they stay 50, every row kept either way.
func TestQuarantineMaintenanceManaged(t *testing.T) {
	t.Parallel()
	for _, managed := range []string{"", "false"} {
		t.Run("managed="+managed, func(t *testing.T) {
			t.Parallel()
			props := ""
			if managed != "" {
				props = "    table_properties:\n      pipelines.autoOptimize.managed: \"" + managed + "\"\n"
			}
			p := cleanupPipeline(t, quarantineSpec+props)
			q := delta.New(flows.TableDir(p.Storage, "raw"+spec.QuarantineSuffix))
			for i := 1; i <= delta.DefaultAutoOptimizeMinFiles; i++ {
				landEvent(t, p, i, -i, i) // one quarantined row a file
				if _, err := Run(context.Background(), p, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			snap, err := q.Snapshot(-1)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if managed == "false" {
				want = delta.DefaultAutoOptimizeMinFiles
			}
			if len(snap.Files) != want {
				t.Errorf("the quarantine table has %d files, want %d", len(snap.Files), want)
			}
			if rows, err := q.Rows(snap); err != nil || len(rows) != delta.DefaultAutoOptimizeMinFiles {
				t.Errorf("%d quarantined rows (%v), want %d", len(rows), err, delta.DefaultAutoOptimizeMinFiles)
			}
		})
	}
}

// TestQueryReadsQuarantine: a materialized view reads a dataset's quarantine table as a table
// (README "Expectations"), after the dataset's flow wrote it: its rows are those quarantined so
// far, with the _failed_expectations column, and a --refresh of the view alone reads it too.
func TestQueryReadsQuarantine(t *testing.T) {
	t.Parallel()
	p := cleanupPipeline(t, quarantineSpec+`  - name: rejected
    query: SELECT count(*) AS n, min(id) AS low, min(_failed_expectations) AS why FROM raw_quarantine
`)
	want := func(when, rows string) {
		t.Helper()
		tbl := delta.New(flows.TableDir(p.Storage, "rejected"))
		snap, err := tbl.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tbl.Rows(snap)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != rows {
			t.Errorf("%s: rejected = %v, want %s", when, got, rows)
		}
	}
	landLines(t, p, 1, `{"op": "U", "id": 1, "seq": 1}`, `{"op": "U", "id": -2, "seq": 2}`)
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	want("after the first update", `[[1 -2 ["positive"]]]`)
	landLines(t, p, 2, `{"op": "U", "id": -7, "seq": 3}`, `{"op": "U", "id": 3, "seq": 4}`)
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
	want("after the second update", `[[2 -7 ["positive"]]]`)
	landLines(t, p, 3, `{"op": "U", "id": -9, "seq": 5}`)
	if _, err := Run(context.Background(), p, Options{Refresh: []string{"raw"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Options{Refresh: []string{"rejected"}}); err != nil {
		t.Fatal(err)
	}
	want("after --refresh raw, then --refresh rejected", `[[3 -9 ["positive"]]]`)
}
