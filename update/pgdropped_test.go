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

	"github.com/jackc/pgx/v5"

	"tributary/delta"
	"tributary/flows"
	"tributary/internal/pgtest"
)

// TestPostgresDroppedMaintenance: 30 updates, each of whose batch a drop expectation drops an
// update of the same two keys (a 3,000-character note stored out of line), leave the table of
// the dropped changes bounded: with pipelines.autoOptimize.minNumFiles 3, at most 2 data files
// and 4 rows after each update (without the compaction, a file per update). Its automatic
// maintenance is a dataset's: a file no commit names (as a run killed before its commit leaves)
// and older than the retention (7 days) is removed by the VACUUM at a checkpoint; a file as
// old that a commit still names (live, or removed by a compaction less than 7 days ago) is not;
// commits older than the log retention (30 days) go once a checkpoint follows them. Then an
// update that leaves the notes unchanged takes the last dropped change's note: the target
// equals SELECT * FROM the table.
func TestPostgresDroppedMaintenance(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE docs (id INT PRIMARY KEY, v INT, note TEXT);
		ALTER TABLE docs ALTER COLUMN note SET STORAGE EXTERNAL;
		INSERT INTO docs VALUES (1, 1, repeat('a', 3000)), (2, 1, repeat('a', 3000)), (3, 1, repeat('a', 3000))`)
	p := cleanupPipeline(t, fmt.Sprintf(`name: pg_dropped
storage: ./storage
datasets:
  - name: docs_changes
    source:
      format: postgres
      connection: %s
      table: public.docs
      schema: "id INT, v INT, note STRING"
    expectations:
      - {name: v_not_negative, expect: 'v == nil or v >= 0', on_violation: drop}
    table_properties:
      pipelines.autoOptimize.minNumFiles: "3"
  - name: docs
    apply_changes:
      source: docs_changes
      keys: [id]
      sequence_by: _lsn
      except_column_list: [_op, _lsn, _commit_time, _tx_id]
`, srv.URL))
	run := func(when string) {
		t.Helper()
		if _, err := Run(ctx, p, Options{}); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	dropped := delta.New(flows.PostgresDroppedDir(p.Storage, "docs_changes"))
	old := time.Now().Add(-8 * 24 * time.Hour)
	age := func(name string) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(dropped.Dir, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	run("snapshot")
	var orphan, aged string
	for i := 0; i < 30; i++ {
		exec(fmt.Sprintf(`UPDATE docs SET v = -1, note = repeat('%c', 3000) WHERE id IN (1, 2)`, 'b'+i%24))
		run(fmt.Sprintf("update %d", i))
		snap, err := dropped.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := dropped.Rows(snap)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Files) > 2 || len(rows) > 4 {
			t.Fatalf("after update %d the dropped changes are %d files of %d rows, want at most 2 of 4", i, len(snap.Files), len(rows))
		}
		if i == 0 {
			// A data file of a write killed before its commit, and a live one, both older than
			// the retention.
			orphan = "part-00000-00000000-0000-0000-0000-000000000000-c000.snappy.parquet"
			if err := os.WriteFile(filepath.Join(dropped.Dir, orphan), []byte("PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
			age(orphan)
			aged = snap.Files[0].Path
			age(aged)
		}
	}
	if _, err := os.Stat(filepath.Join(dropped.Dir, orphan)); err == nil {
		t.Errorf("the uncommitted file %s, 8 days old, is still in %s", orphan, dropped.Dir)
	}
	snap, err := dropped.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(snap.Files, func(a delta.Add) bool { return a.Path == aged }) {
		t.Fatalf("%s is still live after 30 updates; want it compacted away", aged)
	}
	if _, err := os.Stat(filepath.Join(dropped.Dir, aged)); err != nil {
		t.Errorf("%s, removed by a compaction less than 7 days ago, was deleted: %v", aged, err)
	}
	for _, a := range snap.Files {
		if _, err := os.Stat(filepath.Join(dropped.Dir, a.Path)); err != nil {
			t.Errorf("a live file of the dropped changes is missing: %v", err)
		}
	}

	// Metadata cleanup: the commits aged past the log retention go at the next checkpoint.
	ageLog(t, dropped, -1, 40*24*time.Hour)
	for i := 0; i < 12; i++ {
		exec(fmt.Sprintf(`UPDATE docs SET v = -1, note = repeat('%c', 3000) WHERE id IN (1, 2)`, 'z'-i))
		run(fmt.Sprintf("update %d after the log was aged", i))
	}
	if first, err := dropped.FirstCommit(); err != nil || first == 0 {
		t.Errorf("the dropped changes' log starts at %d (%v); want it cleaned up", first, err)
	}

	exec(`UPDATE docs SET v = 5`) // the notes unchanged: TOASTed, not sent
	run("the update that leaves the notes unchanged")
	tgt := delta.New(flows.TableDir(p.Storage, "docs"))
	tsnap, err := tgt.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tgt.Rows(tsnap)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v|%v|%.1s%d", r[0], r[1], r[2], len(r[2].(string))))
	}
	slices.Sort(got)
	var want []string
	res, err := conn.Query(ctx, `SELECT id, v, left(note, 1) || length(note) FROM docs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var id, v int32
	var note string
	if _, err := pgx.ForEachRow(res, []any{&id, &v, &note}, func() error {
		want = append(want, fmt.Sprintf("%d|%d|%s", id, v, note))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("docs is %q, want %q (SELECT of the table)", got, want)
	}
}
