package flows

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/expectations"
	"tributary/spec"
)

var rewrite = flag.Bool("update", false, "rewrite the expected output of the scripts under testdata/snapshot")

// TestSnapshotScripts runs the APPLY CHANGES FROM SNAPSHOT scripts of testdata/snapshot: each is
// a list of commands with their input and expected output (see snapshotScript.exec). Run with
// -update to write the actual output into the files, then review the diff. Each script runs a
// second time with every target merge-on-read (delta.enableDeletionVectors), for the same output.
func TestSnapshotScripts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "snapshot", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		for _, mor := range []bool{false, true} {
			name := strings.TrimSuffix(filepath.Base(file), ".txt")
			if mor {
				if *rewrite {
					continue
				}
				name += "/merge-on-read"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runSnapshotScript(t, file, mor)
			})
		}
	}
}

// step is one command of a script: the command line, its input lines, and its expected output.
type step struct {
	line     int
	cmd      string
	input    []string
	expected []string
	actual   []string
	before   []string // comments and blank lines before the command, kept by -update
}

func parseSnapshotScript(t *testing.T, file string) ([]*step, []string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []*step
	var pending []string
	sc := bufio.NewScanner(f)
	n := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		n++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pending = append(pending, l)
			continue
		}
		s := &step{line: n, cmd: l, before: pending}
		pending = nil
		for {
			l, ok := next()
			if !ok {
				t.Fatalf("%s:%d: %q has no ---- line", file, s.line, s.cmd)
			}
			if l == "----" {
				break
			}
			s.input = append(s.input, l)
		}
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				if ok {
					pending = append(pending, l)
				}
				break
			}
			s.expected = append(s.expected, l)
		}
		steps = append(steps, s)
	}
	return steps, pending
}

func runSnapshotScript(t *testing.T, file string, mor bool) {
	steps, tail := parseSnapshotScript(t, file)
	sc := &snapshotScript{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), mor: mor}
	for _, s := range steps {
		s.actual = sc.exec(s)
		if !*rewrite && strings.Join(s.actual, "\n") != strings.Join(s.expected, "\n") {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", file, s.line, s.cmd, strings.Join(s.actual, "\n"), strings.Join(s.expected, "\n"))
		}
	}
	if mor && strings.Contains(file, "scd1_") {
		// The SCD type 1 scripts replace rows of files that keep others: deletion vectors.
		dvs, _ := filepath.Glob(filepath.Join(sc.dir, "storage", "tables", "target", "deletion_vector_*.bin"))
		if len(dvs) == 0 {
			t.Errorf("%s: merge-on-read wrote no deletion vector", file)
		}
	}
	if *rewrite {
		var b strings.Builder
		for _, s := range steps {
			for _, l := range s.before {
				b.WriteString(l + "\n")
			}
			b.WriteString(s.cmd + "\n")
			for _, l := range s.input {
				b.WriteString(l + "\n")
			}
			b.WriteString("----\n")
			for _, l := range s.actual {
				b.WriteString(l + "\n")
			}
		}
		for _, l := range tail {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshotScript is the state of one script: a pipeline with a source (the dataset raw, or the
// folder snapshots/) and the target dataset target.
type snapshotScript struct {
	t      *testing.T
	dir    string
	p      *spec.Pipeline
	files  bool // the source is a folder of files
	nfiles int
	now    time.Time
	mor    bool // every target merge-on-read
}

const snapshotScriptSpec = `name: t
storage: ./storage
datasets:
  - name: raw
    source: {path: ./landing, format: json, schema: "id BIGINT, name STRING, city STRING"}
  - name: target
    apply_changes_from_snapshot:
      source: %s
      keys: [%s]
      stored_as_scd_type: %s
%s`

// exec runs one command and returns its output lines. Commands:
//
//	spec source=dataset|files scd=1|2 [keys=a,b] [track=a,b] [except=a,b] [mode=M] [keep]
//	                                 a new pipeline in a new folder (keep: the same folder, to
//	                                 change a spec); keys default to id; mode is the files'
//	                                 reader mode; input: more lines for the target dataset
//	                                 (expectations, ...)
//	snapshot [file=NAME]             input: the rows of a new snapshot, JSON lines; a new version
//	                                 of raw that replaces all of its rows, or a file in snapshots/
//	                                 (default name snap-NNNN.json)
//	run                              the flow; prints its status and metrics, then WARN events
//	table                            the target's rows, sorted
//	changes from=N                   the target's change data feed from version N, sorted per version
//	progress                         the txn version of the flow and the files of each offsets record
//	rollback                         removes the target's latest commit: the state a crash just
//	                                 before that commit leaves (data files and offsets written)
//	refresh                          a full refresh of the target
func (sc *snapshotScript) exec(s *step) []string {
	t := sc.t
	f := strings.Fields(s.cmd)
	args := map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	switch f[0] {
	case "spec":
		if _, keep := args["keep"]; !keep || sc.dir == "" {
			sc.dir, sc.nfiles = t.TempDir(), 0
		}
		sc.files = args["source"] == "files"
		source := "raw"
		if sc.files {
			mode := ""
			if args["mode"] != "" {
				mode = ", mode: " + args["mode"]
			}
			if args["rescued"] != "" {
				mode += ", rescued_data_column: " + args["rescued"]
			}
			source = `{path: ./snapshots, format: json, schema: "id BIGINT, name STRING, city STRING"` + mode + `}`
			if err := os.MkdirAll(filepath.Join(sc.dir, "snapshots"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		keys := "id"
		if args["keys"] != "" {
			keys = args["keys"]
		}
		extra := ""
		if args["track"] != "" {
			extra += "      track_history_column_list: [" + args["track"] + "]\n"
		}
		if args["except"] != "" {
			extra += "      track_history_except_column_list: [" + args["except"] + "]\n"
		}
		for _, l := range s.input {
			extra += l + "\n"
		}
		if sc.mor {
			extra += "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
		}
		sc.p = loadPipeline(t, sc.dir, fmt.Sprintf(snapshotScriptSpec, source, keys, args["scd"], extra))
		return nil
	case "snapshot":
		if sc.files {
			sc.nfiles++
			name := args["file"]
			if name == "" {
				name = fmt.Sprintf("snap-%04d.json", sc.nfiles)
			}
			text := strings.Join(s.input, "\n")
			if text != "" {
				text += "\n"
			}
			if err := os.WriteFile(filepath.Join(sc.dir, "snapshots", name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return nil
		}
		return []string{fmt.Sprintf("version %d", sc.overwriteRaw(s.input))}
	case "run":
		rec := &recorder{}
		env := &Env{Pipeline: sc.p, Events: rec, Now: func() time.Time { return sc.now }}
		sc.now = sc.now.Add(time.Minute)
		m, err := Run(context.Background(), env, sc.p.Dataset("target"))
		var out []string
		switch {
		case err != nil:
			out = append(out, "ERROR "+strings.ReplaceAll(err.Error(), sc.dir, "$TMP"))
		case m.Idle:
			out = append(out, "IDLE")
		default:
			line := fmt.Sprintf("COMPLETED upserted=%d deleted=%d version=%d", m.NumUpsertedRows, m.NumDeletedRows, m.Version)
			if m.Files > 0 {
				line += fmt.Sprintf(" files=%d", m.Files)
			}
			if m.BadRecords > 0 {
				line += fmt.Sprintf(" bad=%d", m.BadRecords)
			}
			if m.Quality.DroppedRecords > 0 {
				line += fmt.Sprintf(" dropped=%d", m.Quality.DroppedRecords)
			}
			out = append(out, line)
		}
		for _, msg := range rec.msgs {
			if strings.HasPrefix(msg, eventlog.Warn+" ") {
				out = append(out, strings.ReplaceAll(msg, sc.dir, "$TMP"))
			}
		}
		return out
	case "table":
		tb := delta.New(TableDir(sc.p.Storage, "target"))
		snap, err := tb.Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tb.Rows(snap)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			// a rescued-data column names the snapshot file
			out = append(out, strings.ReplaceAll(expectations.RowJSON(snap.Metadata.Schema, r), sc.dir, "$TMP"))
		}
		sort.Strings(out)
		if len(out) == 0 {
			out = []string{"(empty)"}
		}
		return out
	case "changes":
		from, _ := strconv.ParseInt(args["from"], 10, 64)
		sch, rows, err := delta.New(TableDir(sc.p.Storage, "target")).Changes(from, -1)
		if err != nil {
			return []string{"ERROR " + err.Error()}
		}
		n := len(sch.Fields) - 3 // _change_type, _commit_version, _commit_timestamp
		data := sch
		data.Fields = sch.Fields[:n]
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("v%d %s %s", r[n+1], strings.ReplaceAll(expectations.RowJSON(data, r), sc.dir, "$TMP"), r[n]))
		}
		sort.Strings(out)
		if len(out) == 0 {
			out = []string{"(none)"}
		}
		return out
	case "progress":
		snap, err := delta.New(TableDir(sc.p.Storage, "target")).Snapshot(-1)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := snap.AppTxns[AppID(sc.p, "target")]
		out := []string{fmt.Sprintf("txn %d (set: %v)", v, ok)}
		if sc.files {
			for b := int64(1); b <= v; b++ {
				o, err := readOffsets(CheckpointDir(sc.p.Storage, "target"), b)
				if err != nil {
					out = append(out, fmt.Sprintf("snapshot %d: %v", b, err))
					continue
				}
				var names []string
				for _, f := range o.Files {
					names = append(names, f.Path)
				}
				out = append(out, fmt.Sprintf("snapshot %d: %s", b, strings.Join(names, ",")))
			}
		}
		return out
	case "rollback":
		tb := delta.New(TableDir(sc.p.Storage, "target"))
		v, err := tb.LatestVersion()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(tb.Dir, "_delta_log", fmt.Sprintf("%020d.json", v))); err != nil {
			t.Fatal(err)
		}
		// The process that made the commit is gone, and with it what it kept in memory.
		stateCache.Delete(StateDir(sc.p.Storage, "target"))
		loadedStates.Delete(StateDir(sc.p.Storage, "target"))
		histCache.Delete(StateDir(sc.p.Storage, "target"))
		return []string{fmt.Sprintf("removed version %d", v)}
	case "refresh":
		d := sc.p.Dataset("target")
		if err := Reset(sc.p, d); err != nil {
			t.Fatal(err)
		}
		if err := Setup(sc.p, d); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	t.Fatalf("line %d: unknown command %q", s.line, s.cmd)
	return nil
}

// overwriteRaw commits a new version of raw whose rows are exactly the given JSON lines (every
// earlier file removed), as a table rewritten with each snapshot would be; it returns the version.
func (sc *snapshotScript) overwriteRaw(lines []string) int64 {
	t := sc.t
	raw := sc.p.Dataset("raw")
	lr := newLineReader(raw.Schema, "", "input")
	var rows [][]any
	for i, l := range lines {
		r, ok, bad := lr.parse([]byte(l), int64(i+1))
		if !ok || len(bad) > 0 {
			t.Fatalf("snapshot row %q: %v", l, bad)
		}
		rows = append(rows, r)
	}
	tb := delta.New(TableDir(sc.p.Storage, "raw"))
	snap, err := tb.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	tx := tb.Begin(snap)
	for _, f := range snap.Files {
		tx.Remove(tb.RemoveFor(f, 0))
	}
	if len(rows) > 0 {
		add, err := tb.WriteFile(raw.Schema, rows)
		if err != nil {
			t.Fatal(err)
		}
		tx.Add(add)
	}
	v, err := tx.Commit("WRITE", map[string]any{"mode": "Overwrite"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSnapshotFilesSettle: with Env.Settle, a snapshot file modified within it (still being
// written, perhaps) waits for a later update, and so do the snapshots named after it (they are
// applied in name order); Metrics.Unsettled counts it. Without the window they are applied.
func TestSnapshotFilesSettle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, fmt.Sprintf(snapshotScriptSpec, `{path: ./snapshots, format: json, schema: "id BIGINT, name STRING, city STRING"}`, "id", "1", ""))
	if err := os.MkdirAll(filepath.Join(dir, "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for name, at := range map[string]time.Time{"1.json": now.Add(-time.Hour), "2.json": now, "3.json": now.Add(-time.Hour)} {
		writeAt(t, filepath.Join(dir, "snapshots", name), []byte(`{"id": 1, "name": "`+name+`", "city": "Oslo"}`+"\n"), at)
	}
	env := &Env{Pipeline: p, Events: &recorder{}, Settle: time.Hour}
	m, err := Run(context.Background(), env, p.Dataset("target"))
	if err != nil || m.Files != 1 || m.Unsettled != 1 {
		t.Fatalf("files %d, unsettled %d, err %v; want 1.json applied and 2.json left", m.Files, m.Unsettled, err)
	}
	env.Settle = 0
	if m, err = Run(context.Background(), env, p.Dataset("target")); err != nil || m.Files != 2 || m.Unsettled != 0 {
		t.Fatalf("without the window: files %d, unsettled %d, err %v; want 2.json and 3.json", m.Files, m.Unsettled, err)
	}
}

// TestSnapshotFileIncomplete: a compressed snapshot file whose stream ends early (being
// written) is not applied, and the snapshots named after it wait with it (applied in name order),
// with a WARN, as a file still settling does (the update once failed); once complete, it and
// they are applied in order.
func TestSnapshotFileIncomplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, fmt.Sprintf(snapshotScriptSpec, `{path: ./snapshots, format: json, schema: "id BIGINT, name STRING, city STRING"}`, "id", "1", ""))
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	row := func(name string) string { return `{"id": 1, "name": "` + name + `", "city": "Oslo"}` + "\n" }
	write(t, filepath.Join(snaps, "1.json"), []byte(row("one")))
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(row("two")))
	zw.Flush()
	write(t, filepath.Join(snaps, "2.json.gz"), b.Bytes())
	write(t, filepath.Join(snaps, "3.json"), []byte(row("three")))
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec}
	m, err := Run(context.Background(), env, p.Dataset("target"))
	if err != nil || m.Files != 1 || m.Unsettled != 0 || m.Incomplete != 1 || !strings.Contains(rec.all(), "2.json.gz: the file ends before its gzip stream does: it is still being written, or truncated; it and the snapshots after it are left") {
		t.Fatalf("files %d, unsettled %d, incomplete %d, err %v; want 1.json applied and 2.json.gz left as incomplete (not settling: a truncated file would be looked at every second)\n%s", m.Files, m.Unsettled, m.Incomplete, err, rec.all())
	}
	zw.Close()
	write(t, filepath.Join(snaps, "2.json.gz"), b.Bytes())
	if m, err = Run(context.Background(), env, p.Dataset("target")); err != nil || m.Files != 2 {
		t.Fatalf("after 2.json.gz is complete: files %d, err %v; want 2.json.gz and 3.json", m.Files, err)
	}
	if _, rows := readTable(t, p, "target"); len(rows) != 1 || rows[0][1] != "three" {
		t.Errorf("target rows %v, want the third snapshot's", rows)
	}
}

// TestSnapshotFileIncompleteNotReadAgainInUpdate: in a continuous update (one Env), a snapshot
// file found incomplete is not read again, nor its WARN said again, while it stays as it was; it
// and the snapshots after it go on waiting, counted, and are applied once it is complete.
func TestSnapshotFileIncompleteNotReadAgainInUpdate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, fmt.Sprintf(snapshotScriptSpec, `{path: ./snapshots, format: json, schema: "id BIGINT, name STRING, city STRING"}`, "id", "1", ""))
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	row := func(name string) string { return `{"id": 1, "name": "` + name + `", "city": "Oslo"}` + "\n" }
	write(t, filepath.Join(snaps, "1.json"), []byte(row("one")))
	write(t, filepath.Join(snaps, "2.json"), []byte(`{"id": 1, "na`))
	rec := &recorder{}
	env := &Env{Pipeline: p, Events: rec}
	if m, err := Run(context.Background(), env, p.Dataset("target")); err != nil || m.Files != 1 || m.Incomplete != 1 {
		t.Fatalf("first batch: %+v, err %v\n%s", m, err, rec.all())
	}
	write(t, filepath.Join(snaps, "3.json"), []byte(row("three")))
	rec2 := &recorder{}
	env.Events = rec2
	m, err := Run(context.Background(), env, p.Dataset("target"))
	if err != nil || m.Files != 0 || m.Incomplete != 1 || strings.Contains(rec2.all(), "2.json") {
		t.Fatalf("next batch: %+v, err %v; want 2.json and 3.json waiting, 2.json counted and not said again\n%s", m, err, rec2.all())
	}
	appendTo(t, filepath.Join(snaps, "2.json"), `me": "two", "city": "Oslo"}`+"\n")
	if m, err = Run(context.Background(), env, p.Dataset("target")); err != nil || m.Files != 2 || m.Incomplete != 0 {
		t.Fatalf("once complete: %+v, err %v\n%s", m, err, rec2.all())
	}
	if _, rows := readTable(t, p, "target"); len(rows) != 1 || rows[0][1] != "three" {
		t.Errorf("target rows %v, want the third snapshot's", rows)
	}
}

// TestSnapshotDoubleKeyZero: a DOUBLE key compares as Spark SQL compares it, -0.0 equal to 0.0.
// A snapshot that holds the previous one's row under -0.0 changes nothing, and one that holds two
// different rows for 0.0 and -0.0 has two rows for one key, which fails it.
func TestSnapshotDoubleKeyZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: target
    apply_changes_from_snapshot:
      source: {path: ./snapshots, format: json, schema: "d DOUBLE, v STRING"}
      keys: [d]
`)
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	env := &Env{Pipeline: p, Events: &recorder{}}
	write(t, filepath.Join(snaps, "1.json"), []byte(`{"d": 0.0, "v": "a"}`+"\n"))
	if _, err := Run(context.Background(), env, p.Dataset("target")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(snaps, "2.json"), []byte(`{"d": -0.0, "v": "a"}`+"\n"))
	m, err := Run(context.Background(), env, p.Dataset("target"))
	if err != nil || m.NumUpsertedRows != 0 || m.NumDeletedRows != 0 {
		t.Fatalf("upserted %d, deleted %d, err %v; want the snapshot of -0.0 to change nothing", m.NumUpsertedRows, m.NumDeletedRows, err)
	}
	if _, rows := readTable(t, p, "target"); len(rows) != 1 || math.Signbit(rows[0][0].(float64)) || rows[0][1] != "a" {
		t.Errorf("target rows %v, want [[0 a]]", rows)
	}
	write(t, filepath.Join(snaps, "3.json"), []byte(`{"d": -0.0, "v": "a"}`+"\n"+`{"d": 0.0, "v": "b"}`+"\n"))
	if _, err := Run(context.Background(), env, p.Dataset("target")); err == nil || !strings.Contains(err.Error(), `two different rows for the key {"d": 0}`) {
		t.Errorf("err %v, want two different rows for one key", err)
	}
}
