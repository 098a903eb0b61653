package flows

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// appendTo appends text to the file at path, as a writer still writing it does.
func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIngestEmptyFileWaits: a file that is empty when a batch lists it (created, not written
// yet: `cp`, a shell redirect and most writers create the file first) is left unread, in every
// mode, and read whole once it holds its lines. Read at once, it would be recorded as read with
// no rows, and every line written into it after would be lost (the file "changed after it was
// read"). It has no rows to lose, so nothing is said of it: a file that stays empty (an export
// of no rows) makes no WARN, update after update.
func TestIngestEmptyFileWaits(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"permissive", "failfast"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p, landing := newIngest(t, mode, "")
			write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"))
			write(t, filepath.Join(landing, "b.json"), nil)
			m, rec, err := ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			wantRows(t, p, "1 null null")
			if m.Files != 1 || strings.Contains(rec.all(), "b.json") {
				t.Errorf("metrics %+v, want one file read and nothing said of b.json; events:\n%s", m, rec.all())
			}
			m, rec, err = ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			if !m.Idle || strings.Contains(rec.all(), "b.json") {
				t.Errorf("still empty: metrics %+v, want an idle batch and nothing said of b.json; events:\n%s", m, rec.all())
			}
			appendTo(t, filepath.Join(landing, "b.json"), `{"id": 2}`+"\n"+`{"id": 3}`+"\n")
			m, rec, err = ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			wantRows(t, p, "1 null null", "2 null null", "3 null null")
			if m.Files != 1 || m.ChangedFiles != 0 {
				t.Errorf("once written: metrics %+v, events:\n%s", m, rec.all())
			}
		})
	}
}

// TestIngestCutLastLineWaits: a JSON-lines file whose last line has no line end and is a JSON
// value cut short (a file read while it is written: the writer is in the middle of a line) is left unread with a
// WARN, in every mode (not a malformed row of NULLs, which an APPLY CHANGES reading the table
// would refuse for its NULL key, nor a failed update under failfast), and read whole once
// complete: every line of it once, none lost as "changed after it was read". A last line with no
// line end that is JSON (or JSON wrong in another way than being cut short) is a complete
// file's, read at once.
func TestIngestCutLastLineWaits(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"permissive", "dropmalformed", "failfast"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p, landing := newIngest(t, mode, "")
			write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+`{"id": 2}`))
			write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 3}`+"\n"+`{"id": 4, "amou`))
			m, rec, err := ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			wantRows(t, p, "1 null null", "2 null null")
			// The file named relative to the pipeline's folder, as every WARN about a file does.
			if m.Files != 1 || m.BadRecords != 0 || m.Incomplete != 1 || !strings.Contains(rec.all(), "WARN landing/b.json: line 2, the last, has no line end and its JSON value ends before it is complete: the file is still being written, or truncated; it is left unread") {
				t.Errorf("metrics %+v, want one file read and one left unread as incomplete; events:\n%s", m, rec.all())
			}
			appendTo(t, filepath.Join(landing, "b.json"), `nt": 4.5}`+"\n"+`{"id": 5}`+"\n")
			m, rec, err = ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			wantRows(t, p, "1 null null", "2 null null", "3 null null", "4 4.50 null", "5 null null")
			if m.Files != 1 || m.BadRecords != 0 || m.ChangedFiles != 0 || m.Incomplete != 0 {
				t.Errorf("once complete: metrics %+v, events:\n%s", m, rec.all())
			}
		})
	}
}

// TestApplyChangesViewCutLastLineWaits: an APPLY CHANGES reading a view over files leaves a
// JSON-lines file whose last line is cut unread, as an ingest does: the batch applies the other
// files (the cut line is no NULL-keyed event that fails the batch), and the update after the
// file is complete applies it whole.
func TestApplyChangesViewCutLastLineWaits(t *testing.T) {
	t.Parallel()
	checkViewWaits(t, "", "a.json", []byte(`{"id": 1, "name": "one", "seq": 1}`+"\n"),
		"b.json", []byte(`{"id": 2, "name": "two", "seq": 1}`+"\n"+`{"id": 3, "na`),
		func(path string) { appendTo(t, path, `me": "three", "seq": 1}`+"\n") },
		"b.json: line 2, the last, has no line end and its JSON value ends before it is complete: the file is still being written, or truncated; it is left unread")
}

// checkViewWaits lands file a (the event {id 1, "one", seq 1}) and file b, still being written
// (the events {2, "two", 1} and {3, "three", 1} once complete), for an APPLY CHANGES reading a
// view over files (with mode, when given): the first update applies a alone, reads one file,
// counts b incomplete (no bad record) and WARNs warn; after complete(b's path), the next update
// applies b whole.
func checkViewWaits(t *testing.T, mode, a string, aBody []byte, b string, bPart []byte, complete func(path string), warn string) {
	t.Helper()
	dir := t.TempDir()
	modeLine := ""
	if mode != "" {
		modeLine = "\n      mode: " + mode
	}
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: changes
    type: view
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING, seq BIGINT"`+modeLine+`
  - name: target
    apply_changes: {source: changes, keys: [id], sequence_by: seq}
`)
	landing := filepath.Join(dir, "landing")
	write(t, filepath.Join(landing, a), aBody)
	write(t, filepath.Join(landing, b), bPart)
	rec := &recorder{}
	m := runFlows(t, p, rec)
	snap, rows := readTable(t, p, "target")
	if got, want := rowsText(snap.Metadata.Schema, rows), []string{"1 one 1"}; !slices.Equal(got, want) {
		t.Errorf("target holds %v, want %v", got, want)
	}
	if m[1].Files != 1 || m[1].BadRecords != 0 || m[1].Incomplete != 1 || !strings.Contains(rec.all(), warn) {
		t.Errorf("metrics %+v, want 1 file read and 1 incomplete; events (want %q):\n%s", m[1], warn, rec.all())
	}
	complete(filepath.Join(landing, b))
	runFlows(t, p, rec)
	snap, rows = readTable(t, p, "target")
	if got, want := rowsText(snap.Metadata.Schema, rows), []string{"1 one 1", "2 two 1", "3 three 1"}; !slices.Equal(got, want) {
		t.Errorf("target after %s is complete holds %v, want %v", b, got, want)
	}
}

// TestIngestReplacedSameSizeSays: a file replaced after it was read by one of the same size is
// not read again, and the WARN says what changed (its modification time, when the read saw it
// and now), not a "size 12 → 12 bytes" that reads as no change at all.
func TestIngestReplacedSameSizeSays(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	path := filepath.Join(landing, "a.json")
	writeAt(t, path, []byte(`{"id": 1}`+"\n"), time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	writeAt(t, path, []byte(`{"id": 2}`+"\n"), time.Date(2026, 3, 1, 10, 5, 0, 250e6, time.UTC))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "1 null null")
	want := "a.json changed after it was read (same size, 10 bytes, but modified at 2026-03-01T10:05:00.250Z, read as of 2026-03-01T10:00:00.000Z); it is not read again"
	if m.ChangedFiles != 1 || !strings.Contains(rec.all(), want) {
		t.Errorf("metrics %+v; events lack %q:\n%s", m, want, rec.all())
	}
}

// TestDebeziumCutLastLineWaits: a file of Debezium events whose last line has no line end and is
// an event cut short (the connector is writing it) is left unread, as a JSON-lines file is: no
// malformed row with a NULL key that the APPLY CHANGES reading the table would refuse, and the
// update after it is complete applies every event of it.
func TestDebeziumCutLastLineWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, dbzPipeline)
	landing := filepath.Join(dir, "landing")
	path := filepath.Join(landing, "a.json")
	write(t, path, []byte(`{"op":"c","after":{"id":1,"name":"one"},"source":{"lsn":10}}`+"\n"+`{"op":"c","after":{"id":2,"na`))
	rec := &recorder{}
	m := runFlows(t, p, rec)
	if m[0].Files != 0 || m[0].BadRecords != 0 || !strings.Contains(rec.all(), "a.json: line 2, the last, has no line end and its JSON value ends before it is complete: the file is still being written, or truncated; it is left unread") {
		t.Errorf("metrics %+v, events:\n%s", m[0], rec.all())
	}
	appendTo(t, path, `me":"two"},"source":{"lsn":11}}`+"\n")
	runFlows(t, p, rec)
	snap, rows := readTable(t, p, "target")
	if got, want := rowsText(snap.Metadata.Schema, rows), []string{"1 one", "2 two"}; !slices.Equal(got, want) {
		t.Errorf("target holds %v, want %v", got, want)
	}
}

// TestIngestIncompleteNotReadAgainInUpdate: in a continuous update (one Env, batch after batch
// as files land), a file found incomplete is not read again, nor its WARN said again, at every
// later batch while it stays as it was (a file cut short for good would otherwise be read whole
// and warned about each time another file lands); each batch still counts it, and once it
// changes it is read.
func TestIngestIncompleteNotReadAgainInUpdate(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+`{"id": 2, "amou`))
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec}
	m, err := Ingest(context.Background(), env, p.Dataset("raw"))
	if err != nil || m.Incomplete != 1 || strings.Count(rec.all(), "a.json: line 2, the last") != 1 {
		t.Fatalf("first batch: metrics %+v, err %v, events:\n%s", m, err, rec.all())
	}
	write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 3}`+"\n"))
	rec2 := &recorder{}
	env.Events = rec2
	m, err = Ingest(context.Background(), env, p.Dataset("raw"))
	if err != nil || m.Files != 1 || m.Incomplete != 1 || strings.Contains(rec2.all(), "a.json") {
		t.Fatalf("next batch: metrics %+v, err %v; want b.json read, a.json counted as incomplete and not said again; events:\n%s", m, err, rec2.all())
	}
	wantRows(t, p, "3 null null")
	appendTo(t, filepath.Join(landing, "a.json"), `nt": 4.5}`+"\n")
	m, err = Ingest(context.Background(), env, p.Dataset("raw"))
	if err != nil || m.Files != 1 || m.Incomplete != 0 {
		t.Fatalf("once complete: metrics %+v, err %v, events:\n%s", m, err, rec2.all())
	}
	wantRows(t, p, "3 null null", "1 null null", "2 4.50 null") // in commit order
}
