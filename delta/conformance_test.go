package delta

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sharedDelta is where the shared test tables are: shared/ beside the project root.
const sharedDelta = "../../shared/testdata/delta"

// TestConformanceSharedTables reads every table of shared/testdata/delta (the Delta Acceptance
// Tests and delta-rs's test tables) and compares its rows and change data feed with the
// independent reader deltacheck (which names the columns of a column-mapped table by their
// physical names). A table this package cannot read must be refused with an error that says what
// is not supported, never read wrong.
func TestConformanceSharedTables(t *testing.T) {
	t.Parallel()
	if os.Getenv("DELTACHECK") == "" {
		t.Skip("DELTACHECK is not set")
	}
	if _, err := os.Stat(sharedDelta); err != nil {
		t.Skipf("no shared test tables: %v", err)
	}
	dat := t.TempDir()
	if err := untarGz(filepath.Join(sharedDelta, "dat-v0.0.3.tar.gz"), dat); err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(dat, "out/reader_tests/generated/*/delta"))
	rs, _ := filepath.Glob(filepath.Join(sharedDelta, "delta-rs/*"))
	dirs = append(dirs, rs...)
	if len(dirs) < 10 {
		t.Fatalf("found only %d tables", len(dirs))
	}
	// Tables refused on purpose, and the words that say why.
	refused := map[string]string{
		"checkpoints": "no such file", // the data files are not in the test data
	}
	for _, d := range dirs {
		name := filepath.Base(d)
		if name == "delta" {
			name = filepath.Base(filepath.Dir(d))
		}
		t.Run(name, func(t *testing.T) {
			tbl := New(d)
			snap, err := tbl.Snapshot(-1)
			var rows [][]any
			if err == nil {
				rows, err = tbl.Rows(snap)
			}
			if why, ok := refused[name]; ok {
				if err == nil || !strings.Contains(err.Error(), why) {
					t.Fatalf("error %v, want one saying %q", err, why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name == "deletion_vectors" {
				// deltacheck does not read deletion vectors; TestDAT checks these rows against
				// the case's expected rows.
				return
			}
			// deltacheck names the columns of a column-mapped table by their physical names.
			s := snap.Metadata.fileSchema()
			theirs := parseDeltacheck(t, s, deltacheck(t, "rows", d))
			if got, want := canonical(s, theirs), canonical(s, rows); !slices.Equal(got, want) {
				t.Errorf("deltacheck rows:\n%s\nours:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !snap.Metadata.ChangeDataFeed() {
				return
			}
			vs, err := tbl.versions()
			if err != nil {
				t.Fatal(err)
			}
			cs, changes, err := tbl.Changes(vs[0], -1)
			if err != nil {
				t.Fatal(err)
			}
			cs.Fields = cs.Fields[:len(cs.Fields)-1] // deltacheck has no _commit_timestamp
			theirs = parseDeltacheck(t, cs, deltacheck(t, "changes", d, strconv.FormatInt(vs[0], 10)))
			if got, want := canonical(cs, theirs), canonical(cs, changes); !slices.Equal(got, want) {
				t.Errorf("deltacheck changes:\n%s\nours:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// untarGz extracts the regular files and folders of a .tar.gz into dir.
func untarGz(name, dir string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
