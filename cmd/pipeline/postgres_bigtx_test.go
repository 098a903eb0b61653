package main

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"tributary/internal/pgtest"
)

// pgBigTxBatch is TRIBUTARY_PG_BATCH_ROWS in the big-transaction tests: the transaction of
// pgBigTx has 259 rows, more than five times as many.
const pgBigTxBatch = 50

// pgBigTx is a PostgreSQL table docs (100 rows, notes of 6,400 characters stored out of line:
// an update that leaves them alone sends them as unchanged TOAST values) whose snapshot a
// pipeline run has taken, then three transactions: a one-row update, the big one (259 rows, see
// newPGBigTx) and another one-row update.
type pgBigTx struct {
	conn *pgx.Conn
	args []string
	// bronze is what PostgreSQL sent of the big transaction, in WAL order, as "op|id|n|md5(note)"
	// lines (a delete's image is its key), from the statements' RETURNING rows.
	bronze []string
	xid    int64 // the big transaction's id (the bronze table's _tx_id)
}

// docsNote is the SQL of a note of 6,400 hex characters, distinct for each id (%s).
const docsNote = `(SELECT string_agg(md5(%s::text || '-' || i), '' ORDER BY i) FROM generate_series(1, 200) i)`

// newPGBigTx sets pgBigTx up; expectation, when not "", is one more expectation of
// docs_changes (a YAML flow mapping).
func newPGBigTx(t *testing.T, expectation string) *pgBigTx {
	t.Helper()
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE docs (id BIGINT PRIMARY KEY, n INT NOT NULL, note TEXT);
		ALTER TABLE docs ALTER COLUMN note SET STORAGE EXTERNAL;
		INSERT INTO docs SELECT g, 0, `+fmt.Sprintf(docsNote, "g")+` FROM generate_series(1, 100) g`)
	tmp := t.TempDir()
	specPath := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(specPath, []byte(`name: pg_bigtx
storage: ${storage}
datasets:
  - name: docs_changes
    source:
      format: postgres
      connection: ${PGURL}
      table: public.docs
      schema: "id BIGINT, n INT, note STRING"
    expectations:
      - {name: small_n, expect: 'n == nil or n < 100', on_violation: warn}
`+map[bool]string{true: "      - " + expectation + "\n"}[expectation != ""]+`  - name: docs
    apply_changes:
      source: docs_changes
      keys: [id]
      sequence_by: _lsn
      apply_as_deletes: _op == "d"
      except_column_list: [_op, _lsn, _commit_time, _tx_id]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &pgBigTx{conn: conn, args: []string{specPath, "--conf", "storage=" + filepath.Join(tmp, "storage"), "--conf", "PGURL=" + srv.URL}}
	if r := b.run(t); r.code != 0 {
		t.Fatalf("the snapshot run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ctx := context.Background()
	pgExec(t, conn, `UPDATE docs SET n = 1 WHERE id = 1`)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT txid_current()`).Scan(&b.xid); err != nil {
		t.Fatal(err)
	}
	returning := func(op, sql string) {
		t.Helper()
		rows, err := tx.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var n *int32
			var note *string
			if err := rows.Scan(&id, &n, &note); err != nil {
				t.Fatal(err)
			}
			if op == "d" {
				b.bronze = append(b.bronze, fmt.Sprintf("d|%d|NULL|NULL", id)) // the key alone (replica identity DEFAULT)
				continue
			}
			b.bronze = append(b.bronze, fmt.Sprintf("%s|%d|%d|%x", op, id, *n, md5.Sum([]byte(*note))))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	const ret = ` RETURNING id, n, note`
	// 120 inserts: rows 1-120 of the transaction, so its first two chunks and 20 rows more.
	returning("c", `INSERT INTO docs SELECT g, 0, `+fmt.Sprintf(docsNote, "g")+` FROM generate_series(101, 220) g`+ret)
	// 71 updates of rows it inserted, notes left alone: their images are in its first chunk
	// (150), its second (151-200) and its rows not written yet (201-220).
	returning("u", `UPDATE docs SET n = n + 1 WHERE id BETWEEN 150 AND 220`+ret)
	// 60 updates of snapshot rows (their images committed before the transaction).
	returning("u", `UPDATE docs SET n = n + 10 WHERE id <= 60`+ret)
	// Keys updated a second time, their first update chunks before.
	returning("u", `UPDATE docs SET n = n + 100 WHERE id IN (5, 160, 210)`+ret)
	// A primary-key change (d of 170, c of 1170 with 170's note), a delete of a snapshot row and
	// of a row the transaction inserted, and an update of the changed key.
	var n int32
	var note string
	if err := tx.QueryRow(ctx, `SELECT n, note FROM docs WHERE id = 170`).Scan(&n, &note); err != nil {
		t.Fatal(err)
	}
	returning("c", `UPDATE docs SET id = 1170 WHERE id = 170`+ret)
	b.bronze = slices.Insert(b.bronze, len(b.bronze)-1, "d|170|NULL|NULL")
	returning("d", `DELETE FROM docs WHERE id IN (7, 180)`+ret)
	returning("u", `UPDATE docs SET n = n + 1 WHERE id = 1170`+ret)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	pgExec(t, conn, `UPDATE docs SET n = n + 1 WHERE id = 2`)
	if len(b.bronze) != 259 {
		t.Fatalf("the big transaction sent %d rows, want 259", len(b.bronze))
	}
	// The statements' notes are the SQL's, so the TOAST fill is checked against known values.
	if want := fmt.Sprintf("u|1170|%d|%x", n+1, md5.Sum([]byte(note))); b.bronze[258] != want {
		t.Fatalf("the last row of the transaction is %s, want %s", b.bronze[258], want)
	}
	return b
}

// run runs the pipeline with TRIBUTARY_PG_BATCH_ROWS pgBigTxBatch and the extra environment env.
func (b *pgBigTx) run(t *testing.T, env ...string) result {
	t.Helper()
	return pipeline(t, append([]string{"TRIBUTARY_PG_BATCH_ROWS=" + strconv.Itoa(pgBigTxBatch)}, env...), append([]string{"run"}, b.args...)...)
}

// bronzeOf returns the bronze rows of transaction xid ordered by _lsn (of a primary-key change's
// two rows at one LSN, the d first), as "op|id|n|md5(note)" lines.
func (b *pgBigTx) bronzeOf(t *testing.T, xid int64) []string {
	t.Helper()
	text := mustRun(t, append([]string{"show", b.args[0], "docs_changes", "--format", "jsonl"}, b.args[1:]...)...)
	type row struct {
		lsn  int64
		line string
	}
	var rows []row
	for _, r := range readJSONL(t, text) {
		if fmt.Sprint(r["_tx_id"]) != strconv.FormatInt(xid, 10) {
			continue
		}
		lsn, err := strconv.ParseInt(fmt.Sprint(r["_lsn"]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		note := "NULL"
		if s, ok := r["note"].(string); ok {
			note = fmt.Sprintf("%x", md5.Sum([]byte(s)))
		}
		n := fmt.Sprint(r["n"])
		if r["n"] == nil {
			n = "NULL"
		}
		rows = append(rows, row{lsn, fmt.Sprintf("%s|%v|%s|%s", r["_op"], r["id"], n, note)})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].lsn != rows[j].lsn {
			return rows[i].lsn < rows[j].lsn
		}
		return rows[i].line[0] == 'd' && rows[j].line[0] != 'd'
	})
	var out []string
	for _, r := range rows {
		out = append(out, r.line)
	}
	return out
}

// check compares the bronze rows of the big transaction with what PostgreSQL sent, and the
// target docs with SELECT * FROM docs.
func (b *pgBigTx) check(t *testing.T, label string) {
	t.Helper()
	if got := b.bronzeOf(t, b.xid); strings.Join(got, "\n") != strings.Join(b.bronze, "\n") {
		t.Fatalf("%s: docs_changes has %d rows of the big transaction, PostgreSQL sent %d; first difference:\n%s", label, len(got), len(b.bronze), firstDiff(got, b.bronze))
	}
	got := pgTableLines(t, b.args, "docs", "id", "n", "note")
	want := pgQueryLines(t, b.conn, "SELECT id, n, note FROM docs")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: docs has %d rows, PostgreSQL %d; first difference:\n%s", label, len(got), len(want), firstDiff(got, want))
	}
}

// pgStreamCommit is a stream commit of a postgres bronze table: its rows, data files and end LSN.
type pgStreamCommit struct {
	rows, files int
	endLsn      string
}

// streamCommits returns the stream commits (commitInfo "read": "stream") of a bronze table, in
// version order, from its log dir, and the data files every commit of the log names.
func streamCommits(t *testing.T, logDir string) ([]pgStreamCommit, map[string]bool) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(logDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []pgStreamCommit
	named := map[string]bool{}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var a struct {
				Add *struct {
					Path string `json:"path"`
				} `json:"add"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			if a.Add != nil {
				named[a.Add.Path] = true
			}
		}
		if !strings.Contains(string(data), `"read":"stream"`) {
			continue
		}
		var c pgStreamCommit
		for _, key := range []string{"numOutputRows", "numFiles", "endLsn"} {
			i := strings.Index(string(data), `"`+key+`":"`)
			if i < 0 {
				t.Fatalf("%s has no %s", name, key)
			}
			v := string(data)[i+len(key)+4:]
			v = v[:strings.IndexByte(v, '"')]
			switch key {
			case "numOutputRows":
				c.rows, _ = strconv.Atoi(v)
			case "numFiles":
				c.files, _ = strconv.Atoi(v)
			default:
				c.endLsn = v
			}
		}
		out = append(out, c)
	}
	return out, named
}

// TestPostgresBigTransaction: a transaction of 259 rows, more than five times
// TRIBUTARY_PG_BATCH_ROWS (50), with unchanged TOASTed notes whose values come from the snapshot,
// from earlier chunks of the same transaction and from its rows not yet written, keys updated
// twice across a chunk boundary, a primary-key change and deletes: the transaction before it is
// committed first, then the big one in one commit of all its rows (one data file per chunk of
// 50, and its last 9 rows), then the one after it; its bronze rows are what PostgreSQL sent, the
// target equals SELECT *, and the run's metrics count each row once.
func TestPostgresBigTransaction(t *testing.T) {
	b := newPGBigTx(t, "")
	if r := b.run(t); r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.check(t, "the run")
	commits, _ := streamCommits(t, filepath.Join(filepath.Dir(b.args[0]), "storage", "tables", "docs_changes", "_delta_log"))
	var shape []string
	for _, c := range commits {
		shape = append(shape, fmt.Sprintf("%d rows in %d files", c.rows, c.files))
	}
	if got, want := strings.Join(shape, ", "), "1 rows in 1 files, 259 rows in 6 files, 1 rows in 1 files"; got != want {
		t.Fatalf("the stream commits hold %s; want %s", got, want)
	}
	// The run's flow_progress of docs_changes: 261 rows, each checked once by small_n (the three
	// updates by 100 fail it).
	evs := readJSONL(t, mustRun(t, append([]string{"events", b.args[0], "--type", "flow_progress", "--format", "jsonl"}, b.args[1:]...)...))
	var got []string
	for _, e := range evs {
		if e["origin"].(map[string]any)["flow_name"] != "docs_changes" {
			continue
		}
		var d struct {
			FlowProgress struct {
				Status  string `json:"status"`
				Metrics struct {
					Out int64 `json:"num_output_rows"`
				} `json:"metrics"`
				DataQuality struct {
					Expectations []struct {
						Name   string `json:"name"`
						Passed int64  `json:"passed_records"`
						Failed int64  `json:"failed_records"`
					} `json:"expectations"`
				} `json:"data_quality"`
			} `json:"flow_progress"`
		}
		if err := json.Unmarshal([]byte(e["details"].(string)), &d); err != nil {
			t.Fatal(err)
		}
		if fp := d.FlowProgress; fp.Status == "COMPLETED" {
			line := fmt.Sprintf("%d rows", fp.Metrics.Out)
			for _, x := range fp.DataQuality.Expectations {
				line += fmt.Sprintf(", %s passed %d failed %d", x.Name, x.Passed, x.Failed)
			}
			got = append(got, line)
		}
	}
	if len(got) != 2 || got[1] != "261 rows, small_n passed 258 failed 3" {
		t.Fatalf("the COMPLETED flow_progress events of docs_changes are %q; want the snapshot's, then \"261 rows, small_n passed 258 failed 3\"", got)
	}
}

// TestPostgresBigTransactionKilled: a run killed after it wrote the first chunk of the big
// transaction to a data file (TRIBUTARY_FAULT=postgres.after-open-chunk) has committed the
// transaction before it and nothing of the big one, whose file no commit names; the next run
// commits the big transaction whole, once, and the one after it: the bronze rows are what
// PostgreSQL sent, none twice, and the target equals SELECT *.
func TestPostgresBigTransactionKilled(t *testing.T) {
	b := newPGBigTx(t, "")
	if r := b.run(t, "TRIBUTARY_FAULT=postgres.after-open-chunk"); r.code != -1 {
		t.Fatalf("the run with TRIBUTARY_FAULT=postgres.after-open-chunk exited %d, want it killed\n%s%s", r.code, r.stdout, r.stderr)
	}
	tableDir := filepath.Join(filepath.Dir(b.args[0]), "storage", "tables", "docs_changes")
	commits, named := streamCommits(t, filepath.Join(tableDir, "_delta_log"))
	if len(commits) != 1 || commits[0].rows != 1 {
		t.Fatalf("the killed run made the stream commits %v, want the one-row transaction before the big one alone", commits)
	}
	if rows := b.bronzeOf(t, b.xid); len(rows) != 0 {
		t.Fatalf("the killed run committed %d rows of the big transaction, want none", len(rows))
	}
	unnamed := unnamedFiles(t, tableDir, named)
	if len(unnamed) != 1 {
		t.Fatalf("the killed run left the data files %v that no commit names, want the first chunk's one", unnamed)
	}
	if r := b.run(t); r.code != 0 {
		t.Fatalf("the run after the kill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.check(t, "after the kill")
	commits, named = streamCommits(t, filepath.Join(tableDir, "_delta_log"))
	var shape []string
	for _, c := range commits {
		shape = append(shape, fmt.Sprintf("%d rows in %d files", c.rows, c.files))
	}
	if got, want := strings.Join(shape, ", "), "1 rows in 1 files, 259 rows in 6 files, 1 rows in 1 files"; got != want {
		t.Fatalf("the stream commits hold %s; want %s", got, want)
	}
	if named[unnamed[0]] {
		t.Fatalf("a commit names %s, the file the killed run wrote", unnamed[0])
	}
}

// unnamedFiles returns the data files of the table in tableDir that no commit names (named).
func unnamedFiles(t *testing.T, tableDir string, named map[string]bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tableDir, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if !named[filepath.Base(f)] {
			out = append(out, filepath.Base(f))
		}
	}
	return out
}

// TestPostgresBigTransactionFails: a fail expectation violated in the third chunk of the big
// transaction (key 150's update, its 121st row) fails the run; the transaction before it stays
// committed, nothing of the big one is, and the data files of its first two chunks are removed.
func TestPostgresBigTransactionFails(t *testing.T) {
	b := newPGBigTx(t, `{name: not_150_updated, expect: 'id != 150 or n == 0', on_violation: fail}`)
	r := b.run(t)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, `expectation "not_150_updated" on dataset "docs_changes" failed (on_violation: fail): 1 row(s) violate`) {
		t.Fatalf("exit %d, want the run failed on the one row that violates not_150_updated:\n%s%s", r.code, r.stdout, r.stderr)
	}
	tableDir := filepath.Join(filepath.Dir(b.args[0]), "storage", "tables", "docs_changes")
	commits, named := streamCommits(t, filepath.Join(tableDir, "_delta_log"))
	if len(commits) != 1 || commits[0].rows != 1 {
		t.Fatalf("the failed run made the stream commits %v, want the one-row transaction before the big one alone", commits)
	}
	if unnamed := unnamedFiles(t, tableDir, named); len(unnamed) != 0 {
		t.Fatalf("the failed run left the data files %v that no commit names, want its chunks' files removed", unnamed)
	}
}

// TestPostgresBigTransactionMemory: the peak resident memory of a `pipeline run` that reads one
// transaction of 20,000 or of 80,000 inserts of 1,000-character notes (19 or 76 MB of values),
// with TRIBUTARY_PG_BATCH_ROWS 2,000: the transaction is written to data files a chunk at a
// time, so the peak does not grow with its size. With TRIBUTARY_PG_BATCH_ROWS above its size
// the run holds it whole, as every transaction was held before, and the peak grows with it.
func TestPostgresBigTransactionMemory(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `CREATE TABLE big (id BIGINT PRIMARY KEY, note TEXT)`)
	tmp := t.TempDir()
	specPath := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(specPath, []byte(`name: pg_bigmem
storage: ${storage}
datasets:
  - name: big_changes
    source:
      format: postgres
      connection: ${PGURL}
      table: public.big
      schema: "id BIGINT, note STRING"
    table_properties:
      pipelines.autoOptimize.managed: "false" # the flow's memory alone, not a compaction's after it
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", specPath, "--conf", "storage=" + filepath.Join(tmp, "storage"), "--conf", "PGURL=" + srv.URL}
	// run returns the run's peak resident memory in MB.
	run := func(batch int) float64 {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "TRIBUTARY_PG_BATCH_ROWS="+strconv.Itoa(batch))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pipeline run with TRIBUTARY_PG_BATCH_ROWS=%d: %v\n%s", batch, err, out)
		}
		return float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // Linux: KB
	}
	run(2_000) // the empty snapshot
	const noteLen, chunk, whole = 1_000, 2_000, 1_000_000
	type size struct{ batch, rows int }
	peak := map[size]float64{}
	next := 1
	for _, s := range []size{{chunk, 20_000}, {chunk, 80_000}, {whole, 20_000}, {whole, 80_000}} {
		pgExec(t, conn, fmt.Sprintf(`INSERT INTO big SELECT g, left(repeat(md5(g::text), 32), %d) FROM generate_series(%d, %d) g`, noteLen, next, next+s.rows-1))
		next += s.rows
		peak[s] = run(s.batch)
		t.Logf("TRIBUTARY_PG_BATCH_ROWS %d: a transaction of %d rows (%d MB of values): peak resident memory %.0f MB", s.batch, s.rows, s.rows*noteLen>>20, peak[s])
	}
	commits, _ := streamCommits(t, filepath.Join(tmp, "storage", "tables", "big_changes", "_delta_log"))
	var shape []string
	for _, c := range commits {
		shape = append(shape, fmt.Sprintf("%d rows in %d files", c.rows, c.files))
	}
	if got, want := strings.Join(shape, ", "), "20000 rows in 10 files, 80000 rows in 40 files, 20000 rows in 1 files, 80000 rows in 1 files"; got != want {
		t.Fatalf("the stream commits hold %s; want %s", got, want)
	}
	small, big, held := peak[size{chunk, 20_000}], peak[size{chunk, 80_000}], peak[size{whole, 80_000}]
	if big > small+20 {
		t.Fatalf("in chunks of %d rows, a transaction of 80,000 rows peaked at %.0f MB, one of 20,000 at %.0f MB: want the 57 MB more of values to add less than 20 MB", chunk, big, small)
	}
	if big*2 > held {
		t.Fatalf("in chunks, a transaction of 80,000 rows peaked at %.0f MB, held whole at %.0f MB: want chunks under half of it", big, held)
	}
}
