package flows

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGlobSourcePath: a glob source path reads as Auto Loader's path does (Hadoop glob syntax, a
// prefix filter): `{a,b}` groups, nested too, pick alternatives, and a folder the glob matches is
// read whole, its hidden names skipped, so `landing/2024-*` reads the daily folders' files.
func TestGlobSourcePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{
		"2024-01-01/a.json", "2024-01-02/b.json", "2024-01-02/deeper/c.json", "2024-01-02/_tmp/x.json",
		"2024-01-02/.part.json", "2023-12-31/old.json", "orders.json", "customers.json", "items.csv",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rels := func(pattern string) []string {
		t.Helper()
		base, files, _, err := listInputs(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		if base != dir {
			t.Errorf("%s: base %s, want %s", pattern, base, dir)
		}
		var out []string
		for _, f := range files {
			out = append(out, f.rel)
		}
		return out
	}
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"2024-*", []string{"2024-01-01/a.json", "2024-01-02/b.json", "2024-01-02/deeper/c.json"}},
		{"{orders,customers}.json", []string{"customers.json", "orders.json"}},
		{"{o*,i{tems,x}.csv}", []string{"items.csv", "orders.json"}},
		{"202{3-12-31,4-01-01}", []string{"2023-12-31/old.json", "2024-01-01/a.json"}},
		{"*.json", []string{"customers.json", "orders.json"}},
		{"{2024-01-01,2024-01-01/a.json}", []string{"2024-01-01/a.json"}},
	} {
		if got := rels(c.pattern); !slices.Equal(got, c.want) {
			t.Errorf("%s lists %q, want %q", c.pattern, got, c.want)
		}
	}
}

// TestCopyingFilesSkipped: a file named *._COPYING_ (hadoop fs -put and -cp write a file under
// that name and rename it once complete) is no input, as Spark's file listing skips it, in a
// source folder and under a glob: read before its rename, its rows would be read twice.
func TestCopyingFilesSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"a.json", "b.json._COPYING_", "sub/c.json._COPYING_"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{dir, filepath.Join(dir, "*"), filepath.Join(dir, "*.json*")} {
		_, files, _, err := listInputs(path)
		if err != nil {
			t.Fatal(err)
		}
		var rels []string
		for _, f := range files {
			rels = append(rels, f.rel)
		}
		if !slices.Equal(rels, []string{"a.json"}) {
			t.Errorf("%s lists %q, want a.json alone", path, rels)
		}
	}
}

// TestGlobMatchingNothingWarns: a glob source path that matches no file while its folder holds
// files (a mistyped extension) leaves the flow idle with a WARN naming the pattern, how many
// files the folder holds and a few of them; so does a glob whose folder does not exist. A glob
// over an empty folder (no data yet) is idle without a word, and the WARN stops once a file
// matches.
func TestGlobMatchingNothingWarns(t *testing.T) {
	t.Parallel()
	run := func(path string, files ...string) (Metrics, string) {
		t.Helper()
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			write(t, filepath.Join(dir, "landing", f), []byte(`{"id": 1}`+"\n"))
		}
		p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: "+path+"\n      format: json\n      schema: \"id BIGINT\"\n")
		m, rec, err := ingest(t, p)
		if err != nil {
			t.Fatal(err)
		}
		return m, rec.all()
	}
	m, events := run("./landing/*.jsn", "a.json", "b.json", "c.json", "d.json", ".hidden.jsn")
	want := "WARN source path landing/*.jsn matches none of the 4 files below landing (e.g. landing/a.json, landing/b.json, landing/c.json): check the pattern (its extension, case and folders); the flow is idle until a file matches"
	if !m.Idle || events != want {
		t.Errorf("idle %v, events:\n%s\nwant:\n%s", m.Idle, events, want)
	}
	m, events = run("./incoming/*.json")
	want = "WARN source path incoming/*.json matches no file: its folder incoming does not exist (yet); the flow is idle until it does and holds a matching file (a relative path is resolved against the spec's folder)"
	if !m.Idle || events != want {
		t.Errorf("idle %v, events:\n%s\nwant:\n%s", m.Idle, events, want)
	}
	if m, events = run("./landing/*.json"); !m.Idle || events != "" {
		t.Errorf("an empty folder: idle %v, events %q; want idle and no WARN", m.Idle, events)
	}
	if m, events = run("./landing/*.json", "a.json"); m.Idle || m.NumOutputRows != 1 || events != "" {
		t.Errorf("a matching file: %+v, events %q; want its row and no WARN", m, events)
	}
}
