package delta

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestColumnMappingByName reads a table Databricks wrote with column mapping by name
// (testdata/table_with_column_mapping: delta.columnMapping.mode = name, column names with
// spaces, partitioned by one of them, zstd Parquet): the data files, the partition values and the
// statistics name the columns by their physical names (col-<uuid>), the table by its logical
// ones (Delta PROTOCOL.md, "Column Mapping"). The rows are the five delta-rs's tests expect of
// it, by logical name, through Rows and the row-group reader alike. Writing to such a table is
// refused, by OPTIMIZE before it reads a file and by a commit: this package writes data files by
// column name only.
func TestColumnMappingByName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "testdata/table_with_column_mapping", dir)
	tbl := New(dir)
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Metadata.Schema.DDL(); got != "`Company Very Short` STRING, `Super Name` STRING" {
		t.Errorf("schema %s, want the logical names", got)
	}
	if got := snap.Metadata.ColumnMappingMode(); got != "name" {
		t.Errorf("mode %q, want name", got)
	}
	want := []string{
		"BME|Timothy Lamb",
		"BMS|Anthony Johnson",
		"BMS|Mr. Daniel Ferguson MD",
		"BMS|Nathan Bennett",
		"BMS|Stephanie Mcgrath",
	}
	text := func(rows [][]any) []string {
		var out []string
		for _, r := range rows {
			var parts []string
			for _, v := range r {
				s, _ := v.(string)
				parts = append(parts, s)
			}
			out = append(out, strings.Join(parts, "|"))
		}
		slices.Sort(out)
		return out
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(rows); !slices.Equal(got, want) {
		t.Errorf("Rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var grouped [][]any
	for _, a := range snap.Files {
		if err := tbl.FileRowGroups(snap.Metadata, a, func(rows [][]any) error {
			grouped = append(grouped, rows...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := text(grouped); !slices.Equal(got, want) {
		t.Errorf("FileRowGroups:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	if _, err := tbl.Optimize(OptimizeOptions{}); err == nil || !strings.Contains(err.Error(), "column mapping (mode name), and this writer does not write such tables") {
		t.Errorf("OPTIMIZE: error %v, want a refusal naming column mapping", err)
	}
	tx := tbl.Begin(snap)
	tx.Add(Add{Path: "extra.parquet", PartitionValues: map[string]string{"Company Very Short": "X"}, Size: 1, DataChange: true})
	if _, err := tx.Commit("WRITE", nil); err == nil || !strings.Contains(err.Error(), "writer version 5") {
		t.Errorf("commit: error %v, want a refusal of writer version 5 (column mapping)", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json")); len(files) != 1 {
		t.Errorf("the log has %d commits after the refusals, want 1", len(files))
	}
}
