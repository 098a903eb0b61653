package delta

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"tributary/schema"
)

// HiveDefaultPartition is the folder name of a NULL partition value, as Spark writes it.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// WriteData writes rows of a table whose metadata is m (rows in the column order of m.Schema)
// and returns the add actions to commit: NewDataWriter, one Write of every row, and Close. An
// unpartitioned table gets one data file, or several when the rows take more than the table's
// delta.targetFileSize (Metadata.TargetFileSize). A partitioned table gets one file per distinct
// tuple of partition values (again split at the target size), in Hive-style folders
// "col=value/.../part-....parquet" as Spark writes them (ExternalCatalogUtils path escaping;
// HiveDefaultPartition for NULL); the files hold the other columns only, and each add carries
// its partition values serialized as Delta PROTOCOL.md "Partition Value Serialization" says.
// The adds come in the order the partition tuples first appear, a partition's files in the
// order of their rows. No rows, no files. On error nothing is left behind.
func (t *Table) WriteData(m Metadata, rows [][]any) ([]Add, error) {
	w, err := t.NewDataWriter(m)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rows); err != nil {
		w.Abort()
		return nil, err
	}
	return w.Close()
}

// partitioner splits rows of a table by their partition values, for the data files of a
// partitioned table as Spark lays them out. It is made once per writer: the positions of the
// partition and data columns are found once.
type partitioner struct {
	dir     string // the table folder, for errors
	m       Metadata
	pidx    []int         // positions of m.PartitionColumns in m.Schema
	data    schema.Schema // the columns a data file holds: m.Schema without the partition columns
	dataIdx []int         // their positions in m.Schema
	key     []byte        // scratch
}

// newPartitioner returns the partitioner of a table at dir with metadata m; a partition column
// that is not a column of m.Schema is an error.
func newPartitioner(dir string, m Metadata) (*partitioner, error) {
	p := &partitioner{dir: dir, m: m, pidx: make([]int, len(m.PartitionColumns))}
	for i, c := range m.PartitionColumns {
		if p.pidx[i] = m.Schema.Index(c); p.pidx[i] < 0 {
			return nil, fmt.Errorf("delta: write %s: partition column %q is not a column of %s; fix partitionColumns in the table's metadata", dir, c, m.Schema.DDL())
		}
	}
	p.data, p.dataIdx = dataColumns(m)
	return p, nil
}

// partGroup is the rows of one partition: key is a canonical encoding of the partition values
// (schema.AppendKey: equal exactly for equal tuples, NULL included; "" when unpartitioned),
// values their serialized form by column name (Delta PROTOCOL.md "Partition Value
// Serialization"; NULL is ""), dir the Hive-style folder of the partition ("" when
// unpartitioned), and rows the data columns of the rows, in input order.
type partGroup struct {
	key    string
	values map[string]string
	dir    string
	rows   [][]any
}

// split groups rows (each in the column order of the table schema) by partition, in the order
// the partition tuples first appear. Rows of an unpartitioned table form one group and are not
// copied; otherwise each row's data columns are copied into a new row. A row whose length is
// not the schema's is an error naming the row (0-based in rows).
func (p *partitioner) split(rows [][]any) ([]*partGroup, error) {
	width := len(p.m.Schema.Fields)
	for i, r := range rows {
		if len(r) != width {
			return nil, fmt.Errorf("delta: write %s: row %d has %d values, the schema %d columns (%s)", p.dir, i, len(r), width, p.m.Schema.DDL())
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	if len(p.pidx) == 0 {
		return []*partGroup{{values: map[string]string{}, rows: rows}}, nil
	}
	byKey := map[string]*partGroup{}
	var groups []*partGroup
	for _, r := range rows {
		p.key = p.key[:0]
		for _, j := range p.pidx {
			p.key = schema.AppendKey(p.key, []any{r[j]})
		}
		g := byKey[string(p.key)]
		if g == nil {
			g = &partGroup{key: string(p.key), values: make(map[string]string, len(p.pidx))}
			dirs := make([]string, len(p.pidx))
			for k, j := range p.pidx {
				// A copy: the writer keeps it past the call, the caller may reuse the row's memory.
				v := strings.Clone(FormatPartitionValue(p.m.Schema.Fields[j].Type, r[j]))
				g.values[p.m.PartitionColumns[k]] = v
				dirs[k] = escapePartitionName(p.m.PartitionColumns[k]) + "=" + partitionDirValue(r[j] == nil, v)
				if len(dirs[k]) > MaxFolderName {
					return nil, p.folderTooLong(p.m.PartitionColumns[k], v, dirs[k])
				}
			}
			g.dir = strings.Join(dirs, "/")
			byKey[g.key] = g
			groups = append(groups, g)
		}
		dr := make([]any, len(p.dataIdx))
		for k, j := range p.dataIdx {
			dr[k] = r[j]
		}
		g.rows = append(g.rows, dr)
	}
	return groups, nil
}

// MaxFolderName is the length in bytes a folder name may have (NAME_MAX of Linux and macOS):
// the limit of a partition folder "col=value".
const MaxFolderName = 255

// folderTooLong is the error of a partition value whose folder name (dir, "col=value" escaped)
// is longer than a file system allows; v is the serialized value.
func (p *partitioner) folderTooLong(col, v, dir string) error {
	shown := v
	if len(shown) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut] + "…"
	}
	return fmt.Errorf("delta: write %s: partition column %s: a value of %d bytes (%d once escaped for a folder name) makes the partition folder name %d bytes long, more than the %d bytes a folder name may have; the first such value is %q; partition by a shorter column, or by a shorter column derived from this one (a prefix, a date, a hash of it), or leave %s out of partition_by",
		p.dir, col, len(v), len(dir)-len(escapePartitionName(col))-1, len(dir), MaxFolderName, shown, col)
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
