package flows

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"tributary/schema"
	"tributary/spec"
)

// TestEachJSONLineOrder parses lines in parallel blocks and hands them on in line order, with
// blank lines skipped but counted, malformed lines reported in place, a line longer than a
// block read whole, rows with room for rowSpare more values, and fn's error stopping the read,
// with one worker and with several. It is not parallel: it changes GOMAXPROCS and
// jsonBlockSize.
func TestEachJSONLineOrder(t *testing.T) {
	for _, procs := range []int{1, 4} {
		t.Run(fmt.Sprint(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			testEachJSONLineOrder(t)
		})
	}
}

func testEachJSONLineOrder(t *testing.T) {
	saved := jsonBlockSize
	jsonBlockSize = 1000 // about 70 lines a block
	defer func() { jsonBlockSize = saved }()
	s := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true}}}
	var text strings.Builder
	const n = 1553
	for i := range n {
		switch {
		case i == 700:
			text.WriteString("\n") // a blank line: no row
		case i == 701:
			text.WriteString(" \t\u00a0\r\n") // white space only: no row
		case i == 1000:
			text.WriteString("{broken\n")
		case i == 1200: // longer than two blocks
			fmt.Fprintf(&text, "{\"pad\": %q, \"id\": %d}\n", strings.Repeat("x", 2500), i)
		default:
			fmt.Fprintf(&text, "{\"id\": %d}\r\n", i)
		}
	}
	text.WriteString("{\"id\": 1553}") // the last line, without a line end
	var got []string
	err := eachJSONLine(newLineReader(s, "", "f.json"), strings.NewReader(text.String()), nil, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
		got = append(got, fmt.Sprintf("%d:%v:%v:%d", lineNo, row[0], parsed, len(bad)))
		if ext := append(row, "file", int64(0), 0, lineNo); &ext[0] != &row[0] {
			return fmt.Errorf("line %d: appending %d values copied the row", lineNo, rowSpare)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n-1 {
		t.Fatalf("%d rows, want %d", len(got), n-1)
	}
	for i, line := 0, 1; i < len(got); i, line = i+1, line+1 {
		if line == 701 {
			line += 2 // the blank lines
		}
		want := fmt.Sprintf("%d:%d:true:0", line, line-1)
		if line == 1001 {
			want = "1001:<nil>:false:1"
		}
		if got[i] != want {
			t.Fatalf("row %d is %s, want %s", i, got[i], want)
		}
	}

	stop := errors.New("stop")
	calls := 0
	err = eachJSONLine(newLineReader(s, "", "f.json"), strings.NewReader(text.String()), nil, func([]any, bool, []badValue, int64) error {
		calls++
		if calls == 503 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 503 {
		t.Errorf("after fn's error: err %v after %d calls; want the error after 503", err, calls)
	}

	broken := io.MultiReader(strings.NewReader("{\"id\": 1}\n"), errReader{})
	calls = 0
	err = eachJSONLine(newLineReader(s, "", "f.json"), broken, nil, func([]any, bool, []badValue, int64) error { calls++; return nil })
	if err == nil || err.Error() != "disk on fire" || calls != 1 {
		t.Errorf("read error: got %v after %d rows, want disk on fire after 1", err, calls)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestEachJSONLineReaders: the rows do not depend on how the reader hands out the input (a byte
// at a time, with the last data and io.EOF together, in halves), and a reader that returns
// nothing, again and again, is an error, not a hang.
func TestEachJSONLineReaders(t *testing.T) {
	t.Parallel()
	s := schema.Schema{Fields: []schema.Field{{Name: "s", Type: schema.Type{Kind: schema.String}, Nullable: true}}}
	text := "{\"s\": \"a\"}\n\n{\"s\": \"b\\u00e9\"}\r\n{bad\n{\"s\": \"c\"}"
	read := func(in io.Reader) (string, error) {
		var got []string
		err := eachJSONLine(newLineReader(s, "", "f.json"), in, nil, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
			got = append(got, fmt.Sprintf("%d:%v:%v", lineNo, row[0], parsed))
			return nil
		})
		return strings.Join(got, " "), err
	}
	const want = "1:a:true 3:bé:true 4:<nil>:false 5:c:true"
	for name, in := range map[string]io.Reader{
		"whole":    strings.NewReader(text),
		"one byte": iotest.OneByteReader(strings.NewReader(text)),
		"data+EOF": iotest.DataErrReader(strings.NewReader(text)),
		"halves":   iotest.HalfReader(strings.NewReader(text)),
	} {
		if got, err := read(in); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	// A UTF-8 byte-order mark at the start is not part of the first line; one elsewhere is.
	if got, err := read(strings.NewReader("\uFEFF" + text)); err != nil || got != want {
		t.Errorf("after a byte-order mark: %q, %v; want %q", got, err, want)
	}
	if got, _ := read(strings.NewReader("{\"s\": \"a\"}\n\uFEFF{\"s\": \"b\"}")); got != "1:a:true 2:<nil>:false" {
		t.Errorf("a byte-order mark on line 2: %q, want the line malformed", got)
	}
	if _, err := read(emptyReader{}); err != io.ErrNoProgress {
		t.Errorf("a reader that returns nothing: %v, want %v", err, io.ErrNoProgress)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// TestJSONLinesArrayLines: a line of JSON-lines input that holds an array of objects is a row of
// each object, as Spark's JSON reader makes it (an empty array, none), with the line's number;
// an array of anything else stays one malformed line. Block memory holds a row per line, so the
// rows of an array line must not take the slots of the lines after it (small blocks, many
// lines). Schema inference sees the objects' fields.
func TestJSONLinesArrayLines(t *testing.T) {
	saved := jsonBlockSize
	jsonBlockSize = 200
	defer func() { jsonBlockSize = saved }()
	var text strings.Builder
	want := []string{}
	line := int64(0)
	for i := range 60 {
		line++
		switch i % 6 {
		case 0:
			fmt.Fprintf(&text, "[{\"id\": %d, \"name\": \"a%d\"}, {\"id\": %d}, {\"id\": %d, \"name\": \"c\"}]\n", i, i, i+1000, i+2000)
			want = append(want, fmt.Sprintf("%d:%d:a%d:true", line, i, i), fmt.Sprintf("%d:%d:<nil>:true", line, i+1000), fmt.Sprintf("%d:%d:c:true", line, i+2000))
		case 1:
			text.WriteString("  [ ]  \n") // no row
		case 2:
			text.WriteString("[1, 2]\n")
			want = append(want, fmt.Sprintf("%d:<nil>:<nil>:false", line))
		case 3:
			text.WriteString("[{\"id\": 1}, 2]\n")
			want = append(want, fmt.Sprintf("%d:<nil>:<nil>:false", line))
		default:
			fmt.Fprintf(&text, "{\"id\": %d, \"name\": \"n%d\"}\n", i, i)
			want = append(want, fmt.Sprintf("%d:%d:n%d:true", line, i, i))
		}
	}
	for _, procs := range []int{1, 4} {
		if got := idNameRows(t, text.String(), procs); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%d workers: rows\n%s\nwant\n%s", procs, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	inf := newInferrer()
	if err := inf.json(&spec.Source{}, strings.NewReader("[{\"id\": 1, \"tags\": \"x\"}, {\"amount\": 2.5}]\n{\"id\": 3}\n")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inf.order, ","); got != "id,tags,amount" {
		t.Errorf("inferred columns %s, want id,tags,amount", got)
	}
}

// TestInferEmptyKey: a JSON key "" is no column (no Delta table may have a column without a
// name): inference leaves it out, and reading rescues its value with the file's path.
func TestInferEmptyKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "landing", "a.json")
	write(t, file, []byte(`{"": 5, "id": 1}`+"\n"))
	p := loadPipeline(t, dir, "name: e\nstorage: ./storage\ndatasets:\n  - name: raw\n    source: {path: ./landing, format: json}\n")
	if _, _, err := ingest(t, p); err != nil {
		t.Fatal(err)
	}
	snap, rows := readTable(t, p, "raw")
	if got := snap.Metadata.Schema.DDL(); got != "id BIGINT, _rescued_data STRING" {
		t.Fatalf("schema %s, want id and the rescued data only", got)
	}
	want := `{"":5,"_file_path":` + strconv.Quote(file) + `}`
	if len(rows) != 1 || rows[0][0] != int64(1) || rows[0][1] != want {
		t.Errorf("rows %v, want [1 %s]", rows, want)
	}
}

// TestJSONLinesBareCR: lines ended by a bare "\r" (old Mac OS files) are lines, as Spark's line
// reader splits them: a row of each, of each object of an array among them, blank ones none,
// each with its own line number (blank ones counted, the lines after them numbered on); a "\r"
// inside a line that is valid JSON as a whole is white space and splits nothing. Schema
// inference sees the same lines.
func TestJSONLinesBareCR(t *testing.T) {
	text := "{\"id\": 1, \"name\": \"a\"}\r{\"id\": 2}\r\r  \r[{\"id\": 3}, {\"id\": 4, \"name\": \"d\"}]\r{\"id\": 5,\r\"name\": \"e\"}\r\n" +
		"{\"id\": 6,\r\"name\": \"f\"}\r\n{\"id\": 7, \"name\": \"g\"}\n"
	want := "1:1:a:true 2:2:<nil>:true 5:3:<nil>:true 5:4:d:true 6:<nil>:<nil>:false 7:<nil>:<nil>:false 8:6:f:true 9:7:g:true"
	for _, procs := range []int{1, 4} {
		if got := idNameRows(t, text, procs); strings.Join(got, " ") != want {
			t.Errorf("%d workers: rows\n%s\nwant\n%s", procs, strings.Join(got, " "), want)
		}
	}
	var lines []string
	if err := eachLine(strings.NewReader(text), func(line []byte, lineNo int64) error {
		lines = append(lines, fmt.Sprintf("%d:%s", lineNo, line))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantLines := []string{`1:{"id": 1, "name": "a"}`, `2:{"id": 2}`, `5:[{"id": 3}, {"id": 4, "name": "d"}]`, `6:{"id": 5,`, `7:"name": "e"}`,
		"8:{\"id\": 6,\r\"name\": \"f\"}", `9:{"id": 7, "name": "g"}`}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("eachLine gave %q, want %q", lines, wantLines)
	}
	// Blocks parsed at the same time number their lines after the bare "\r"s of the blocks
	// before them: each row's line is its id.
	saved := jsonBlockSize
	jsonBlockSize = 64 // a few lines a block
	defer func() { jsonBlockSize = saved }()
	var many strings.Builder
	var wantMany []string
	for i := 1; i <= 300; i += 3 {
		fmt.Fprintf(&many, "{\"id\": %d}\r\r{\"id\": %d}\r\n", i, i+2) // a blank line between, ended by "\r"
		wantMany = append(wantMany, fmt.Sprintf("%d:%d:<nil>:true", i, i), fmt.Sprintf("%d:%d:<nil>:true", i+2, i+2))
	}
	for _, procs := range []int{1, 4} {
		if got := idNameRows(t, many.String(), procs); !slices.Equal(got, wantMany) {
			t.Errorf("%d workers, small blocks: rows\n%s\nwant\n%s", procs, strings.Join(got, " "), strings.Join(wantMany, " "))
		}
	}
	inf := newInferrer()
	if err := inf.json(&spec.Source{}, strings.NewReader("{\"id\": 1}\r{\"amount\": 2.5}\r{\"tag\": \"x\"}\r")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inf.order, ","); got != "id,amount,tag" {
		t.Errorf("inferred columns %s, want id,amount,tag", got)
	}
}

// idNameRows reads JSON-lines text with the schema "id BIGINT, name STRING" on procs workers and
// returns each row as "line:id:name:parsed"; a row that has not the spare capacity eachJSONLine
// promises (rowSpare) fails t.
func idNameRows(t *testing.T, text string, procs int) []string {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	s := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "name", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
	var got []string
	err := eachJSONLine(newLineReader(s, "", "f.json"), strings.NewReader(text), &blockPool{}, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
		got = append(got, fmt.Sprintf("%d:%v:%v:%v", lineNo, row[0], row[1], parsed))
		if ext := append(row, "file", int64(0), 0, lineNo); &ext[0] != &row[0] {
			return fmt.Errorf("line %d: appending %d values copied the row", lineNo, rowSpare)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestJSONLinesClosingBracketAfter: a line with a '}' or ']' after its JSON value (`{"id": 1}}`)
// is malformed, as one with any other text after it is, with the fast scanner and by way of
// encoding/json alike (whose Decoder.More is false before a closing bracket); trailing white
// space is fine. Debezium lines and schema inference see the same.
func TestJSONLinesClosingBracketAfter(t *testing.T) {
	text := "{\"id\": 1}}\n{\"id\": 2}]\n[{\"id\": 3}]]\n{\"id\": 4, \"name\": {\"a\": 1}}}\n{\"id\": 5} \t\n{\"id\": 6}\n"
	want := "1:<nil>:<nil>:false 2:<nil>:<nil>:false 3:<nil>:<nil>:false 4:<nil>:<nil>:false 5:5:<nil>:true 6:6:<nil>:true"
	for _, procs := range []int{1, 4} {
		if got := idNameRows(t, text, procs); strings.Join(got, " ") != want {
			t.Errorf("%d workers: rows\n%s\nwant\n%s", procs, strings.Join(got, " "), want)
		}
	}
	s := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true}}}
	r := newDebeziumReader(&spec.Source{Schema: s}, "f.json")
	if _, ok, bad, _ := r.parse([]byte(`{"op": "c", "after": {"id": 1}}}`), 1); ok || len(bad) != 1 || bad[0].Reason != "the line has more text after its JSON value" {
		t.Errorf("debezium: ok %v, bad %v; want the line malformed", ok, bad)
	}
	inf := newInferrer()
	if err := inf.json(&spec.Source{}, strings.NewReader("{\"id\": 1, \"odd\": 2}}\n{\"id\": 3}\n")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inf.order, ","); got != "id" {
		t.Errorf("inferred columns %s, want id", got)
	}
}

// TestJSONLinesCaseVariants: without a rescued data column, a JSON field whose name differs only
// in case from a column ("ID" for id) is not that column (names are case-sensitive): the column
// is NULL in its lines, and one WARN for the file names each such spelling, from the fast scanner
// and from the lines it leaves to encoding/json (a field given twice) alike; a file without such
// fields gets none. With a rescued data column the field is kept there, without the WARN.
func TestJSONLinesCaseVariants(t *testing.T) {
	t.Parallel()
	p, landing := newIngest(t, "permissive", "")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"ID": 1, "amount": 2.5}`+"\n"+`{"id": 2, "Amount": 3, "Amount": 4}`+"\n"+`{"id": 3, "ID": 30, "other": 1}`+"\n"))
	write(t, filepath.Join(landing, "b.json"), []byte(`{"id": 4, "other": 1, "amount": 1}`+"\n"))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.BadRecords != 0 {
		t.Errorf("metrics %+v: a field not in the schema is no bad record", m)
	}
	wantRows(t, p, "null 2.50 null", "2 null null", "3 null null", "4 1.00 null")
	want := "WARN landing/a.json: the file spells fields in another case than the schema (Amount for amount, ID for id): fields are matched by name, case-sensitively, so those columns are NULL where only the other spelling is given; declare them as the file does, or set rescued_data_column to keep their values"
	if events := rec.all(); !strings.Contains(events, want) || strings.Contains(events, "b.json: the file spells") {
		t.Errorf("events:\n%s\nwant a WARN about a.json only: %s", events, want)
	}

	p, landing = newIngest(t, "permissive", "_rescued_data")
	write(t, filepath.Join(landing, "a.json"), []byte(`{"ID": 1, "amount": 2.5}`+"\n"))
	_, rec, err = ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `null 2.50 null "{\"ID\":1,\"_file_path\":\"`+filepath.Join(landing, "a.json")+`\"}"`)
	if strings.Contains(rec.all(), "spells fields in another case") {
		t.Errorf("with a rescued data column, events:\n%s", rec.all())
	}
}

// TestJSONCaseVariantsNestedAndMultiline: multiline JSON gets the WARN of JSON lines for a field
// spelt in another case than a column (TestJSONLinesCaseVariants), and so does a field inside an
// object column ("Name" in info for info.name, in an ARRAY's structs too), from the scanner and
// from encoding/json (a line with a field given twice) alike, one WARN a file naming each
// spelling by its path. A nested field is not rescued, so a rescued data column does not keep
// its value and the WARN comes with one too; a file that spells its fields as declared gets none.
func TestJSONCaseVariantsNestedAndMultiline(t *testing.T) {
	t.Parallel()
	const nestedSchema = "id BIGINT, info STRUCT<name: STRING, tags: ARRAY<STRUCT<k: STRING>>>"
	topLevel := ": the file spells fields in another case than the schema (ID for id): fields are matched by name, case-sensitively, so those columns are NULL where only the other spelling is given; declare them as the file does, or set rescued_data_column to keep their values"
	nested := func(pairs string) string {
		return ": the file spells fields in another case than the schema (" + pairs + "): fields are matched by name, case-sensitively, so those fields are NULL where only the other spelling is given; declare them as the file does (a rescued_data_column keeps only top-level fields)"
	}
	for _, c := range []struct {
		name, schema, opts string
		files              map[string]string
		rows               []string
		warns              map[string]string // file -> the WARN's text after its path
	}{
		{
			name: "multiline top-level", schema: "id BIGINT, amount DOUBLE", opts: "      options: {multiline: true}\n",
			files: map[string]string{
				"a.json": "[\n  {\"ID\": 1, \"amount\": 2.5},\n  {\"id\": 2, \"amount\": 3}\n]\n",
				"b.json": "{\"id\": 3,\n \"amount\": 1}\n",
			},
			rows:  []string{"null 2.5", "2 3", "3 1"},
			warns: map[string]string{"a.json": topLevel},
		},
		{
			name: "lines nested", schema: nestedSchema,
			files: map[string]string{
				"a.json": `{"id": 1, "info": {"Name": "x", "tags": [{"K": "a"}, {"k": "b"}]}}` + "\n" + `{"id": 2, "info": {"name": "y"}}` + "\n",
				"b.json": `{"id": 3, "id": 4, "info": {"NAME": "z"}}` + "\n",
				"c.json": `{"id": 5, "info": {"name": "w", "tags": [{"k": "c"}]}}` + "\n",
			},
			rows: []string{`1 {"name":null,"tags":[{"k":null},{"k":"b"}]}`, `2 {"name":"y","tags":null}`, `4 {"name":null,"tags":null}`, `5 {"name":"w","tags":[{"k":"c"}]}`},
			warns: map[string]string{
				"a.json": nested("info.Name for info.name, info.tags[].K for info.tags[].k"),
				"b.json": nested("info.NAME for info.name"),
			},
		},
		{
			name: "multiline nested with a rescued data column", schema: nestedSchema, opts: "      options: {multiline: true}\n      rescued_data_column: _rescued\n",
			files: map[string]string{
				"a.json": "[{\"id\": 1,\n  \"info\": {\"Name\": \"x\"}}]\n",
			},
			rows:  []string{`1 {"name":null,"tags":null} null`},
			warns: map[string]string{"a.json": nested("info.Name for info.name")},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadPipeline(t, dir, "name: t\nstorage: ./storage\ndatasets:\n  - name: raw\n    source:\n      path: ./landing\n      format: json\n"+
				"      schema: \""+c.schema+"\"\n"+c.opts)
			for name, body := range c.files {
				write(t, filepath.Join(dir, "landing", name), []byte(body))
			}
			m, rec, err := ingest(t, p)
			if err != nil {
				t.Fatal(err)
			}
			if m.BadRecords != 0 {
				t.Errorf("metrics %+v: a field not in the schema is no bad record", m)
			}
			wantRows(t, p, c.rows...)
			events := rec.all()
			for name := range c.files {
				path := "WARN landing/" + name // relative to the pipeline's folder, as every WARN names a file
				want, warned := c.warns[name]
				if got := strings.Count(events, path+": the file spells"); !warned && got != 0 || warned && (got != 1 || !strings.Contains(events, path+want)) {
					t.Errorf("events:\n%s\nwant for %s: %q", events, name, want)
				}
			}
		})
	}
}

// TestSmallFileBlocks: a plain JSON-lines file smaller than a block is read into a block of about
// its own size, so that a batch of many small files, whose blocks the pool holds until their rows
// are written, holds about what they hold (20,000 files of 60 bytes held 5 GB in blocks of 256
// KiB in a long-lived dev process); blocks smaller than the file (its size taken before it grew)
// read the same rows.
func TestSmallFileBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := &spec.Source{Format: "json", Schema: schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "name", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}}
	read := func(path string) ([]string, []*lineBlock) {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pool := &blockPool{}
		var got []string
		err = eachRow(src, path, f, pool, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
			got = append(got, fmt.Sprintf("%d:%v:%v", lineNo, row[0], row[1]))
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got, pool.seal()
	}
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte("{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2, \"name\": \"b\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, blocks := read(small)
	if strings.Join(got, " ") != "1:1:a 2:2:b" {
		t.Errorf("rows %v", got)
	}
	for _, b := range blocks {
		if cap(b.buf) > 1024 {
			t.Errorf("a file of 48 bytes was read into a block of %d bytes", cap(b.buf))
		}
	}

	// Larger than the block it was sized for when read: many lines, read in small blocks.
	var text strings.Builder
	var want []string
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&text, "{\"id\": %d, \"name\": \"n%d\"}\n", i, i)
		want = append(want, fmt.Sprintf("%d:%d:n%d", i, i, i))
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, blocks = read(big)
	if !slices.Equal(got, want) {
		t.Errorf("rows of a %d-byte file differ", text.Len())
	}
	for _, b := range blocks {
		if cap(b.buf) > text.Len()+64 {
			t.Errorf("a file of %d bytes was read into a block of %d bytes", text.Len(), cap(b.buf))
		}
	}
	// A block smaller than the file (its size taken before it grew) reads the same rows.
	f, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var again []string
	if err := eachJSONLineSized(newLineReader(src.Schema, "", big), f, &blockPool{}, 100, func(row []any, parsed bool, bad []badValue, lineNo int64) error {
		again = append(again, fmt.Sprintf("%d:%v:%v", lineNo, row[0], row[1]))
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, want) {
		t.Errorf("rows read in 100-byte blocks differ")
	}
}
