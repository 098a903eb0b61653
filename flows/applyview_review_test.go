package flows

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"tributary/schema"
	"tributary/spec"
)

// TestViewOverFilesFailRuleMemory: with an on_violation: fail expectation the batch is read whole
// before it is checked; the memory that takes grows with the rows read, as for a streaming
// table, not by a fixed amount per row: 20,000 small change events (about 1 MiB of JSON) must not
// take gigabytes.
func TestViewOverFilesFailRuleMemory(t *testing.T) {
	dir := t.TempDir()
	text := strings.Replace(viewSpec("view", "", ""), "on_violation: warn", "on_violation: fail", 1)
	p := loadPipeline(t, dir, text)
	var b strings.Builder
	const n = 20_000
	for i := range n {
		fmt.Fprintf(&b, `{"op": "U", "id": %d, "name": "n%d", "amount": 1.00, "seq": %d}`+"\n", i%500, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "a.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target"))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
		t.Errorf("applying %d events (%d bytes of JSON) through a view with a fail expectation allocated %d MiB", n, b.Len(), got>>20)
	}
	if m.NumUpsertedRows != 500 {
		t.Errorf("upserted %d rows, want 500", m.NumUpsertedRows)
	}
	_, rows := readTable(t, p, "target")
	if len(rows) != 500 {
		t.Errorf("the target holds %d rows, want 500", len(rows))
	}
}

// TestViewOverFilesFormats: for each file format and source option a view takes "as for a
// streaming table" (README "Views over files"), two APPLY CHANGES targets (SCD type 1 with
// truncates, SCD type 2 with track_history and ignore_null_updates... one each) fed by the view
// end, run after run, with the rows of the same targets fed by a streaming table over the same
// files; each reader reads every file once, independently of the other.
func TestViewOverFilesFormats(t *testing.T) {
	setChunking(t, 13, 300)
	saved := viewBatchRows
	viewBatchRows = 7
	t.Cleanup(func() { viewBatchRows = saved })
	type round map[string]string // file name → content
	jsonRounds := []round{
		{"a.json": `{"op": "I", "id": 1, "name": "a", "seq": 1, "extra": "x"}` + "\n" + `not json` + "\n" + `{"op": "I", "id": 2, "name": "b", "seq": 2}` + "\n" +
			`{"op": "U", "id": 1, "name": null, "seq": 3}` + "\n" + `{"op": "U", "id": 2, "name": "b2", "seq": "bad"}` + "\n" + `{"op": "I", "id": 5, "name": "e", "seq": 2}` + "\n",
			"b.json": "", "_skip.json": `{"op": "I", "id": 9, "seq": 9}` + "\n"},
		{"c.json.gz": "GZ" + `{"op": "D", "id": 2, "seq": 4}` + "\n" + `{"op": "U", "id": 3, "name": "c", "seq": 5}` + "\n", "d.json": `{"op": "X", "id": 4, "seq": 6}` + "\n"},
		{"e.json": `{"op": "T", "seq": 7}` + "\n" + `{"op": "I", "id": 6, "name": "f", "seq": 8}` + "\n" + `{"op": "U", "id": 6, "name": "f2", "seq": 9}` + "\n"},
	}
	csvRounds := []round{
		{"a.csv": "op,id,name,seq\nI,1,a,1\nI,2,b,2\nU,1,,3\nU,2,b2,x\n"},
		{"b.csv": "op,id,name,seq\nD,2,,4\nU,3,c,5\nX,4,,6\n", "c.csv": "op,id,name,seq\n"},
		{"d.csv": "op,id,name,seq\nT,,,7\nI,6,f,8\n"},
	}
	dbzRounds := []round{
		{"a.json": `{"op":"r","after":{"id":1,"name":"a"},"source":{"lsn":1,"ts_ms":1}}` + "\n" +
			`{"schema":{},"payload":{"op":"c","after":{"id":2,"name":"b","x":1},"source":{"lsn":2,"ts_ms":2}}}` + "\n" +
			`{"key":{"id":2},"value":null}` + "\n" + `{"op":"q"}` + "\n"},
		{"b.json": `{"op":"u","before":{"id":1},"after":{"id":1,"name":"a2"},"source":{"lsn":3,"ts_ms":3}}` + "\n" +
			`{"op":"d","before":{"id":2},"after":null,"source":{"lsn":4,"ts_ms":4}}` + "\n"},
	}
	pqSchema := schema.Schema{Fields: []schema.Field{
		{Name: "op", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "name", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "seq", Type: schema.Type{Kind: schema.Long}, Nullable: true},
	}}
	pqRounds := []round{
		{"a.parquet": string(parquetBytes(t, pqSchema, [][]any{{"I", int64(1), "a", int64(1)}, {"I", int64(2), "b", int64(2)}, {"U", int64(1), nil, int64(3)}}))},
		{"b.parquet": string(parquetBytes(t, pqSchema, [][]any{{"D", int64(2), nil, int64(4)}, {"X", int64(3), "c", int64(5)}, {"T", nil, nil, int64(6)}, {"I", int64(7), "g", int64(7)}}))},
	}
	for _, c := range []struct {
		name, source string
		rounds       []round
	}{
		{"debezium", "      format: debezium\n      schema: \"id BIGINT, name STRING, _op STRING, _source_ts_ms BIGINT\"\n      rescued_data_column: _rescued\n", dbzRounds},
		{"parquet", "      format: parquet\n      schema: \"op STRING, id BIGINT, name STRING, seq BIGINT\"\n      include_metadata: true\n", pqRounds},
		{"json metadata rescued dropmalformed", "      format: json\n      schema: \"op STRING, id BIGINT, name STRING, seq BIGINT\"\n      include_metadata: true\n      rescued_data_column: _rescued\n      mode: dropmalformed\n", jsonRounds},
		{"json permissive two files a batch", "      format: json\n      schema: \"op STRING, id BIGINT, name STRING, seq BIGINT\"\n      max_files_per_trigger: 2\n", jsonRounds},
		{"csv header", "      format: csv\n      schema: \"op STRING, id BIGINT, name STRING, seq BIGINT\"\n      options: {header: true}\n      include_metadata: true\n", csvRounds},
	} {
		t.Run(c.name, func(t *testing.T) {
			mk := func(typ string) (string, *spec.Pipeline) {
				dir := t.TempDir()
				text := `name: t
storage: ./storage
datasets:
  - name: changes
    type: ` + typ + `
    expectations:
      - {name: valid_op, expect: 'op in ["I", "U", "D", "T"]', on_violation: drop}
    source:
      path: ./landing
` + c.source + `  - name: scd1
    apply_changes: {source: changes, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", apply_as_truncates: op == "T", except_column_list: [op]}
    expectations:
      - {name: has_seq, expect: seq != nil, on_violation: drop}
  - name: scd2
    apply_changes: {source: changes, keys: [id], sequence_by: seq, apply_as_deletes: op == "D", except_column_list: [op], stored_as_scd_type: 2, track_history_column_list: [name], ignore_null_updates: true}
    expectations:
      - {name: has_seq, expect: seq != nil and op != "T", on_violation: drop}
`
				if c.name == "debezium" {
					r := strings.NewReplacer(`'op in ["I", "U", "D", "T"]'`, `_op != nil`, "op == \"D\"", "_op == \"d\"", "apply_as_truncates: op == \"T\", ", "",
						"except_column_list: [op]", "except_column_list: [_op]", "sequence_by: seq", "sequence_by: _source_ts_ms", "seq != nil and op != \"T\"", "_source_ts_ms != nil", "seq != nil", "_source_ts_ms != nil")
					text = r.Replace(text)
				}
				return dir, loadPipeline(t, dir, text)
			}
			bronzeDir, bronze := mk("streaming_table")
			viewDir, view := mk("view")
			for i, r := range c.rounds {
				for _, dir := range []string{bronzeDir, viewDir} {
					for name, body := range r {
						data := []byte(body)
						if strings.HasPrefix(body, "GZ") {
							data = gzipBytes(t, []byte(body[2:]))
						}
						if err := os.WriteFile(filepath.Join(dir, "landing", name), data, 0o644); err != nil {
							t.Fatal(err)
						}
						mt := time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
						if err := os.Chtimes(filepath.Join(dir, "landing", name), mt, mt); err != nil {
							t.Fatal(err)
						}
					}
				}
				mb := runFlows(t, bronze, nopEvents{})
				mv := runFlows(t, view, nopEvents{})
				for j, target := range []string{"scd1", "scd2"} {
					_, br := readTable(t, bronze, target)
					snap, vr := readTable(t, view, target)
					want := rowsText(snap.Metadata.Schema, br)
					got := rowsText(snap.Metadata.Schema, vr)
					for k := range want {
						want[k] = strings.ReplaceAll(want[k], bronzeDir, "DIR")
					}
					for k := range got {
						got[k] = strings.ReplaceAll(got[k], viewDir, "DIR")
					}
					if !slices.Equal(got, want) {
						t.Errorf("round %d: %s fed by the view holds\n%s\nfed by the streaming table\n%s", i, target, strings.Join(got, "\n"), strings.Join(want, "\n"))
					}
					if b, v := mb[j+1], mv[j+1]; b.NumUpsertedRows != v.NumUpsertedRows && c.name != "json permissive two files a batch" {
						t.Errorf("round %d: %s upserted %d through the view, %d through the table", i, target, v.NumUpsertedRows, b.NumUpsertedRows)
					}
				}
				// Each reader read this round's files (the skipped ones aside, and the empty one,
				// left unread until it holds something) itself.
				files := 0
				for name, body := range r {
					if !strings.HasPrefix(name, "_") && body != "" {
						files++
					}
				}
				if mv[1].Files != files || mv[2].Files != files {
					t.Errorf("round %d: the readers read %d and %d files, want %d each", i, mv[1].Files, mv[2].Files, files)
				}
				if mv[1].BadRecords != mb[0].BadRecords || mv[2].BadRecords != mb[0].BadRecords {
					t.Errorf("round %d: the readers counted %d and %d bad records, the streaming table %d", i, mv[1].BadRecords, mv[2].BadRecords, mb[0].BadRecords)
				}
			}
			for _, target := range []string{"scd1", "scd2"} {
				if _, rows := readTable(t, view, target); len(rows) == 0 {
					t.Errorf("%s is empty: the test checks nothing", target)
				}
			}
		})
	}
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
