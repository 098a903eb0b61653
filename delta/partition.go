package delta

import (
	"fmt"
	"maps"
	"strings"

	"github.com/google/uuid"

	"tributary/schema"
)

// HiveDefaultPartition is the folder name of a NULL partition value, as Spark writes it.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// WriteData writes rows of a table whose metadata is m (rows in the column order of m.Schema)
// and returns the add actions to commit. An unpartitioned table gets one data file (WriteFile).
// A partitioned table gets one file per distinct tuple of partition values, in Hive-style
// folders "col=value/.../part-....parquet" as Spark writes them (ExternalCatalogUtils path
// escaping; HiveDefaultPartition for NULL); the files hold the other columns only, and each
// add carries its partition values serialized as Delta PROTOCOL.md "Partition Value
// Serialization" says. Files are written in the order the partition tuples first appear.
func (t *Table) WriteData(m Metadata, rows [][]any) ([]Add, error) {
	if len(m.PartitionColumns) == 0 {
		a, err := t.WriteFile(m.Schema, rows)
		if err != nil {
			return nil, err
		}
		return []Add{a}, nil
	}
	pidx := make([]int, len(m.PartitionColumns))
	isPart := map[int]bool{}
	for i, p := range m.PartitionColumns {
		j := m.Schema.Index(p)
		if j < 0 {
			return nil, fmt.Errorf("delta: write %s: partition column %q is not a column of %s", t.Dir, p, m.Schema.DDL())
		}
		pidx[i], isPart[j] = j, true
	}
	var data schema.Schema
	var dataIdx []int
	for j, f := range m.Schema.Fields {
		if !isPart[j] {
			data.Fields = append(data.Fields, f)
			dataIdx = append(dataIdx, j)
		}
	}
	type group struct {
		values map[string]string
		dir    string
		rows   [][]any
	}
	groups := map[string]*group{}
	var order []string
	var key []byte
	for i, r := range rows {
		if len(r) != len(m.Schema.Fields) {
			return nil, fmt.Errorf("delta: write %s: row %d has %d values, the schema %d columns (%s)", t.Dir, i, len(r), len(m.Schema.Fields), m.Schema.DDL())
		}
		key = key[:0]
		for _, j := range pidx {
			key = schema.AppendKey(key, []any{r[j]})
		}
		g := groups[string(key)]
		if g == nil {
			g = &group{values: map[string]string{}}
			var dirs []string
			for k, j := range pidx {
				v := FormatPartitionValue(m.Schema.Fields[j].Type, r[j])
				g.values[m.PartitionColumns[k]] = v
				dirs = append(dirs, escapePartitionName(m.PartitionColumns[k])+"="+partitionDirValue(r[j] == nil, v))
			}
			g.dir = strings.Join(dirs, "/")
			groups[string(key)] = g
			order = append(order, string(key))
		}
		dr := make([]any, len(dataIdx))
		for k, j := range dataIdx {
			dr[k] = r[j]
		}
		g.rows = append(g.rows, dr)
	}
	adds := make([]Add, 0, len(order))
	for _, k := range order {
		g := groups[k]
		rel := g.dir + "/" + fmt.Sprintf("part-00000-%s.c000.snappy.parquet", uuid.NewString())
		size, mtime, stats, err := t.writeParquet(rel, data, g.rows, nil)
		if err != nil {
			return nil, err
		}
		adds = append(adds, Add{
			Path: EscapePath(rel), PartitionValues: maps.Clone(g.values), Size: size,
			ModificationTime: mtime, DataChange: true, Stats: stats,
		})
	}
	return adds, nil
}

// partitionDirValue is the folder form of a serialized partition value.
func partitionDirValue(null bool, v string) string {
	if null || v == "" {
		return HiveDefaultPartition
	}
	return escapePartitionName(v)
}

// escapePartitionName escapes a partition column name or value for a folder name as Spark's
// ExternalCatalogUtils.escapePathName does: control characters, '"', '#', '%', '\”, '*', '/',
// ':', '=', '?', '\\', DEL, '{', '[', ']' and '^' become %XX.
func escapePartitionName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
