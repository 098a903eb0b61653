package spec

import "slices"

// viewFormats are the file formats a view over files reads (the ones read file by file).
var viewFormats = []string{"json", FormatCSV, FormatParquet, FormatDebezium}

// FileView reports whether d is a view over files: `type: view` with a file `source:`. Such a
// view is not persisted: each APPLY CHANGES flow that reads it reads the files itself and keeps
// its own record of the files it has read, committed with its target (as a Delta Live Tables
// streaming view over Auto Loader feeds apply_changes; semantics.md "Ingestion").
func (d *Dataset) FileView() bool {
	return d != nil && d.Type == View && d.Source != nil
}

// ReadsFiles reports whether s reads a folder's files one by one, each file and line a place of
// its own: format json (the default), csv, parquet or debezium; not a table, delta or postgres.
func (s *Source) ReadsFiles() bool {
	return s.Table == "" && (s.Format == "" || slices.Contains(viewFormats, s.Format))
}

// fileView checks a `type: view` dataset fed by `source:`: a file format, a declared schema, and
// nothing that needs a table of its own.
func (d *decoder) fileView(in *datasetInfo, typeEntry *entry) {
	ds, src := in.ds, in.ds.Source
	at, path := resolve(typeEntry.val), typeEntry.path
	if !src.ReadsFiles() {
		what := "format " + src.Format
		if src.Table != "" {
			what = "a table (`table:`)"
		}
		d.addAt(at, path, "remove `type:` to make it a streaming_table",
			"a view reading %s is not supported yet; a view reads files (json, csv, parquet or debezium)", what)
		return
	}
	if src.InferSchema {
		d.addAt(at, path, "declare the columns in `source: schema:`, or remove `type:` to keep a streaming_table",
			"a view over files needs a declared schema: it has no table to keep an inferred one")
	}
	if src.SchemaEvolutionMode == EvolutionAddNewColumns && !src.InferSchema {
		return // already reported by the source
	}
	if in.partitionBy != nil {
		d.addAt(in.partitionBy.key, in.partitionBy.path, "remove it: a view is not stored",
			"partition_by applies to a table; %s is a view", ds.Name)
	}
	if len(ds.TableProperties) > 0 {
		d.addAt(at, path, "remove `table_properties:`, or remove `type:` to keep a streaming_table",
			"table_properties apply to a table; %s is a view", ds.Name)
	}
	for i, e := range ds.Expectations {
		if e.OnViolation == OnViolationQuarantine {
			d.add(e.Pos, child(item(child(in.path, "expectations"), i), "on_violation"),
				"use drop, or remove `type:` to keep a streaming_table with its quarantine table",
				"on_violation quarantine needs a table; %s is a view", ds.Name)
		}
	}
}

// fileViewReads reports every dataset that reads a view over files other than through
// apply_changes, the one flow that reads such a view in this release.
func (v *validation) fileViewReads(infos []*datasetInfo) {
	isView := func(name string) bool {
		t, ok := v.byName[name]
		return ok && t.kind == kindSource && t.ds.FileView()
	}
	const hint = "read it from apply_changes, or remove its `type:` to make it a streaming_table"
	for _, in := range infos {
		ds := in.ds
		if s := ds.ApplyChangesFromSnapshot; s != nil && s.Source != "" && in.snapshot.source.node != nil && isView(s.Source) {
			v.d.addAt(in.snapshot.source.node, in.snapshot.source.path, hint,
				"%s is a view over files: apply_changes_from_snapshot reads a table's snapshots", s.Source)
		}
		if ds.Query == nil || in.query == nil {
			continue
		}
		for _, r := range ds.Query.Refs {
			if isView(r.Name) {
				v.d.add(v.d.queryPos(in.query.node, r.Start), in.query.path, hint,
					"%s is a view over files: a query cannot read it in this release", r.Name)
			}
		}
	}
}
