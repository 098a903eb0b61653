package flows

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"tributary/schema"
	"tributary/spec"
)

// recorder keeps the events a flow emits.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, level+" "+message)
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.msgs, "\n")
}

const ingestSpec = `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, amount DECIMAL(10,2), at TIMESTAMP"
      mode: %MODE%%RESCUE%
`

func newIngest(t *testing.T, mode, rescue string) (*spec.Pipeline, string) {
	t.Helper()
	dir := t.TempDir()
	text := strings.ReplaceAll(ingestSpec, "%MODE%", mode)
	if rescue != "" {
		text = strings.ReplaceAll(text, "%RESCUE%", "\n      rescued_data_column: "+rescue)
	} else {
		text = strings.ReplaceAll(text, "%RESCUE%", "")
	}
	return loadPipeline(t, dir, text), filepath.Join(dir, "landing")
}

func ingest(t *testing.T, p *spec.Pipeline) (Metrics, *recorder, error) {
	t.Helper()
	rec := &recorder{}
	m, err := Ingest(context.Background(), &Env{Pipeline: p, Events: rec}, p.Dataset("raw"))
	return m, rec, err
}

// rawRows returns the bronze rows as jsonl text, one row a line.
func rawRows(t *testing.T, p *spec.Pipeline) []string {
	t.Helper()
	snap, rows := readTable(t, p, "raw")
	var out []string
	for _, r := range rows {
		var b []byte
		for i, f := range snap.Metadata.Schema.Fields {
			if i > 0 {
				b = append(b, ' ')
			}
			b = schema.AppendJSON(b, f.Type, r[i])
		}
		out = append(out, string(b))
	}
	return out
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAt writes a file as write does, with modification time at.
func writeAt(t *testing.T, path string, data []byte, at time.Time) {
	t.Helper()
	write(t, path, data)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestIngestTypesAndBadValues: values that do not fit become NULL, the row is kept, and the
// flow's metrics and WARN events name file, line and column (semantics.md "Ingestion"); extra
// decimal digits round half up as Spark's JSON reader does.
func TestIngestTypesAndBadValues(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	write(t, filepath.Join(landing, "a.json"), []byte(
		`{"id": 1, "amount": 25.5, "at": "2024-01-31T12:00:00+02:00"}`+"\n"+
			`{"id": "abc", "amount": 1.235, "at": "yesterday"}`+"\r\n"+
			`[1, 2]`+"\n"+
			"\n"+
			`{"id": 4, "amount": "7", "unknown": true}`+"\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`1 25.50 "2024-01-31T10:00:00.000000Z"`,
		`null 1.24 null`,
		`null null null`,
		`4 7.00 null`,
	}
	if got := rawRows(t, p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m.NumOutputRows != 4 || m.BadRecords != 3 || m.Files != 1 {
		t.Errorf("metrics = %+v, want 4 rows, 3 bad records, 1 file", m)
	}
	events := rec.all()
	for _, w := range []string{"a.json:2: column id:", "a.json:2: column at:", "a.json:3: the line is a JSON array, not a JSON object"} {
		if !strings.Contains(events, w) {
			t.Errorf("events lack %q:\n%s", w, events)
		}
	}
}

// TestIngestRescuedData: with rescued_data_column the bad values and unknown fields are kept as
// JSON with the file path.
func TestIngestRescuedData(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "_rescued_data")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": "abc", "amount": 2, "extra": "x"}`+"\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	rows := rawRows(t, p)
	if len(rows) != 1 || !strings.HasPrefix(rows[0], `null 2.00 null "`) {
		t.Fatalf("rows = %v", rows)
	}
	var rescued map[string]any
	text := strings.TrimPrefix(rows[0], `null 2.00 null `)
	var s string
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(s), &rescued); err != nil {
		t.Fatal(err)
	}
	if rescued["id"] != "abc" || rescued["extra"] != "x" || !strings.HasSuffix(rescued["_file_path"].(string), "a.json") {
		t.Errorf("rescued = %v", rescued)
	}
}

// TestIngestModes: failfast fails naming file and line and commits nothing; dropmalformed drops
// lines that do not parse.
func TestIngestModes(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "failfast", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+`{"id": 2, "amount": "x"}`+"\n"))
	_, _, err := ingest(t, p)
	if err == nil || !strings.Contains(err.Error(), "a.json:2: column amount") || !strings.Contains(err.Error(), "failfast") {
		t.Fatalf("failfast error = %v", err)
	}
	if rows := rawRows(t, p); len(rows) != 0 {
		t.Fatalf("failfast committed %v", rows)
	}

	p, landing = newIngest(t, "dropmalformed", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+`not json`+"\n"+`{"id": 3}`+"\n"))
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	if rows := rawRows(t, p); strings.Join(rows, ",") != "1 null null,3 null null" {
		t.Fatalf("dropmalformed rows = %v", rows)
	}
}

// TestIngestEachFileOnce: compressed files are read by extension, every file once; a file that
// changes after it was read is reported and not read again.
func TestIngestEachFileOnce(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"id": 1}` + "\n"))
	zw.Close()
	write(t, filepath.Join(landing, "a.json.gz"), gz.Bytes())
	var zs bytes.Buffer
	enc, _ := zstd.NewWriter(&zs)
	enc.Write([]byte(`{"id": 2}` + "\n"))
	enc.Close()
	write(t, filepath.Join(landing, "b.json.zst"), zs.Bytes())
	write(t, filepath.Join(landing, "_ignored.json"), []byte(`{"id": 99}`+"\n"))
	if err := os.MkdirAll(filepath.Join(landing, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(landing, "sub", "c.json"), []byte(`{"id": 3}`+"\n"))
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 3 || strings.Join(rawRows(t, p), ",") != "1 null null,2 null null,3 null null" {
		t.Fatalf("first run: %d files, rows %v", m.Files, rawRows(t, p))
	}
	m, _, err = ingest(t, p)
	if err != nil || !m.Idle {
		t.Fatalf("second run with nothing new: idle=%v err=%v", m.Idle, err)
	}
	write(t, filepath.Join(landing, "sub", "c.json"), []byte(`{"id": 3}`+"\n"+`{"id": 4}`+"\n"))
	write(t, filepath.Join(landing, "d.json"), []byte(`{"id": 5}`+"\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 1 || m.ChangedFiles != 1 || !strings.Contains(rec.all(), "c.json changed after it was read") {
		t.Fatalf("third run: files %d changed %d events %s", m.Files, m.ChangedFiles, rec.all())
	}
	if got := rawRows(t, p); len(got) != 4 {
		t.Fatalf("rows after the third run = %v, want 4 (each file once)", got)
	}
}

// A source folder given as a symbolic link, and links to folders inside it, are listed where
// they point, as Spark lists a local folder, each file once: a link to a folder listed already
// (current -> 2024 inside the source folder, or a loop) is skipped, and a link to a folder that
// holds one listed is an error that names it.
func TestIngestSymlinkedFolders(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	root := filepath.Dir(landing)
	data, extra := filepath.Join(root, "data"), filepath.Join(root, "extra")
	for _, d := range []string{filepath.Join(data, "2024"), extra} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(landing); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(data, "a.json"), []byte(`{"id": 1}`+"\n"))
	write(t, filepath.Join(extra, "b.json"), []byte(`{"id": 2}`+"\n"))
	write(t, filepath.Join(extra, "_skipped.json"), []byte(`{"id": 99}`+"\n"))
	write(t, filepath.Join(data, "2024", "d.json"), []byte(`{"id": 4}`+"\n"))
	for link, to := range map[string]string{landing: data, filepath.Join(data, "more"): extra, filepath.Join(data, "current"): filepath.Join(data, "2024")} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	files, err := SourceFiles(landing)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	if want := filepath.Join(landing, "2024", "d.json") + "," + filepath.Join(landing, "a.json") + "," + filepath.Join(landing, "more", "b.json"); strings.Join(names, ",") != want {
		t.Fatalf("SourceFiles = %v, want %s", names, want)
	}
	m, _, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 3 || strings.Join(rawRows(t, p), ",") != "4 null null,1 null null,2 null null" {
		t.Fatalf("through links: %d files, rows %v", m.Files, rawRows(t, p))
	}
	// A link back to a folder listed already is skipped: a loop lists each file once.
	if err := os.Symlink(data, filepath.Join(extra, "loop")); err != nil {
		t.Fatal(err)
	}
	if files, err := SourceFiles(landing); err != nil || len(files) != 3 {
		t.Fatalf("with a loop: %v, %v, want the 3 files", files, err)
	}
	// A link to a folder above one listed would list its files again.
	if err := os.Symlink(root, filepath.Join(extra, "up")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(data, "c.json"), []byte(`{"id": 3}`+"\n"))
	_, _, err = ingest(t, p)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(landing, "more", "up")+" is a symbolic link to") {
		t.Fatalf("a link back to a listed folder: err = %v, want one naming the link", err)
	}
	if got := rawRows(t, p); len(got) != 3 {
		t.Fatalf("rows after the failed listing = %v, want the 3 committed", got)
	}
}

// TestSourceFilesLinks: which path each file gets through symbolic links does not depend on the
// names' order: two links reaching the same outside folder (or one inside the other) are an
// error whichever sorts first, and a link to a hidden folder of the source folder (which its walk
// skips) lists the files under the link's path.
func TestSourceFilesLinks(t *testing.T) {
	t.Parallel()
	mk := func(t *testing.T, links map[string]string) (string, []string, error) {
		t.Helper()
		dir := t.TempDir()
		for _, f := range []string{"landing/a.json", "landing/.snapshots/v3/x.json", "ext/sub/f.json", "ext/g.json"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, f), []byte("{}\n"))
		}
		for link, to := range links {
			if err := os.Symlink(filepath.Join(dir, to), filepath.Join(dir, "landing", link)); err != nil {
				t.Fatal(err)
			}
		}
		files, err := SourceFiles(filepath.Join(dir, "landing"))
		var rels []string
		for _, f := range files {
			r, _ := filepath.Rel(filepath.Join(dir, "landing"), f.Path)
			rels = append(rels, filepath.ToSlash(r))
		}
		return dir, rels, err
	}
	for _, links := range []map[string]string{
		{"a1": "ext/sub", "b1": "ext"},
		{"a1": "ext", "b1": "ext/sub"},
		{"a1": "ext", "b1": "ext"},
	} {
		if _, rels, err := mk(t, links); err == nil || !strings.Contains(err.Error(), "its files would be listed twice") {
			t.Errorf("links %v: %v, %v; want an error naming the overlap", links, rels, err)
		}
	}
	if _, rels, err := mk(t, map[string]string{"latest": "landing/.snapshots/v3", "out": "ext"}); err != nil || strings.Join(rels, ",") != "a.json,latest/x.json,out/g.json,out/sub/f.json" {
		t.Errorf("a link to a hidden folder inside, one outside: %v, %v", rels, err)
	}
	for _, c := range []struct {
		p, dir string
		want   bool
	}{{"/tmp/x", "/", true}, {"/", "/", true}, {"/tmp/x", "/tmp", true}, {"/tmpx", "/tmp", false}, {"/tmp", "/tmp/x", false}} {
		if got := within(c.p, c.dir); got != c.want {
			t.Errorf("within(%s, %s) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
}

// TestIngestSourceFolderChanged: files are known by their path below the source folder, so a
// source.path pointed at another folder (whose files may have the names of files read before)
// is an error naming both folders and the way back, with nothing committed; a storage moved
// together with its source folder reads on as before, and so does a folder reached by another
// path that holds the files the last batch read.
func TestIngestSourceFolderChanged(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "proj")
	spec := func(landing string) *spec.Pipeline {
		return loadPipeline(t, dir, strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(ingestSpec, "./landing", landing), "%MODE%", "permissive"), "%RESCUE%", ""))
	}
	for _, d := range []string{"d1", "d2"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "d1", "part-0000.json"), []byte(`{"id": 1}`+"\n"))
	write(t, filepath.Join(dir, "d2", "part-0000.json"), []byte(`{"id": 2}`+"\n"+`{"id": 3}`+"\n"))
	p := spec("./d1")
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	q := spec("./d2")
	_, _, err := ingest(t, q)
	if want := "the source folder of raw is " + filepath.Join(dir, "d2") + ", and its batches so far read " + filepath.Join(dir, "d1"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--full-refresh raw") {
		t.Fatalf("another source folder: %v, want %q", err, want)
	}
	if got := rawRows(t, p); strings.Join(got, ",") != "1 null null" {
		t.Fatalf("rows after the refused batch: %v", got)
	}
	// The project moved whole: the storage finds its folder where it was relative to it.
	moved := filepath.Join(filepath.Dir(dir), "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	dir = moved
	write(t, filepath.Join(dir, "d1", "part-0001.json"), []byte(`{"id": 4}`+"\n"))
	r := spec("./d1")
	m, _, err := ingest(t, r)
	if err != nil || m.Files != 1 {
		t.Fatalf("after the move: %d files, %v; want the new file only", m.Files, err)
	}
	if got := rawRows(t, r); strings.Join(got, ",") != "1 null null,4 null null" {
		t.Fatalf("rows after the move: %v", got)
	}
	// The same folder reached by another path (a link): it holds the files the last batch read.
	if err := os.Symlink(filepath.Join(dir, "d1"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "d1", "part-0002.json"), []byte(`{"id": 5}`+"\n"))
	a := spec("./alias")
	if m, _, err := ingest(t, a); err != nil || m.Files != 1 {
		t.Fatalf("through a link to the folder: %d files, %v; want the new file only", m.Files, err)
	}
}

// TestIngestMissingSourceFolder: a source folder that does not exist fails the batch naming it,
// how to fix it, and against which folder a relative path was resolved; nothing is committed.
func TestIngestMissingSourceFolder(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	if err := os.RemoveAll(landing); err != nil {
		t.Fatal(err)
	}
	_, _, err := ingest(t, p)
	if want := "source path " + landing + " does not exist; create the folder, or fix source.path in the spec (or the --conf value it takes: a relative path is resolved against the spec's folder"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a missing folder: %v, want %q", err, want)
	}
}

// TestIngestSettle: with Env.Settle, a file modified within it (still being written, perhaps) is
// left for a later batch and counted in Metrics.Unsettled; files modified before it, or with a
// time further ahead than it (another clock's), are read.
func TestIngestSettle(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	now := time.Now()
	for name, at := range map[string]time.Time{"a.json": now.Add(-2 * time.Hour), "b.json": now, "c.json": now.Add(2 * time.Hour)} {
		writeAt(t, filepath.Join(landing, name), []byte(`{"id": `+strconv.Itoa(int(name[0]-'a'+1))+`}`+"\n"), at)
	}
	env := &Env{Pipeline: p, Events: &recorder{}, Settle: time.Hour}
	m, err := Ingest(context.Background(), env, p.Dataset("raw"))
	if err != nil || m.Files != 2 || m.Unsettled != 1 {
		t.Fatalf("files %d, unsettled %d, err %v; want 2 read and 1 left", m.Files, m.Unsettled, err)
	}
	if got := strings.Join(rawRows(t, p), ","); got != "1 null null,3 null null" {
		t.Fatalf("rows %s, want ids 1 and 3", got)
	}
	env.Settle = 0
	if m, err = Ingest(context.Background(), env, p.Dataset("raw")); err != nil || m.Files != 1 || m.Unsettled != 0 {
		t.Fatalf("without settle: files %d, unsettled %d, err %v; want the file left before", m.Files, m.Unsettled, err)
	}
}

// TestRunBatchesStopped: a batch stopped by the update's cancellation committed nothing, so the
// flow's metrics are those of the batches before it: not its rows, files or expectations'
// counts. A batch that fails otherwise keeps its counts (they say what failed).
func TestRunBatchesStopped(t *testing.T) {
	t.Parallel()
	for _, stop := range []error{context.Canceled, fmt.Errorf("reading x: %w", context.Canceled), errors.New("disk full")} {
		n := 0
		m, err := runBatches(func(first bool, unread *unreadFiles) (Metrics, error) {
			n++
			b := Metrics{Version: int64(n), NumOutputRows: 10, Files: 1, more: true}
			b.Quality.DroppedRecords = 3
			if n == 2 {
				b.Version = -1
				return b, stop
			}
			return b, nil
		})
		if !errors.Is(err, stop) || n != 2 {
			t.Fatalf("%v: %d batches, error %v", stop, n, err)
		}
		want := int64(10)
		if !errors.Is(stop, context.Canceled) {
			want = 20
		}
		if m.NumOutputRows != want || int64(m.Files) != want/10 || m.Quality.DroppedRecords != 3*want/10 || m.Version != 1 {
			t.Errorf("%v: metrics %d rows, %d files, %d dropped, version %d; want %d rows, %d files, %d dropped, version 1",
				stop, m.NumOutputRows, m.Files, m.Quality.DroppedRecords, m.Version, want, want/10, 3*want/10)
		}
	}
}

// TestChangedFilesWarnBounded: files changed after they were read are each a WARN up to
// maxWarnEvents; the rest are one WARN that counts them and names the first (a batch that
// found 20,000 touched files made 20,000 events, in every update after); every one is counted.
func TestChangedFilesWarnBounded(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	n := maxWarnEvents + 5
	for i := range n {
		write(t, filepath.Join(landing, fmt.Sprintf("f%02d.json", i)), []byte(fmt.Sprintf(`{"id": %d}`+"\n", i)))
	}
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		write(t, filepath.Join(landing, fmt.Sprintf("f%02d.json", i)), []byte(fmt.Sprintf(`{"id": %d}`+"\n"+`{"id": 100}`+"\n", i)))
	}
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	all := rec.all()
	if m.ChangedFiles != n || strings.Count(all, " changed after it was read (size ") != maxWarnEvents ||
		!strings.Contains(all, "WARN 5 more files changed after they were read (the first: landing/f20.json); they are not read again") {
		t.Errorf("changed %d, events:\n%s", m.ChangedFiles, all)
	}
	if got := rawRows(t, p); len(got) != n {
		t.Errorf("%d rows, want %d (each file read once)", len(got), n)
	}
}
