package delta

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWritePartitioned writes a table partitioned by a string and a date, with a NULL and the
// characters Spark escapes, and checks the layout Spark writes (the folder names of DAT's
// multi_partitioned case, written by Spark 3.5.1: "/%20%f" is "letter=%2F%2520%25f", NULL is
// __HIVE_DEFAULT_PARTITION__), the serialized partition values (Delta PROTOCOL.md "Partition
// Value Serialization": NULL as an empty value), data files without the partition columns, and
// the rows read back by us and by deltacheck.
func TestWritePartitioned(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, letter STRING, day DATE")
	tbl := createTable(t, s, "letter", "day")
	rows := [][]any{
		{int64(1), "a", date("1970-01-01")},
		{int64(2), "/%20%f", date("1970-01-01")},
		{int64(3), nil, nil},
		{int64(4), "a", date("1970-01-01")},
		{int64(5), "😈", date("2024-02-29")},
	}
	snap := mustSnapshot(t, tbl, -1)
	adds, err := tbl.WriteData(snap.Metadata, rows)
	if err != nil {
		t.Fatal(err)
	}
	wantDirs := []string{"letter=a/day=1970-01-01", "letter=%2F%2520%25f/day=1970-01-01", "letter=__HIVE_DEFAULT_PARTITION__/day=__HIVE_DEFAULT_PARTITION__", "letter=😈/day=2024-02-29"}
	wantValues := []map[string]string{{"letter": "a", "day": "1970-01-01"}, {"letter": "/%20%f", "day": "1970-01-01"}, {"letter": "", "day": ""}, {"letter": "😈", "day": "2024-02-29"}}
	if len(adds) != 4 {
		t.Fatalf("%d files, want one per partition (4)", len(adds))
	}
	for i, a := range adds {
		dec, err := url.PathUnescape(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.ToSlash(filepath.Dir(dec)) != wantDirs[i] {
			t.Errorf("file %d in %s, want %s", i, filepath.Dir(dec), wantDirs[i])
		}
		if _, err := os.Stat(filepath.Join(tbl.Dir, filepath.FromSlash(dec))); err != nil {
			t.Errorf("file %d: %v", i, err)
		}
		for k, v := range wantValues[i] {
			if a.PartitionValues[k] != v {
				t.Errorf("file %d: partition values %v, want %v", i, a.PartitionValues, wantValues[i])
			}
		}
		// The data file holds id only.
		st, err := ParseStats(a.Stats, s)
		if err != nil || st.NullCount["letter"] != 0 || len(st.NullCount) != 1 {
			t.Errorf("file %d: stats %s", i, a.Stats)
		}
	}
	tx := tbl.Begin(snap)
	tx.Add(adds...)
	if _, err := tx.Commit("WRITE", map[string]any{"mode": "Append", "partitionBy": []string{"letter", "day"}}); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := canonical(s, got), canonical(s, rows); !slices.Equal(g, w) {
		t.Errorf("rows %v, want %v", g, w)
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if g, w := canonical(s, theirs), canonical(s, rows); !slices.Equal(g, w) {
			t.Errorf("deltacheck rows %v, want %v", g, w)
		}
	}
	if _, err := tbl.WriteData(snap.Metadata, [][]any{{int64(1)}}); err == nil || !strings.Contains(err.Error(), "row 0 has 1 values") {
		t.Errorf("short row: %v", err)
	}
}

// TestWritePartitionValueTooLong: a partition value whose folder name ("col=value", escaped as
// Spark escapes it) is longer than the 255 bytes a folder name may have is an error that names
// the column, the value's length escaped, the limit, the value (cut) and the fix, before any
// file of the write is made; a value that fits exactly is written.
func TestWritePartitionValueTooLong(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, p STRING")
	for _, c := range []struct {
		name, value, want string
	}{
		{"300 characters", strings.Repeat("x", 300), `partition column p: a value of 300 bytes (300 once escaped for a folder name) makes the partition folder name 302 bytes long, more than the 255 bytes a folder name may have; the first such value is "` + strings.Repeat("x", 40) + `…"`},
		{"short but escaped", strings.Repeat("/", 90), "partition column p: a value of 90 bytes (270 once escaped for a folder name) makes the partition folder name 272 bytes long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := createTable(t, s, "p")
			snap := mustSnapshot(t, tbl, -1)
			_, err := tbl.WriteData(snap.Metadata, [][]any{{int64(1), "short"}, {int64(2), c.value}})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "partition by a shorter column") {
				t.Fatalf("error = %v, want %q and how to fix it", err, c.want)
			}
			entries, _ := os.ReadDir(tbl.Dir)
			for _, e := range entries {
				if e.Name() != "_delta_log" {
					t.Errorf("the failed write left %s in the table folder", e.Name())
				}
			}
		})
	}
	tbl := createTable(t, s, "p")
	snap := mustSnapshot(t, tbl, -1)
	if _, err := tbl.WriteData(snap.Metadata, [][]any{{int64(1), strings.Repeat("x", 253)}}); err != nil {
		t.Errorf("a folder name of 255 bytes: %v", err)
	}
}
