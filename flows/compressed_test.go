package flows

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
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

// TestIngestGzipZeroPadding: zero bytes after a gzip file's last member (a file padded to a block
// size, as tape and block devices and some writers leave it) end its text, as GNU gzip and
// Spark's reader (java.util.zip.GZIPInputStream) end it: its rows are read and no malformed
// record is made of the padding. A file of two members, padded or not, reads both; anything
// but zeros after a member is still not gzip, one malformed record after the member's rows.
func TestIngestGzipZeroPadding(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "_rescued_data")
	zeros := make([]byte, 512)
	write(t, filepath.Join(landing, "a.json.gz"), append(gzipped(t, `{"id": 1}`+"\n"+`{"id": 2}`+"\n"), zeros[:509]...))
	two := append(gzipped(t, `{"id": 3}`+"\n"), gzipped(t, `{"id": 4}`)...)
	write(t, filepath.Join(landing, "b.json.gz"), append(append([]byte{}, two...), zeros...))
	write(t, filepath.Join(landing, "c.json.gz"), two)
	write(t, filepath.Join(landing, "d.json.gz"), append(append(gzipped(t, `{"id": 7}`+"\n"), zeros[:3]...), "text\n"...))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 4 || m.BadRecords != 1 {
		t.Errorf("metrics = %+v, want 4 files and 1 bad record (d.json.gz's text after its member)", m)
	}
	wantRows(t, p, "1 null null null", "2 null null null", "3 null null null", "4 null null null",
		"3 null null null", "4 null null null", "7 null null null",
		fmt.Sprintf(`null null null "{\"_corrupt_record\":\"line 2 and after: the file holds data that is not gzip after its gzip stream ends\",\"_file_path\":\"%s\"}"`, filepath.Join(landing, "d.json.gz")))
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

// TestIngestDamagedCompressedFiles: a compressed file whose stream ends early (still being
// written, most likely) is left unread in every mode, with a WARN: the batch runs without it,
// nothing of it is recorded, and the update after it is complete reads it whole (it was once read
// as far as it went and recorded as read, losing its rest for good). An empty one waits too,
// left out of the listing without a word, as every empty file is. A file that
// is not compressed at all, though its name says so, does not fail the flow either (semantics.md
// "Ingestion": bad records never crash the run): it is one malformed record, which the mode
// applies to as to a line that does not parse.
func TestIngestDamagedCompressedFiles(t *testing.T) {
	t.Parallel()
	truncGz := "c_trunc.json.gz: the file ends before its gzip stream does: it is still being written, or truncated; it is left unread, and an update after it is complete reads it whole"
	truncZst := "d_trunc.json.zst: the file ends before its Zstandard stream does: it is still being written, or truncated; it is left unread"
	empty := "f_empty.json.gz" // nothing is said of it
	notGz := "e_text.json.gz:1: the file is not gzip-compressed, though its name ends in .gz"
	// complete lands the whole of the files that were being written.
	complete := func(landing string) {
		write(t, filepath.Join(landing, "c_trunc.json.gz"), gzipped(t, `{"id": 11}`+"\n"+`{"id": 12}`+"\n"+`{"id": 13}`+"\n"))
		write(t, filepath.Join(landing, "d_trunc.json.zst"), zstded(t, `{"id": 21}`+"\n"+`{"id": 22}`+"\n"+`{"id": 23}`+"\n"+`{"id": 24}`+"\n"))
		write(t, filepath.Join(landing, "f_empty.json.gz"), gzipped(t, `{"id": 41}`+"\n"))
	}
	later := []string{"11", "12", "13", "21", "22", "23", "24", "41"}

	for _, mode := range []string{"permissive", "dropmalformed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rescuedCol := ""
			if mode == "permissive" {
				rescuedCol = "_rescued_data"
			}
			p, landing := newIngest(t, mode, rescuedCol)
			damagedFiles(t, landing)
			m, rec, err := ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"1 null null", "2 null null"}
			rows := 2
			if mode == "permissive" {
				want = []string{"1 null null null", "2 null null null",
					fmt.Sprintf(`null null null "{\"_corrupt_record\":\"line 1 and after: the file is not gzip-compressed, though its name ends in .gz\",\"_file_path\":\"%s\"}"`, filepath.Join(landing, "e_text.json.gz"))}
				rows = 3
			}
			if m.Files != 2 || m.NumOutputRows != int64(rows) || m.BadRecords != 1 {
				t.Errorf("metrics = %+v, want 2 files, %d rows, 1 bad record", m, rows)
			}
			wantRows(t, p, want...)
			events := rec.all()
			for _, w := range []string{truncGz, truncZst, notGz} {
				if !strings.Contains(events, w) {
					t.Errorf("events lack %q:\n%s", w, events)
				}
			}
			if strings.Contains(events, empty) {
				t.Errorf("events name the empty file:\n%s", events)
			}
			complete(landing)
			if m, _, err := ingest(t, p); err != nil || m.Files != 3 || m.NumOutputRows != 8 {
				t.Fatalf("the run after the files are complete: %+v, err %v; want their 3 files and 8 rows", m, err)
			}
			for _, id := range later {
				if mode == "permissive" {
					want = append(want, id+" null null null")
				} else {
					want = append(want, id+" null null")
				}
			}
			wantRows(t, p, want...)
		})
	}

	t.Run("failfast", func(t *testing.T) {
		t.Parallel()
		p, landing := newIngest(t, "failfast", "")
		damagedFiles(t, landing)
		_, _, err := ingest(t, p)
		if err == nil || !strings.Contains(err.Error(), notGz) || !strings.Contains(err.Error(), "mode: failfast; replace the file with the complete one") {
			t.Errorf("error = %v, want %q and how to fix it", err, notGz)
		}
		if rows := rawRows(t, p); len(rows) != 0 {
			t.Errorf("failfast committed %v", rows)
		}
		os.Remove(filepath.Join(landing, "e_text.json.gz"))
		m, rec, err := ingest(t, p)
		if err != nil || m.Files != 1 {
			t.Fatalf("without the file that is not gzip: %+v, err %v; want a.json.gz read and the files being written left", m, err)
		}
		for _, w := range []string{truncGz, truncZst} {
			if !strings.Contains(rec.all(), w) {
				t.Errorf("events lack %q:\n%s", w, rec.all())
			}
		}
		if strings.Contains(rec.all(), empty) {
			t.Errorf("events name the empty file:\n%s", rec.all())
		}
		complete(landing)
		if m, _, err := ingest(t, p); err != nil || m.Files != 3 || m.NumOutputRows != 8 {
			t.Fatalf("the run after the files are complete: %+v, err %v", m, err)
		}
	})
}

// TestIngestTruncatedCSV: a CSV file whose gzip stream is cut short (being written) is left
// unread, none of its records taken (the one cut short would be read with its values cut short),
// and read whole once complete.
func TestIngestTruncatedCSV(t *testing.T) {
	t.Parallel()
	p, landing := newCSV(t, "id BIGINT, name STRING", "      options: {header: true}\n      mode: permissive\n")
	text := "id,name\r\n10,ten\r\n20,twenty\r\n"
	write(t, filepath.Join(landing, "b.CSV.GZ"), storedGzip(t, text)[:15+len("id,name\r\n10,ten\r\n20,tw")])
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p)
	if m.Files != 0 || m.BadRecords != 0 || !strings.Contains(rec.all(), "b.CSV.GZ: the file ends before its gzip stream does: it is still being written, or truncated; it is left unread") {
		t.Errorf("metrics %+v, events:\n%s", m, rec.all())
	}
	write(t, filepath.Join(landing, "b.CSV.GZ"), gzipped(t, text))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `10 "ten"`, `20 "twenty"`)
}

// TestApplyChangesViewDamagedCompressedFile: an APPLY CHANGES that reads a view over files leaves
// a compressed file still being written unread, as an ingest does: the batch applies the other
// files, and the update after the file is complete applies it whole.
func TestApplyChangesViewDamagedCompressedFile(t *testing.T) {
	t.Parallel()
	lines := `{"id": 2, "name": "two", "seq": 1}` + "\n" + `{"id": 3, "name": "three", "seq": 1}` + "\n"
	checkViewWaits(t, "dropmalformed", "a.json.gz", gzipped(t, `{"id": 1, "name": "one", "seq": 1}`+"\n"),
		"b.json.gz", storedGzip(t, lines)[:15+len(lines)-4],
		func(path string) { write(t, path, gzipped(t, lines)) },
		"b.json.gz: the file ends before its gzip stream does: it is still being written, or truncated; it is left unread")
}

// TestIngestTruncatedMultilineInferred: a multiline JSON file whose gzip stream is cut short, the
// only file of a source whose schema is inferred, gives its columns from what it holds before
// the cut; the file itself is left unread until complete, then read whole.
func TestIngestTruncatedMultilineInferred(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := "[{\"id\": 1},\n {\"id\": 2},\n {\"id\": 3}]\n"
	file := filepath.Join(dir, "landing", "m.json.gz")
	write(t, file, storedGzip(t, text)[:15+len(text)-8])
	p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n      options: {multiline: true}\n")
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p)
	if m.Files != 0 || !strings.Contains(rec.all(), "m.json.gz: the file ends before its gzip stream does: it is still being written, or truncated; it is left unread") {
		t.Errorf("metrics %+v, events:\n%s", m, rec.all())
	}
	write(t, file, gzipped(t, text))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "1 null", "2 null", "3 null")
}

// TestIngestIncompleteWithNewColumn: a batch run again without an incomplete file evolves the
// schema from the dataset's columns before it, so a new column of another file of the batch is
// added once and the batch commits (the first attempt's widened columns once stayed, and every
// update failed writing rows wider than the table until the file was complete).
func TestIngestIncompleteWithNewColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"))
	text := "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source: {path: ./landing, format: json}\n"
	p := loadPipeline(t, dir, text)
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	// A gzip stream flushed but not closed (being written), with a new column of its own.
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"id": 2, "v": "b"}` + "\n"))
	zw.Flush()
	write(t, filepath.Join(landing, "b.json.gz"), b.Bytes())
	write(t, filepath.Join(landing, "c.json"), []byte(`{"id": 3, "w": "new"}`+"\n"))
	p = loadPipeline(t, dir, text)
	m, rec, err := ingest(t, p)
	if err != nil || m.Files != 1 {
		t.Fatalf("the batch without b.json.gz: %+v, err %v\n%s", m, err, rec.all())
	}
	wantRows(t, p, "1 null null", `3 "new" null`) // id, w, _rescued_data
	zw.Close()
	write(t, filepath.Join(landing, "b.json.gz"), b.Bytes())
	p = loadPipeline(t, dir, text)
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, "1 null null null", `3 "new" null null`, `2 null "b" null`) // id, w, v, _rescued_data, in commit order
}

// TestIngestIncompleteMultilineArray: a multiline JSON array whose gzip stream stops after its
// "[", or after a whole element, is incomplete like any other cut: left unread, then read whole
// (it was once read in part, the rest one malformed record, and recorded as read).
func TestIngestIncompleteMultilineArray(t *testing.T) {
	t.Parallel()
	for _, cut := range []string{"[", `[{"id": 1},` + "\n" + `{"id": 2}`} {
		dir := t.TempDir()
		landing := filepath.Join(dir, "landing")
		if err := os.MkdirAll(landing, 0o755); err != nil {
			t.Fatal(err)
		}
		p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n      schema: \"id BIGINT\"\n      rescued_data_column: _rescued\n      options: {multiline: true}\n")
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(cut))
		zw.Flush()
		file := filepath.Join(landing, "m.json.gz")
		write(t, file, b.Bytes())
		m, rec, err := ingest(t, p)
		if err != nil || m.Files != 0 || !strings.Contains(rec.all(), "m.json.gz: the file ends before its gzip stream does") {
			t.Fatalf("cut after %q: %+v, err %v\n%s", cut, m, err, rec.all())
		}
		wantRows(t, p)
		write(t, file, gzipped(t, `[{"id": 1}, {"id": 2}]`))
		if _, _, err := ingest(t, p); err != nil {
			t.Fatal(err)
		}
		wantRows(t, p, "1 null", "2 null")
	}
}

// TestIngestIncompleteWarnsOnce: the batch run again without an incomplete file says the WARNs of
// the files before it once in the update, not once for each attempt.
func TestIngestIncompleteWarnsOnce(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+`{"id": "x"}`+"\n"))
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"id": 2}` + "\n"))
	zw.Flush()
	write(t, filepath.Join(landing, "b.json.gz"), b.Bytes())
	m, rec, err := ingest(t, p)
	if err != nil || m.Files != 1 || m.BadRecords != 1 {
		t.Fatalf("%+v, err %v", m, err)
	}
	if n := strings.Count(rec.all(), "a.json:2: column id:"); n != 1 {
		t.Errorf("the bad value of a.json:2 is said %d times, want once:\n%s", n, rec.all())
	}
}
