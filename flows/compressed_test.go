package flows

import (
	"bytes"
	"compress/gzip"
	"path/filepath"
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
