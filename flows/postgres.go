package flows

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/expectations"
	"tributary/internal/fault"
	"tributary/schema"
	"tributary/spec"
)

// pgBatchRows is how many change rows a postgres flow gathers (whole transactions) before it
// commits a batch to the bronze table and confirms the slot, how many rows of the initial
// snapshot it writes to a data file at a time (one commit holds them all), and how many rows of
// one transaction it holds before it writes them to data files that the transaction's commit
// names with the rest of its rows (so a transaction of any size takes memory for this many
// rows); TRIBUTARY_PG_BATCH_ROWS overrides it (the crash tests use small batches to kill a run
// between two of them).
var pgBatchRows = func() int {
	if n, err := strconv.Atoi(os.Getenv("TRIBUTARY_PG_BATCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}()

// pgMarkerPrefix is the prefix of the logical message a triggered read emits to know where the
// WAL ended when it started.
const pgMarkerPrefix = "tributary"

// PostgresNames returns the replication slot and publication a postgres source uses: its own, or
// tributary_<pipeline>_<dataset> in lower case (at most 63 characters).
func PostgresNames(p *spec.Pipeline, d *spec.Dataset) (slot, publication string) {
	def := spec.PostgresDefaultName(p.Name, d.Name)
	slot, publication = d.Source.Postgres.Slot, d.Source.Postgres.Publication
	if slot == "" {
		slot = def
	}
	if publication == "" {
		publication = def
	}
	return slot, publication
}

// pgConnectTimeout is how long a postgres source waits for its server to accept a connection
// when the connection URL sets no connect_timeout.
const pgConnectTimeout = 30 * time.Second

// ReadPostgres runs the flow of a `format: postgres` source. The first run creates the
// publication and the logical replication slot (pgoutput) and commits the table's rows as of the
// slot's consistent point (`_op` r); every run then streams the transactions committed since
// the last batch, in commit order, up to the WAL position of the run's start, gathered in whole
// transactions into batches of about pgBatchRows rows. Each batch is one Delta commit whose
// txn version is the end LSN of its last transaction; only after that commit is the slot
// confirmed up to it, so a crash re-reads what was not committed and skips what was. A
// transaction of more than pgBatchRows rows is a batch of its own, whose rows are written to
// data files pgBatchRows at a time as they come and committed together at its end; the files of
// one that is not committed are removed (or, after a crash, left unreferenced for VACUUM).
func ReadPostgres(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	m := Metrics{Version: -1}
	p, src := env.Pipeline, d.Source
	pg := src.Postgres
	slot, pub := PostgresNames(p, d)
	table := delta.New(TableDir(p.Storage, d.Name))
	snap, err := table.Snapshot(-1)
	if err != nil {
		return m, err
	}
	appID := AppID(p, d.Name)
	committed, started := snap.AppTxns[appID]

	cfg, err := pgx.ParseConfig(src.Postgres.Connection)
	if err != nil {
		return m, fmt.Errorf("dataset %s: connection: %w", d.Name, err)
	}
	// The text of values (the snapshot's ::text, pgoutput's tuples) follows the session's settings:
	// fixed here, whatever the server, database or role sets, so that pgText reads them all.
	// extra_float_digits above 0 gives a double's shortest exact text; 0, set for a legacy
	// application, would round it to 15 digits.
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["DateStyle"] = "ISO, YMD"
	cfg.RuntimeParams["extra_float_digits"] = "3"
	cfg.RuntimeParams["bytea_output"] = "hex" // a BINARY column's bytea: pgBytea reads either format
	if cfg.ConnectTimeout == 0 {
		// A server that accepts the connection and never answers (stopped, overloaded) fails
		// the flow, to be retried, rather than holding the update for ever; the URL's own
		// connect_timeout stands.
		cfg.ConnectTimeout = pgConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return m, fmt.Errorf("dataset %s: connecting to PostgreSQL: %w%s", d.Name, pgAttempts(err), pgConnectHint(err))
	}
	defer conn.Close(context.Background())
	if err := pgServerVersion(conn.PgConn().ParameterStatus("server_version")); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	qualified := pgx.Identifier{pg.Schema, pg.Table}.Sanitize()
	keys, err := pgPrimaryKey(ctx, conn, qualified, src)
	if err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	tbl, err := newPGTable(src, keys)
	if err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if err := pgReplicaIdentity(ctx, conn, qualified, keys); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if err := pgInheritanceChildren(ctx, conn, qualified); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	now := slotTable{}
	if err := conn.QueryRow(ctx, "SELECT $1::regclass::oid", qualified).Scan(&now.OID); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if now.Columns, err = pgColumns(ctx, conn, qualified); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	owned := pgSlotMarker(p.Storage, slot)
	was := readSlotTable(owned)
	if started {
		// A table dropped and created again has a new OID: publications that take every table
		// (FOR ALL TABLES, or one it was added to again) publish its changes as the old one's,
		// and nothing says that the dropped table's rows are gone.
		if was.OID != 0 && was.OID != now.OID {
			return m, fmt.Errorf("dataset %s: table %s was dropped and created again since its snapshot was taken (its OID was %d, now %d): the dropped table's rows are still in the lake and no change of the stream removes them; run %s to take a new snapshot of the table as it is", d.Name, qualified, was.OID, now.OID, RefreshWithReaders(p, d.Name))
		}
		// A column added since the snapshot (ALTER TABLE ... ADD COLUMN) is not read unless
		// declared: said once a run, as the schema leaves out on purpose the columns it did
		// not declare at the snapshot.
		if was.Columns != nil {
			var added []string
			for _, c := range now.Columns {
				if _, declared := tbl.index[c]; !declared && !slices.Contains(was.Columns, c) {
					added = append(added, c)
				}
			}
			if len(added) > 0 {
				env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
					fmt.Sprintf("table %s has columns added since the source's snapshot that its schema does not declare: %s; their values are not read. To read them, declare them in the source's schema and run %s, which takes a new snapshot (an SCD type 2 target reading it then starts its history again from that snapshot)", qualified, strings.Join(added, ", "), RefreshWithReaders(p, d.Name)),
					map[string]any{"columns": added}, "")
			}
		}
	}
	if err := pgPublication(ctx, conn, pub, qualified, pg, started); err != nil {
		switch {
		case started && errors.Is(err, errPublishedAsPartitions):
			err = fmt.Errorf("%w; the changes streamed so far were not read, so then run %s to take a new snapshot", err, RefreshWithReaders(p, d.Name))
		case errors.Is(err, errNotPublished):
			err = fmt.Errorf("%w, so the table's changes since the last batch were not published and are lost; run %s to take a new snapshot (it publishes the table again)", err, RefreshWithReaders(p, d.Name))
		}
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	var slotExists bool
	var slotFlush *string // what the slot was last told is safe
	if err := conn.QueryRow(ctx, "SELECT count(*) > 0, max(confirmed_flush_lsn)::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&slotExists, &slotFlush); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if started && !slotExists {
		return m, fmt.Errorf("dataset %s: the replication slot %s is gone, so the changes since the last batch are lost; run %s to take a new snapshot", d.Name, slot, RefreshWithReaders(p, d.Name))
	}

	rcfg := cfg.Config.Copy()
	rcfg.RuntimeParams["replication"] = "database"
	repl, err := pgconn.ConnectConfig(ctx, rcfg)
	if err != nil {
		return m, fmt.Errorf("dataset %s: opening a replication connection: %w%s", d.Name, pgAttempts(err), pgReplicationHint(err, rcfg.User))
	}
	defer repl.Close(context.Background())

	w := &pgWriter{env: env, d: d, table: table, snap: snap, appID: appID, tbl: tbl}
	if err := w.openDroppedTable(PostgresDroppedDir(p.Storage, d.Name), !started); err != nil {
		return m, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	// The data files written of a transaction that was not committed: an error stops the run
	// before its commit.
	defer w.discardOpen()
	total := Metrics{Version: -1}
	first := true
	if started && slotExists {
		// A storage that read the slot before its runs left this marker owns it too.
		if err := markSlot(owned); err != nil {
			return m, fmt.Errorf("dataset %s: %w", d.Name, err)
		}
		if was.OID == 0 || was.Columns == nil {
			// Recorded by a run from before the table's OID and columns were: the table as it
			// is now.
			if err := recordSlotTable(owned, now); err != nil {
				return m, fmt.Errorf("dataset %s: %w", d.Name, err)
			}
		}
	}
	if !started {
		// No batch committed yet: a new slot, and the table's rows as of its consistent point.
		if slotExists {
			// Only a slot this storage made (a run that stopped before its snapshot committed,
			// a full refresh) is replaced: one made by a copy of the pipeline with another
			// storage is that copy's, which would go on from the new slot without the changes
			// in between.
			if _, err := os.Stat(owned); err != nil {
				return m, fmt.Errorf("dataset %s: the replication slot %s exists, and this storage (%s) did not make it: a copy of this pipeline with another storage may be reading it, and replacing it would lose that copy's changes; give this source a slot and a publication of its own (`slot:` and `publication:` in its source), or, if the slot is left from a storage that is gone, drop it (SELECT pg_drop_replication_slot('%s')) and run again", d.Name, slot, p.Storage, slot)
			}
			if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot); err != nil {
				return m, fmt.Errorf("dataset %s: dropping the unused slot %s: %w", d.Name, slot, err)
			}
		}
		if err := recordSlotTable(owned, now); err != nil {
			return m, fmt.Errorf("dataset %s: %w", d.Name, err)
		}
		res, err := pglogrepl.CreateReplicationSlot(ctx, repl, slot, "pgoutput", pglogrepl.CreateReplicationSlotOptions{SnapshotAction: "EXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication})
		if err != nil {
			return m, fmt.Errorf("dataset %s: creating the replication slot %s: %w%s", d.Name, slot, err, pgReplicationHint(err, rcfg.User))
		}
		cp, err := pglogrepl.ParseLSN(res.ConsistentPoint)
		if err != nil {
			return m, err
		}
		// The snapshot is written a chunk at a time as it is read, so that a table of any size
		// takes memory for one chunk; its files are committed together, with its LSN.
		// A fail expectation's error counts the violations of the whole snapshot: once a chunk
		// fails, the rest are only checked, and the error gets the total of its rule. The files
		// of a snapshot that is not committed are removed.
		var adds []delta.Add
		var kept int64
		var quality expectations.Quality
		var failed *expectations.FailError
		var checkOnly *expectations.Set // the rules, once a chunk has failed
		ownTimeout := cfg.RuntimeParams["statement_timeout"] != "" || strings.Contains(cfg.RuntimeParams["options"], "statement_timeout")
		err = pgSnapshot(ctx, conn, res.SnapshotName, pub, qualified, tbl, !ownTimeout, func(rows [][]any) error {
			if failed != nil {
				if checkOnly == nil {
					var err error
					if checkOnly, err = expectationSet(d, d.Schema); err != nil {
						return err
					}
				}
				_, q, _ := checkOnly.Check(rows)
				quality.Add(q)
				return nil
			}
			a, n, dropped, q, err := w.write(rows)
			adds, kept = append(adds, a...), kept+n
			quality.Add(q)
			if fe, ok := err.(*expectations.FailError); ok {
				failed = fe
				return nil
			}
			if err != nil {
				return err
			}
			return w.writeDropped(dropped)
		})
		if err != nil || failed != nil {
			// Nothing is committed, so the slot goes too: it would hold the server's WAL until a
			// next run replaces it, and for ever if the pipeline is given up. Best effort, as for
			// the files: the next run drops a slot left behind before it makes its own.
			removeUncommitted(table, adds)
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			pglogrepl.DropReplicationSlot(dctx, repl, slot, pglogrepl.DropReplicationSlotOptions{})
			cancel()
		}
		if err == nil && failed != nil {
			for _, r := range quality.Expectations {
				if r.Name == failed.Expectation {
					failed.Failed = r.FailedRecords
				}
			}
			bm := Metrics{Version: -1}
			bm.Quality.Add(quality)
			total.addBatch(bm, true)
			return total, failed
		}
		if err != nil {
			var ve *pgValueError
			var pe *pgconn.PgError
			switch {
			case errors.As(err, &ve):
				err = fmt.Errorf("%w; declare the column with a type that holds it in the source's schema (STRING keeps PostgreSQL's text) and run again", err)
			case errors.As(err, &pe) && pe.Code == "42501": // insufficient_privilege
				err = fmt.Errorf("%w; run GRANT SELECT ON %s TO the role of the connection", err, qualified)
			case pgLost(err) && ctx.Err() == nil:
				err = fmt.Errorf("%w; the connection to the server was lost (the server stopped, restarted or ended it, or the network failed) while the snapshot was read: nothing of it was kept, so run again once the server is up, which takes the snapshot anew", err)
			}
			return m, fmt.Errorf("dataset %s: reading the initial snapshot: %w", d.Name, err)
		}
		if err := w.commitDropped(); err != nil {
			removeUncommitted(table, adds)
			return m, fmt.Errorf("dataset %s: %w", d.Name, err)
		}
		bm, err := w.commitFiles(ctx, adds, kept, quality, cp, "snapshot")
		total.addBatch(bm, true)
		if err != nil {
			return total, err
		}
		w.maintainDropped()
		first, committed = false, int64(cp)
	}

	var marker pglogrepl.LSN
	if err := conn.QueryRow(ctx, "SELECT pg_logical_emit_message(false, $1, $2)::text", pgMarkerPrefix, slot).Scan(&marker); err != nil {
		return m, fmt.Errorf("dataset %s: marking the end of the WAL: %w", d.Name, err)
	}
	err = pglogrepl.StartReplication(ctx, repl, slot, pglogrepl.LSN(committed), pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + pub + "'", "messages 'true'"},
	})
	if err != nil {
		return m, fmt.Errorf("dataset %s: starting replication from slot %s: %w%s", d.Name, slot, err, pgStreamHint(ctx, err, slot))
	}
	s := &pgStream{repl: repl, tbl: tbl, confirmed: pglogrepl.LSN(committed)}
	if started && slotFlush != nil {
		// The slot may be past the last batch: a run that reached its marker confirmed it.
		if f, err := pglogrepl.ParseLSN(*slotFlush); err == nil && f > s.confirmed {
			s.confirmed = f
		}
	}
	if committed > 0 {
		if err := s.confirm(ctx); err != nil {
			return m, err
		}
	}
	for {
		b, err := s.next(ctx, pglogrepl.LSN(committed), marker)
		if err != nil {
			var ve *pgValueError
			var me *pgMissingColumnError
			switch {
			case errors.As(err, &ve):
				err = fmt.Errorf("%w; declare the column with a type that holds it in the source's schema (STRING keeps PostgreSQL's text) and run %s to read the table again with it", err, RefreshWithReaders(p, d.Name))
			case errors.As(err, &me):
				err = fmt.Errorf("%w; remove the column from the source's schema and run %s to read the table again without it", err, RefreshWithReaders(p, d.Name))
			}
			return total, fmt.Errorf("dataset %s: streaming from slot %s: %w%s", d.Name, slot, err, pgStreamHint(ctx, err, slot))
		}
		switch {
		case b.open:
			// Rows of a transaction that goes on: written now, committed with its end.
			if bm, err := w.writeOpen(ctx, b.rows); err != nil {
				total.addBatch(bm, first)
				return total, err
			}
		case len(b.rows) > 0 || b.closes:
			bm, err := w.commit(ctx, b.rows, b.end, "stream")
			total.addBatch(bm, first)
			first = false
			if err != nil {
				return total, err
			}
			committed = int64(b.end)
		}
		if b.end > s.confirmed {
			s.confirmed = b.end
			if err := s.confirm(ctx); err != nil {
				return total, err
			}
		}
		if b.done {
			// Every transaction committed before the marker has been read, and those with rows
			// of the table are committed: the slot may advance to the marker, so that a table
			// with no changes does not make the server keep the WAL of every other table's.
			if marker > s.confirmed {
				s.confirmed = marker
				if err := s.confirm(ctx); err != nil {
					return total, err
				}
			}
			break
		}
	}
	if first {
		total.Idle = true
	}
	return total, nil
}

// pgSlotMarker returns <storage>/system/postgres_slots/<slot>: the file that says this
// storage made the replication slot (or read it), so that its first run may replace it. A full
// refresh keeps it; a storage without it never drops a slot of that name (another storage's).
// It also records the table's OID and columns as of the source's snapshot (recordSlotTable).
func pgSlotMarker(storage, slot string) string {
	return filepath.Join(PostgresSlotsDir(storage), slot)
}

// PostgresSlotsDir returns <storage>/system/postgres_slots: the folder of the files that name
// the replication slots the storage's postgres sources made or read, one file per slot, named
// after it (pgSlotMarker).
func PostgresSlotsDir(storage string) string {
	return filepath.Join(storage, "system", "postgres_slots")
}

// markSlot writes the marker file path (pgSlotMarker) when it is not there yet, before the
// slot is made: a run killed between the two leaves the marker, and the next run replaces the
// slot it made.
func markSlot(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("recording the replication slot this storage uses: %w", err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return fmt.Errorf("recording the replication slot this storage uses: %w", err)
	}
	return nil
}

// slotTable is what a slot's marker file (pgSlotMarker) records of the source's table as of its
// snapshot: its OID (0: not recorded, a marker from before it was) and its columns, in order
// (nil: not recorded). A later run that finds another OID under the table's name knows it was
// dropped and created again; columns it does not list were added since.
type slotTable struct {
	OID     uint32   `json:"relation_oid"`
	Columns []string `json:"columns,omitempty"`
}

// recordSlotTable writes the marker file path (pgSlotMarker), made if missing, with t.
func recordSlotTable(path string, t slotTable) error {
	b, err := json.Marshal(t)
	if err == nil {
		err = writeFileAtomic(path, append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("recording the replication slot this storage uses: %w", err)
	}
	return nil
}

// readSlotTable returns what the marker file path records (recordSlotTable): zero values when
// it records nothing (an empty marker from before, or none at all).
func readSlotTable(path string) slotTable {
	var t slotTable
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &t) // an empty or older marker records nothing
	}
	return t
}

// pgColumns returns the names of the columns of the table qualified, in order.
func pgColumns(ctx context.Context, conn *pgx.Conn, qualified string) ([]string, error) {
	rows, err := conn.Query(ctx, "SELECT attname::text FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", qualified)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// pgConnectHint returns what to check for a failed connection (err from pgx.ConnectConfig), as
// "; ..." to end its message, or "" when the error says it already: a server not listening, a
// password refused (PostgreSQL error code 28P01), a role that does not exist or may not log in
// or that pg_hba.conf refuses (28000), a database that does not exist (3D000).
func pgConnectHint(err error) string {
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "; no server listens at that host and port: start it, or correct host and port in the source's connection"
	case errors.As(err, &pe) && pe.Code == "28P01":
		return "; correct the user and password in the source's connection (a ${VAR} of the spec keeps the password out of it)"
	case errors.As(err, &pe) && pe.Code == "28000":
		// One code for a role that does not exist, one that may not log in, and pg_hba.conf's
		// refusal; the message (English unless the server's lc_messages says otherwise) tells.
		switch {
		case strings.Contains(pe.Message, "does not exist"):
			return "; correct the user in the source's connection, or create the role (CREATE ROLE ... LOGIN REPLICATION)"
		case strings.Contains(pe.Message, "not permitted to log in"):
			return "; let the role log in (ALTER ROLE ... LOGIN), or connect as another user"
		case strings.Contains(pe.Message, "pg_hba.conf"):
			return "; the server's pg_hba.conf does not let this user connect from here: add a line for it naming the database (a logical replication connection matches such lines, not those of `replication`, which is for physical replication) and reload the server"
		}
		return "; check that the user in the source's connection exists and may log in, and that the server's pg_hba.conf lets it connect from here to the database (a logical replication connection matches lines naming it, not `replication`)"
	case errors.As(err, &pe) && pe.Code == "3D000":
		return "; correct the database name in the source's connection"
	case errors.Is(err, context.DeadlineExceeded) || pgTimeout(err):
		return "; the server did not answer in time (connect_timeout in the connection URL, 30s when it sets none): check that it is up and not stopped or overloaded, and the host and port"
	}
	return ""
}

// tlsRefused is the line pgx's connection error gives the TLS attempt of sslmode=prefer (the
// default) at a server without TLS, before the line of the attempt without it.
const tlsRefused = "tls error: server refused TLS connection"

// attemptsError is a connection error without the lines of its refused TLS attempts: the text of
// an error pgx lists attempts in, one a line (host: reason), the wrapped error unchanged.
type attemptsError struct {
	text string
	err  error
}

func (e *attemptsError) Error() string { return e.text }
func (e *attemptsError) Unwrap() error { return e.err }

// pgAttempts returns err (from pgx.ConnectConfig or pgconn.ConnectConfig) without the lines that
// say a TLS attempt was refused when a line of another attempt follows them: with sslmode unset,
// every failure at a server without TLS otherwise starts with that line, which is not the cause
// (the run summary shows the first line after the colon). An error without such a line is
// returned as it is.
func pgAttempts(err error) error {
	lines := strings.Split(err.Error(), "\n")
	kept := lines[:0:0]
	for i, l := range lines {
		if strings.HasSuffix(l, tlsRefused) && i+1 < len(lines) && !strings.HasSuffix(lines[i+1], tlsRefused) {
			continue
		}
		kept = append(kept, l)
	}
	if len(kept) == len(lines) {
		return err
	}
	return &attemptsError{text: strings.Join(kept, "\n"), err: err}
}

// pgTimeout reports whether err is a network timeout.
func pgTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// pgReplicationHint returns what to do about a failed replication connection or slot creation
// (err), as "; ..." to end its message, or "": a role without the REPLICATION attribute
// (PostgreSQL error code 42501; user is the connection's), a server whose wal_level is not
// logical (55000), no free replication slot (53400) or WAL sender (53300), or what
// pgConnectHint says of a connection refused.
func pgReplicationHint(err error, user string) string {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		return fmt.Sprintf("; logical replication needs a role with the REPLICATION attribute: have a superuser run ALTER ROLE %s REPLICATION, or connect as a role that has it", pgx.Identifier{user}.Sanitize())
	case errors.As(err, &pe) && pe.Code == "55000" && strings.Contains(pe.Message, "wal_level"):
		return "; set wal_level = logical in the server's configuration (ALTER SYSTEM SET wal_level = logical) and restart the server"
	case errors.As(err, &pe) && pe.Code == "53400":
		return "; raise max_replication_slots in the server's configuration and restart it, or drop a slot no longer used (SELECT slot_name, active FROM pg_replication_slots; SELECT pg_drop_replication_slot('...'))"
	case errors.As(err, &pe) && pe.Code == "53300" && strings.Contains(pe.Message, "max_wal_senders"):
		return "; raise max_wal_senders in the server's configuration and restart it, or stop a replication connection no longer used"
	}
	return pgConnectHint(err)
}

// pgStreamHint returns what to do about err of starting or reading the replication stream of
// slot, as "; ..." to end its message, or "": another connection reading the slot (PostgreSQL
// error code 55006), or the connection lost (the server stopped or restarted: 57P01..57P03, or
// the connection closed); none once ctx is done (a stop).
func pgStreamHint(ctx context.Context, err error, slot string) string {
	if ctx.Err() != nil {
		return ""
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "55006":
		return fmt.Sprintf("; another connection reads the slot: a run killed a moment ago (the server lets go of the slot once it sees that connection gone, within wal_sender_timeout), or another copy of this pipeline; run again later, or end that connection (SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '%s')", slot)
	case pgLost(err):
		return "; the connection to the server was lost (the server stopped, restarted or ended it, or the network failed): nothing after the last committed batch was kept, and the slot still holds it, so run again once the server is up"
	}
	return ""
}

// pgLost reports whether err says the connection to the server was lost: the server stopped or
// restarted (error codes 57P01..57P03), or the connection closed or failed.
func pgLost(err error) bool {
	var pe *pgconn.PgError
	var ne net.Error
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "57P") || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &ne)
}

// pgServerVersion checks that the server (its server_version, e.g. "15.8 (Debian 15.8-1)") is
// PostgreSQL 14 or later: a run stops at a logical message, which pgoutput sends from 14 on (its
// messages option).
func pgServerVersion(v string) error {
	v = strings.TrimSpace(v)
	digits := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(v)
	}
	if n, err := strconv.Atoi(v[:digits]); err == nil && n < 14 {
		return fmt.Errorf("the server is PostgreSQL %s, and format postgres needs PostgreSQL 14 or later (pgoutput sends the logical message that marks where a run stops from 14 on); upgrade the server", v)
	}
	return nil
}

// pgTableError is err of looking up the table qualified, with what to check when the table or its
// schema does not exist.
func pgTableError(qualified string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined_table, invalid_schema_name
		cased := ""
		if strings.ToLower(qualified) != qualified {
			cased = "; the name is matched as written, case and all (a table created without quotes has a lower-case name)"
		}
		return fmt.Errorf("table %s: %w; check the source's `table:` (schema.name) and that the connection names the database that has it%s", qualified, err, cased)
	}
	return fmt.Errorf("table %s: %w", qualified, err)
}

// pgPrimaryKey returns the table's primary key columns, after checking that the table exists and
// has every declared column.
func pgPrimaryKey(ctx context.Context, conn *pgx.Conn, qualified string, src *spec.Source) ([]string, error) {
	rows, err := conn.Query(ctx, "SELECT attname, attgenerated <> '' FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", qualified)
	if err != nil {
		return nil, pgTableError(qualified, err)
	}
	var cols []string
	generated := map[string]bool{}
	var name string
	var gen bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &gen}, func() error {
		cols = append(cols, name)
		generated[name] = gen
		return nil
	}); err != nil {
		return nil, pgTableError(qualified, err)
	}
	n := len(src.Schema.Fields) - len(spec.PostgresColumns())
	for _, f := range src.Schema.Fields[:n] {
		gen, ok := generated[f.Name]
		if !ok {
			return nil, fmt.Errorf("table %s has no column %s (it has %s); fix the source's schema", qualified, f.Name, strings.Join(cols, ", "))
		}
		if gen {
			return nil, fmt.Errorf("column %s of table %s is generated, and logical replication does not send generated columns (its changes would leave it NULL); remove it from the source's schema and compute it downstream", f.Name, qualified)
		}
	}
	rows, err = conn.Query(ctx, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, qualified)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("table %s has no primary key; add one (changes are matched by key)", qualified)
	}
	return keys, nil
}

// errPublishedAsPartitions is the error of an existing publication that publishes a partitioned
// table's changes under the names of its partitions, which the stream's reader does not match.
var errPublishedAsPartitions = errors.New("publish_via_partition_root is off")

// pgReplicaIdentity checks that the table's replica identity makes its deletes and key changes
// carry the primary key: DEFAULT (the primary key, when not DEFERRABLE), FULL (the whole old
// row), or an index that holds every primary key column. Without one (NOTHING, or DEFAULT of a
// deferrable key), PostgreSQL refuses the table's UPDATEs and DELETEs once a publication
// publishes them, so the check runs before the publication is made.
func pgReplicaIdentity(ctx context.Context, conn *pgx.Conn, qualified string, keys []string) error {
	var ident string
	if err := conn.QueryRow(ctx, "SELECT relreplident::text FROM pg_class WHERE oid = $1::regclass", qualified).Scan(&ident); err != nil {
		return fmt.Errorf("table %s: reading its replica identity: %w", qualified, err)
	}
	switch ident {
	case "n":
		return fmt.Errorf("table %s has REPLICA IDENTITY NOTHING: its deletes would carry no key, and once published PostgreSQL refuses its UPDATEs and DELETEs; run ALTER TABLE %s REPLICA IDENTITY DEFAULT (or FULL)", qualified, qualified)
	case "d":
		// DEFAULT is the primary key, but PostgreSQL uses only one that is not DEFERRABLE: with a
		// deferrable one the table has no replica identity, as under NOTHING.
		var immediate bool
		if err := conn.QueryRow(ctx, "SELECT bool_and(indimmediate) FROM pg_index WHERE indrelid = $1::regclass AND indisprimary", qualified).Scan(&immediate); err != nil {
			return fmt.Errorf("table %s: reading its primary key: %w", qualified, err)
		}
		if !immediate {
			return fmt.Errorf("table %s has a DEFERRABLE primary key, which PostgreSQL does not use as its replica identity (DEFAULT): its deletes would carry no key, and once published PostgreSQL refuses its UPDATEs and DELETEs; run ALTER TABLE %s REPLICA IDENTITY FULL (or make the key NOT DEFERRABLE)", qualified, qualified)
		}
	case "i":
		var index string
		var cols []string
		err := conn.QueryRow(ctx, `SELECT i.indexrelid::regclass::text, array_agg(a.attname::text ORDER BY a.attnum) FROM pg_index i
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = $1::regclass AND i.indisreplident GROUP BY i.indexrelid`, qualified).Scan(&index, &cols)
		if err == pgx.ErrNoRows {
			return nil // the index is gone: PostgreSQL falls back to NOTHING, and refuses the changes itself
		}
		if err != nil {
			return fmt.Errorf("table %s: reading its replica identity index: %w", qualified, err)
		}
		for _, k := range keys {
			if !slices.Contains(cols, k) {
				return fmt.Errorf("table %s has REPLICA IDENTITY USING INDEX %s (%s), which does not hold the primary key column %s: its deletes and key changes would carry no key; run ALTER TABLE %s REPLICA IDENTITY DEFAULT (or FULL)", qualified, index, strings.Join(cols, ", "), k, qualified)
			}
		}
	}
	return nil
}

// pgInheritanceChildren refuses a plain table with inheritance children (CREATE TABLE ...
// INHERITS, the partitioning of old): a SELECT of it returns their rows too, but their changes
// are published under their own names, so the snapshot would hold rows whose changes never
// arrive. A partitioned table (relkind p) is not refused: its partitions' changes are published
// under its name (pgPublication).
func pgInheritanceChildren(ctx context.Context, conn *pgx.Conn, qualified string) error {
	var children []string
	err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(i.inhrelid::regclass::text ORDER BY i.inhrelid::regclass::text), '{}')
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent
		WHERE i.inhparent = $1::regclass AND c.relkind = 'r'`, qualified).Scan(&children)
	if err != nil {
		return fmt.Errorf("table %s: reading its inheritance children: %w", qualified, err)
	}
	if len(children) > 0 {
		return fmt.Errorf("table %s has inheritance children (%s): a snapshot of it holds their rows, but their changes are published under their own names and would never arrive; stream each child (and the parent's own rows) as a source of its own, or move the children into a partitioned table", qualified, strings.Join(children, ", "))
	}
	return nil
}

// errNotPublished is the error of a source that has taken its snapshot and finds its table
// outside its publication: re-created (a dropped table leaves its publications), or removed.
var errNotPublished = errors.New("not published")

// pgPublication creates the publication for the table, or adds the table to it. A partitioned
// table's changes must be published under its own name (publish_via_partition_root): a new
// publication is made so, and an existing one that is not fails with errPublishedAsPartitions.
// Once the source has started (taken its snapshot), a publication that is gone or no longer
// has the table fails with errNotPublished: the changes in between were not published.
func pgPublication(ctx context.Context, conn *pgx.Conn, pub, qualified string, pg *spec.PostgresSource, started bool) error {
	var exists, has, partitioned bool
	if err := conn.QueryRow(ctx, "SELECT relkind = 'p' FROM pg_class WHERE oid = $1::regclass", qualified).Scan(&partitioned); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_publication WHERE pubname = $1", pub).Scan(&exists); err != nil {
		return err
	}
	if !exists && started {
		return fmt.Errorf("publication %s is gone (%w)", pub, errNotPublished)
	}
	if !exists {
		made, err := pgCreatePublication(ctx, conn, pub, qualified, partitioned)
		if err != nil || made {
			return err
		}
		// Another source sharing the publication made it meanwhile: add the table to it.
	}
	if partitioned {
		var viaRoot bool
		if err := conn.QueryRow(ctx, "SELECT pubviaroot FROM pg_publication WHERE pubname = $1", pub).Scan(&viaRoot); err != nil {
			return err
		}
		if !viaRoot {
			return fmt.Errorf("publication %s publishes the changes of the partitioned table %s under the names of its partitions (%w); run ALTER PUBLICATION %s SET (publish_via_partition_root = true)", pub, qualified, errPublishedAsPartitions, pgx.Identifier{pub}.Sanitize())
		}
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3", pub, pg.Schema, pg.Table).Scan(&has); err != nil {
		return err
	}
	if !has && started {
		return fmt.Errorf("table %s is not in publication %s any more (%w: re-created, or removed from it)", qualified, pub, errNotPublished)
	}
	if !has {
		if _, err := conn.Exec(ctx, "ALTER PUBLICATION "+pgx.Identifier{pub}.Sanitize()+" ADD TABLE "+qualified); err != nil && !pgDuplicate(err) {
			return fmt.Errorf("adding %s to publication %s: %w", qualified, pub, err)
		}
	}
	return nil
}

// pgCreatePublication creates the publication pub of the table, publishing a partitioned
// table's changes under its own name (publish_via_partition_root), whatever the table: another
// source that shares the publication may stream a partitioned table, and the setting changes
// nothing for a plain one. made is false, with no error, when the publication exists already:
// the sources of a pipeline run in parallel, and those that share a publication may find it
// missing at once. partitioned says whether the table is partitioned, for the hint of a role
// that may not make the publication.
func pgCreatePublication(ctx context.Context, conn *pgx.Conn, pub, qualified string, partitioned bool) (made bool, err error) {
	const with = " WITH (publish_via_partition_root = true)"
	if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+pgx.Identifier{pub}.Sanitize()+" FOR TABLE "+qualified+with); err != nil {
		if pgDuplicate(err) {
			return false, nil
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
			hint := ""
			if partitioned {
				hint = with
			}
			return false, fmt.Errorf("creating publication %s: %w; making it takes CREATE on the database and owning the table, so have the table's owner run CREATE PUBLICATION %s FOR TABLE %s%s, which the source then uses", pub, err, pgx.Identifier{pub}.Sanitize(), qualified, hint)
		}
		return false, fmt.Errorf("creating publication %s: %w", pub, err)
	}
	return true, nil
}

// pgDuplicate reports whether err is PostgreSQL's refusal to make an object that exists
// (duplicate_object, or unique_violation when two sessions make it at once).
func pgDuplicate(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42710" || pe.Code == "23505")
}

// pgSnapshot reads the table's rows in the slot's exported snapshot, as `_op` r rows, and hands
// them to chunk pgBatchRows at a time (the last chunk may hold fewer; an empty table makes
// no call). An error of chunk stops the reading and is returned. With noTimeout, the read is
// not subject to the statement_timeout of the role or database (set for the application's
// queries): it reads the whole table in one statement, which cannot be split (the exported
// snapshot lives as long as it), and a timeout would fail every run; a statement_timeout the
// connection string sets itself is kept. A row filter that publication pub gives the table
// (PostgreSQL 15's FOR TABLE ... WHERE) filters the snapshot too: the stream carries the changes
// of those rows alone (an update that moves a row out of it as a delete), so a snapshot of the
// others would keep rows whose changes never come.
func pgSnapshot(ctx context.Context, conn *pgx.Conn, snapshot, pub, qualified string, tbl *pgTable, noTimeout bool, chunk func(rows [][]any) error) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(snapshot, "'", "''")+"'"); err != nil {
		return err
	}
	if noTimeout {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
			return err
		}
	}
	var cols []string
	for _, f := range tbl.src.Schema.Fields[:tbl.data] {
		cols = append(cols, pgx.Identifier{f.Name}.Sanitize()+"::text")
	}
	query := "SELECT " + strings.Join(cols, ", ") + " FROM " + qualified
	var version int
	if err := tx.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return err
	}
	if version >= 150000 { // row filters came with PostgreSQL 15
		var filter *string
		err := tx.QueryRow(ctx, "SELECT rowfilter FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3",
			pub, tbl.src.Postgres.Schema, tbl.src.Postgres.Table).Scan(&filter)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if filter != nil {
			query += " WHERE (" + *filter + ")"
		}
	}
	rs, err := tx.Query(ctx, query, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return err
	}
	defer rs.Close()
	var out [][]any
	text := make([]*string, tbl.data)
	dest := make([]any, tbl.data)
	for i := range text {
		dest[i] = &text[i]
	}
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return err
		}
		row := make([]any, len(tbl.src.Schema.Fields))
		for i, s := range text {
			if s == nil {
				continue
			}
			v, err := tbl.value(i, *s)
			if err != nil {
				return err
			}
			row[i] = v
		}
		out = append(out, tbl.change(row, "r", 0, time.Time{}, 0))
		if len(out) >= pgBatchRows {
			if err := chunk(out); err != nil {
				return err
			}
			out = nil
		}
	}
	if err := rs.Err(); err != nil {
		return err
	}
	if len(out) > 0 {
		return chunk(out)
	}
	return nil
}

// pgStream reads the replication stream, transaction by transaction.
type pgStream struct {
	repl      *pgconn.PgConn
	tbl       *pgTable
	confirmed pglogrepl.LSN // what the slot was told is safe
	lastSent  time.Time

	// The open transaction: its Begin message (nil between transactions), whether an earlier
	// batch committed it (its rows are passed over), its rows not handed out yet, and whether
	// some were handed out already as a chunk (pgBatch.open).
	begin   *pglogrepl.BeginMessage
	skip    bool
	txRows  [][]any
	chunked bool
}

// pgBatch is what pgStream.next hands out: whole transactions to commit as one batch, or a chunk
// of a transaction that goes on.
type pgBatch struct {
	rows [][]any
	// end is the end LSN of the batch's last transaction (the slot's confirmed position when it
	// has none): the txn version of its commit.
	end pglogrepl.LSN
	// open: rows are the next pgBatchRows rows of a transaction whose commit is still to come,
	// to be written to data files and committed with its end.
	open bool
	// closes: rows are the last rows (maybe none) of a transaction whose earlier rows were
	// handed out as open chunks; the batch is that transaction alone, committed even when empty.
	closes bool
	// done: the stream reached the marker.
	done bool
}

// confirm tells the server the slot may advance to s.confirmed.
func (s *pgStream) confirm(ctx context.Context) error {
	s.lastSent = time.Now()
	return pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: s.confirmed})
}

// chunk hands out the open transaction's rows gathered so far, as an open batch.
func (s *pgStream) chunk() pgBatch {
	b := pgBatch{rows: s.txRows, end: s.confirmed, open: true}
	s.txRows, s.chunked = nil, true
	return b
}

// next reads whole transactions until it has at least pgBatchRows rows, or the stream reaches
// the marker (done). Transactions whose commit is before after were committed by an earlier
// batch and are skipped. A transaction that reaches pgBatchRows rows by itself is handed out
// alone, in chunks: first the whole transactions gathered before it (if any), then its rows
// pgBatchRows at a time (open), then, at its commit, its last rows (closes); it is never part
// of a batch with other transactions.
func (s *pgStream) next(ctx context.Context, after, marker pglogrepl.LSN) (pgBatch, error) {
	if s.begin != nil && len(s.txRows) >= pgBatchRows {
		return s.chunk(), nil // the batch before it was handed out last time
	}
	var rows [][]any
	end := s.confirmed
	for {
		if time.Since(s.lastSent) > 5*time.Second {
			if err := s.confirm(ctx); err != nil {
				return pgBatch{}, err
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := s.repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
				continue
			}
			return pgBatch{}, err
		}
		switch msg := raw.(type) {
		case *pgproto3.ErrorResponse:
			return pgBatch{}, pgconn.ErrorResponseToPgError(msg)
		case *pgproto3.CopyData:
			switch msg.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(msg.Data[1:])
				if err != nil {
					return pgBatch{}, err
				}
				if ka.ReplyRequested {
					if err := s.confirm(ctx); err != nil {
						return pgBatch{}, err
					}
				}
			case pglogrepl.XLogDataByteID:
				x, err := pglogrepl.ParseXLogData(msg.Data[1:])
				if err != nil {
					return pgBatch{}, err
				}
				lm, err := pglogrepl.Parse(x.WALData)
				if err != nil {
					return pgBatch{}, err
				}
				switch lm := lm.(type) {
				case *pglogrepl.RelationMessage:
					if lm.Namespace == s.tbl.src.Postgres.Schema && lm.RelationName == s.tbl.src.Postgres.Table {
						s.tbl.relID = lm.RelationID
						s.tbl.relCols = s.tbl.relCols[:0]
						for _, c := range lm.Columns {
							s.tbl.relCols = append(s.tbl.relCols, c.Name)
						}
						if err := s.tbl.checkStreamColumns(); err != nil {
							return pgBatch{}, err
						}
					}
				case *pglogrepl.BeginMessage:
					// FinalLSN is the transaction's commit LSN: one an earlier batch committed
					// is passed over without holding its rows.
					s.begin, s.skip, s.txRows, s.chunked = lm, lm.FinalLSN < after, nil, false
				case *pglogrepl.CommitMessage:
					begin, chunked, txRows := s.begin, s.chunked, s.txRows
					s.begin, s.skip, s.txRows, s.chunked = nil, false, nil, false
					if begin == nil || lm.CommitLSN < after {
						continue
					}
					if chunked {
						return pgBatch{rows: txRows, end: lm.TransactionEndLSN, closes: true}, nil
					}
					rows = append(rows, txRows...)
					end = lm.TransactionEndLSN
					if len(rows) >= pgBatchRows {
						return pgBatch{rows: rows, end: end}, nil
					}
				case *pglogrepl.LogicalDecodingMessage:
					if !lm.Transactional && lm.Prefix == pgMarkerPrefix && lm.LSN >= marker {
						return pgBatch{rows: rows, end: end, done: true}, nil
					}
				default:
					if s.begin == nil || s.skip {
						continue
					}
					r, err := s.tbl.changeRows(lm, x.WALStart, s.begin.CommitTime, s.begin.Xid)
					if err != nil {
						return pgBatch{}, err
					}
					s.txRows = append(s.txRows, r...)
					if len(s.txRows) >= pgBatchRows {
						if len(rows) > 0 {
							// The whole transactions before it are a batch; its rows wait for
							// the next call.
							return pgBatch{rows: rows, end: end}, nil
						}
						return s.chunk(), nil
					}
				}
			}
		default:
			return pgBatch{}, fmt.Errorf("unexpected message %T", raw)
		}
	}
}

// pgWriter commits batches of change rows to the bronze table.
type pgWriter struct {
	env   *Env
	d     *spec.Dataset
	table *delta.Table
	snap  *delta.Snapshot
	appID string
	tbl   *pgTable

	// The open transaction's rows written so far (writeOpen): its data files, newest last, which
	// no commit names yet, how many rows they hold and the expectations' counts of its rows.
	open        []delta.Add
	openKept    int64
	openQuality expectations.Quality
	// openDropped are data files, in the dropped table's folder, of the rows of the batch being
	// written (the open transaction's chunks, the snapshot's) that a drop expectation dropped:
	// the TOAST lookup reads them with the open files, so that a later chunk's unchanged
	// TOASTed value takes the value of an earlier change of the transaction even when that change
	// was dropped, as an earlier change of one batch gives it (fillToast). The batch's commit
	// commits them to the dropped table first; a batch given up removes them.
	openDropped []delta.Add

	// dropped is the Delta table of the rows a drop expectation left out of the bronze table
	// (PostgresDroppedDir; deletes and truncates aside), which the TOAST lookup reads as it reads the
	// bronze table: an unchanged TOASTed value after a dropped change takes that change's value
	// in a later batch as in the same one, and a key whose insert was dropped still has one.
	// compactDropped keeps only the latest row of each key of its newer files once it has
	// pipelines.autoOptimize.minNumFiles of them; the update vacuums it (update/maintain.go).
	// droppedSnap is its latest snapshot, nil while it has no commit. Tests may leave it nil.
	dropped     *delta.Table
	droppedSnap *delta.Snapshot
}

// PostgresDroppedDir returns <storage>/system/postgres_dropped/<dataset>: the Delta table of
// the rows of a postgres source that its drop expectations left out (pgWriter.dropped), which
// the source's flow compacts (pgWriter.compactDropped) and the update's automatic maintenance
// cleans up (metadata cleanup, VACUUM).
func PostgresDroppedDir(storage, dataset string) string {
	return filepath.Join(storage, "system", "postgres_dropped", dataset)
}

// openDroppedTable opens the dropped table in dir; fresh (a new snapshot, whose first batch
// this is) removes what an earlier snapshot's stream dropped, whose LSNs would outrank the new
// snapshot's rows in the TOAST lookup.
func (w *pgWriter) openDroppedTable(dir string, fresh bool) error {
	if fresh {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing the dropped rows of an earlier snapshot: %w", err)
		}
	}
	w.dropped = delta.New(dir)
	snap, err := w.dropped.Snapshot(-1)
	if errors.Is(err, delta.ErrNoTable) {
		return nil
	}
	w.droppedSnap = snap
	return err
}

// droppedMeta is the metadata of the dropped table: the bronze table's columns.
func (w *pgWriter) droppedMeta() delta.Metadata {
	return delta.Metadata{Schema: w.snap.Metadata.Schema}
}

// commitDropped commits openDropped to the dropped table, before the commit of their batch: a
// crash in between leaves rows that the batch, read again, drops again, which the lookup takes
// as the same images.
func (w *pgWriter) commitDropped() error {
	if len(w.openDropped) == 0 || w.dropped == nil {
		return nil
	}
	tx := w.dropped.Begin(w.droppedSnap)
	if w.droppedSnap == nil {
		tx.SetMetadata(w.droppedMeta())
	}
	tx.Add(w.openDropped...)
	v, err := tx.Commit("WRITE", map[string]any{"mode": "Append"})
	if err != nil {
		return fmt.Errorf("recording the rows a drop expectation left out: %w", err)
	}
	w.openDropped = nil // the dropped table's now
	w.droppedSnap, err = w.dropped.Snapshot(v)
	return err
}

// droppedCompaction says what compactDropped did: Version is its commit, -1 when it did nothing;
// it rewrote Files data files of Rows rows into Added files of the Kept rows the TOAST lookup
// may still take.
type droppedCompaction struct {
	Version           int64
	Files, Added      int
	Rows, Kept        int64
	BytesIn, BytesOut int64
}

// compactDropped keeps the dropped table bounded: once it has pipelines.autoOptimize.minNumFiles
// data files (the dataset's table property, default 50; none while pipelines.autoOptimize.managed
// is "false"), it rewrites its newer files (droppedCompactFrom) into files that keep, of each
// key, only its latest row among them. The TOAST lookup (storedRows) takes a key's row of the
// highest _lsn from the bronze and the dropped tables, of equal LSNs the later in file order, and
// never an older one: a dropped row with a later one of its key in the dropped table is never
// taken, and the rows kept are those it takes (of equal LSNs, the later in file order, as the
// lookup does). One commit removes the old files and adds the new ones, so a kill at any point
// leaves either table whole (new files no commit names are VACUUM's, after the retention); the
// old files stay on disk for VACUUM too. Memory holds a key and its LSN per key of the files
// rewritten, and one row group.
func (w *pgWriter) compactDropped() (droppedCompaction, error) {
	res := droppedCompaction{Version: -1}
	if w.dropped == nil || w.droppedSnap == nil || len(w.openDropped) > 0 {
		return res, nil
	}
	var props map[string]string
	if w.d != nil {
		props = w.d.TableProperties
	}
	on, minFiles := delta.Metadata{Configuration: props}.AutoOptimize()
	files := w.droppedSnap.Files
	if !on || len(files) < minFiles {
		return res, nil
	}
	bin := files[droppedCompactFrom(files):]
	meta := w.droppedSnap.Metadata
	type latest struct {
		lsn       int64
		file, row int
	}
	best := map[string]latest{}
	for fi, a := range bin {
		row := 0
		err := w.dropped.FileRowGroupsReused(meta, a, func(group [][]any) error {
			for _, r := range group {
				k := w.tbl.keyText(r)
				lsn, _ := r[w.tbl.data+1].(int64)
				if old, ok := best[k]; !ok || lsn >= old.lsn { // a tie: the later row in file order
					best[k] = latest{lsn: lsn, file: fi, row: row}
				}
				row++
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Files, res.BytesIn = res.Files+1, res.BytesIn+a.Size
		res.Rows += int64(row)
	}
	dw, err := w.dropped.NewDataWriter(meta)
	if err != nil {
		return res, err
	}
	var kept [][]any
	for fi, a := range bin {
		row := 0
		err := w.dropped.FileRowGroupsReused(meta, a, func(group [][]any) error {
			kept = kept[:0]
			for _, r := range group {
				if b := best[w.tbl.keyText(r)]; b.file == fi && b.row == row {
					kept = append(kept, r)
				}
				row++
			}
			return dw.Write(kept)
		})
		if err != nil {
			dw.Abort()
			return res, err
		}
	}
	adds, err := dw.Close()
	if err != nil {
		return res, err
	}
	fault.Point("postgres.dropped-compact.before-commit")
	tx := w.dropped.Begin(w.droppedSnap)
	now := time.Now().UnixMilli()
	for _, a := range bin {
		tx.Remove(w.dropped.RemoveFor(a, now))
	}
	tx.Add(adds...)
	for _, a := range adds {
		res.BytesOut += a.Size
	}
	res.Added, res.Kept = len(adds), int64(len(best))
	tx.SetCommitInfo(nil, map[string]string{
		"numRemovedFiles": strconv.Itoa(res.Files), "numAddedFiles": strconv.Itoa(res.Added),
		"numDeletedRows": strconv.FormatInt(res.Rows-res.Kept, 10), "numOutputRows": strconv.FormatInt(res.Kept, 10),
	})
	v, err := tx.Commit("DELETE", map[string]any{"predicate": []string{"a later dropped change of the same key"}})
	if err != nil {
		removeUncommitted(w.dropped, adds)
		return res, err
	}
	fault.Point("postgres.dropped-compact.after-commit")
	res.Version = v
	w.droppedSnap, err = w.dropped.Snapshot(v)
	return res, err
}

// droppedCompactFrom returns the index of the first of files (the dropped table's, in snapshot
// order) that compactDropped rewrites with all after it: the first whose rows (stats numRecords)
// are at most those of the files after it, so that a large file of earlier compactions is
// rewritten only once as many rows came after it, and the work stays proportional to the rows
// written; 0 when there is none.
func droppedCompactFrom(files []delta.Add) int {
	after := make([]int64, len(files)+1) // after[i]: the rows of files[i:]
	for i := len(files) - 1; i >= 0; i-- {
		n, _ := files[i].NumRecords()
		after[i] = after[i+1] + max(n, 0)
	}
	for i := range files {
		if after[i]-after[i+1] <= after[i+1] {
			return i
		}
	}
	return 0
}

// maintainDropped runs compactDropped after a batch's commit and reports it as an event of the
// dataset: INFO for a compaction, WARN for a failure, which does not fail the flow (the batch is
// committed; the next batch tries again).
func (w *pgWriter) maintainDropped() {
	res, err := w.compactDropped()
	if w.env == nil || w.env.Events == nil {
		return
	}
	name := w.d.Name
	switch {
	case err != nil:
		w.env.Events.Emit(eventlog.Warn, eventlog.MaintenanceProgress, name, name,
			fmt.Sprintf("Compacting the changes a drop expectation left out of %s (%s) failed: %v; the next batch tries again.", name, w.dropped.Dir, err), nil, err.Error())
	case res.Version >= 0:
		w.env.Events.Emit(eventlog.Info, eventlog.MaintenanceProgress, name, name,
			fmt.Sprintf("Compacted the changes a drop expectation left out of %s: %d files of %d rows into %d files of the latest row of each of %d keys (version %d of %s).", name, res.Files, res.Rows, res.Added, res.Kept, res.Version, w.dropped.Dir),
			map[string]any{"maintenance_progress": map[string]any{
				"operation": "OPTIMIZE", "auto": true, "table": w.dropped.Dir, "version": res.Version,
				"num_removed_files": res.Files, "num_added_files": res.Added,
				"num_removed_bytes": res.BytesIn, "num_added_bytes": res.BytesOut,
				"num_removed_rows": res.Rows - res.Kept,
			}}, "")
	}
}

// writeOpen writes rows, the next rows of a transaction whose commit is still to come, to data
// files that commit then names with its last rows (as write does: TOAST values filled, the
// expectations checked, uncommitted). On an error the transaction's files are removed, and the
// metrics hold the expectations' counts of its rows so far (none when ctx is done).
func (w *pgWriter) writeOpen(ctx context.Context, rows [][]any) (Metrics, error) {
	m := Metrics{Version: -1}
	if err := ctx.Err(); err != nil {
		w.discardOpen()
		return m, err // stopped: nothing of the transaction counts
	}
	adds, kept, dropped, q, err := w.write(rows)
	w.open, w.openKept = append(w.open, adds...), w.openKept+kept
	w.openQuality.Add(q)
	if err != nil {
		m.Quality.Add(w.openQuality)
		w.discardOpen()
		return m, err
	}
	if err := w.writeDropped(dropped); err != nil {
		w.discardOpen()
		return m, err
	}
	fault.Point("postgres.after-open-chunk")
	return m, nil
}

// discardOpen removes the data files of the open transaction (writeOpen) and of its dropped
// rows, which no commit names.
func (w *pgWriter) discardOpen() {
	removeUncommitted(w.table, w.open)
	if w.dropped != nil {
		removeUncommitted(w.dropped, w.openDropped)
	}
	w.closeOpen()
}

// closeOpen ends the open transaction's state; its data files are the caller's (committed, or
// removed), those of its dropped rows committed (commitDropped) or removed (discardOpen).
func (w *pgWriter) closeOpen() {
	w.open, w.openKept, w.openQuality, w.openDropped = nil, 0, expectations.Quality{}, nil
}

// writeDropped writes dropped, rows of the batch being written that a drop expectation left out
// of its data files, to data files of openDropped in the dropped table's folder.
func (w *pgWriter) writeDropped(dropped [][]any) error {
	if len(dropped) == 0 || w.dropped == nil {
		return nil
	}
	adds, err := w.dropped.WriteData(w.droppedMeta(), dropped)
	w.openDropped = append(w.openDropped, adds...)
	return err
}

// commit fills unchanged TOASTed values, checks the expectations and commits rows with the
// batch's LSN as the txn version, with the data files of the transaction's earlier rows
// (writeOpen) when its rows came in chunks: the metrics count the transaction once, whole.
func (w *pgWriter) commit(ctx context.Context, rows [][]any, lsn pglogrepl.LSN, kind string) (Metrics, error) {
	m := Metrics{Version: -1}
	if err := ctx.Err(); err != nil {
		w.discardOpen()
		return m, err
	}
	adds, kept, dropped, q, err := w.write(rows)
	q.Add(w.openQuality)
	if err != nil {
		m.Quality.Add(q)
		w.discardOpen()
		return m, err
	}
	if err = w.writeDropped(dropped); err == nil {
		err = w.commitDropped()
	}
	if err != nil {
		removeUncommitted(w.table, adds)
		w.discardOpen()
		return m, err
	}
	adds, kept = append(w.open, adds...), kept+w.openKept
	// From here the files are commitFiles': it removes them when it gives up before the commit.
	w.closeOpen()
	m, err = w.commitFiles(ctx, adds, kept, q, lsn, kind)
	if err == nil {
		w.maintainDropped()
	}
	return m, err
}

// write fills the unchanged TOASTed values of rows, checks the expectations and writes the rows
// kept to new data files, uncommitted; it returns their add actions, how many rows they hold,
// the rows a drop expectation dropped (deletes and truncates left out: the TOAST lookup passes
// over them) and the expectations' counts.
func (w *pgWriter) write(rows [][]any) (adds []delta.Add, kept int64, dropped [][]any, q expectations.Quality, err error) {
	if need := w.tbl.needsLookup(rows); len(need) > 0 {
		stored, err := w.storedRows(need, rows)
		if err != nil {
			return nil, 0, nil, q, err
		}
		if err := w.tbl.fillToast(rows, stored); err != nil {
			return nil, 0, nil, q, fmt.Errorf("dataset %s: %w", w.d.Name, err)
		}
	} else if err := w.tbl.fillToast(rows, map[string][]any{}); err != nil {
		return nil, 0, nil, q, fmt.Errorf("dataset %s: %w", w.d.Name, err)
	}
	set, err := expectationSet(w.d, w.d.Schema)
	if err != nil {
		return nil, 0, nil, q, err
	}
	ok, q, err := set.Check(rows)
	if err != nil {
		return nil, 0, nil, q, err
	}
	if len(ok) < len(rows) {
		isKept := make(map[*any]bool, len(ok))
		for _, r := range ok {
			isKept[&r[0]] = true
		}
		for _, r := range rows {
			if op, _ := r[w.tbl.data].(string); op != "d" && op != "t" && !isKept[&r[0]] {
				dropped = append(dropped, r)
			}
		}
	}
	if len(ok) > 0 {
		if adds, err = w.table.WriteData(w.snap.Metadata, ok); err != nil {
			return nil, 0, nil, q, err
		}
	}
	return adds, int64(len(ok)), dropped, q, nil
}

// commitFiles commits the data files adds (kept rows, which met the expectations with counts q)
// as one batch, with its LSN as the txn version; kind ("snapshot" or "stream") goes to the
// commitInfo.
func (w *pgWriter) commitFiles(ctx context.Context, adds []delta.Add, kept int64, q expectations.Quality, lsn pglogrepl.LSN, kind string) (Metrics, error) {
	m := Metrics{Version: -1}
	if err := ctx.Err(); err != nil {
		removeUncommitted(w.table, adds)
		return m, err // stopped: nothing of the batch counts
	}
	m.Quality.Add(q)
	fault.Point("postgres.before-commit")
	tx := w.table.Begin(w.snap)
	tx.Add(adds...)
	tx.SetAppTxn(w.appID, int64(lsn))
	tx.SetCommitInfo(nil, map[string]string{"numFiles": strconv.Itoa(len(adds)), "numOutputRows": strconv.FormatInt(kept, 10), "endLsn": lsn.String(), "read": kind})
	v, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "queryId": w.appID, "epochId": int64(lsn)})
	if err != nil {
		return m, err
	}
	fault.Point("postgres.after-commit")
	if w.snap, err = w.table.Snapshot(v); err != nil {
		return m, err
	}
	m.Version, m.NumOutputRows = v, kept
	return m, nil
}

// storedRows returns the latest stored row image (by _lsn; snapshot rows first; deletes left
// out) of each key in need, from the bronze table's data files, the dropped table's (rows a drop
// expectation left out) and those written of the open transaction (w.open and w.openDropped,
// newer than any committed file). rows is the batch that needs
// them: it gives the keys' typed values, by which files whose key bounds (stats minValues and
// maxValues) leave a key out are not read. The files that may hold a needed key are read one at a
// time, newest _lsn first (lookupFiles), and the lookup stops once every key has an image newer
// than anything the files left could hold: an update of a row written long ago reads back to
// its file, not the whole table, and memory holds one row group and the images found.
func (w *pgWriter) storedRows(need map[string]bool, rows [][]any) (map[string][]any, error) {
	type found struct {
		row  []any
		lsn  int64
		file int
	}
	at := map[string]found{}
	sets := []lookupSet{{w.table, w.snap.Metadata, w.snap.Files}}
	if w.droppedSnap != nil {
		sets = append(sets, lookupSet{w.dropped, w.droppedSnap.Metadata, w.droppedSnap.Files})
	}
	sets = append(sets, lookupSet{w.table, w.snap.Metadata, w.open})
	if w.dropped != nil {
		sets = append(sets, lookupSet{w.dropped, w.droppedMeta(), w.openDropped})
	}
	files, keys := lookupFiles(sets, w.tbl, need, rows)
	var keySet map[any]bool // the needed keys' values, to pass over other rows without keyText
	if keys != nil {
		keySet = make(map[any]bool, len(keys))
		for _, k := range keys {
			keySet[k] = true
		}
	}
	for _, f := range files {
		if len(at) == len(need) {
			done := true
			for _, x := range at {
				if x.lsn <= f.maxLSN {
					done = false
					break
				}
			}
			if done {
				break
			}
		}
		err := f.set.table.FileRowGroupsReused(f.set.meta, f.add, func(group [][]any) error {
			for _, r := range group {
				if keySet != nil && !keySet[r[w.tbl.keyIdx[0]]] {
					continue
				}
				k := w.tbl.keyText(r)
				if !need[k] {
					continue
				}
				if op, _ := r[w.tbl.data].(string); op == "d" || op == "t" {
					continue // a delete's image has the key only
				}
				lsn, _ := r[w.tbl.data+1].(int64)
				// The latest image wins; of equal LSNs, the later row in the table's file order.
				if old, ok := at[k]; ok && (old.lsn > lsn || old.lsn == lsn && old.file > f.index) {
					continue
				}
				at[k] = found{row: slices.Clone(r), lsn: lsn, file: f.index}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make(map[string][]any, len(at))
	for k, x := range at {
		out[k] = x.row
	}
	return out, nil
}

// lookupSet is data files storedRows may read, of one table (the bronze table, or the dropped
// table of the rows a drop expectation left out), with the metadata to read them by.
type lookupSet struct {
	table *delta.Table
	meta  delta.Metadata
	adds  []delta.Add
}

// lookupFile is a data file storedRows reads: its add action and set, its index in the file
// order (the sets' files, in order: the committed ones, then the uncommitted ones) and the
// highest _lsn its stats give (math.MaxInt64 when they give none).
type lookupFile struct {
	add    delta.Add
	set    *lookupSet
	index  int
	maxLSN int64
}

// lookupFiles returns the data files of sets (in this order) that may hold a row of a key in
// need, in the order storedRows reads them:
// highest _lsn bound first (stats maxValues), then later in the table's file order first. With
// a one-column key whose values rows gives (need's keys are keyText of those rows' keys), a file
// whose key bounds leave out every needed key is left out; a file without stats is kept, and
// read first. It returns the needed keys' values too (nil
// when it has not them all, or the key is not one column of such a type).
func lookupFiles(sets []lookupSet, tbl *pgTable, need map[string]bool, rows [][]any) ([]lookupFile, []any) {
	lsnCol := tbl.src.Schema.Fields[tbl.data+1]
	statCols := schema.Schema{Fields: []schema.Field{lsnCol}}
	// The typed values of the needed keys, when the key is one column of a type whose stats
	// bounds hold every value (not a TIMESTAMP: its max is cut to milliseconds).
	var keys []any
	if len(tbl.keyIdx) == 1 {
		kf := tbl.src.Schema.Fields[tbl.keyIdx[0]]
		switch kf.Type.Kind {
		case schema.Long, schema.Integer, schema.String, schema.DecimalKind, schema.DateKind:
			if kf.Type.IsBinary() {
				break // no bounds: Spark writes none for a binary column, nor do we
			}
			statCols.Fields = append(statCols.Fields, kf)
			seen := map[string]bool{}
			for _, r := range rows {
				k := tbl.keyText(r)
				if need[k] && !seen[k] && r[tbl.keyIdx[0]] != nil {
					seen[k] = true
					keys = append(keys, r[tbl.keyIdx[0]])
				}
			}
			if len(seen) < len(need) {
				keys = nil // a key only its text names: no file is left out
			}
		}
	}
	var out []lookupFile
	i := -1
	for si := range sets {
		set := &sets[si]
		for _, a := range set.adds {
			i++
			if f, ok := lookupCandidate(a, set, i, statCols, keys); ok {
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b lookupFile) int {
		if c := cmp.Compare(b.maxLSN, a.maxLSN); c != 0 {
			return c
		}
		return cmp.Compare(b.index, a.index)
	})
	return out, keys
}

// lookupCandidate returns the lookupFile of a, the data file of set at index i in the file
// order, unless its stats (of statCols: _lsn, then the key column when keys are given) say it
// holds no row, or no key of keys.
func lookupCandidate(a delta.Add, set *lookupSet, i int, statCols schema.Schema, keys []any) (lookupFile, bool) {
	lsnCol := statCols.Fields[0]
	st, err := delta.ParseStats(a.Stats, statCols)
	if err != nil || st.NumRecords < 0 {
		return lookupFile{add: a, set: set, index: i, maxLSN: math.MaxInt64}, true
	}
	if st.NumRecords == 0 {
		return lookupFile{}, false
	}
	if keys != nil {
		name := statCols.Fields[1].Name
		lo, hasLo := st.Min[name]
		hi, hasHi := st.Max[name]
		if hasLo && hasHi {
			inside := false
			for _, k := range keys {
				if schema.Compare(k, lo) >= 0 && schema.Compare(k, hi) <= 0 {
					inside = true
					break
				}
			}
			if !inside {
				return lookupFile{}, false
			}
		}
	}
	maxLSN := int64(math.MaxInt64)
	if v, ok := st.Max[lsnCol.Name].(int64); ok {
		maxLSN = v
	}
	return lookupFile{add: a, set: set, index: i, maxLSN: maxLSN}, true
}

// removeUncommitted removes the data files adds of t that no commit names (a write given up), so
// that they do not wait for VACUUM; one that cannot be removed is left to it.
func removeUncommitted(t *delta.Table, adds []delta.Add) {
	for _, a := range adds {
		rel, err := url.PathUnescape(a.Path)
		if err != nil {
			rel = a.Path
		}
		os.Remove(filepath.Join(t.Dir, filepath.FromSlash(rel)))
	}
}
