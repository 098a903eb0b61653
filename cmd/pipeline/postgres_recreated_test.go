package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tributary/internal/pgtest"
)

// TestPostgresRecreatedTable: a source table dropped and created again under its name (a new
// OID) while its publication still publishes it (FOR ALL TABLES) fails the next run, before it
// reads anything, with the full refresh to run: the dropped table's rows are in the lake and no
// change removes them. The full refresh takes a snapshot of the new table, and the target then
// equals SELECT * FROM it; later changes stream as before.
func TestPostgresRecreatedTable(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE t5 (id INT PRIMARY KEY, v TEXT);
		INSERT INTO t5 VALUES (1, 'old1'), (2, 'old2');
		CREATE PUBLICATION allpub FOR ALL TABLES`)
	tmp := t.TempDir()
	specPath := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(specPath, []byte(`name: pg_t5
storage: ${storage}
datasets:
  - name: t5_changes
    source:
      format: postgres
      connection: ${PGURL}
      table: public.t5
      publication: allpub
      schema: "id INT, v STRING"
  - name: t5
    apply_changes:
      source: t5_changes
      keys: [id]
      sequence_by: _lsn
      apply_as_deletes: _op == "d"
      except_column_list: [_op, _lsn, _commit_time, _tx_id]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{specPath, "--conf", "storage=" + filepath.Join(tmp, "storage"), "--conf", "PGURL=" + srv.URL}
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `UPDATE t5 SET v = 'old1b' WHERE id = 1`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, args, "t5", "id", "v"); strings.Join(got, ",") != "1|old1b,2|old2" {
		t.Fatalf("t5 = %v before the table is re-created", got)
	}
	pgExec(t, conn, `DROP TABLE t5; CREATE TABLE t5 (id INT PRIMARY KEY, v TEXT); INSERT INTO t5 VALUES (3, 'new3')`)
	r := pgRun(t, args)
	if r.code != 1 || !strings.Contains(r.stderr, "table \"public\".\"t5\" was dropped and created again since its snapshot was taken") ||
		!strings.Contains(r.stderr, "--full-refresh t5_changes,t5") {
		t.Fatalf("run after the table was re-created: exit %d\n%s%s\nwant exit 1 naming the re-created table and the full refresh", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, args, "t5", "id", "v"); strings.Join(got, ",") != "1|old1b,2|old2" {
		t.Fatalf("t5 = %v after the refused run; want it as it was", got)
	}
	if r := pgRun(t, args, "--full-refresh", "t5_changes,t5"); r.code != 0 {
		t.Fatalf("full refresh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `INSERT INTO t5 VALUES (4, 'new4'); UPDATE t5 SET v = 'new3b' WHERE id = 3`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("run after the full refresh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := pgTableLines(t, args, "t5", "id", "v")
	want := pgQueryLines(t, conn, "SELECT id, v FROM t5")
	if strings.Join(got, ",") != strings.Join(want, ",") || strings.Join(got, ",") != "3|new3b,4|new4" {
		t.Fatalf("t5 = %v, SELECT * FROM t5 = %v; want both 3|new3b, 4|new4", got, want)
	}
}

// TestPostgresTableUnpublished: a table removed from the source's publication (its OID
// unchanged) fails the next run: the changes made meanwhile were not published, so they are
// lost; the run names the publication and the full refresh to run.
func TestPostgresTableUnpublished(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE notes (id INT PRIMARY KEY, v TEXT); INSERT INTO notes VALUES (1, 'a')`)
	args := pgOneTableSpec(t, srv.URL, "notes", "id INT, v STRING", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `ALTER PUBLICATION tributary_pg_notes_notes_changes DROP TABLE notes; UPDATE notes SET v = 'b'`)
	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code != 1 || !strings.Contains(out, `table "public"."notes" is not in publication tributary_pg_notes_notes_changes any more`) ||
		!strings.Contains(out, "--full-refresh notes_changes,notes") {
		t.Fatalf("exit %d, want the table out of its publication reported, with the full refresh to run:\n%s", r.code, out)
	}
}

// TestPostgresOrphanSlot: a postgres source renamed in the spec leaves the replication slot of
// its old name on the database, holding the server's WAL; each run then names that slot in its
// summary and a WARN event, with the statement that drops it, until it is dropped and its file
// removed. The slot of the renamed source is not named.
func TestPostgresOrphanSlot(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE items (id INT PRIMARY KEY, v TEXT); INSERT INTO items VALUES (1, 'a')`)
	args := pgOneTableSpec(t, srv.URL, "items", "id INT, v STRING", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	text, err := os.ReadFile(args[0])
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.ReplaceAll(string(text), "items_changes", "items_bronze")
	if err := os.WriteFile(args[0], []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	const old, drop = "tributary_pg_items_items_changes", "SELECT pg_drop_replication_slot('tributary_pg_items_items_changes')"
	for range 2 {
		r := pgRun(t, args, "--full-refresh", "items")
		if r.code != 0 || !strings.Contains(r.stdout, "the replication slots "+old+" were made or read by postgres sources that no dataset of pipeline pg_items has any more") ||
			!strings.Contains(r.stdout, drop) || strings.Contains(r.stdout, "tributary_pg_items_items_bronze") {
			t.Fatalf("run after the rename: exit %d\n%s%s\nwant the old slot %s named with its drop", r.code, r.stdout, r.stderr, old)
		}
	}
	if got := pgQueryLines(t, conn, "SELECT slot_name FROM pg_replication_slots ORDER BY 1"); strings.Join(got, ",") != "tributary_pg_items_items_bronze,"+old {
		t.Fatalf("slots on the database: %v", got)
	}
	ev := mustRun(t, append([]string{"events", args[0], "--level", "WARN", "--format", "jsonl"}, args[1:]...)...)
	if !strings.Contains(ev, `orphan_replication_slots`) || !strings.Contains(ev, old) {
		t.Errorf("no WARN event names the slot:\n%s", ev)
	}
	pgExec(t, conn, drop)
	storage := strings.TrimPrefix(args[2], "storage=")
	if err := os.Remove(filepath.Join(storage, "system", "postgres_slots", old)); err != nil {
		t.Fatal(err)
	}
	if r := pgRun(t, args); r.code != 0 || strings.Contains(r.stdout, "replication slots") {
		t.Fatalf("after the slot was dropped: exit %d\n%s%s\nwant no notice", r.code, r.stdout, r.stderr)
	}
}

// TestPostgresAddedColumnWarns: a column added to the source's table after its snapshot, which
// the source's schema does not declare, is not read, and each run says so in a WARN event naming
// it and the full refresh that would read it; a column left out of the schema from the start is
// left out without a word, and the rows stream on.
func TestPostgresAddedColumnWarns(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE acct (id INT PRIMARY KEY, v TEXT, secret TEXT); INSERT INTO acct VALUES (1, 'a', 'x')`)
	args := pgOneTableSpec(t, srv.URL, "acct", "id INT, v STRING", "id")
	if r := pgRun(t, args); r.code != 0 || strings.Contains(r.stdout, "warning") {
		t.Fatalf("first run: exit %d, want no warning\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `INSERT INTO acct VALUES (2, 'b', 'y')`)
	if r := pgRun(t, args); r.code != 0 || strings.Contains(r.stdout, "warning") {
		t.Fatalf("second run: exit %d, want no warning for secret, left out from the start\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `ALTER TABLE acct ADD COLUMN priority INT; INSERT INTO acct VALUES (3, 'c', 'z', 5)`)
	r := pgRun(t, args)
	if r.code != 0 || !strings.Contains(r.stdout, "1 warning") {
		t.Fatalf("run after ADD COLUMN: exit %d\n%s%s\nwant a warning", r.code, r.stdout, r.stderr)
	}
	ev := mustRun(t, append([]string{"events", args[0], "--level", "WARN", "--format", "jsonl"}, args[1:]...)...)
	want := `table \"public\".\"acct\" has columns added since the source's snapshot that its schema does not declare: priority; their values are not read`
	if !strings.Contains(ev, want) || strings.Contains(ev, "secret") || !strings.Contains(ev, "--full-refresh acct_changes,acct") {
		t.Errorf("WARN events:\n%s\nwant one naming priority (not secret) and the full refresh", ev)
	}
	if got := pgTableLines(t, args, "acct", "id", "v"); strings.Join(got, ",") != "1|a,2|b,3|c" {
		t.Errorf("acct = %v, want 1|a, 2|b, 3|c", got)
	}
}
