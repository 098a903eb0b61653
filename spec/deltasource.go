package spec

import (
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"

	"tributary/delta"
	"tributary/schema"
)

// deltaSource finishes a `source:` with `format: delta` (spec.md §1: "a source may also read a
// table"): the Delta table at path, read as appended rows or as its change data feed. The
// dataset's columns are the table's (read from its log when the spec is loaded, so the table must
// exist), plus _change_type, _commit_version and _commit_timestamp for `read: change_feed`.
// Reader options, schema, rescued_data_column and mode belong to file formats and are refused.
func (d *decoder) deltaSource(n *yaml.Node, path string, src *Source, in *sourceInfo, entries []entry, deltaKeys map[string]entry) {
	src.Read, src.StartingVersion = ReadAppend, -1
	if strings.Contains(path, kindSnapshot) {
		for _, e := range entries {
			if e.name == "format" {
				d.addAt(resolve(e.val), e.path, "to follow a Delta table updated in place, read its change data feed (`format: delta`, `read: change_feed`) into `apply_changes` (README \"Reading a Delta table as a source\"); snapshots that are whole files or a dataset's versions are read here as `source: {path: ...}` or `source: <dataset>`",
					"snapshot files cannot be a Delta table")
			}
		}
		return
	}
	for _, e := range entries {
		switch e.name {
		case "schema":
			d.addAt(e.key, e.path, "remove it; the columns are the Delta table's", "a Delta source takes its schema from the table's log")
		case "options", "rescued_data_column", "mode", "include_metadata", "max_files_per_trigger", "schema_evolution_mode":
			d.addAt(e.key, e.path, "remove it; it applies to file formats", "%s does not apply to `format: delta`", e.name)
		}
	}
	d.readOptions(src, deltaKeys)
	pathNode := n
	for _, e := range entries {
		if e.name == "path" {
			pathNode = resolve(e.val)
		}
	}
	if src.Path == "" {
		if !hasKey(entries, "path") {
			d.addAt(n, child(path, "path"), "add `path: ../other/tables/t` (the Delta table's folder, relative to the spec's folder)", "the source has no path")
		}
		return
	}
	snap, err := delta.New(src.Path).Snapshot(-1)
	if err == nil {
		err = delta.CheckReadable(snap) // column mapping, an unknown reader feature
	}
	if err != nil {
		hint := "point path at a Delta table's folder (the one holding _delta_log)"
		if !errors.Is(err, delta.ErrNoTable) {
			hint = "the table uses what this reader cannot read yet (README \"Delta Lake: conformance\" lists what it reads)"
		}
		d.addAt(pathNode, child(path, "path"), hint, "cannot read the Delta table: %v", err)
		return
	}
	cols := schema.Schema{Fields: append([]schema.Field(nil), snap.Metadata.Schema.Fields...)}
	if src.Read == ReadChangeFeed {
		if !snap.Metadata.ChangeDataFeed() {
			d.addAt(pathNode, child(path, "path"), "set the table property delta.enableChangeDataFeed = true on that table, or use `read: append`",
				"the Delta table at %s has no change data feed (delta.enableChangeDataFeed is not true)", src.Path)
			return
		}
		for _, f := range delta.FeedColumns() {
			if cols.Index(f.Name) >= 0 {
				d.addAt(pathNode, child(path, "path"), "read it with `read: append`", "the Delta table already has a column %s, which the change feed adds", f.Name)
				return
			}
			cols.Fields = append(cols.Fields, f)
		}
	}
	src.Schema, in.schemaOK = cols, true
	src.SchemaDDL = cols.DDL()
}

// readOptions decodes the keys shared by every source that reads a Delta table (a `format: delta`
// path or a `table:` dataset): read (append | change_feed), starting_version (0 or more) and
// skip_change_commits (read: append only).
func (d *decoder) readOptions(src *Source, keys map[string]entry) {
	if e, ok := keys["read"]; ok {
		if s, ok := d.oneOf(e.val, e.path, ReadAppend, ReadChangeFeed); ok {
			src.Read = s
		}
	}
	if e, ok := keys["starting_version"]; ok {
		if v, ok := d.integer(e.val, e.path); ok {
			if v < 0 {
				d.addAt(resolve(e.val), e.path, "table versions start at 0", "starting_version must be 0 or more, found %d", v)
			} else {
				src.StartingVersion = int64(v)
			}
		}
	}
	if e, ok := keys["skip_change_commits"]; ok {
		if b, ok := d.boolean(e.val, e.path); ok {
			src.SkipChangeCommits = b
			if b && src.Read == ReadChangeFeed {
				d.addAt(e.key, e.path, "remove it; a change feed reads updates and deletes as rows", "skip_change_commits applies to `read: append` only")
			}
		}
	}
}
