package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tributary/internal/pgtest"
)

// pgOneTableSpec is a pipeline that streams one PostgreSQL table (schema cols, primary key
// keys) into <name>_changes and applies it to the SCD type 1 table <name>.
func pgOneTableSpec(t *testing.T, srvURL, name, cols, keys string) []string {
	t.Helper()
	tmp := t.TempDir()
	specPath := filepath.Join(tmp, "pipeline.yaml")
	spec := fmt.Sprintf(`name: pg_%[1]s
storage: ${storage}
datasets:
  - name: %[1]s_changes
    source:
      format: postgres
      connection: ${PGURL}
      table: public.%[1]s
      schema: "%[2]s"
  - name: %[1]s
    apply_changes:
      source: %[1]s_changes
      keys: [%[3]s]
      sequence_by: _lsn
      apply_as_deletes: _op == "d"
      except_column_list: [_op, _lsn, _commit_time, _tx_id]
`, name, cols, keys)
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{specPath, "--conf", "storage=" + filepath.Join(tmp, "storage"), "--conf", "PGURL=" + srvURL}
}

// pgRun runs `pipeline run` with args (spec path first) and extra arguments.
func pgRun(t *testing.T, args []string, extra ...string) result {
	t.Helper()
	return pipeline(t, nil, append(append([]string{"run"}, args...), extra...)...)
}

// pgTableLines returns a dataset of the pipeline as sorted lines of cols joined by "|".
func pgTableLines(t *testing.T, args []string, dataset string, cols ...string) []string {
	t.Helper()
	text := mustRun(t, append([]string{"show", args[0], dataset, "--format", "jsonl"}, args[1:]...)...)
	var out []string
	for _, r := range readJSONL(t, text) {
		var parts []string
		for _, c := range cols {
			parts = append(parts, fmt.Sprint(r[c]))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

// pgQueryLines returns the rows of query as sorted lines of its text columns joined by "|".
func pgQueryLines(t *testing.T, conn *pgx.Conn, query string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		vals, err := r.Values()
		var parts []string
		for _, v := range vals {
			parts = append(parts, fmt.Sprint(v))
		}
		return strings.Join(parts, "|"), err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return lines
}

func pgExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestPostgresReplicaIdentity: a table whose replica identity would make its deletes carry no
// primary key is refused before anything is set up, saying how to fix it. Under NOTHING no
// publication is made, so the application can still update the table (PostgreSQL refuses the
// UPDATEs of a published table without replica identity); USING INDEX of an index without the
// primary key is refused too, and DEFAULT when the primary key is DEFERRABLE (which PostgreSQL
// does not use as identity), until the table is REPLICA IDENTITY FULL. With REPLICA IDENTITY DEFAULT, the same pipeline then runs and
// applies a delete.
func TestPostgresReplicaIdentity(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE accounts (id INT PRIMARY KEY, code TEXT NOT NULL UNIQUE, v INT);
		INSERT INTO accounts VALUES (1, 'a', 1), (2, 'b', 2);
		ALTER TABLE accounts REPLICA IDENTITY NOTHING`)
	args := pgOneTableSpec(t, srv.URL, "accounts", "id INT, code STRING, v INT", "id")

	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `table "public"."accounts" has REPLICA IDENTITY NOTHING`) ||
		!strings.Contains(out, `ALTER TABLE "public"."accounts" REPLICA IDENTITY DEFAULT`) {
		t.Fatalf("exit %d, want the table refused for its REPLICA IDENTITY NOTHING, with the fix:\n%s", r.code, out)
	}
	var pubs int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_publication").Scan(&pubs); err != nil {
		t.Fatal(err)
	}
	if pubs != 0 {
		t.Fatalf("%d publications were made for a table that was refused", pubs)
	}
	pgExec(t, conn, "UPDATE accounts SET v = 10 WHERE id = 1") // the application still can

	pgExec(t, conn, "ALTER TABLE accounts REPLICA IDENTITY USING INDEX accounts_code_key")
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `REPLICA IDENTITY USING INDEX accounts_code_key (code), which does not hold the primary key column id`) {
		t.Fatalf("exit %d, want the table refused for an identity index without its primary key:\n%s", r.code, out)
	}

	// DEFAULT is the primary key only when it is not DEFERRABLE: else there is no identity.
	pgExec(t, conn, `CREATE TABLE seats (id INT, label TEXT, CONSTRAINT seats_pk PRIMARY KEY (id) DEFERRABLE);
		INSERT INTO seats VALUES (1, 'a')`)
	sargs := pgOneTableSpec(t, srv.URL, "seats", "id INT, label STRING", "id")
	r = pgRun(t, sargs)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `table "public"."seats" has a DEFERRABLE primary key, which PostgreSQL does not use as its replica identity (DEFAULT)`) {
		t.Fatalf("exit %d, want the table with a deferrable key refused:\n%s", r.code, out)
	}
	pgExec(t, conn, "UPDATE seats SET label = 'b' WHERE id = 1") // the application still can
	pgExec(t, conn, "ALTER TABLE seats REPLICA IDENTITY FULL")
	if r := pgRun(t, sargs); r.code != 0 {
		t.Fatalf("a deferrable key under REPLICA IDENTITY FULL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	pgExec(t, conn, "ALTER TABLE accounts REPLICA IDENTITY DEFAULT")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("with REPLICA IDENTITY DEFAULT: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, "DELETE FROM accounts WHERE id = 2; UPDATE accounts SET code = 'z' WHERE id = 1")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("after a delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := pgTableLines(t, args, "accounts", "id", "code", "v")
	if want := []string{"1|z|10"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("accounts = %v, want %v (SELECT * FROM accounts)", got, want)
	}
}

// TestPostgresPartitionedTable: a partitioned table is published under its own name
// (publish_via_partition_root), so the changes of every partition, an update that moves a row
// to another partition among them, reach the target, which equals SELECT * after each run. A
// publication made beforehand without that option is refused, naming the ALTER PUBLICATION
// that fixes it.
func TestPostgresPartitionedTable(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE events (id BIGINT, day DATE, v TEXT, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
		CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
		CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
		INSERT INTO events VALUES (1, '2024-05-01', 'a'), (2, '2025-05-01', 'b'), (3, '2024-06-01', 'c')`)
	args := pgOneTableSpec(t, srv.URL, "events", "id BIGINT, day DATE, v STRING", "id, day")
	want := func() []string {
		return pgQueryLines(t, conn, "SELECT id, to_char(day, 'YYYY-MM-DD'), v FROM events")
	}
	check := func(label string) {
		t.Helper()
		if r := pgRun(t, args); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", label, r.code, r.stdout, r.stderr)
		}
		if got, want := pgTableLines(t, args, "events", "id", "day", "v"), want(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: events = %v, want SELECT * FROM events = %v", label, got, want)
		}
	}
	check("snapshot")
	pgExec(t, conn, `INSERT INTO events VALUES (4, '2025-06-01', 'd');
		UPDATE events SET v = 'B' WHERE id = 2;
		UPDATE events SET day = '2025-02-02' WHERE id = 3;
		DELETE FROM events WHERE id = 1`)
	check("stream")
	pgExec(t, conn, `UPDATE events SET v = 'A' WHERE id = 4`)
	check("a second stream run")

	// A publication of the partitions under their own names cannot be read.
	pgExec(t, conn, `CREATE TABLE moves (id BIGINT, day DATE, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
		CREATE TABLE moves_all PARTITION OF moves FOR VALUES FROM ('2000-01-01') TO ('2100-01-01');
		CREATE PUBLICATION tributary_pg_moves_moves_changes FOR TABLE moves`)
	margs := pgOneTableSpec(t, srv.URL, "moves", "id BIGINT, day DATE", "id, day")
	r := pgRun(t, margs)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `run ALTER PUBLICATION "tributary_pg_moves_moves_changes" SET (publish_via_partition_root = true)`) {
		t.Fatalf("exit %d, want the publication of the partitions refused, with the ALTER PUBLICATION to run:\n%s", r.code, out)
	}
}

// TestPostgresValueErrors: a value its declared column type cannot hold ('infinity' in a
// TIMESTAMP) fails the run naming the column, the table and the value, and saying how to go on:
// in the initial snapshot, run again once the schema is fixed (the slot of the snapshot not taken
// is dropped, holding no WAL); in the stream, a full refresh of the dataset and of the tables that
// read it. A slot dropped behind the runner's back asks for the full refresh of both too.
func TestPostgresValueErrors(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE offers (id INT PRIMARY KEY, valid_to TIMESTAMPTZ);
		INSERT INTO offers VALUES (1, '2030-01-01 00:00:00+00'), (2, 'infinity')`)
	args := pgOneTableSpec(t, srv.URL, "offers", "id INT, valid_to TIMESTAMP", "id")
	const bad = `column valid_to of public.offers holds "infinity", which its declared type TIMESTAMP cannot hold; declare the column with a type that holds it in the source's schema (STRING keeps PostgreSQL's text)`
	slots := func() int {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "reading the initial snapshot: "+bad+" and run again") {
		t.Fatalf("exit %d, want the snapshot failed on the value, saying how to go on:\n%s", r.code, out)
	}
	if n := slots(); n != 0 {
		t.Fatalf("the failed snapshot left %d replication slot(s) holding WAL", n)
	}

	pgExec(t, conn, "UPDATE offers SET valid_to = '2031-01-01 00:00:00+00' WHERE id = 2")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("after the fix: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, "INSERT INTO offers VALUES (3, 'infinity')")
	refresh := "--full-refresh offers_changes,offers"
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, bad) || !strings.Contains(out, refresh) {
		t.Fatalf("exit %d, want the stream failed on the value, asking for %s:\n%s", r.code, refresh, out)
	}

	pgExec(t, conn, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots")
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "the replication slot tributary_pg_offers_offers_changes is gone") || !strings.Contains(out, refresh) {
		t.Fatalf("exit %d, want the lost slot reported, asking for %s:\n%s", r.code, refresh, out)
	}
}

// TestPostgresToastAfterDroppedChange: an update that leaves a TOASTed value unchanged takes the
// value of the key's previous change even when a drop expectation of the source dropped that
// change in an earlier batch, as it does within one batch: the target never depends on how the
// changes were split into runs. Before, the lookup found the change before the dropped one (a
// stale note), or, for a key whose insert was dropped, none, failing every run until a full
// refresh. A full refresh forgets the dropped changes of the slot before it: its snapshot has
// the notes of now.
func TestPostgresToastAfterDroppedChange(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE docs (id INT PRIMARY KEY, v INT, note TEXT);
		ALTER TABLE docs ALTER COLUMN note SET STORAGE EXTERNAL;
		INSERT INTO docs VALUES (1, 1, repeat('a', 3000)), (2, 1, repeat('a', 3000)), (3, -1, repeat('c', 3000))`)
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
  - name: docs
    apply_changes:
      source: docs_changes
      keys: [id]
      sequence_by: _lsn
      apply_as_deletes: _op == "d"
      except_column_list: [_op, _lsn, _commit_time, _tx_id]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{specPath, "--conf", "storage=" + filepath.Join(tmp, "storage"), "--conf", "PGURL=" + srv.URL}
	run := func(when string, extra ...string) {
		t.Helper()
		if r := pgRun(t, args, extra...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", when, r.code, r.stdout, r.stderr)
		}
	}
	check := func(when string) {
		t.Helper()
		got := pgTableLines(t, args, "docs", "id", "v", "note")
		want := pgQueryLines(t, conn, "SELECT id, v, note FROM docs")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: docs differs from SELECT * FROM docs:\n got %.200q\nwant %.200q", when, got, want)
		}
	}
	run("snapshot") // key 3's row is dropped
	pgExec(t, conn, `UPDATE docs SET v = -1, note = repeat('b', 3000) WHERE id = 1;
		INSERT INTO docs VALUES (4, -1, repeat('d', 3000))`)
	run("the batch of the dropped changes")
	pgExec(t, conn, `UPDATE docs SET v = -1, note = repeat('b', 3000) WHERE id = 2;
		UPDATE docs SET v = 5 WHERE id IN (1, 2, 3, 4)`)
	run("the batch that leaves the notes unchanged")
	check("after the dropped changes")

	pgExec(t, conn, `UPDATE docs SET v = -1, note = repeat('x', 3000) WHERE id = 1`)
	run("a dropped change before the full refresh")
	pgExec(t, conn, `UPDATE docs SET v = 6, note = repeat('y', 3000) WHERE id = 1`)
	run("the full refresh", "--full-refresh", "docs_changes,docs")
	pgExec(t, conn, `UPDATE docs SET v = 7 WHERE id = 1`)
	run("after the full refresh")
	check("after the full refresh")
}

// TestPostgresRowFilter: a publication of the user's that publishes only some rows of the table
// (FOR TABLE ... WHERE, PostgreSQL 15) streams the changes of those rows alone, an update that
// moves a row out of them as a delete and one that moves a row in as an insert. The snapshot
// takes the same rows, so that the target equals SELECT * FROM the table WHERE the filter; with
// every row in the snapshot, those outside the filter stayed in the target for ever, their
// changes and deletes never published.
func TestPostgresRowFilter(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE tickets (id INT PRIMARY KEY, tenant INT, v TEXT);
		ALTER TABLE tickets REPLICA IDENTITY FULL;
		INSERT INTO tickets VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 1, 'c'), (4, 2, 'd');
		CREATE PUBLICATION tributary_pg_tickets_tickets_changes FOR TABLE tickets WHERE (tenant = 1)`)
	args := pgOneTableSpec(t, srv.URL, "tickets", "id INT, tenant INT, v STRING", "id")
	check := func(when string) {
		t.Helper()
		got := pgTableLines(t, args, "tickets", "id", "tenant", "v")
		want := pgQueryLines(t, conn, "SELECT id, tenant, v FROM tickets WHERE tenant = 1")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: tickets = %v, want %v (SELECT * FROM tickets WHERE tenant = 1)", when, got, want)
		}
	}
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	check("after the snapshot")
	pgExec(t, conn, `UPDATE tickets SET v = 'b2' WHERE id = 2; DELETE FROM tickets WHERE id = 4;
		UPDATE tickets SET tenant = 2 WHERE id = 1; UPDATE tickets SET tenant = 1 WHERE id = 2;
		INSERT INTO tickets VALUES (5, 1, 'e'), (6, 2, 'f')`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("stream: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	check("after the stream")
}

// TestPostgresDecimalNotRounded: a numeric value with more fraction digits than its DECIMAL
// column's scale cannot be held by it, so it fails the run naming column, table and value, as
// 'infinity' in a TIMESTAMP does, in the snapshot and in the stream, rather than landing rounded
// (the target would then differ from the table); trailing zeros past the scale are no digits.
func TestPostgresDecimalNotRounded(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE prices (id INT PRIMARY KEY, p NUMERIC(10,3));
		INSERT INTO prices VALUES (1, 2.5), (2, 1.235)`)
	args := pgOneTableSpec(t, srv.URL, "prices", "id INT, p DECIMAL(10,2)", "id")
	bad := func(v string) string {
		return `column p of public.prices holds "` + v + `", which its declared type DECIMAL(10,2) cannot hold`
	}
	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "reading the initial snapshot: "+bad("1.235")) {
		t.Fatalf("exit %d, want the snapshot failed on 1.235:\n%s", r.code, out)
	}
	pgExec(t, conn, "UPDATE prices SET p = 1.24 WHERE id = 2")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("after the fix: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, "INSERT INTO prices VALUES (3, 7.100); UPDATE prices SET p = 0.005 WHERE id = 1")
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, bad("0.005")) || !strings.Contains(out, "--full-refresh prices_changes,prices") {
		t.Fatalf("exit %d, want the stream failed on 0.005, asking for the full refresh:\n%s", r.code, out)
	}
	if got, want := pgTableLines(t, args, "prices", "id", "p"), []string{"1|2.50", "2|1.24"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("prices = %v, want %v (nothing of the failed batch)", got, want)
	}
}

// TestPostgresFloatDigits: a DOUBLE column holds the exact value of a double precision one, in
// the snapshot and in the stream, even where the database sets extra_float_digits = 0 (as for a
// legacy application), which makes PostgreSQL's text of a double round it to 15 digits.
func TestPostgresFloatDigits(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	conn := srv.Conn(t)
	pgExec(t, conn, `ALTER DATABASE postgres SET extra_float_digits = 0;
		CREATE TABLE readings (id INT PRIMARY KEY, v DOUBLE PRECISION);
		INSERT INTO readings VALUES (1, 0.1::float8 + 0.2::float8), (2, 1e-7::float8 / 3)`)
	args := pgOneTableSpec(t, srv.URL, "readings", "id INT, v DOUBLE", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, "INSERT INTO readings VALUES (3, pi()::float8 * 1e10); UPDATE readings SET v = v * 3 WHERE id = 2")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("stream: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows, err := conn.Query(ctx, "SELECT id, v FROM readings ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	var id int32
	var v float64
	if _, err := pgx.ForEachRow(rows, []any{&id, &v}, func() error {
		want[fmt.Sprint(id)] = v // the binary value, not PostgreSQL's text of it
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := pgTableLines(t, args, "readings", "id", "v")
	if len(got) != len(want) {
		t.Fatalf("readings = %v, want the %d rows of SELECT * FROM readings", got, len(want))
	}
	for _, line := range got {
		k, text, _ := strings.Cut(line, "|")
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f != want[k] {
			t.Errorf("readings id %s: v = %s, want %v (the double PostgreSQL holds)", k, text, strconv.FormatFloat(want[k], 'g', -1, 64))
		}
	}
}

// TestPostgresIdleSlotAdvances: a run reads the stream up to the WAL position of its start, so
// its slot may advance that far even when the table had no change: the server then keeps no WAL
// of other tables' changes for a quiet table (before, the slot stayed at the table's last change
// and held every later WAL segment of the server). The table's changes still all arrive.
func TestPostgresIdleSlotAdvances(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE settings (id INT PRIMARY KEY, v TEXT); INSERT INTO settings VALUES (1, 'a');
		CREATE TABLE busy (id INT PRIMARY KEY, v TEXT)`)
	args := pgOneTableSpec(t, srv.URL, "settings", "id INT, v STRING", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for i := range 3 {
		pgExec(t, conn, fmt.Sprintf("INSERT INTO busy SELECT g, repeat('x', 100) FROM generate_series(%d, %d) g", i*5000+1, i*5000+5000))
		before := wal(t, conn)
		if r := pgRun(t, args); r.code != 0 {
			t.Fatalf("idle run %d: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
		// The run's last feedback reaches the slot as the server's walsender reads it, which
		// on a busy machine may be a moment after the run ended.
		var behind int64
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, confirmed_flush_lsn)::bigint FROM pg_replication_slots
				WHERE slot_name = 'tributary_pg_settings_settings_changes'`, before).Scan(&behind); err != nil {
				t.Fatal(err)
			}
			if behind <= 0 || time.Now().After(deadline) {
				break
			}
		}
		if behind > 0 {
			t.Fatalf("idle run %d: the slot's confirmed position is %d bytes behind the WAL position before the run (of %d rows written to another table)", i, behind, 5000)
		}
	}
	pgExec(t, conn, "UPDATE settings SET v = 'b' WHERE id = 1; INSERT INTO settings VALUES (2, 'c')")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("after changes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, want := pgTableLines(t, args, "settings", "id", "v"), []string{"1|b", "2|c"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("settings = %v, want %v (SELECT * FROM settings)", got, want)
	}
}

// wal returns the server's current WAL position.
func wal(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var lsn string
	if err := conn.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// TestPostgresColumnsNotSent: a declared column that logical replication does not send would be
// NULL in every change after the snapshot, so it is refused: a generated column before anything
// is set up, and one the publication's column list leaves out when the stream shows it, asking
// for the full refresh that reads the table again without it. Nothing NULL reaches the bronze
// table.
func TestPostgresColumnsNotSent(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE lines (id INT PRIMARY KEY, qty INT, price NUMERIC(8,2),
			total NUMERIC(10,2) GENERATED ALWAYS AS (qty * price) STORED);
		INSERT INTO lines (id, qty, price) VALUES (1, 2, 3.50)`)
	args := pgOneTableSpec(t, srv.URL, "lines", "id INT, qty INT, price DECIMAL(8,2), total DECIMAL(10,2)", "id")
	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `column total of table "public"."lines" is generated, and logical replication does not send generated columns`) {
		t.Fatalf("exit %d, want the generated column refused:\n%s", r.code, out)
	}

	pgExec(t, conn, `CREATE TABLE people (id INT PRIMARY KEY, name TEXT, email TEXT);
		INSERT INTO people VALUES (1, 'ann', 'ann@example.com');
		CREATE PUBLICATION tributary_pg_people_people_changes FOR TABLE people (id, name)`)
	args = pgOneTableSpec(t, srv.URL, "people", "id INT, name STRING, email STRING", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, "UPDATE people SET name = 'Ann' WHERE id = 1")
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "the stream sends the columns (id, name) of public.people, not the declared column email") ||
		!strings.Contains(out, "--full-refresh people_changes,people") {
		t.Fatalf("exit %d, want the column the publication leaves out refused, with the full refresh to run:\n%s", r.code, out)
	}
	if got := pgTableLines(t, args, "people_changes", "id", "name", "email", "_op"); strings.Join(got, "\n") != "1|ann|ann@example.com|r" {
		t.Fatalf("people_changes = %v, want the snapshot row alone", got)
	}
}

// TestPostgresSnapshotStatementTimeout: the initial snapshot reads the whole table in one
// statement, so a statement_timeout set for the database's application (here 150ms, on the
// database) would cancel it on every run; the snapshot is not subject to it, and the table
// arrives whole.
func TestPostgresSnapshotStatementTimeout(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE ledger (id INT PRIMARY KEY, v TEXT);
		INSERT INTO ledger SELECT g, repeat(md5(g::text), 16) FROM generate_series(1, 40000) g;
		ALTER DATABASE postgres SET statement_timeout = '150ms'`)
	args := pgOneTableSpec(t, srv.URL, "ledger", "id INT, v STRING", "id")
	// 20 MB of rows, more than the socket buffers hold, in chunks of 500 rows, each written to
	// its own file while the statement waits for the reader: it lasts longer than the timeout.
	r := pipeline(t, []string{"TRIBUTARY_PG_BATCH_ROWS=500"}, append([]string{"run"}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d, want the snapshot read whole despite the database's statement_timeout:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, args, "ledger", "id"); len(got) != 40000 {
		t.Fatalf("ledger has %d rows, want the 40000 of SELECT * FROM ledger", len(got))
	}
}

// TestPostgresSetupErrorHints: the errors a new setup meets say what to do. A table that does not
// exist asks to check `table:` and the database; a replication role that may not make the
// publication (it takes owning the table) is told to have the owner make it, and then reads the
// one the owner made; a role without the REPLICATION attribute is told the ALTER ROLE to run; a
// role that may not read the table is told the GRANT to run.
func TestPostgresSetupErrorHints(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE shop (id INT PRIMARY KEY, v TEXT); INSERT INTO shop VALUES (1, 'a');
		CREATE ROLE cdc LOGIN REPLICATION`)
	args := pgOneTableSpec(t, srv.URL, "nosuch", "id INT", "id")
	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `relation "public.nosuch" does not exist (SQLSTATE 42P01); check the source's `+"`table:`"+` (schema.name) and that the connection names the database that has it`) {
		t.Fatalf("exit %d, want the missing table reported with what to check:\n%s", r.code, out)
	}

	cdcURL := strings.Replace(srv.URL, "postgres://postgres@", "postgres://cdc@", 1)
	args = pgOneTableSpec(t, cdcURL, "shop", "id INT, v STRING", "id")
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `have the table's owner run CREATE PUBLICATION "tributary_pg_shop_shop_changes" FOR TABLE "public"."shop", which the source then uses`) {
		t.Fatalf("exit %d, want the role that may not make the publication told who can:\n%s", r.code, out)
	}
	pgExec(t, conn, `CREATE PUBLICATION tributary_pg_shop_shop_changes FOR TABLE shop;
		CREATE ROLE reader LOGIN; GRANT SELECT ON shop TO reader`)
	readerArgs := pgOneTableSpec(t, strings.Replace(srv.URL, "postgres://postgres@", "postgres://reader@", 1), "shop", "id INT, v STRING", "id")
	r = pgRun(t, readerArgs)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `must be superuser or replication role to start walsender (SQLSTATE 42501); logical replication needs a role with the REPLICATION attribute: have a superuser run ALTER ROLE "reader" REPLICATION`) {
		t.Fatalf("exit %d, want the role without REPLICATION told the ALTER ROLE to run:\n%s", r.code, out)
	}
	r = pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `permission denied for table shop (SQLSTATE 42501); run GRANT SELECT ON "public"."shop" TO the role of the connection`) {
		t.Fatalf("exit %d, want the role that may not read the table told the GRANT:\n%s", r.code, out)
	}
	pgExec(t, conn, `GRANT SELECT ON shop TO cdc`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("with the owner's publication and SELECT granted: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, args, "shop", "id", "v"); strings.Join(got, ",") != "1|a" {
		t.Fatalf("shop = %v, want SELECT * FROM shop = [1|a]", got)
	}
}

// TestPostgresTableRecreated: a table dropped and created again (a restore, a migration) leaves
// its publication, so its changes until the next run are not published, and the old rows are
// never deleted. The run says so (the table's OID is not the one of its snapshot) and asks for
// the full refresh of the dataset and its readers,
// which publishes the table again and makes the target equal SELECT * once more.
func TestPostgresTableRecreated(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE prices (id INT PRIMARY KEY, v TEXT); INSERT INTO prices VALUES (1, 'a'), (2, 'b')`)
	args := pgOneTableSpec(t, srv.URL, "prices", "id INT, v STRING", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `DROP TABLE prices; CREATE TABLE prices (id INT PRIMARY KEY, v TEXT); INSERT INTO prices VALUES (1, 'new')`)
	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `table "public"."prices" was dropped and created again since its snapshot was taken`) ||
		!strings.Contains(out, "--full-refresh prices_changes,prices") {
		t.Fatalf("exit %d, want the re-created table reported, with the full refresh to run:\n%s", r.code, out)
	}
	if r := pgRun(t, args, "--full-refresh", "prices_changes,prices"); r.code != 0 {
		t.Fatalf("full refresh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `INSERT INTO prices VALUES (3, 'c')`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("after the full refresh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, args, "prices", "id", "v"); strings.Join(got, ",") != "1|new,3|c" {
		t.Fatalf("prices = %v, want SELECT * FROM prices = [1|new 3|c]", got)
	}
}

// TestPostgresSlotOfAnotherStorage: a copy of a pipeline with another storage, on the same
// database, finds the replication slot of the first copy under the same default name. It must
// not replace it (the first copy would go on from the new slot, without the changes in between):
// its first run fails, saying what to do, and the first copy still gets every change. A storage
// that made the slot replaces it in a full refresh; a storage started over from nothing is
// refused until the slot left over is dropped.
func TestPostgresSlotOfAnotherStorage(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE notes (id INT PRIMARY KEY, v TEXT); INSERT INTO notes VALUES (1, 'a')`)
	a := pgOneTableSpec(t, srv.URL, "notes", "id INT, v STRING", "id")
	if r := pgRun(t, a); r.code != 0 {
		t.Fatalf("first copy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `INSERT INTO notes VALUES (2, 'b')`)

	b := slices.Clone(a)
	other := filepath.Join(t.TempDir(), "storage")
	b[2] = "storage=" + other
	r := pgRun(t, b)
	slot := "tributary_pg_notes_notes_changes"
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "the replication slot "+slot+" exists, and this storage ("+other+") did not make it") ||
		!strings.Contains(out, "SELECT pg_drop_replication_slot('"+slot+"')") {
		t.Fatalf("second copy: exit %d, want its first run refused, naming the slot and what to do:\n%s", r.code, out)
	}

	pgExec(t, conn, `INSERT INTO notes VALUES (3, 'c')`)
	if r := pgRun(t, a); r.code != 0 {
		t.Fatalf("first copy again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := []string{"1|a", "2|b", "3|c"}
	if got := pgTableLines(t, a, "notes", "id", "v"); !slices.Equal(got, want) {
		t.Fatalf("first copy's notes = %v, want %v: every change, the second copy's try notwithstanding", got, want)
	}

	// The storage that made the slot takes a new snapshot through a new one.
	if r := pgRun(t, a, "--full-refresh-all"); r.code != 0 {
		t.Fatalf("full refresh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, a, "notes", "id", "v"); !slices.Equal(got, want) {
		t.Fatalf("after the full refresh, notes = %v, want %v", got, want)
	}

	// A storage removed and started over does not know the slot: refused until it is dropped.
	if err := os.RemoveAll(strings.TrimPrefix(a[2], "storage=")); err != nil {
		t.Fatal(err)
	}
	if r := pgRun(t, a); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "did not make it") {
		t.Fatalf("a new storage: exit %d, want the left-over slot refused:\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `SELECT pg_drop_replication_slot('`+slot+`')`)
	if r := pgRun(t, a); r.code != 0 {
		t.Fatalf("after dropping the slot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := pgTableLines(t, a, "notes", "id", "v"); !slices.Equal(got, want) {
		t.Fatalf("a new storage's notes = %v, want %v", got, want)
	}
}

// TestPostgresInheritanceChildren: a plain table with inheritance children is refused before
// anything is set up (a snapshot would hold the children's rows, whose changes are published
// under the children's names and never arrive), and nothing is left on the server; each child
// streams as a source of its own.
func TestPostgresInheritanceChildren(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE animals (id INT PRIMARY KEY, name TEXT);
		CREATE TABLE dogs (id INT PRIMARY KEY, name TEXT, breed TEXT) INHERITS (animals);
		INSERT INTO animals VALUES (1, 'cat'); INSERT INTO dogs VALUES (2, 'rex', 'lab')`)
	args := pgOneTableSpec(t, srv.URL, "animals", "id INT, name STRING", "id")
	r := pgRun(t, args)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `table "public"."animals" has inheritance children (dogs)`) {
		t.Fatalf("exit %d, want the table with children refused, naming them:\n%s", r.code, out)
	}
	var slots, pubs int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM pg_replication_slots), (SELECT count(*) FROM pg_publication)`).Scan(&slots, &pubs); err != nil {
		t.Fatal(err)
	}
	if slots != 0 || pubs != 0 {
		t.Fatalf("the refused source left %d slot(s) and %d publication(s)", slots, pubs)
	}
	dogs := pgOneTableSpec(t, srv.URL, "dogs", "id INT, name STRING, breed STRING", "id")
	if r := pgRun(t, dogs); r.code != 0 {
		t.Fatalf("the child as a source: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, want := pgTableLines(t, dogs, "dogs", "id", "name", "breed"), []string{"2|rex|lab"}; !slices.Equal(got, want) {
		t.Fatalf("dogs = %v, want %v", got, want)
	}
}

// TestPostgresMixedCaseTable: a table created with a quoted mixed-case name and columns (as ORMs
// make them: "User", "createdAt") streams under that name; the same name in lower case, which
// does not exist, is refused with a word on case.
func TestPostgresMixedCaseTable(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE "User" (id INT PRIMARY KEY, "displayName" TEXT); INSERT INTO "User" VALUES (1, 'Ann')`)
	args := pgOneTableSpec(t, srv.URL, "User", "id INT, displayName STRING", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgExec(t, conn, `UPDATE "User" SET "displayName" = 'Anne' WHERE id = 1; INSERT INTO "User" VALUES (2, 'Bo')`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("stream: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, want := pgTableLines(t, args, "User", "id", "displayName"), []string{"1|Anne", "2|Bo"}; !slices.Equal(got, want) {
		t.Fatalf("User = %v, want %v", got, want)
	}
	lower := pgOneTableSpec(t, srv.URL, "UserLower", "id INT", "id")
	text, err := os.ReadFile(lower[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lower[0], []byte(strings.Replace(string(text), "table: public.UserLower", "table: public.USER", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pgRun(t, lower)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "matched as written, case and all") {
		t.Fatalf("exit %d, want the missing table reported with a word on case:\n%s", r.code, out)
	}
}

// TestPostgresFullRefreshOfEarlierStorage: a storage whose source read its slot before the
// storage recorded the slots it uses (no system/postgres_slots/<slot>) owns the slot all the
// same: a full refresh replaces it, and takes a new snapshot.
func TestPostgresFullRefreshOfEarlierStorage(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE notes (id INT PRIMARY KEY, v TEXT); INSERT INTO notes VALUES (1, 'a')`)
	a := pgOneTableSpec(t, srv.URL, "notes", "id INT, v STRING", "id")
	if r := pgRun(t, a); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	storage := strings.TrimPrefix(a[2], "storage=")
	if err := os.RemoveAll(filepath.Join(storage, "system", "postgres_slots")); err != nil {
		t.Fatal(err)
	}
	pgExec(t, conn, `INSERT INTO notes VALUES (2, 'b')`)
	if r := pgRun(t, a, "--full-refresh-all"); r.code != 0 {
		t.Fatalf("full refresh of a storage that read the slot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, want := pgTableLines(t, a, "notes", "id", "v"), []string{"1|a", "2|b"}; !slices.Equal(got, want) {
		t.Fatalf("after the full refresh, notes = %v, want %v", got, want)
	}
}
