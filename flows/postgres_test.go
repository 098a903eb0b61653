package flows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tributary/delta"
	"tributary/internal/pgtest"
	"tributary/schema"
	"tributary/spec"
)

// TestPGPublicationShared: the sources of a pipeline run in parallel, so one that shares a
// publication may find it missing and then fail to create it, another source having made it
// meanwhile. That is no error: the table is added to the publication the other made.
func TestPGPublicationShared(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	conn := srv.Conn(t)
	if _, err := conn.Exec(ctx, `CREATE TABLE ta (id INT PRIMARY KEY); CREATE TABLE tb (id INT PRIMARY KEY);
		CREATE PUBLICATION shared FOR TABLE ta`); err != nil {
		t.Fatal(err)
	}
	// tb's source found no publication, and ta's made it before tb's CREATE.
	made, err := pgCreatePublication(ctx, conn, "shared", `"public"."tb"`, false)
	if err != nil || made {
		t.Fatalf("creating a publication another source made: made %v, err %v; want neither", made, err)
	}
	if err := pgPublication(ctx, conn, "shared", `"public"."tb"`, &spec.PostgresSource{Schema: "public", Table: "tb"}, false); err != nil {
		t.Fatal(err)
	}
	tables := publicationTables(t, conn, "shared")
	if len(tables) != 2 || tables[0] != "ta" || tables[1] != "tb" {
		t.Fatalf("publication shared has %v, want [ta tb]", tables)
	}
}

// TestPGStoredRowsMemory: an update that leaves a TOASTed value unchanged takes the value from the
// key's latest row in the bronze table, which holds every change ever read. Looking it up reads
// the table a file at a time and keeps the key's rows alone: the heap grows by far less than the
// table's values (here 80 files of 2,500 rows of 300-byte notes, 60 MB), where loading the whole
// table held them all at once.
func TestPGStoredRowsMemory(t *testing.T) {
	s, err := schema.ParseDDL("id BIGINT, note STRING")
	if err != nil {
		t.Fatal(err)
	}
	s.Fields = append(s.Fields, spec.PostgresColumns()...)
	src := &spec.Source{Schema: s, Postgres: &spec.PostgresSource{Schema: "public", Table: "notes"}}
	tbl, err := newPGTable(src, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	table := delta.New(filepath.Join(t.TempDir(), "notes_changes"))
	meta := delta.Metadata{ID: "notes", Schema: s, Configuration: map[string]string{}}
	const files, perFile = 80, 2_500
	var adds []delta.Add
	for f := range files {
		rows := make([][]any, perFile)
		for i := range rows {
			id := int64(f*perFile + i)
			note := fmt.Sprintf("%d-%s", id, strings.Repeat("n", 290))
			rows[i] = []any{id, note, "r", int64(0), nil, nil}
		}
		rows[0][3] = int64(100 + f) // key f*perFile: a later change of the same key in each file
		rows[0][0] = int64(7)
		rows[0][1] = fmt.Sprintf("note of 7 at lsn %d", 100+f)
		rows[0][2] = "u"
		a, err := table.WriteData(meta, rows)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, a...)
	}
	tx := table.Begin(nil)
	tx.SetMetadata(meta)
	tx.Add(adds...)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	snap, err := table.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	w := &pgWriter{table: table, snap: snap, tbl: tbl}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // the same on any machine
	defer debug.SetGCPercent(debug.SetGCPercent(1)) // the heap close to what is kept, whatever the tests before left live
	// The live heap (runtime/metrics /gc/heap/live:bytes, what the last collection marked), not
	// HeapAlloc: on a busy machine the collector lags and garbage not yet collected would count
	// as kept (a peak of 29 MB once, against 1-4 MB on an idle one).
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(live)
	base := live[0].Value.Uint64()
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	// Key 1's only row is in the first file, older than every file's last change: every file is read.
	got, err := w.storedRows(map[string]bool{tbl.keyText([]any{int64(7)}): true, tbl.keyText([]any{int64(1)}): true}, nil)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if r := got[tbl.keyText([]any{int64(7)})]; r == nil || r[1] != fmt.Sprintf("note of 7 at lsn %d", 100+files-1) {
		t.Fatalf("stored row of key 7 = %v, want its latest change (lsn %d)", r, 100+files-1)
	}
	if r := got[tbl.keyText([]any{int64(1)})]; r == nil || !strings.HasPrefix(r[1].(string), "1-n") {
		t.Fatalf("stored row of key 1 = %v, want its snapshot row", r)
	}
	const values = files * perFile * 300
	runtime.GC() // the live heap at the end of the lookup, in case the polling missed the last cycle
	metrics.Read(live)
	peak = max(peak, live[0].Value.Uint64())
	grew := int64(peak) - int64(base)
	t.Logf("looking up one key grew the heap by %d MB, for %d MB of values", grew>>20, values>>20)
	if grew > values/2 {
		t.Fatalf("looking up one key grew the heap by %d MB, for a table of %d MB of values: want less than half", grew>>20, values>>20)
	}
}

// TestPGConnectHint: a failed connection says what to check: a port no server listens on, a
// database or role that does not exist and a role that may not log in (a real server), a
// password refused (PostgreSQL's 28P01), pg_hba.conf's refusal.
func TestPGConnectHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ctx := context.Background()
	connect := func(url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
		}
		return err
	}
	err = connect("postgres://postgres@" + closed + "/postgres?sslmode=disable&connect_timeout=5")
	if h := pgConnectHint(err); !strings.Contains(h, "no server listens at that host and port") {
		t.Errorf("closed port: hint %q for %v", h, err)
	}
	// A server that accepts the connection and never answers: the connect timeout, with its hint.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	err = connect("postgres://postgres@" + silent.Addr().String() + "/postgres?sslmode=disable&connect_timeout=1")
	if h := pgConnectHint(err); !strings.Contains(h, "the server did not answer in time") {
		t.Errorf("silent server: hint %q for %v", h, err)
	}
	if h := pgConnectHint(fmt.Errorf("x: %w", &pgconn.PgError{Code: "28P01"})); !strings.Contains(h, "correct the user and password") {
		t.Errorf("password refused: hint %q", h)
	}
	if h := pgConnectHint(errors.New("something else")); h != "" {
		t.Errorf("another error: hint %q, want none", h)
	}
	srv := pgtest.Start(t)
	err = connect(strings.Replace(srv.URL, "/postgres?", "/nosuchdb?", 1))
	if h := pgConnectHint(err); !strings.Contains(h, "correct the database name") {
		t.Errorf("missing database: hint %q for %v", h, err)
	}
	// PostgreSQL refuses a role that does not exist, one that may not log in, and one its
	// pg_hba.conf does not let in with one code, 28000: each gets its own hint.
	err = connect(strings.Replace(srv.URL, "postgres://postgres@", "postgres://nosuchrole@", 1))
	if h := pgConnectHint(err); !strings.Contains(h, "correct the user in the source's connection, or create the role") {
		t.Errorf("missing role: hint %q for %v", h, err)
	}
	if _, err := srv.Conn(t).Exec(ctx, "CREATE ROLE nologin"); err != nil {
		t.Fatal(err)
	}
	err = connect(strings.Replace(srv.URL, "postgres://postgres@", "postgres://nologin@", 1))
	if h := pgConnectHint(err); !strings.Contains(h, "let the role log in (ALTER ROLE ... LOGIN)") {
		t.Errorf("role without LOGIN: hint %q for %v", h, err)
	}
	// Without sslmode in the URL, pgx tries TLS first and lists that attempt's refusal before the
	// attempt that tells the cause; pgAttempts drops the refusal and keeps the error's type.
	err = connect(strings.Replace(strings.Replace(srv.URL, "postgres://postgres@", "postgres://nosuchrole@", 1), "sslmode=disable", "application_name=t", 1))
	if !strings.Contains(err.Error(), tlsRefused) {
		t.Fatalf("pgx's error %q has no line of a refused TLS attempt: the case pgAttempts is for did not arise", err)
	}
	got := pgAttempts(err)
	if msg := got.Error(); strings.Contains(msg, "tls error") || !strings.Contains(msg, `role "nosuchrole" does not exist`) {
		t.Errorf("pgAttempts: %q, want the role's error without the TLS attempt", msg)
	}
	if h := pgConnectHint(got); !strings.Contains(h, "correct the user in the source's connection, or create the role") {
		t.Errorf("missing role, TLS attempt dropped: hint %q for %v", h, got)
	}
	// sslmode=require: the refusal is the only attempt, and stays.
	only := errors.New("failed to connect to `user=a database=b`:\n\t127.0.0.1:5432 (127.0.0.1): " + tlsRefused)
	if got := pgAttempts(only); got != only {
		t.Errorf("pgAttempts of a refusal alone: %q, want it unchanged", got)
	}
	hba := &pgconn.PgError{Code: "28000", Message: `no pg_hba.conf entry for host "10.0.0.9", user "cdc", database "shop", no encryption`}
	if h := pgConnectHint(fmt.Errorf("x: %w", hba)); !strings.Contains(h, "pg_hba.conf does not let this user connect from here: add a line for it naming the database") {
		t.Errorf("pg_hba.conf refusal: hint %q", h)
	}
	// pg_hba.conf matches a logical replication connection (replication=database) by its
	// database: a line of `replication` is for physical replication, and would not let it in.
	if h := pgConnectHint(fmt.Errorf("x: %w", &pgconn.PgError{Code: "28000", Message: "password authentication failed"})); strings.Contains(h, "with `replication` too") {
		t.Errorf("28000: hint %q asks for a pg_hba.conf line of `replication`, which logical replication does not use", h)
	}
}

// TestPGReplicationHint: a replication connection or slot the server refuses says what to change:
// the role's REPLICATION attribute, wal_level, max_replication_slots, max_wal_senders; a refused
// connection gets pgConnectHint's hint.
func TestPGReplicationHint(t *testing.T) {
	for _, c := range []struct {
		err  *pgconn.PgError
		want string
	}{
		{&pgconn.PgError{Code: "42501", Message: "must be superuser or replication role to start walsender"}, `have a superuser run ALTER ROLE "cdc" REPLICATION`},
		{&pgconn.PgError{Code: "55000", Message: "logical decoding requires wal_level >= logical"}, "set wal_level = logical in the server's configuration (ALTER SYSTEM SET wal_level = logical) and restart the server"},
		{&pgconn.PgError{Code: "53400", Message: "all replication slots are in use"}, "raise max_replication_slots"},
		{&pgconn.PgError{Code: "53300", Message: "number of requested standby connections exceeds max_wal_senders (currently 10)"}, "raise max_wal_senders"},
		{&pgconn.PgError{Code: "28P01"}, "correct the user and password"},
	} {
		if h := pgReplicationHint(fmt.Errorf("x: %w", c.err), "cdc"); !strings.Contains(h, c.want) {
			t.Errorf("%s %q: hint %q, want it to say %q", c.err.Code, c.err.Message, h, c.want)
		}
	}
	if h := pgReplicationHint(errors.New("something else"), "cdc"); h != "" {
		t.Errorf("another error: hint %q, want none", h)
	}
}

// TestPGStreamHint: a stream that cannot start because another connection reads the slot names
// the query that ends it; one whose connection is lost (the server stopped, restarted or ended
// it) says that nothing after the last batch was lost and to run again. A stop says nothing more.
func TestPGStreamHint(t *testing.T) {
	ctx := context.Background()
	busy := &pgconn.PgError{Code: "55006", Message: `replication slot "s1" is active for PID 42`}
	if h := pgStreamHint(ctx, fmt.Errorf("x: %w", busy), "s1"); !strings.Contains(h, "another connection reads the slot") || !strings.Contains(h, "WHERE slot_name = 's1'") {
		t.Errorf("slot in use: hint %q", h)
	}
	for _, err := range []error{
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		fmt.Errorf("receive message failed: %w", io.ErrUnexpectedEOF),
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
	} {
		if h := pgStreamHint(ctx, fmt.Errorf("x: %w", err), "s1"); !strings.Contains(h, "the connection to the server was lost") || !strings.Contains(h, "run again once the server is up") {
			t.Errorf("%v: hint %q", err, h)
		}
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if h := pgStreamHint(stopped, fmt.Errorf("x: %w", io.ErrUnexpectedEOF), "s1"); h != "" {
		t.Errorf("after a stop: hint %q, want none", h)
	}
	if h := pgStreamHint(ctx, errors.New("something else"), "s1"); h != "" {
		t.Errorf("another error: hint %q, want none", h)
	}
}

// TestPGPublicationSharedWithPartitioned: a plain table's source and a partitioned table's that
// share a publication run in parallel, and either may make it. Made by the plain table's, it
// must still publish the partitioned table's changes under the table's own name, or the other
// source's first run fails on a publication the pipeline made itself.
func TestPGPublicationSharedWithPartitioned(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	conn := srv.Conn(t)
	if _, err := conn.Exec(ctx, `CREATE TABLE plain (id INT PRIMARY KEY);
		CREATE TABLE parted (id INT PRIMARY KEY) PARTITION BY RANGE (id);
		CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100)`); err != nil {
		t.Fatal(err)
	}
	if err := pgPublication(ctx, conn, "shared", `"public"."plain"`, &spec.PostgresSource{Schema: "public", Table: "plain"}, false); err != nil {
		t.Fatal(err)
	}
	if err := pgPublication(ctx, conn, "shared", `"public"."parted"`, &spec.PostgresSource{Schema: "public", Table: "parted"}, false); err != nil {
		t.Fatalf("the partitioned table's source, after the plain table's made the publication: %v", err)
	}
	tables := publicationTables(t, conn, "shared")
	if len(tables) != 2 || tables[0] != "parted" || tables[1] != "plain" {
		t.Fatalf("publication shared publishes %v, want [parted plain] (the partitioned table under its own name)", tables)
	}
}

// publicationTables returns the names of the tables publication pub publishes, in order.
func publicationTables(t *testing.T, conn *pgx.Conn, pub string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT tablename::text FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1", pub)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// TestPGLost: the errors that say the connection to the server was lost (the initial snapshot's
// and the stream's hint to run again once the server is up): the server's admin shutdown,
// crash shutdown and cannot-connect-now codes, an unexpected EOF, a network error; not a
// refused privilege nor another error.
func TestPGLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{fmt.Errorf("reading: %w", &pgconn.PgError{Code: "57P01"}), true},
		{fmt.Errorf("reading: %w", &pgconn.PgError{Code: "57P02"}), true},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{fmt.Errorf("reading: %w", &pgconn.PgError{Code: "42501"}), false},
		{errors.New("something else"), false},
	} {
		if got := pgLost(c.err); got != c.lost {
			t.Errorf("pgLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
