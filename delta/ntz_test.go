package delta

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// TestTimestampNTZDAT reads the Delta Acceptance Tests case timestamp_ntz (written by Spark 3.5
// / Delta 3.1): the column is TIMESTAMP_NTZ and holds the wall clock Spark wrote, shown without
// zone, and its stats bound (written without zone) parses to the same value.
func TestTimestampNTZDAT(t *testing.T) {
	t.Parallel()
	tbl := New(filepath.Join(datCases(t), "timestamp_ntz", "delta"))
	snap := mustSnapshot(t, tbl, -1)
	if got, want := snap.Metadata.Schema.DDL(), "letter STRING, int BIGINT, date DATE, timestampNTZ TIMESTAMP_NTZ"; got != want {
		t.Errorf("schema %s, want %s", got, want)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	got := canonical(snap.Metadata.Schema, rows)
	want := []string{
		`["a",25,"2017-05-01","2024-04-02T20:58:52.292957"]`,
		`["a",604,"1997-01-01","2024-04-02T20:58:52.292957"]`,
		`["a",692,"2017-09-01","2024-04-02T20:58:52.292957"]`,
		`["a",95,"1983-04-01","2024-04-02T20:58:52.292957"]`,
		`["b",228,"1978-12-01","2024-04-02T20:58:52.292957"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st, err := ParseStats(snap.Files[0].Stats, snap.Metadata.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Min["timestampNTZ"], ts("2024-04-02T20:58:52.292Z"); got != want {
		t.Errorf("stats min %v, want %v (the wall clock 2024-04-02 20:58:52.292 read as UTC)", got, want)
	}
}

// TestTimestampNTZWrite writes a table with a TIMESTAMP_NTZ column, one of them a partition
// column: the protocol becomes reader 3 / writer 7 with timestampNtz in both lists (Delta
// PROTOCOL.md, "Timestamp without timezone (TimestampNtz)"), the Parquet column is
// TIMESTAMP(isAdjustedToUTC=false, MICROS) with no converted type, stats and partition values
// carry no zone, the values read back, and enabling deletion vectors keeps the feature.
func TestTimestampNTZWrite(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, at TIMESTAMP_NTZ, day TIMESTAMP_NTZ")
	tbl := createTable(t, s, "day")
	snap := mustSnapshot(t, tbl, -1)
	if snap.Protocol != (Protocol{3, 7}) || !slices.Equal(snap.ReaderFeatures, []string{"timestampNtz"}) ||
		!slices.Equal(snap.WriterFeatures, []string{"appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants", "timestampNtz"}) {
		t.Fatalf("protocol %+v, reader features %v, writer features %v; want (3,7) with timestampNtz, and the features of writer version 4", snap.Protocol, snap.ReaderFeatures, snap.WriterFeatures)
	}
	wall := ts("2024-01-31T10:00:00.123456Z") // the wall clock 2024-01-31 10:00:00.123456
	tx := tbl.Begin(snap)
	for _, d := range []struct {
		day  schema.Timestamp
		part string
	}{{ts("2024-01-31T00:00:00Z"), "2024-01-31 00:00:00"}, {ts("1969-12-31T23:59:59.5Z"), "1969-12-31 23:59:59.500000"}} {
		if got := FormatPartitionValue(s.Fields[2].Type, d.day); got != d.part {
			t.Errorf("FormatPartitionValue(%d) = %q, want %q", d.day, got, d.part)
		}
		a, err := tbl.WriteFile(mustDDL(t, "id BIGINT, at TIMESTAMP_NTZ"), [][]any{{int64(1), wall}, {int64(2), schema.Timestamp(-1)}})
		if err != nil {
			t.Fatal(err)
		}
		a.PartitionValues = map[string]string{"day": d.part}
		if !strings.Contains(a.Stats, `"minValues":{"id":1,"at":"1969-12-31T23:59:59.999"}`) || !strings.Contains(a.Stats, `"maxValues":{"id":2,"at":"2024-01-31T10:00:00.123"}`) {
			t.Errorf("stats %s, want bounds without zone", a.Stats)
		}
		tx.Add(a)
		checkNTZParquet(t, filepath.Join(tbl.Dir, a.Path), "at")
	}
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	got := canonical(s, rows)
	want := []string{
		`[1,"2024-01-31T10:00:00.123456","1969-12-31T23:59:59.500000"]`,
		`[1,"2024-01-31T10:00:00.123456","2024-01-31T00:00:00.000000"]`,
		`[2,"1969-12-31T23:59:59.999999","1969-12-31T23:59:59.500000"]`,
		`[2,"1969-12-31T23:59:59.999999","2024-01-31T00:00:00.000000"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if got := canonical(s, theirs); !slices.Equal(got, want) {
			t.Errorf("deltacheck rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	snap = mustSnapshot(t, tbl, -1)
	tx = tbl.Begin(snap)
	m := snap.Metadata
	m.Configuration = map[string]string{ConfigEnableDeletionVectors: "true"}
	tx.SetMetadata(m)
	if _, err := tx.Commit("SET TBLPROPERTIES", nil); err != nil {
		t.Fatal(err)
	}
	snap = mustSnapshot(t, tbl, -1)
	if !slices.Equal(snap.ReaderFeatures, []string{"deletionVectors", "timestampNtz"}) || !hasFeature(snap.WriterFeatures, "timestampNtz") || !hasFeature(snap.WriterFeatures, "deletionVectors") {
		t.Errorf("after enabling deletion vectors: reader features %v, writer features %v; want both with deletionVectors and timestampNtz", snap.ReaderFeatures, snap.WriterFeatures)
	}
}

// TestTimestampNTZSchemaEvolution: a table created without TIMESTAMP_NTZ keeps the legacy
// protocol (1,4); the commit that adds such a column upgrades it to (3,7) with timestampNtz and
// every feature writer version 4 implies, and a commit without metadata leaves it.
func TestTimestampNTZSchemaEvolution(t *testing.T) {
	t.Parallel()
	tbl := createTable(t, mustDDL(t, "id BIGINT, at TIMESTAMP"))
	snap := mustSnapshot(t, tbl, -1)
	if snap.Protocol != DefaultProtocol || snap.ReaderFeatures != nil {
		t.Fatalf("protocol %+v %v, want %+v without features", snap.Protocol, snap.ReaderFeatures, DefaultProtocol)
	}
	tx := tbl.Begin(snap)
	m := snap.Metadata
	m.Schema = mustDDL(t, "id BIGINT, at TIMESTAMP, extra STRUCT<seen: TIMESTAMP_NTZ>")
	tx.SetMetadata(m)
	if _, err := tx.Commit("ADD COLUMNS", nil); err != nil {
		t.Fatal(err)
	}
	appendRows(t, tbl, [][]any{{int64(1), ts("2024-01-31T10:00:00Z"), []any{ts("2024-01-31T12:00:00Z")}}})
	snap = mustSnapshot(t, tbl, -1)
	if snap.Protocol != (Protocol{3, 7}) || !slices.Equal(snap.ReaderFeatures, []string{"timestampNtz"}) ||
		!slices.Equal(snap.WriterFeatures, []string{"appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants", "timestampNtz"}) {
		t.Errorf("protocol %+v, reader features %v, writer features %v; want (3,7) with timestampNtz and the features of writer version 4", snap.Protocol, snap.ReaderFeatures, snap.WriterFeatures)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonical(snap.Metadata.Schema, rows), []string{`[1,"2024-01-31T10:00:00.000000Z",{"seen":"2024-01-31T12:00:00.000000"}]`}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// checkNTZParquet fails the test unless the Parquet column col of the file at path is INT64 with
// the logical type TIMESTAMP(isAdjustedToUTC=false, MICROS) and no converted type.
func checkNTZParquet(t *testing.T, path, col string) {
	t.Helper()
	f, pf, err := openParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, e := range pf.Metadata().Schema {
		if e.Name != col {
			continue
		}
		typ, _ := e.Type.Get()
		ct, hasCT := e.ConvertedType.Get()
		lt, _ := e.LogicalType.Value.(*format.TimestampType)
		var micros bool
		if lt != nil {
			_, micros = lt.Unit.Value.(*format.MicroSeconds)
		}
		if typ != format.Int64 || lt == nil || lt.IsAdjustedToUTC || !micros || hasCT {
			t.Errorf("Parquet column %s: type %v, logical type %s, converted type %v (set %v); want INT64, TIMESTAMP(isAdjustedToUTC=false, MICROS), none", col, typ, e.LogicalType.String(), ct, hasCT)
		}
		return
	}
	t.Errorf("no Parquet column %s in %s", col, path)
}

// TestTimestampNTZRefusesInstants: a Parquet column of instants (TIMESTAMP adjusted to UTC) is
// not read as TIMESTAMP_NTZ, as Spark's Parquet reader refuses it, while a TIMESTAMP_NTZ file
// column reads as TIMESTAMP_NTZ and, its wall clock read as UTC, as TIMESTAMP.
func TestTimestampNTZRefusesInstants(t *testing.T) {
	t.Parallel()
	tbl := New(t.TempDir())
	wall := ts("2024-01-31T10:00:00Z")
	inst, err := tbl.WriteFile(mustDDL(t, "at TIMESTAMP"), [][]any{{wall}})
	if err != nil {
		t.Fatal(err)
	}
	local, err := tbl.WriteFile(mustDDL(t, "at TIMESTAMP_NTZ"), [][]any{{wall}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.ReadFile(filepath.Join(tbl.Dir, inst.Path), mustDDL(t, "at TIMESTAMP_NTZ"))
	if err == nil || !strings.Contains(err.Error(), "cannot be read as TIMESTAMP_NTZ") || !strings.Contains(err.Error(), "declare the column TIMESTAMP") {
		t.Errorf("reading TIMESTAMP as TIMESTAMP_NTZ: error %v, want one saying it cannot", err)
	}
	for _, ddl := range []string{"at TIMESTAMP_NTZ", "at TIMESTAMP"} {
		rows, err := tbl.ReadFile(filepath.Join(tbl.Dir, local.Path), mustDDL(t, ddl))
		if err != nil || len(rows) != 1 || rows[0][0] != wall {
			t.Errorf("reading TIMESTAMP_NTZ as %s: %v, %v; want %d", ddl, rows, err, wall)
		}
	}
}

// TestTimestampNTZPartitionedWriteData: WriteData partitions by a TIMESTAMP_NTZ column with the
// partition values of Delta PROTOCOL.md (no zone, the fraction only when not zero), and the
// table reads back the same wall clocks, here and in the independent reader.
func TestTimestampNTZPartitionedWriteData(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, hour TIMESTAMP_NTZ")
	tbl := createTable(t, s, "hour")
	snap := mustSnapshot(t, tbl, -1)
	rows := [][]any{{int64(1), ts("2024-01-31T10:00:00Z")}, {int64(2), ts("2024-01-31T10:00:00.25Z")}, {int64(3), nil}}
	adds, err := tbl.WriteData(snap.Metadata, rows)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, a := range adds {
		parts = append(parts, a.PartitionValues["hour"])
	}
	slices.Sort(parts)
	if want := []string{"", "2024-01-31 10:00:00", "2024-01-31 10:00:00.250000"}; !slices.Equal(parts, want) {
		t.Errorf("partition values %q, want %q", parts, want)
	}
	tx := tbl.Begin(snap)
	tx.Add(adds...)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`[1,"2024-01-31T10:00:00.000000"]`, `[2,"2024-01-31T10:00:00.250000"]`, `[3,null]`}
	if c := canonical(s, got); !slices.Equal(c, want) {
		t.Errorf("rows %v, want %v", c, want)
	}
	if os.Getenv("DELTACHECK") != "" {
		if c := canonical(s, parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))); !slices.Equal(c, want) {
			t.Errorf("deltacheck rows %v, want %v", c, want)
		}
	}
}
