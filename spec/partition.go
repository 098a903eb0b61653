package spec

import (
	"slices"

	"go.yaml.in/yaml/v3"

	"tributary/schema"
)

// partitionInfo keeps the nodes of a dataset's `partition_by:` for validation.
type partitionInfo struct {
	key  *yaml.Node
	path string
	cols []ref
}

// partitionBy decodes a dataset's `partition_by:`: a list of column names (one name alone is
// taken as a list of one).
func (d *decoder) partitionBy(e entry) ([]string, *partitionInfo) {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode && !isString(v) {
		d.addAt(v, e.path, "write `partition_by: [region]`", "partition_by must be a list of column names, got %s", describe(v))
		return nil, nil
	}
	names, refs := d.columns(v, e.path, "partition_by", true)
	return names, &partitionInfo{key: e.key, path: e.path, cols: refs}
}

// validatePartitions checks each `partition_by:` against the dataset's output schema: only a
// dataset fed by `source` may be partitioned (APPLY CHANGES targets rewrite files by key, not by
// partition, in this release), each column must be a column of the dataset of a primitive type,
// and at least one column must stay outside the partition columns.
func (d *decoder) validatePartitions(infos []*datasetInfo) {
	for _, in := range infos {
		pi := in.partitionBy
		if pi == nil || len(in.ds.PartitionBy) == 0 {
			continue
		}
		if in.kind != kindSource {
			d.addAt(pi.key, pi.path, "remove it; partition the bronze table that feeds this one instead",
				"partition_by is not supported yet for a dataset fed by %s", in.kind)
			continue
		}
		s := in.ds.Schema
		if len(s.Fields) == 0 {
			continue // the schema is broken and reported already
		}
		for _, r := range pi.cols {
			i := s.Index(r.node.Value)
			switch {
			case i < 0:
				d.addAt(r.node, r.path, didYouMean(r.node.Value, s.Names(), "columns"),
					"unknown column %s: dataset %s has no such column", r.node.Value, in.ds.Name)
			case s.Fields[i].Type.Nested():
				d.addAt(r.node, r.path, "partition by a column of a primitive type",
					"column %s is of type %s, which cannot be a partition column", r.node.Value, s.Fields[i].Type.DDL())
			case s.Fields[i].Type.IsBinary():
				// A partition value is text in the Delta log (PROTOCOL.md, "Partition Value
				// Serialization": a binary one is its bytes read as a string), and bytes that
				// are not UTF-8 would not come back from it as they were.
				d.addAt(r.node, r.path, "partition by another column, or by a STRING column holding the bytes' text (e.g. their hex)",
					"column %s is BINARY, which cannot be a partition column: its value would be written as text in the Delta log, and bytes that are not UTF-8 would not read back", r.node.Value)
			}
		}
		inPartition := 0
		for _, f := range s.Fields {
			if slices.Contains(in.ds.PartitionBy, f.Name) {
				inPartition++
			}
		}
		if inPartition == len(s.Fields) {
			d.addAt(pi.key, pi.path, "leave at least one column out of partition_by",
				"every column of %s is a partition column; the data files would hold no column", in.ds.Name)
		}
	}
}

// kindWord names the nested kind of t (STRUCT, ARRAY or MAP) for errors.
func kindWord(t schema.Type) string {
	switch t.Kind {
	case schema.ArrayKind:
		return "ARRAY"
	case schema.MapKind:
		return "MAP"
	}
	return "STRUCT"
}
