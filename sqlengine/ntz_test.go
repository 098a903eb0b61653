package sqlengine

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"tributary/delta"
	"tributary/schema"
)

// TestQueryTimestampNTZ: a TIMESTAMP_NTZ column, from rows or from a Parquet file of our Delta
// writer, enters DuckDB as its TIMESTAMP (a wall clock: hour() gives the written hour whatever
// the session zone) and comes out TIMESTAMP_NTZ when selected, shifted or aggregated; a CAST to
// TIMESTAMPTZ gives a TIMESTAMP. Describe gives the same schema. A query over no TIMESTAMP_NTZ
// column keeps DuckDB's TIMESTAMP as TIMESTAMP, as before the type existed.
func TestQueryTimestampNTZ(t *testing.T) {
	s := mustDDL(t, "id BIGINT, ts TIMESTAMP_NTZ")
	wall := schema.Timestamp(1706695200_123456) // 2024-01-31 10:00:00.123456
	dir := t.TempDir()
	add, err := delta.New(dir).WriteFile(s, [][]any{{int64(1), wall}, {int64(2), nil}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const q = `SELECT id, ts, ts + INTERVAL 1 HOUR AS later, hour(ts) AS h, CAST(ts AS TIMESTAMPTZ) AS inst, max(ts) OVER () AS m FROM t ORDER BY id`
	const wantDDL = "id BIGINT, ts TIMESTAMP_NTZ, later TIMESTAMP_NTZ, h BIGINT, inst TIMESTAMP, m TIMESTAMP_NTZ"
	want := [][]any{
		{int64(1), wall, wall + 3600_000_000, int64(10), wall, wall},
		{int64(2), nil, nil, nil, nil, wall},
	}
	for _, rel := range []Relation{
		{Name: "t", Schema: s, Rows: [][]any{{int64(1), wall}, {int64(2), nil}}},
		{Name: "t", Schema: s, Files: []string{filepath.Join(dir, add.Path)}},
	} {
		got, rows, err := e.Query(context.Background(), q, []Relation{rel})
		if err != nil {
			t.Fatal(err)
		}
		if got.DDL() != wantDDL {
			t.Errorf("files %v: schema %s, want %s", rel.Files != nil, got.DDL(), wantDDL)
		}
		if !reflect.DeepEqual(rows, want) {
			t.Errorf("files %v: rows %v, want %v", rel.Files != nil, rows, want)
		}
		d, err := e.Describe(context.Background(), q, []Relation{rel})
		if err != nil {
			t.Fatal(err)
		}
		if d.DDL() != wantDDL {
			t.Errorf("Describe: schema %s, want %s", d.DDL(), wantDDL)
		}
	}
	plain := Relation{Name: "p", Schema: mustDDL(t, "id BIGINT, ts TIMESTAMP"), Rows: [][]any{{int64(1), wall}}}
	got, rows, err := e.Query(context.Background(), `SELECT ts, CAST('2024-01-31 10:00:00.123456' AS TIMESTAMP) AS local FROM p`, []Relation{plain})
	if err != nil {
		t.Fatal(err)
	}
	if got.DDL() != "ts TIMESTAMP, local TIMESTAMP" || !reflect.DeepEqual(rows, [][]any{{wall, wall}}) {
		t.Errorf("without TIMESTAMP_NTZ: schema %s rows %v, want ts TIMESTAMP, local TIMESTAMP and %d twice", got.DDL(), rows, wall)
	}
}
