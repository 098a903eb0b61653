package main

import (
	"strings"
	"testing"

	"tributary/internal/pgtest"
)

// TestPostgresBytea: a BINARY column holds the bytes of a bytea column, its key too, in the
// snapshot and in the stream, even where the database sets bytea_output = escape (the source
// reads PostgreSQL's text of either format). show --format jsonl prints them as base64.
func TestPostgresBytea(t *testing.T) {
	srv := pgtest.Start(t)
	conn := srv.Conn(t)
	pgExec(t, conn, `ALTER DATABASE postgres SET bytea_output = 'escape';
		CREATE TABLE files (id BYTEA PRIMARY KEY, body BYTEA);
		INSERT INTO files VALUES ('\x01', '\x0102ff'), ('\x5c00', ''), ('\x03', NULL)`)
	args := pgOneTableSpec(t, srv.URL, "files", "id BINARY, body BINARY", "id")
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("snapshot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// base64: 01 is AQ==, 01 02 FF is AQL/, 5C 00 is XAA=, 03 is Aw==, "a\b" (61 5C 62) is YVxi.
	if got, want := pgTableLines(t, args, "files", "id", "body"), []string{"AQ==|AQL/", "Aw==|<nil>", "XAA=|"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the snapshot: files = %q, want %q", got, want)
	}
	pgExec(t, conn, `UPDATE files SET body = '\x615c62' WHERE id = '\x01'; INSERT INTO files VALUES ('\xff', '\x00'); DELETE FROM files WHERE id = '\x03'`)
	if r := pgRun(t, args); r.code != 0 {
		t.Fatalf("stream: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, want := pgTableLines(t, args, "files", "id", "body"), []string{"/w==|AA==", "AQ==|YVxi", "XAA=|"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the stream: files = %q, want %q", got, want)
	}
}
