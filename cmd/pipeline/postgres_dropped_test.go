package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tributary/internal/pgtest"
)

// TestPostgresDroppedCompactionKilled kills updates with SIGKILL while the postgres source
// compacts the changes its drop expectation left out (before and after the compaction's commit,
// with pipelines.autoOptimize.minNumFiles 2 so that nearly every batch compacts), and checks
// that no dropped change the TOAST lookup still needs is lost: after each round (a dropped change
// of keys 1 and 2 with a new note, then a kept update of key 1 that leaves the note unchanged,
// each run once with the fault and once without) the target holds key 1's latest row and key
// 2's snapshot row (its changes dropped), and after a last update of every key that leaves the
// notes unchanged, it equals SELECT * FROM the table, key 2's note that of its last dropped
// change.
func TestPostgresDroppedCompactionKilled(t *testing.T) {
	for _, point := range []string{"postgres.dropped-compact.before-commit", "postgres.dropped-compact.after-commit"} {
		t.Run(point, func(t *testing.T) {
			srv := pgtest.Start(t)
			conn := srv.Conn(t)
			pgExec(t, conn, `CREATE TABLE docs (id INT PRIMARY KEY, v INT, note TEXT);
				ALTER TABLE docs ALTER COLUMN note SET STORAGE EXTERNAL;
				INSERT INTO docs VALUES (1, 1, repeat('a', 3000)), (2, 1, repeat('a', 3000)), (3, 1, repeat('a', 3000))`)
			tmp := t.TempDir()
			specPath := filepath.Join(tmp, "pipeline.yaml")
			if err := os.WriteFile(specPath, []byte(`name: pg_docs
storage: ${storage}
datasets:
  - name: docs_changes
    source:
      format: postgres
      connection: ${PGURL}
      table: public.docs
      schema: "id INT, v INT, note STRING"
    expectations:
      - {name: v_not_negative, expect: 'v == nil or v >= 0', on_violation: drop}
    table_properties:
      pipelines.autoOptimize.minNumFiles: "2"
  - name: docs
    apply_changes:
      source: docs_changes
      keys: [id]
      sequence_by: _lsn
      except_column_list: [_op, _lsn, _commit_time, _tx_id]
`), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{specPath, "--conf", "storage=" + filepath.Join(tmp, "storage"), "--conf", "PGURL=" + srv.URL}
			killed := 0
			run := func(when string) {
				t.Helper()
				switch r := pipeline(t, []string{"TRIBUTARY_FAULT=" + point}, append([]string{"run"}, args...)...); r.code {
				case -1:
					killed++
				case 0:
				default:
					t.Fatalf("%s, with TRIBUTARY_FAULT=%s: exit %d\n%s%s", when, point, r.code, r.stdout, r.stderr)
				}
				if r := pgRun(t, args); r.code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", when, r.code, r.stdout, r.stderr)
				}
			}
			// check compares docs with the table, but for key 2, whose latest change was dropped
			// until the last update: the target keeps its snapshot row.
			check := func(when string, last bool) {
				t.Helper()
				got := pgTableLines(t, args, "docs", "id", "v", "note")
				want := pgQueryLines(t, conn, "SELECT id, v, note FROM docs")
				if !last {
					want[1] = "2|1|" + strings.Repeat("a", 3000)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("%s: docs differs from SELECT * FROM docs:\n got %.300q\nwant %.300q", when, got, want)
				}
			}
			run("snapshot")
			const rounds = 6
			for i := 0; i < rounds; i++ {
				pgExec(t, conn, fmt.Sprintf(`UPDATE docs SET v = -1, note = repeat('%c', 3000) WHERE id IN (1, 2)`, 'b'+i))
				run(fmt.Sprintf("round %d: the dropped changes", i))
				pgExec(t, conn, fmt.Sprintf(`UPDATE docs SET v = %d WHERE id = 1`, 10+i))
				run(fmt.Sprintf("round %d: the kept change of key 1", i))
				check(fmt.Sprintf("round %d", i), false)
			}
			pgExec(t, conn, `UPDATE docs SET v = 5`)
			run("the update of every key")
			check("at the end", true)
			if killed < rounds/2 {
				t.Fatalf("%d updates were killed at %s, want at least %d", killed, point, rounds/2)
			}

			// pipeline vacuum deletes a file of the dropped changes that no version names once
			// older than the retention, and pipeline optimize leaves that table to the flow.
			dir := filepath.Join(tmp, "storage", "system", "postgres_dropped", "docs_changes")
			orphan := filepath.Join(dir, "part-00000-00000000-0000-0000-0000-000000000000-c000.snappy.parquet")
			if err := os.WriteFile(orphan, []byte("PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-8 * 24 * time.Hour)
			if err := os.Chtimes(orphan, old, old); err != nil {
				t.Fatal(err)
			}
			vacuumArgs := append([]string{"vacuum", specPath, "--dry-run"}, args[1:]...)
			if out := mustRun(t, vacuumArgs...); !strings.Contains(out, "system/postgres_dropped/docs_changes: would delete 1 files") || !strings.Contains(out, filepath.Base(orphan)) {
				t.Fatalf("pipeline vacuum --dry-run does not name the uncommitted file of the dropped changes:\n%s", out)
			}
			mustRun(t, append([]string{"vacuum", specPath}, args[1:]...)...)
			if _, err := os.Stat(orphan); err == nil {
				t.Fatalf("pipeline vacuum left %s", orphan)
			}
			if out := mustRun(t, append([]string{"optimize", specPath}, args[1:]...)...); strings.Contains(out, "postgres_dropped") {
				t.Fatalf("pipeline optimize compacted the dropped changes:\n%s", out)
			}
			check("after vacuum and optimize", true)
		})
	}
}
