package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileFlags runs the example with --cpuprofile, --memprofile and --trace: both profiles
// are gzipped pprof protocol buffers (the format go tool pprof reads) whose string tables name
// what they measure and, for the heap profile, the flow code that allocated; the trace is the Go
// execution tracer's (its header, then the flow code's goroutines). A path that cannot be
// created, or one path for two flags, is a usage error naming the flags, and nothing runs.
func TestProfileFlags(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", exampleFiles[0]), filepath.Join(landing, exampleFiles[0]))
	cpu, mem, tr := filepath.Join(tmp, "cpu.pprof"), filepath.Join(tmp, "mem.pprof"), filepath.Join(tmp, "run.trace")
	mustRun(t, append([]string{"run", exampleSpec, "--cpuprofile", cpu, "--memprofile", mem, "--trace", tr}, exampleArgs(landing, storage)...)...)
	raw, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("go 1.")) || !bytes.Contains(raw, []byte("tributary/flows.")) {
		t.Errorf("--trace wrote %d bytes that are not a Go execution trace of the flows (header %q)", len(raw), raw[:min(len(raw), 16)])
	}
	for path, want := range map[string][]string{
		cpu: {"samples", "cpu", "nanoseconds"},
		mem: {"alloc_space", "inuse_space", "bytes", "tributary/flows."},
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s is not gzipped, as pprof writes its profiles: %v", filepath.Base(path), err)
		}
		proto, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !bytes.Contains(proto, []byte(w)) {
				t.Errorf("%s does not name %q", filepath.Base(path), w)
			}
		}
	}

	missing := filepath.Join(tmp, "no-such-dir", "p.pprof")
	for _, c := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--cpuprofile", missing}, []string{"--cpuprofile", "no-such-dir"}},
		{[]string{"--memprofile", missing}, []string{"--memprofile", "no-such-dir"}},
		{[]string{"--trace", missing}, []string{"--trace", "no-such-dir"}},
		{[]string{"--cpuprofile", cpu, "--memprofile", cpu}, []string{"--cpuprofile and --memprofile are both", "cpu.pprof"}},
		{[]string{"--cpuprofile", cpu, "--trace", tmp + "/./cpu.pprof"}, []string{"--cpuprofile and --trace are both", "cpu.pprof"}},
	} {
		other := filepath.Join(tmp, "other")
		r := pipeline(t, nil, append(append([]string{"run", exampleSpec}, c.flags...), exampleArgs(landing, other)...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want[0]) || !strings.Contains(r.stderr, c.want[1]) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", c.flags, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(other); !os.IsNotExist(err) {
			t.Errorf("%v: the run went ahead (storage %v)", c.flags, err)
		}
	}
}
