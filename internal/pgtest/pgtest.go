// Package pgtest starts a private PostgreSQL 15 cluster for tests: initdb in a temporary
// folder, wal_level=logical, a free port on 127.0.0.1, the unix socket in the same folder. When
// the tests run as root (initdb refuses root) the server runs as the `postgres` user, or `nobody`.
// Tests skip, saying why, only when no PostgreSQL binaries are installed.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinDirs are the folders searched for initdb and postgres, first match wins.
var BinDirs = []string{"/usr/lib/postgresql/15/bin", "/usr/local/pgsql/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"}

// Server is a running private cluster.
type Server struct {
	// URL connects as the superuser `postgres` to the database `postgres` (trust authentication).
	URL  string
	Port int    // the TCP port on 127.0.0.1
	Dir  string // the temporary folder: data/, server.log and the unix socket
	cmd  *exec.Cmd
}

// binDir returns the folder holding initdb and postgres, or "".
func binDir() string {
	for _, d := range BinDirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// Start starts a cluster for t and stops it (and removes its folder) when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir()
	if bin == "" {
		t.Skip("no PostgreSQL binaries (initdb) in " + strings.Join(BinDirs, ", ") + " or on PATH: install postgresql-15 to run this test")
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cred, err := credential(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "LC_ALL=C")
		if cred != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return c
	}
	if out, err := run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	s := &Server{Port: port, Dir: dir, URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
	s.cmd = run("postgres", "-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir, "-c", "wal_level=logical", "-c", "max_replication_slots=10",
		"-c", "max_wal_senders=10", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "wal_writer_delay=10ms")
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), s.URL)
		if err == nil {
			conn.Close(context.Background())
			return s
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("postgres did not start: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Conn opens a connection to the cluster, closed when t ends.
func (s *Server) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// credential returns the user the server binaries run as when the test runs as root (the
// folder is given to it), or nil to run them as the current user.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres or nobody user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
