package delta

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Delta Acceptance Tests v0.0.3 (testdata/dat-v0.0.3.tar.gz, copied from
// shared/testdata/delta; MIT, delta-io/delta kernel tests): 19 tables written by Spark 3.5 /
// Delta 3.1, each with the expected rows (Parquet written by Spark) and the expected protocol and
// table properties of one or more versions.

// datCases extracts the archive into a temporary folder and returns the folder of the cases.
func datCases(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := untarGz("testdata/dat-v0.0.3.tar.gz", dir); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "out", "reader_tests", "generated")
}

// datRefused lists the cases whose tables need what this reader does not implement, and the
// words the error must contain: the feature, by the name Delta gives it.
// Every case is read now: multi_partitioned_2, whose decimal(38,18) column was refused before
// DECIMAL reached 38 digits, checks the wide decimal path against Spark's values.
var datRefused = map[string]string{}

// datExpected is expected/<v>/table_version_metadata.json.
type datExpected struct {
	Version          int64             `json:"version"`
	Properties       map[string]string `json:"properties"`
	MinReaderVersion int               `json:"min_reader_version"`
	MinWriterVersion int               `json:"min_writer_version"`
}

// TestDAT opens every case of the Delta Acceptance Tests at every version it has expectations
// for and compares the protocol, the table properties and the rows (as an unordered set) with
// the expected ones; the cases of datRefused must fail with an error naming the feature.
func TestDAT(t *testing.T) {
	t.Parallel()
	root := datCases(t)
	cases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 19 {
		t.Fatalf("%d cases in the archive, want 19", len(cases))
	}
	passed := 0
	for _, c := range cases {
		name := c.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			expDirs, err := filepath.Glob(filepath.Join(dir, "expected", "*"))
			if err != nil || len(expDirs) == 0 {
				t.Fatalf("no expectations: %v", err)
			}
			for _, ed := range expDirs {
				var exp datExpected
				b, err := os.ReadFile(filepath.Join(ed, "table_version_metadata.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &exp); err != nil {
					t.Fatal(err)
				}
				version := exp.Version
				if filepath.Base(ed) == "latest" {
					version = -1
				}
				checkDATVersion(t, name, filepath.Join(dir, "delta"), ed, version, exp)
			}
		})
		if _, refused := datRefused[name]; !refused {
			passed++
		}
	}
	if passed != 19 {
		t.Errorf("%d readable cases, want 19", passed)
	}
}

func checkDATVersion(t *testing.T, name, tableDir, expDir string, version int64, exp datExpected) {
	t.Helper()
	tbl := New(tableDir)
	snap, err := tbl.Snapshot(version)
	var rows [][]any
	if err == nil {
		rows, err = tbl.Rows(snap)
	}
	if why, ok := datRefused[name]; ok {
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Fatalf("%s: error %v, want one saying %q", filepath.Base(expDir), err, why)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(expDir), err)
	}
	if snap.Version != exp.Version {
		t.Errorf("%s: version %d, want %d", filepath.Base(expDir), snap.Version, exp.Version)
	}
	if snap.Protocol.MinReaderVersion != exp.MinReaderVersion || snap.Protocol.MinWriterVersion != exp.MinWriterVersion {
		t.Errorf("%s: protocol %+v, want (%d,%d)", filepath.Base(expDir), snap.Protocol, exp.MinReaderVersion, exp.MinWriterVersion)
	}
	if !maps.Equal(snap.Metadata.Configuration, exp.Properties) {
		t.Errorf("%s: properties %v, want %v", filepath.Base(expDir), snap.Metadata.Configuration, exp.Properties)
	}
	s := snap.Metadata.Schema
	files, err := filepath.Glob(filepath.Join(expDir, "table_content", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no expected rows: %v", filepath.Base(expDir), err)
	}
	var want [][]any
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := tbl.ReadFile(abs, s)
		if err != nil {
			t.Fatalf("expected rows %s: %v", f, err)
		}
		want = append(want, r...)
	}
	if got, exp := canonical(s, rows), canonical(s, want); !slices.Equal(got, exp) {
		t.Errorf("%s: rows\n%s\nwant\n%s", filepath.Base(expDir), strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}
}
