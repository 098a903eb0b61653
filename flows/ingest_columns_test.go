package flows

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tributary/delta"
)

// columnsSpec is an ingest of every primitive type the column reader keeps, mode %MODE%.
const columnsSpec = `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, n INT, small SMALLINT, tiny TINYINT, d DOUBLE, f FLOAT, ok BOOLEAN, s STRING, bin BINARY, day DATE, at TIMESTAMP, local TIMESTAMP_NTZ, amount DECIMAL(10,2)"
      mode: %MODE%
`

// messyLines returns n seeded lines of JSON-lines input for columnsSpec: most of them clean
// objects (fields in order or not, some missing or null, strings with escapes, a field the
// schema does not have, one whose name differs from a column's only in case), and among them
// values that do not fit their column, lines that are not JSON objects, arrays of objects,
// blank lines and lines ended by a bare "\r".
func messyLines(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 3))
	object := func(i int) string {
		fields := []string{
			fmt.Sprintf(`"id": %d`, i),
			fmt.Sprintf(`"n": %d`, rng.Int32()-1<<30),
			fmt.Sprintf(`"small": %d`, rng.IntN(60000)-30000),
			fmt.Sprintf(`"tiny": %d`, rng.IntN(250)-125),
			fmt.Sprintf(`"d": %g`, rng.NormFloat64()*1e5),
			fmt.Sprintf(`"f": %g`, float32(rng.NormFloat64())),
			fmt.Sprintf(`"ok": %v`, rng.IntN(2) == 1),
			fmt.Sprintf(`"s": "name-%d%s"`, rng.IntN(1000), []string{"", `\"q\"`, `\u00e9t\u00e9`, `\n`, "ü"}[rng.IntN(5)]),
			`"bin": "aGVsbG8="`,
			fmt.Sprintf(`"day": "2024-%02d-%02d"`, 1+rng.IntN(12), 1+rng.IntN(28)),
			fmt.Sprintf(`"at": "2024-03-%02dT%02d:00:00Z"`, 1+rng.IntN(28), rng.IntN(24)),
			fmt.Sprintf(`"local": "2024-05-01T%02d:30:00"`, rng.IntN(24)),
			fmt.Sprintf(`"amount": %d.%02d`, rng.IntN(100000), rng.IntN(100)),
		}
		switch rng.IntN(12) {
		case 0:
			rng.Shuffle(len(fields), func(a, b int) { fields[a], fields[b] = fields[b], fields[a] })
		case 1:
			fields = fields[:len(fields)-1-rng.IntN(5)] // missing
		case 2:
			fields[rng.IntN(len(fields)-1)+1] = `"s": null`
			fields[7] = `"s": null`
		case 3:
			fields = append(fields, `"extra": {"deep": [1, 2]}`)
		case 4:
			fields = append(fields[:8], append([]string{`"S": "case"`}, fields[8:]...)...)
		}
		return "{" + strings.Join(fields, ", ") + "}"
	}
	var out []string
	for i := 0; len(out) < n; i++ {
		switch r := rng.IntN(100); {
		case r < 3:
			out = append(out, fmt.Sprintf(`{"id": %d, "n": "many", "tiny": 300}`, i)) // unfit values
		case r < 4:
			// Values off the common paths: a BIGINT beyond 64 bits or written as a string, a
			// DECIMAL beyond its precision or as a string, a number and a boolean for a STRING.
			out = append(out, []string{
				fmt.Sprintf(`{"id": %d, "amount": 123456789.12, "s": 12}`, i),
				fmt.Sprintf(`{"id": 99999999999999999999, "amount": "1,234.50", "s": true}`),
				fmt.Sprintf(`{"id": "%d", "amount": -0.5, "s": -7.25e3}`, i),
				fmt.Sprintf(`{"id": %d.0, "amount": 1e3, "s": null}`, i),
			}[rng.IntN(4)])
		case r < 5:
			out = append(out, `{"id": oops`) // not JSON
		case r < 6:
			out = append(out, "[1, 2]") // not an object
		case r < 8:
			out = append(out, "["+object(i)+", "+object(-i)+"]") // an array of objects
		case r < 9:
			out = append(out, "  ")
		case r < 10:
			out = append(out, object(i)+"\r"+object(-i)) // two lines ended by a bare "\r"
		default:
			out = append(out, object(i))
		}
	}
	return out
}

// ingestResult is what an ingest batch left behind: its metrics and error, its events, and the
// data files it committed (their bytes and add actions), its offsets.
type ingestResult struct {
	err     string
	metrics string
	events  string
	files   [][]byte
	adds    []string
	offsets string
}

// ingestFileSize, when set, is the delta.targetFileSize of the table ingestOnce writes (a table
// property value such as "16kb").
var ingestFileSize string

// ingestOnce runs one ingest of the files (name -> content) under columnsSpec in mode, by
// column or not, and returns what it left.
func ingestOnce(t *testing.T, mode string, files map[string][]byte, byColumns bool) ingestResult {
	t.Helper()
	ingestColumnsOff.Store(!byColumns)
	defer ingestColumnsOff.Store(false)
	dir := t.TempDir()
	spec := strings.ReplaceAll(columnsSpec, "%MODE%", mode)
	if ingestFileSize != "" {
		spec += "    table_properties:\n      delta.targetFileSize: \"" + ingestFileSize + "\"\n"
	}
	p := loadPipeline(t, dir, spec)
	for name, data := range files {
		writeAt(t, filepath.Join(dir, "landing", name), data, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	before := ingestColumnBatches.Load()
	m, rec, err := ingest(t, p)
	if used := ingestColumnBatches.Load() > before; used != byColumns {
		t.Fatalf("read by column: %v, want %v", used, byColumns)
	}
	var r ingestResult
	if err != nil {
		r.err = strings.ReplaceAll(err.Error(), dir, "DIR")
	}
	r.metrics = fmt.Sprintf("rows %d, bad %d, files %d, version %d", m.NumOutputRows, m.BadRecords, m.Files, m.Version)
	r.events = strings.ReplaceAll(rec.all(), dir, "DIR")
	table := delta.New(TableDir(p.Storage, "raw"))
	snap, serr := table.Snapshot(-1)
	if serr != nil {
		t.Fatal(serr)
	}
	for _, a := range snap.Files {
		data, err := os.ReadFile(filepath.Join(table.Dir, a.Path))
		if err != nil {
			t.Fatal(err)
		}
		r.files = append(r.files, data)
		r.adds = append(r.adds, fmt.Sprintf("size %d, stats %s", a.Size, a.Stats))
	}
	if o, err := os.ReadFile(offsetsPath(CheckpointDir(p.Storage, "raw"), 1)); err == nil {
		r.offsets = strings.ReplaceAll(string(o), dir, "DIR")
	}
	return r
}

// TestIngestByColumnsEquivalence: an ingest read by column leaves what the same ingest read as
// rows leaves, byte for byte: the same data files (row groups, statistics), the same offsets,
// metrics, WARN events and errors, in each mode, for input of every kind of line (messyLines)
// in three files, one of them gzip-compressed and one compressed and damaged half way, with
// blocks and chunks of several sizes (a chunk ending within a block, or at its end). It is not
// parallel: it changes chunkRows and jsonBlockSize.
func TestIngestByColumnsEquivalence(t *testing.T) {
	savedRows, savedBlock := chunkRows, jsonBlockSize
	defer func() { chunkRows, jsonBlockSize = savedRows, savedBlock }()
	var gz, damaged bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(messyLines(1500, 2), "\n") + "\n"))
	zw.Close()
	zw = gzip.NewWriter(&damaged)
	zw.Write([]byte(strings.Join(messyLines(1500, 3), "\n") + "\n"))
	zw.Close()
	bad := damaged.Bytes()
	for i := len(bad) / 2; i < len(bad)/2+64; i++ {
		bad[i] ^= 0x5a
	}
	files := map[string][]byte{
		"a.json":    []byte(strings.Join(messyLines(3000, 1), "\n")), // its last line without "\n"
		"b.json.gz": gz.Bytes(),
		"c.json.gz": bad,
	}
	clean := map[string][]byte{"a.json": []byte(strings.Join(messyLines(3000, 4)[:1], "\n") + "\n")}
	// A value that does not fit, then a last line cut short (a file still being written) in the
	// same block: the mode takes the line before the cut one (failfast fails on it, permissive
	// warns), then the file is left for a later update.
	cut := map[string][]byte{"a.json": []byte(`{"id": 1}` + "\n" + `{"id": "x"}` + "\n" + `{"id": 3, "s": "ab`)}
	defer func() { ingestFileSize = "" }()
	// The last: data files of 16 KiB, several a batch, which must end at the same rows.
	for k, sizes := range [][2]int{{savedRows, savedBlock}, {97, 2000}, {1000, 64}, {savedRows, savedBlock}} {
		chunkRows, jsonBlockSize = sizes[0], sizes[1]
		if k == 3 {
			ingestFileSize = "16kb"
		}
		for _, mode := range []string{"permissive", "dropmalformed", "failfast"} {
			in := files
			if mode == "failfast" {
				// Its first bad line fails the batch: the clean file first, then the messy ones.
				in = map[string][]byte{"0.json": clean["a.json"], "a.json": files["a.json"]}
			}
			for _, c := range []struct {
				what string
				in   map[string][]byte
			}{{"messy input", in}, {"a cut last line", cut}} {
				name := fmt.Sprintf("%s, %s, chunks of %d rows, blocks of %d bytes, files of %q", mode, c.what, chunkRows, jsonBlockSize, ingestFileSize)
				in := c.in
				rows, cols := ingestOnce(t, mode, in, false), ingestOnce(t, mode, in, true)
				differs := false
				for _, f := range []struct{ what, cols, rows string }{
					{"error", cols.err, rows.err}, {"metrics", cols.metrics, rows.metrics},
					{"events", cols.events, rows.events}, {"offsets", cols.offsets, rows.offsets},
				} {
					if f.cols != f.rows {
						differs = true
						t.Errorf("%s: the %s differ from line %d on:\nby column: %.300s\nas rows:   %.300s", name, f.what, firstLineDiff(f.cols, f.rows)+1, lineFrom(f.cols, firstLineDiff(f.cols, f.rows)), lineFrom(f.rows, firstLineDiff(f.cols, f.rows)))
					}
				}
				if differs {
					continue
				}
				if len(cols.files) != len(rows.files) {
					t.Errorf("%s: %d files by column, %d as rows", name, len(cols.files), len(rows.files))
					continue
				}
				for i := range cols.files {
					if !bytes.Equal(cols.files[i], rows.files[i]) || cols.adds[i] != rows.adds[i] {
						t.Errorf("%s: file %d differs: by column %s, as rows %s", name, i, cols.adds[i], rows.adds[i])
					}
				}
				// What the input holds shows up: rows, bad values and lines, the failfast error.
				switch {
				case mode == "failfast":
					if !strings.Contains(rows.err, "mode: failfast") {
						t.Errorf("%s: error %q, want failfast's", name, rows.err)
					}
				case c.what == "a cut last line":
					if !strings.Contains(rows.events, `a.json:2: column id: "x"`) || rows.offsets != "" {
						t.Errorf("%s: events\n%s\noffsets %q; want the WARN of line 2, and the file left unread", name, rows.events, rows.offsets)
					}
				default:
					if !strings.Contains(rows.metrics, "files 3") || strings.Contains(rows.metrics, "bad 0,") || len(rows.files) == 0 {
						t.Errorf("%s: %s with %d files, want the three files read, bad records counted, rows written", name, rows.metrics, len(rows.files))
					}
					if ingestFileSize != "" && len(rows.files) < 4 {
						t.Errorf("%s: %d data files, want several of 16 KiB", name, len(rows.files))
					}
				}
			}
		}
	}
}

// TestIngestByColumnsWhen: an ingest is read by column only when its rows go to its data files
// as they are: not with an expectation, a partition column, a rescued-data or metadata column, a
// nested column, or multiline JSON; then it is read as rows.
func TestIngestByColumnsWhen(t *testing.T) {
	t.Parallel()
	base := `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "%SCHEMA%"%SOURCE%%DATASET%
`
	for _, c := range []struct {
		name, schema, source, dataset string
		want                          bool
	}{
		{"plain", "id BIGINT, s STRING", "", "", true},
		{"the example's change log", "op STRING, order_id BIGINT, status STRING, amount DECIMAL(10,2), seq BIGINT", "", "", true},
		{"expectation", "id BIGINT, s STRING", "", "\n    expectations:\n      - name: positive\n        expect: id > 0", false},
		{"partitioned", "id BIGINT, s STRING", "", "\n    partition_by: [s]", false},
		{"rescued", "id BIGINT, s STRING", "\n      rescued_data_column: _rescued", "", false},
		{"metadata", "id BIGINT, s STRING", "\n      include_metadata: true", "", false},
		{"nested", "id BIGINT, tags ARRAY<STRING>", "", "", false},
		{"multiline", "id BIGINT, s STRING", "\n      options:\n        multiline: \"true\"", "", false},
	} {
		text := strings.NewReplacer("%SCHEMA%", c.schema, "%SOURCE%", c.source, "%DATASET%", c.dataset).Replace(base)
		dir := t.TempDir()
		p := loadPipeline(t, dir, text)
		d := p.Dataset("raw")
		snap, err := delta.New(TableDir(p.Storage, "raw")).Snapshot(-1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		set, err := expectationSet(d, d.Schema)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		quar, err := openQuarantine(p.Storage, d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := ingestByColumns(d, snap.Metadata, set, quar); got != c.want {
			t.Errorf("%s: read by column %v, want %v", c.name, got, c.want)
		}
	}
}

// firstLineDiff returns the first line (0-based) at which a and b differ.
func firstLineDiff(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i
		}
	}
	return min(len(la), len(lb))
}

// lineFrom returns the lines of s from line i on.
func lineFrom(s string, i int) string {
	l := strings.Split(s, "\n")
	if i >= len(l) {
		return "(end)"
	}
	return strings.Join(l[i:], "\n")
}

// detailRecorder keeps the messages and details of the WARN events a flow emits.
type detailRecorder struct {
	msgs    []string
	details []map[string]any
}

func (r *detailRecorder) Emit(level, eventType, flow, dataset, message string, details map[string]any, errText string) {
	if level == "WARN" {
		r.msgs = append(r.msgs, message)
		r.details = append(r.details, details)
	}
}

// TestMalformedLineWarning: the WARN of a line that is not JSON quotes the start of the line (at
// most 40 characters, "..." after a longer one) after the parser's words, and its details name
// file and line but no column; the WARN of a value that does not fit names its column.
func TestMalformedLineWarning(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"id": 1}`+"\n"+
		"this is not json at all\n"+
		`{"id": "x"}`+"\n"+
		"nope, ünïcödé and more text than forty characters in all\n"))
	rec := &detailRecorder{}
	if _, err := Ingest(context.Background(), &Env{Pipeline: p, Events: rec}, p.Dataset("raw")); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		msg    string
		line   int64
		column string
	}{
		{`landing/a.json:2: the line is not valid JSON (invalid character 'h' in literal true (expecting 'r')); it starts "this is not json at all"; the line becomes a row of NULLs`, 2, ""},
		{`landing/a.json:3: column id: "x" is not a whole number for BIGINT; the value is NULL`, 3, "id"},
		{`landing/a.json:4: the line is not valid JSON (invalid character 'o' in literal null (expecting 'u')); it starts "nope, ünïcödé and more text than forty c"...; the line becomes a row of NULLs`, 4, ""},
	}
	if len(rec.msgs) != len(want) {
		t.Fatalf("WARN events:\n%s\nwant %d", strings.Join(rec.msgs, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(rec.msgs[i], w.msg) {
			t.Errorf("WARN %d:\n%s\nwant it to start with\n%s", i, rec.msgs[i], w.msg)
		}
		d := rec.details[i]
		col, has := d["column"]
		if d["line"] != w.line || has != (w.column != "") || (has && col != w.column) {
			t.Errorf("WARN %d details %v, want line %d and column %q (none when empty)", i, d, w.line, w.column)
		}
	}
}
