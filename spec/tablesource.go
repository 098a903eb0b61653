package spec

import (
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"tributary/delta"
	"tributary/schema"
)

// tableSource decodes `source: {table: x, read: append | change_feed, starting_version: N,
// skip_change_commits: B}`: the table of dataset x of this pipeline, read as a Delta source. Its
// path and columns are known once the pipeline's storage and x's output are (tableSources,
// tableSourceOutput).
func (d *decoder) tableSource(n *yaml.Node, path string, src *Source, in *sourceInfo, entries []entry, deltaKeys map[string]entry) {
	src.Format, src.Read, src.StartingVersion = FormatDelta, ReadAppend, -1
	for _, e := range entries {
		switch e.name {
		case "table":
			if s, ok := d.ident(e.val, e.path, "dataset name"); ok {
				src.Table, in.tableNode = s, resolve(e.val)
			}
		case "path", "format", "schema", "options", "rescued_data_column", "mode", "include_metadata", "max_files_per_trigger", "schema_hints", "schema_evolution_mode":
			d.addAt(e.key, e.path, "remove it; `table:` reads a dataset of this pipeline, with its columns",
				"%s does not apply to a `table:` source", e.name)
		}
	}
	d.readOptions(src, deltaKeys)
}

// tableSources checks that each `table:` source names a dataset of the pipeline that has a
// table, and sets its Path to that table's folder under the storage.
func (v *validation) tableSources(p *Pipeline, infos []*datasetInfo) {
	for _, in := range infos {
		src := in.ds.Source
		if src == nil || src.Table == "" || in.source.tableNode == nil {
			continue
		}
		node, path := in.source.tableNode, child(in.source.path, "table")
		target, ok := v.byName[src.Table]
		switch {
		case !ok:
			v.d.addAt(node, path, didYouMean(src.Table, v.namesBut(in.ds.Name), "datasets"), "unknown dataset %s: `table:` reads a dataset of this pipeline", src.Table)
		case target.ds.FileView():
			v.d.addAt(node, path, "read it from apply_changes, or remove its `type:` to make it a streaming_table",
				"%s is a view over files: it has no table to read", src.Table)
		case target.ds.Type == View:
			v.d.addAt(node, path, "read a table", "%s is a view: it has no table to read", src.Table)
		case target.kind == kindQuery:
			v.d.addAt(node, path, "read the query's own sources, or an APPLY CHANGES or `source:` dataset",
				"reading the table of a query dataset (%s) with `table:` is not supported yet", src.Table)
		}
		src.Path = filepath.Join(p.Storage, "tables", src.Table)
	}
}

// tableSourceOutput computes the columns of a `table:` source: the read dataset's, plus
// _change_type, _commit_version and _commit_timestamp for `read: change_feed`.
func (v *validation) tableSourceOutput(in *datasetInfo) bool {
	src := in.ds.Source
	target, ok := v.byName[src.Table]
	if !ok || target.kind == kindQuery || target.ds.Type == View || !v.output(target) {
		return false
	}
	cols := schema.Schema{Fields: append([]schema.Field(nil), target.ds.Schema.Fields...)}
	if src.Read == ReadChangeFeed {
		for _, f := range delta.FeedColumns() {
			if cols.Index(f.Name) >= 0 {
				v.d.addAt(in.source.tableNode, child(in.source.path, "table"), "read it with `read: append`",
					"dataset %s already has a column %s, which the change feed adds", src.Table, f.Name)
				return false
			}
			cols.Fields = append(cols.Fields, f)
		}
	}
	src.Schema, src.SchemaDDL = cols, cols.DDL()
	v.expectations(in, cols)
	in.ds.Schema = schema.Schema{Fields: append([]schema.Field(nil), cols.Fields...)}
	return true
}
