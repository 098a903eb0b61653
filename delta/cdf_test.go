package delta

import (
	"strings"
	"testing"

	"tributary/schema"
)

// commitTS returns the _commit_timestamp of version v: commitInfo.timestamp in µs.
func commitTS(t testing.TB, tbl *Table, v int64) schema.Timestamp {
	t.Helper()
	c, err := tbl.ReadCommit(v)
	if err != nil {
		t.Fatal(err)
	}
	return schema.Timestamp(c.Info.Timestamp * 1000)
}

// TestChangesFromAddsAndRemoves: versions without cdc actions give the rows of added files as
// inserts and of removed files as deletes (Delta PROTOCOL.md, "Reader Requirements for
// AddCDCFile").
func TestChangesFromAddsAndRemoves(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING")
	tbl := createTable(t, s)
	_, fileA := appendRows(t, tbl, [][]any{{int64(1), "a"}, {int64(2), "b"}})
	appendRows(t, tbl, [][]any{{int64(3), "c"}})
	// Version 3 overwrites file A with file C.
	fileC, err := tbl.WriteFile(s, [][]any{{int64(1), "A"}})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.Remove(tbl.RemoveFor(fileA, 0))
	tx.Add(fileC)
	if _, err := tx.Commit("WRITE", map[string]any{"mode": "Overwrite"}); err != nil {
		t.Fatal(err)
	}
	// Version 4 only rearranges data (dataChange false): no change rows.
	fileD, err := tbl.WriteFile(s, [][]any{{int64(3), "c"}})
	if err != nil {
		t.Fatal(err)
	}
	fileD.DataChange = false
	snap := mustSnapshot(t, tbl, -1)
	tx = tbl.Begin(snap)
	rm := tbl.RemoveFor(snap.Files[0], 0)
	rm.DataChange = false
	tx.Remove(rm)
	tx.Add(fileD)
	if _, err := tx.Commit("OPTIMIZE", nil); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		from, to int64
		want     [][]any
	}{
		{0, -1, [][]any{
			{int64(1), "a", "insert", int64(1), commitTS(t, tbl, 1)},
			{int64(2), "b", "insert", int64(1), commitTS(t, tbl, 1)},
			{int64(3), "c", "insert", int64(2), commitTS(t, tbl, 2)},
			{int64(1), "a", "delete", int64(3), commitTS(t, tbl, 3)},
			{int64(2), "b", "delete", int64(3), commitTS(t, tbl, 3)},
			{int64(1), "A", "insert", int64(3), commitTS(t, tbl, 3)},
		}},
		{2, 2, [][]any{{int64(3), "c", "insert", int64(2), commitTS(t, tbl, 2)}}},
		{4, 4, nil},
	}
	for _, tc := range tests {
		cs, rows, err := tbl.Changes(tc.from, tc.to)
		if err != nil {
			t.Fatalf("Changes(%d, %d): %v", tc.from, tc.to, err)
		}
		if cs.DDL() != "id BIGINT, name STRING, _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP" {
			t.Errorf("schema %s", cs.DDL())
		}
		assertRows(t, rows, tc.want)
	}
}

// TestChangesFromCDCFiles: a version with cdc actions is read from those files only.
func TestChangesFromCDCFiles(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING")
	tbl := createTable(t, s)
	_, fileA := appendRows(t, tbl, [][]any{{int64(1), "a"}, {int64(2), "b"}})
	// A MERGE: update 1, delete 2, insert 3.
	fileB, err := tbl.WriteFile(s, [][]any{{int64(1), "a2"}, {int64(3), "c"}})
	if err != nil {
		t.Fatal(err)
	}
	cdc, err := tbl.WriteCDCFile(s,
		[][]any{{int64(1), "a"}, {int64(1), "a2"}, {int64(2), "b"}, {int64(3), "c"}},
		[]string{ChangeUpdatePreimage, ChangeUpdatePostimage, ChangeDelete, ChangeInsert})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cdc.Path, "_change_data/cdc-00000-") || cdc.DataChange || cdc.Size <= 0 {
		t.Errorf("cdc action %+v", cdc)
	}
	tx := tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.Remove(tbl.RemoveFor(fileA, 0))
	tx.Add(fileB)
	tx.AddCDC(cdc)
	if v, err := tx.Commit("MERGE", nil); err != nil || v != 2 {
		t.Fatalf("merge: %d, %v", v, err)
	}
	_, rows, err := tbl.Changes(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	ts2 := commitTS(t, tbl, 2)
	assertRows(t, rows, [][]any{
		{int64(1), "a", "update_preimage", int64(2), ts2},
		{int64(1), "a2", "update_postimage", int64(2), ts2},
		{int64(2), "b", "delete", int64(2), ts2},
		{int64(3), "c", "insert", int64(2), ts2},
	})
	// The table itself holds the merged rows; the change file is not a data file.
	got, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{{int64(1), "a2"}, {int64(3), "c"}})

	if _, err := tbl.WriteCDCFile(s, [][]any{{int64(1), "a"}}, []string{"upsert"}); err == nil || !strings.Contains(err.Error(), `"upsert"`) {
		t.Errorf("bad change type: %v", err)
	}
}

// TestChangesPartitioned: partition columns of change rows come from the actions.
func TestChangesPartitioned(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, day DATE, region STRING")
	tbl := createTable(t, s, "day", "region")
	data := mustDDL(t, "id BIGINT")
	snap := mustSnapshot(t, tbl, -1)
	a, err := tbl.WriteFile(data, [][]any{{int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	a.PartitionValues = map[string]string{"day": FormatPartitionValue(schema.Type{Kind: schema.DateKind}, date("2024-01-31")), "region": ""}
	tx := tbl.Begin(snap)
	tx.Add(a)
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	tx = tbl.Begin(mustSnapshot(t, tbl, -1))
	rm := tbl.RemoveFor(a, 0)
	rm.ExtendedFileMetadata, rm.PartitionValues = false, nil // as old writers do
	tx.Remove(rm)
	if _, err := tx.Commit("DELETE", nil); err != nil {
		t.Fatal(err)
	}
	_, rows, err := tbl.Changes(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, rows, [][]any{
		{int64(1), date("2024-01-31"), nil, "insert", int64(1), commitTS(t, tbl, 1)},
		{int64(1), date("2024-01-31"), nil, "delete", int64(2), commitTS(t, tbl, 2)},
	})
	got, err := tbl.Rows(mustSnapshot(t, tbl, 1))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, got, [][]any{{int64(1), date("2024-01-31"), nil}})
}

func TestChangesErrors(t *testing.T) {
	t.Parallel()
	tbl := createTable(t, mustDDL(t, "id BIGINT"))
	appendRows(t, tbl, [][]any{{int64(1)}})
	for _, tc := range []struct {
		from, to int64
		want     string
	}{
		{5, -1, "the latest version of"},
		{0, 9, "the latest version of"},
		{-1, -1, "versions start at 0"},
		{1, 0, "the start is after the end"},
	} {
		_, _, err := tbl.Changes(tc.from, tc.to)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Changes(%d, %d): %v, want %q", tc.from, tc.to, err, tc.want)
		}
		if err != nil && tc.want == "the latest version of" && !strings.HasSuffix(err.Error(), " is 1") {
			t.Errorf("Changes(%d, %d): %v does not name the latest version 1", tc.from, tc.to, err)
		}
	}
}

func TestPartitionValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ddl  string
		v    any
		text string
	}{
		{"x BIGINT", int64(-42), "-42"},
		{"x INT", int32(7), "7"},
		{"x STRING", "a b/c", "a b/c"},
		{"x DOUBLE", 1.5, "1.5"},
		{"x BOOLEAN", true, "true"},
		{"x DECIMAL(10,2)", schema.Decimal(-1250), "-12.50"},
		{"x DATE", date("2024-01-31"), "2024-01-31"},
		{"x TIMESTAMP", ts("2024-01-31T10:00:00.000001Z"), "2024-01-31T10:00:00.000001Z"},
		{"x BIGINT", nil, ""},
	}
	for _, tc := range tests {
		typ := mustDDL(t, tc.ddl).Fields[0].Type
		if got := FormatPartitionValue(typ, tc.v); got != tc.text {
			t.Errorf("FormatPartitionValue(%s, %v) = %q, want %q", tc.ddl, tc.v, got, tc.text)
		}
		back, err := ParsePartitionValue(typ, tc.text)
		if err != nil || !sameValue(back, tc.v) {
			t.Errorf("ParsePartitionValue(%s, %q) = %#v, %v; want %#v", tc.ddl, tc.text, back, err, tc.v)
		}
	}
	// Spark's form without a zone, taken as UTC (Delta PROTOCOL.md, "Partition Value Serialization").
	v, err := ParsePartitionValue(schema.Type{Kind: schema.TimestampKind}, "1970-01-01 00:00:00.123456")
	if err != nil || v != schema.Timestamp(123456) {
		t.Errorf("Spark timestamp partition value: %v, %v", v, err)
	}
}
