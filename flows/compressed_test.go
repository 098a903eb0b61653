package flows

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// gzipped returns text compressed with gzip.
func gzipped(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// zstded returns text compressed with Zstandard.
func zstded(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestIngestCompressedExtensionCase: a compressed file is recognised by its extension in any
// case, as file systems written by other tools name them (b.CSV.GZ, x.JSON.GZ, y.Json.Zst).
func TestIngestCompressedExtensionCase(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "failfast", "")
	write(t, filepath.Join(landing, "x.JSON.GZ"), gzipped(t, `{"id": 1}`+"\n"))
	write(t, filepath.Join(landing, "y.Json.Zst"), zstded(t, `{"id": 2}`+"\n"))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 2 {
		t.Errorf("files = %d, want 2", m.Files)
	}
	wantRows(t, p, "1 null null", "2 null null")

	p, landing = newCSV(t, "id INT, s STRING", "      options: {header: true}\n      mode: failfast\n")
	write(t, filepath.Join(landing, "b.CSV.GZ"), gzipped(t, "id,s\n7,seven\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `7 "seven"`)
}

// storedGzip returns text in a gzip stream of stored (uncompressed) blocks: its bytes are the
// 10-byte gzip header, a 5-byte block header, then text itself, so that a copy cut at 15+k bytes
// holds the first k bytes of text.
func storedGzip(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(text))
	w.Close()
	if !bytes.Equal(b.Bytes()[15:15+len(text)], []byte(text)) {
		t.Fatalf("the stored gzip stream does not hold the text at byte 15")
	}
	return b.Bytes()
}

// damagedFiles writes, to landing, a good file and compressed files that cannot be
// decompressed to their end: c_trunc.json.gz holds lines 1-2 and 5 bytes of line 3 (ids 11, 12,
// 13); d_trunc.json.zst two Zstandard frames, the first whole (ids 21, 22), the second cut
// (ids 23, 24); e_text.json.gz plain text; f_empty.json.gz nothing.
func damagedFiles(t *testing.T, landing string) {
	t.Helper()
	write(t, filepath.Join(landing, "a.json.gz"), gzipped(t, `{"id": 1}`+"\n"+`{"id": 2}`+"\n"))
	lines := `{"id": 11}` + "\n" + `{"id": 12}` + "\n" + `{"id": 13}` + "\n"
	write(t, filepath.Join(landing, "c_trunc.json.gz"), storedGzip(t, lines)[:15+11+11+5])
	second := zstded(t, `{"id": 23}`+"\n"+`{"id": 24}`+"\n")
	zs := append(zstded(t, `{"id": 21}`+"\n"+`{"id": 22}`+"\n"), second[:len(second)/2]...)
	write(t, filepath.Join(landing, "d_trunc.json.zst"), zs)
	write(t, filepath.Join(landing, "e_text.json.gz"), []byte(`{"id": 31}`+"\n"))
	write(t, filepath.Join(landing, "f_empty.json.gz"), nil)
}

// TestIngestDamagedCompressedFiles: a compressed file that cannot be decompressed to its end
// does not fail the flow (semantics.md "Ingestion": bad records never crash the run): the rows
// before the damage are kept and the rest of the file is one malformed record at the line where
// its text stops, which the mode applies to as to a line that does not parse; an empty
// compressed file is an empty file; the other files are read.
func TestIngestDamagedCompressedFiles(t *testing.T) {
	t.Parallel()
	truncGz := "c_trunc.json.gz:3: the file ends before its gzip stream does: it is truncated, or still being written"
	truncZst := "d_trunc.json.zst:3: the file ends before its Zstandard stream does: it is truncated, or still being written"
	notGz := "e_text.json.gz:1: the file is not gzip-compressed, though its name ends in .gz"

	t.Run("permissive", func(t *testing.T) {
		t.Parallel()
		p, landing := newIngest(t, "permissive", "_rescued_data")
		damagedFiles(t, landing)
		m, rec, err := ingest(t, p)
		if err != nil {
			t.Fatal(err)
		}
		if m.Files != 5 || m.NumOutputRows != 9 || m.BadRecords != 3 {
			t.Errorf("metrics = %+v, want 5 files, 9 rows, 3 bad records", m)
		}
		dir := filepath.Join(landing)
		rescued := func(file string, line int, reason string) string {
			return fmt.Sprintf(`null null null "{\"_corrupt_record\":\"line %d and after: %s\",\"_file_path\":\"%s\"}"`, line, reason, filepath.Join(dir, file))
		}
		wantRows(t, p,
			"1 null null null", "2 null null null",
			"11 null null null", "12 null null null",
			rescued("c_trunc.json.gz", 3, "the file ends before its gzip stream does: it is truncated, or still being written"),
			"21 null null null", "22 null null null",
			rescued("d_trunc.json.zst", 3, "the file ends before its Zstandard stream does: it is truncated, or still being written"),
			rescued("e_text.json.gz", 1, "the file is not gzip-compressed, though its name ends in .gz"))
		events := rec.all()
		for _, w := range []string{truncGz, truncZst, notGz, "the rest of the file becomes a row of NULLs", "land the complete (or corrected) file under a new name"} {
			if !strings.Contains(events, w) {
				t.Errorf("events lack %q:\n%s", w, events)
			}
		}
		if strings.Contains(events, "f_empty") {
			t.Errorf("an empty compressed file is reported:\n%s", events)
		}
		if m, _, err := ingest(t, p); err != nil || !m.Idle {
			t.Errorf("second run: idle %v, err %v; want every file read once", m.Idle, err)
		}
	})

	t.Run("dropmalformed", func(t *testing.T) {
		t.Parallel()
		p, landing := newIngest(t, "dropmalformed", "")
		damagedFiles(t, landing)
		m, rec, err := ingest(t, p)
		if err != nil {
			t.Fatal(err)
		}
		if m.Files != 5 || m.NumOutputRows != 6 || m.BadRecords != 3 {
			t.Errorf("metrics = %+v, want 5 files, 6 rows, 3 bad records", m)
		}
		wantRows(t, p, "1 null null", "2 null null", "11 null null", "12 null null", "21 null null", "22 null null")
		events := rec.all()
		for _, w := range []string{truncGz, truncZst, notGz, "the rest of the file is dropped (mode: dropmalformed)"} {
			if !strings.Contains(events, w) {
				t.Errorf("events lack %q:\n%s", w, events)
			}
		}
	})

	t.Run("failfast", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct{ file, want string }{
			{"c_trunc.json.gz", truncGz},
			{"d_trunc.json.zst", truncZst},
			{"e_text.json.gz", notGz},
		} {
			p, landing := newIngest(t, "failfast", "")
			damagedFiles(t, landing)
			for _, other := range []string{"c_trunc.json.gz", "d_trunc.json.zst", "e_text.json.gz"} {
				if other != c.file {
					os.Remove(filepath.Join(landing, other))
				}
			}
			_, _, err := ingest(t, p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "mode: failfast; replace the file with the complete one") {
				t.Errorf("%s: error = %v, want %q and how to fix it", c.file, err, c.want)
			}
			if rows := rawRows(t, p); len(rows) != 0 {
				t.Errorf("%s: failfast committed %v", c.file, rows)
			}
		}
	})
}

// TestIngestTruncatedCSV: the start of a CSV record cut short by the damage is not read as a
// record of its own (its values would be cut short too): the record is the malformed one.
func TestIngestTruncatedCSV(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id BIGINT, name STRING", "      options: {header: true}\n      mode: permissive\n")
	text := "id,name\r\n10,ten\r\n20,twenty\r\n"
	write(t, filepath.Join(landing, "b.CSV.GZ"), storedGzip(t, text)[:15+len("id,name\r\n10,ten\r\n20,tw")])
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `10 "ten"`, `null null`)
	if m.BadRecords != 1 || !strings.Contains(rec.all(), "b.CSV.GZ:3: the file ends before its gzip stream does") {
		t.Errorf("bad records %d, events:\n%s", m.BadRecords, rec.all())
	}
}

// TestApplyChangesViewDamagedCompressedFile: an APPLY CHANGES that reads a view over files reads
// a damaged compressed file as an ingest does: the rows before the damage are applied, the rest
// is a malformed record (dropped here), and the other files are read.
func TestApplyChangesViewDamagedCompressedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: changes
    type: view
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, name STRING, seq BIGINT"
      mode: dropmalformed
  - name: target
    apply_changes: {source: changes, keys: [id], sequence_by: seq}
`)
	landing := filepath.Join(dir, "landing")
	write(t, filepath.Join(landing, "a.json.gz"), gzipped(t, `{"id": 1, "name": "one", "seq": 1}`+"\n"))
	lines := `{"id": 2, "name": "two", "seq": 1}` + "\n" + `{"id": 3, "name": "three", "seq": 1}` + "\n"
	write(t, filepath.Join(landing, "b.json.gz"), storedGzip(t, lines)[:15+len(lines)-4])
	rec := &recorder{}
	m := runFlows(t, p, rec)
	snap, rows := readTable(t, p, "target")
	got := rowsText(snap.Metadata.Schema, rows)
	if want := []string{"1 one 1", "2 two 1"}; !slices.Equal(got, want) {
		t.Errorf("target holds %v, want %v", got, want)
	}
	if m[1].Files != 2 || m[1].BadRecords != 1 || !strings.Contains(rec.all(), "b.json.gz:2: the file ends before its gzip stream does") {
		t.Errorf("metrics %+v, events:\n%s", m[1], rec.all())
	}
}

// TestIngestTruncatedMultilineInferred: a truncated multiline JSON file whose schema is inferred
// gives its columns from what it holds before the damage, then reads as a truncated file does.
func TestIngestTruncatedMultilineInferred(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := "[{\"id\": 1},\n {\"id\": 2},\n {\"id\": 3}]\n"
	write(t, filepath.Join(dir, "landing", "m.json.gz"), storedGzip(t, text)[:15+len(text)-8])
	p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n      options: {multiline: true}\n")
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "landing", "m.json.gz")
	wantRows(t, p, "1 null", "2 null", `null "{\"_corrupt_record\":\"line 3 and after: the file ends before its gzip stream does: it is truncated, or still being written\",\"_file_path\":\"`+file+`\"}"`)
	if m.BadRecords != 1 || !strings.Contains(rec.all(), "m.json.gz:3: the file ends before its gzip stream does") {
		t.Errorf("bad records %d, events:\n%s", m.BadRecords, rec.all())
	}
}
