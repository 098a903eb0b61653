package delta

import (
	"strings"
	"testing"

	"tributary/schema"
)

// Tables written by other engines, copied into testdata/ (see testdata/README.md).

// TestSparkTableWithCDC reads simple_table_with_cdc, written by Databricks Runtime 11.3: a
// CREATE TABLE with CDF, an append, and an UPDATE that wrote a change data file.
func TestSparkTableWithCDC(t *testing.T) {
	t.Parallel()
	tbl := New("testdata/simple_table_with_cdc")
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 2 || snap.Timestamp != 1671962475765 || snap.Protocol != (Protocol{MinReaderVersion: 1, MinWriterVersion: 4}) {
		t.Errorf("snapshot version %d timestamp %d protocol %+v", snap.Version, snap.Timestamp, snap.Protocol)
	}
	m := snap.Metadata
	if m.ID != "abd7ff9d-5fac-48fb-8d13-06c3ce1811ac" || !m.Schema.Equal(mustDDL(t, "id INT, name STRING")) ||
		m.CreatedTime != 1671962429466 || !m.ChangeDataFeed() || m.Configuration["description"] != "CDC test Table" {
		t.Errorf("metadata %+v", m)
	}
	if len(snap.Files) != 1 || snap.Files[0].Path != "part-00000-7444aec4-710a-4a4c-8abe-3323499043e9.c000.snappy.parquet" || snap.NumRecords() != 1 {
		t.Errorf("files %+v", snap.Files)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	// The data file also holds a _change_type column, which is not part of the table.
	assertRows(t, rows, [][]any{{int32(0), "Mino"}})

	rows, err = tbl.Rows(mustSnapshot(t, tbl, 1))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, rows, [][]any{{int32(0), "Mario"}})

	c, err := tbl.ReadCommit(2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Info.Operation != "UPDATE" || *c.Info.ReadVersion != 1 || c.Info.OperationMetrics["numUpdatedRows"] != "1" ||
		c.Info.Extra["clusterId"] != "1018-130235-jmbkv29y" || len(c.Removes) != 1 || !c.Removes[0].ExtendedFileMetadata || len(c.CDCs) != 1 {
		t.Errorf("commit 2: %+v", c)
	}

	s, changes, err := tbl.Changes(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.DDL(); got != "id INT, name STRING, _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP" {
		t.Errorf("change feed schema %s", got)
	}
	t1, t2 := schema.Timestamp(1671962472835000), schema.Timestamp(1671962475765000)
	assertRows(t, changes, [][]any{
		{int32(0), "Mario", "insert", int64(1), t1},
		{int32(0), "Mario", "update_preimage", int64(2), t2},
		{int32(0), "Mino", "update_postimage", int64(2), t2},
	})
	if _, _, err := tbl.Changes(3, -1); err == nil || !strings.Contains(err.Error(), "latest version") || !strings.Contains(err.Error(), " is 2") {
		t.Errorf("Changes(3): %v", err)
	}
}

// TestSparkPartitionedTable reads basic_partitioned (Delta Acceptance Tests, Spark 3.5.1 /
// Delta 3.1): partition values come from the log, not from the data files.
func TestSparkPartitionedTable(t *testing.T) {
	t.Parallel()
	tbl := New("testdata/basic_partitioned")
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Metadata.PartitionColumns) != 1 || snap.Metadata.PartitionColumns[0] != "letter" {
		t.Errorf("partition columns %v", snap.Metadata.PartitionColumns)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, rows, [][]any{
		{"a", int64(1), 1.1}, {"b", int64(2), 2.2}, {"c", int64(3), 3.3},
		{"a", int64(4), 4.4}, {"e", int64(5), 5.5}, {"f", int64(6), 6.6},
	})
	st, err := ParseStats(snap.Files[0].Stats, snap.Metadata.Schema)
	if err != nil || st.NumRecords != 1 || st.Min["number"] != int64(1) || st.Max["a_float"] != 1.1 {
		t.Errorf("stats %+v, %v", st, err)
	}
}
