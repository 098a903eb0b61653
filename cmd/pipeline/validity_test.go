package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"tributary/delta"
	"tributary/schema"
)

// A strict reading of the log the runner writes, independent of package delta's decoder: every
// line of every commit is decoded into the action's fields as Delta PROTOCOL.md "Actions"
// defines them, with unknown fields refused and required fields checked present; stats are
// recomputed from the data file; data and change data files are checked against "Delta Data
// Type to Parquet Type Mappings".

type (
	strictCommitInfo struct {
		Timestamp           *int64             `json:"timestamp"`
		Operation           *string            `json:"operation"`
		OperationParameters map[string]*string `json:"operationParameters"`
		ReadVersion         *int64             `json:"readVersion"`
		IsBlindAppend       *bool              `json:"isBlindAppend"`
		OperationMetrics    map[string]*string `json:"operationMetrics"`
		EngineInfo          *string            `json:"engineInfo"`
	}
	strictProtocol struct {
		MinReaderVersion *int `json:"minReaderVersion"`
		MinWriterVersion *int `json:"minWriterVersion"`
	}
	strictFormat struct {
		Provider *string           `json:"provider"`
		Options  map[string]string `json:"options"`
	}
	strictMetadata struct {
		ID               *string           `json:"id"`
		Name             *string           `json:"name"`
		Description      *string           `json:"description"`
		Format           *strictFormat     `json:"format"`
		SchemaString     *string           `json:"schemaString"`
		PartitionColumns []string          `json:"partitionColumns"`
		Configuration    map[string]string `json:"configuration"`
		CreatedTime      *int64            `json:"createdTime"`
	}
	strictAdd struct {
		Path             *string           `json:"path"`
		PartitionValues  map[string]string `json:"partitionValues"`
		Size             *int64            `json:"size"`
		ModificationTime *int64            `json:"modificationTime"`
		DataChange       *bool             `json:"dataChange"`
		Stats            *string           `json:"stats"`
	}
	strictRemove struct {
		Path                 *string           `json:"path"`
		DeletionTimestamp    *int64            `json:"deletionTimestamp"`
		DataChange           *bool             `json:"dataChange"`
		ExtendedFileMetadata *bool             `json:"extendedFileMetadata"`
		PartitionValues      map[string]string `json:"partitionValues"`
		Size                 *int64            `json:"size"`
		Stats                *string           `json:"stats"`
	}
	strictCDC struct {
		Path            *string           `json:"path"`
		PartitionValues map[string]string `json:"partitionValues"`
		Size            *int64            `json:"size"`
		DataChange      *bool             `json:"dataChange"`
	}
	strictTxn struct {
		AppID       *string `json:"appId"`
		Version     *int64  `json:"version"`
		LastUpdated *int64  `json:"lastUpdated"`
	}
)

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// strict decodes data into v, refusing unknown fields.
func strict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// assertValidLog checks every commit of the table at dir (see above) and returns the number of
// actions checked. Files that are gone (vacuumed) are checked only in the log.
func assertValidLog(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	var meta *strictMetadata
	var sch schema.Schema
	checked := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		name := filepath.Join(dir, "_delta_log", e.Name())
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<26)
		for lineNo := 1; sc.Scan(); lineNo++ {
			where := fmt.Sprintf("%s line %d", e.Name(), lineNo)
			var line map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil || len(line) != 1 {
				t.Fatalf("%s: not one action: %s (%v)", where, sc.Text(), err)
			}
			checked++
			for kind, raw := range line {
				if lineNo == 1 && kind != "commitInfo" {
					t.Errorf("%s: the first action is %s, want commitInfo", where, kind)
				}
				switch kind {
				case "commitInfo":
					// Keys starting with "tributary" are the runner's own (Delta PROTOCOL.md
					// "Commit Provenance Information" is free form); the others are Delta's.
					var all map[string]json.RawMessage
					_ = json.Unmarshal(raw, &all)
					for k := range all {
						if strings.HasPrefix(k, "tributary") {
							delete(all, k)
						}
					}
					known, _ := json.Marshal(all)
					var c strictCommitInfo
					if err := strict(known, &c); err != nil || c.Timestamp == nil || *c.Timestamp <= 0 || c.Operation == nil || *c.Operation == "" ||
						c.OperationParameters == nil || c.OperationMetrics == nil || c.EngineInfo == nil || c.IsBlindAppend == nil {
						t.Errorf("%s: commitInfo %s: %v", where, raw, err)
					}
				case "protocol":
					var p strictProtocol
					if err := strict(raw, &p); err != nil || p.MinReaderVersion == nil || p.MinWriterVersion == nil || *p.MinReaderVersion != 1 || *p.MinWriterVersion != 4 {
						t.Errorf("%s: protocol %s: %v; want (1,4)", where, raw, err)
					}
				case "metaData":
					var m strictMetadata
					err := strict(raw, &m)
					if err != nil || m.ID == nil || !uuidRe.MatchString(*m.ID) || m.Format == nil || m.Format.Provider == nil || *m.Format.Provider != "parquet" ||
						m.Format.Options == nil || m.SchemaString == nil || m.PartitionColumns == nil || m.Configuration == nil || m.CreatedTime == nil {
						t.Errorf("%s: metaData %s: %v", where, raw, err)
						continue
					}
					if sch, err = schema.ParseSparkJSON(*m.SchemaString); err != nil {
						t.Errorf("%s: schemaString: %v", where, err)
					}
					meta = &m
				case "add":
					var a strictAdd
					err := strict(raw, &a)
					if err != nil || a.Path == nil || a.PartitionValues == nil || a.Size == nil || a.ModificationTime == nil || a.DataChange == nil || a.Stats == nil {
						t.Errorf("%s: add %s: %v", where, raw, err)
						continue
					}
					if meta == nil {
						t.Fatalf("%s: an add before any metaData", where)
					}
					checkDataFile(t, where, dir, sch, meta.PartitionColumns, *a.Path, a.PartitionValues, *a.Size, *a.Stats)
				case "remove":
					var r strictRemove
					if err := strict(raw, &r); err != nil || r.Path == nil || r.DeletionTimestamp == nil || r.DataChange == nil ||
						r.ExtendedFileMetadata == nil || !*r.ExtendedFileMetadata || r.PartitionValues == nil || r.Size == nil {
						t.Errorf("%s: remove %s: %v", where, raw, err)
					}
				case "cdc":
					var c strictCDC
					if err := strict(raw, &c); err != nil || c.Path == nil || c.PartitionValues == nil || c.Size == nil || c.DataChange == nil || *c.DataChange {
						t.Errorf("%s: cdc %s: %v", where, raw, err)
						continue
					}
					checkParquetTypes(t, where, dir, *c.Path, sch, meta.PartitionColumns, true)
				case "txn":
					var x strictTxn
					if err := strict(raw, &x); err != nil || x.AppID == nil || x.Version == nil || x.LastUpdated == nil {
						t.Errorf("%s: txn %s: %v", where, raw, err)
					}
				default:
					t.Errorf("%s: unexpected action %s", where, kind)
				}
			}
		}
	}
	return checked
}

// fileSchema is the table schema without its partition columns: what a data file holds.
func fileSchema(s schema.Schema, partitionColumns []string) schema.Schema {
	var out schema.Schema
	for _, f := range s.Fields {
		if !slices.Contains(partitionColumns, f.Name) {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

// checkDataFile checks one added data file: it exists with the logged size, has a value for
// every partition column, Parquet types as the protocol maps them, and stats equal to what its
// rows give.
func checkDataFile(t *testing.T, where, dir string, s schema.Schema, partitionColumns []string, path string, pv map[string]string, size int64, stats string) {
	t.Helper()
	for _, c := range partitionColumns {
		if _, ok := pv[c]; !ok {
			t.Errorf("%s: %s has no value for partition column %s", where, path, c)
		}
	}
	local, err := url.PathUnescape(path)
	if err != nil {
		t.Errorf("%s: path %q is not URL-encoded: %v", where, path, err)
		return
	}
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(local)))
	if os.IsNotExist(err) {
		return // vacuumed since
	}
	if err != nil || fi.Size() != size {
		t.Errorf("%s: %s: size %d in the log, file %v %v", where, path, size, fi, err)
		return
	}
	fs := fileSchema(s, partitionColumns)
	checkParquetTypes(t, where, dir, path, s, partitionColumns, false)
	rows, err := delta.New(dir).ReadFile(path, fs)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	var got struct {
		NumRecords *int64                     `json:"numRecords"`
		MinValues  map[string]json.RawMessage `json:"minValues"`
		MaxValues  map[string]json.RawMessage `json:"maxValues"`
		NullCount  map[string]json.RawMessage `json:"nullCount"`
	}
	if err := strict([]byte(stats), &got); err != nil || got.NumRecords == nil || got.MinValues == nil || got.MaxValues == nil || got.NullCount == nil {
		t.Errorf("%s: stats %s: %v", where, stats, err)
		return
	}
	if *got.NumRecords != int64(len(rows)) {
		t.Errorf("%s: stats.numRecords %d, the file has %d rows", where, *got.NumRecords, len(rows))
	}
	for j, f := range fs.Fields {
		vals := make([]any, len(rows))
		for i, r := range rows {
			vals[i] = r[j]
		}
		checkColumnStats(t, where+" column "+f.Name, f, vals, got.MinValues[f.Name], got.MaxValues[f.Name], got.NullCount[f.Name])
	}
	if len(got.NullCount) != len(fs.Fields) {
		t.Errorf("%s: nullCount has %d columns, the file %d", where, len(got.NullCount), len(fs.Fields))
	}
}

// checkColumnStats compares one column's statistics with its values (Delta PROTOCOL.md
// "Per-file Statistics": exact bounds, timestamps truncated to milliseconds, strings cut to a
// prefix; no bounds for BOOLEAN, as Spark).
func checkColumnStats(t *testing.T, where string, f schema.Field, vals []any, minRaw, maxRaw, nullRaw json.RawMessage) {
	t.Helper()
	if f.Type.Kind == schema.StructKind {
		var mins, maxs, nulls map[string]json.RawMessage
		_ = json.Unmarshal(minRaw, &mins)
		_ = json.Unmarshal(maxRaw, &maxs)
		if err := json.Unmarshal(nullRaw, &nulls); err != nil {
			t.Errorf("%s: nullCount %s is not an object", where, nullRaw)
			return
		}
		for k, sf := range f.Type.Struct.Fields {
			sub := make([]any, len(vals))
			for i, v := range vals {
				if v != nil {
					sub[i] = v.([]any)[k]
				}
			}
			checkColumnStats(t, where+"."+sf.Name, sf, sub, mins[sf.Name], maxs[sf.Name], nulls[sf.Name])
		}
		return
	}
	var nonNull []any
	for _, v := range vals {
		if v != nil {
			nonNull = append(nonNull, v)
		}
	}
	if n, err := strconv.Atoi(string(nullRaw)); err != nil || n != len(vals)-len(nonNull) {
		t.Errorf("%s: nullCount %s, the file has %d NULLs", where, nullRaw, len(vals)-len(nonNull))
	}
	if len(nonNull) == 0 || f.Type.Kind == schema.Boolean {
		if minRaw != nil || maxRaw != nil {
			t.Errorf("%s: bounds %s..%s for a column without any", where, minRaw, maxRaw)
		}
		return
	}
	lo, hi := nonNull[0], nonNull[0]
	for _, v := range nonNull {
		if schema.Compare(v, lo) < 0 {
			lo = v
		}
		if schema.Compare(v, hi) > 0 {
			hi = v
		}
	}
	want := func(v any, max bool) string {
		switch x := v.(type) {
		case schema.Timestamp:
			ms := int64(math.Floor(float64(x) / 1000))
			return strconv.Quote(time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"))
		case schema.Decimal:
			return schema.FormatDecimal(x, f.Type.Scale)
		case string:
			if utf8.RuneCountInString(x) <= 32 {
				return strconv.Quote(x)
			}
			r := []rune(x)[:32]
			if max {
				return "" // a cut max carries a tie-breaker; checked as >= below
			}
			return strconv.Quote(string(r))
		}
		return string(schema.AppendJSON(nil, f.Type, v))
	}
	same := func(raw json.RawMessage, text string) bool {
		if text == "" {
			return raw != nil
		}
		var a, b any
		if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(text), &b) != nil {
			return false
		}
		if x, ok := a.(float64); ok {
			y, ok := b.(float64)
			return ok && x == y
		}
		return a == b
	}
	if w := want(lo, false); !same(minRaw, w) {
		t.Errorf("%s: minValues %s, the file's minimum is %s", where, minRaw, w)
	}
	if w := want(hi, true); !same(maxRaw, w) {
		t.Errorf("%s: maxValues %s, the file's maximum is %s", where, maxRaw, w)
	}
}

// parquetTypeOf is the physical and logical type of a table column in its files, by Delta
// PROTOCOL.md "Delta Data Type to Parquet Type Mappings" ("" for a STRUCT group). The INT
// annotation of long and int may be left out (it is the physical type's default).
func parquetTypeOf(t schema.Type) string {
	switch t.Kind {
	case schema.Long:
		return "INT64 INT(64,true)"
	case schema.Integer:
		return "INT32 INT(32,true)"
	case schema.String:
		return "BYTE_ARRAY STRING"
	case schema.Double:
		return "DOUBLE"
	case schema.Boolean:
		return "BOOLEAN"
	case schema.DecimalKind:
		if t.Precision <= 9 {
			return fmt.Sprintf("INT32 DECIMAL(%d,%d)", t.Precision, t.Scale)
		}
		return fmt.Sprintf("INT64 DECIMAL(%d,%d)", t.Precision, t.Scale)
	case schema.DateKind:
		return "INT32 DATE"
	case schema.TimestampKind:
		return "INT64 TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)"
	}
	return ""
}

// checkParquetTypes opens a data file (or, with cdc, a change data file) and checks that it
// holds the table's non-partition columns, in order, with the mapped types, and for a change
// data file a STRING _change_type after them.
func checkParquetTypes(t *testing.T, where, dir, path string, s schema.Schema, partitionColumns []string, cdc bool) {
	t.Helper()
	local, _ := url.PathUnescape(path)
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(local)))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Errorf("%s: %s: %v", where, path, err)
		return
	}
	fs := fileSchema(s, partitionColumns)
	if cdc {
		fs.Fields = append(fs.Fields, schema.Field{Name: delta.ChangeTypeColumn, Type: schema.Type{Kind: schema.String}})
	}
	cols := pf.Root().Fields()
	if len(cols) != len(fs.Fields) {
		t.Errorf("%s: %s has %d columns, want %d (%s)", where, path, len(cols), len(fs.Fields), fs.DDL())
		return
	}
	var check func(prefix string, c parquet.Field, f schema.Field)
	check = func(prefix string, c parquet.Field, f schema.Field) {
		if c.Name() != f.Name || !c.Optional() {
			t.Errorf("%s: %s: column %s%s is %s (optional %v), want OPTIONAL %s", where, path, prefix, f.Name, c.Name(), c.Optional(), f.Name)
			return
		}
		if f.Type.Kind == schema.StructKind {
			sub := c.Fields()
			if c.Leaf() || len(sub) != len(f.Type.Struct.Fields) {
				t.Errorf("%s: %s: column %s%s is not a group of %d fields", where, path, prefix, f.Name, len(f.Type.Struct.Fields))
				return
			}
			for i, sf := range f.Type.Struct.Fields {
				check(prefix+f.Name+".", sub[i], sf)
			}
			return
		}
		got := c.Type().Kind().String()
		if lt := c.Type().LogicalType(); lt != nil && lt.Value != nil {
			got += " " + lt.String()
		}
		want := parquetTypeOf(f.Type)
		if phys, ann, _ := strings.Cut(want, " "); strings.HasPrefix(ann, "INT(") && got == phys {
			got = want // INT64 / INT32 without the INT annotation
		}
		if got != want {
			t.Errorf("%s: %s: column %s%s is %s, want %s", where, path, prefix, f.Name, got, want)
		}
	}
	for i, f := range fs.Fields {
		check("", cols[i], f)
	}
}

// TestWrittenLogIsValid runs the shop-orders example batch by batch and reads every commit of
// its tables and its event log with the strict decoder.
func TestWrittenLogIsValid(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	landing, storage := filepath.Join(tmp, "landing"), filepath.Join(tmp, "storage")
	conf := exampleArgs(landing, storage)
	for _, f := range exampleFiles {
		copyFile(t, filepath.Join(filepath.Dir(exampleSpec), "landing", f), filepath.Join(landing, f))
		mustRun(t, append([]string{"run", exampleSpec}, conf...)...)
	}
	for _, table := range []string{"tables/orders_changes", "tables/orders", "system/events"} {
		if n := assertValidLog(t, filepath.Join(storage, table)); n < 10 {
			t.Errorf("%s: only %d actions checked", table, n)
		}
	}
}
