package spec

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tributary/schema"
)

// ApplyChangesFromSnapshot is an AUTO CDC FROM SNAPSHOT flow into the dataset (semantics.md
// "APPLY CHANGES FROM SNAPSHOT"): every new snapshot is a full copy of the source; keys new in it
// are inserted, keys whose values changed are updated, keys missing from it are deleted. Exactly
// one of Source and Files is set.
type ApplyChangesFromSnapshot struct {
	// Source names the dataset of this pipeline whose every new table version is a snapshot (the
	// whole table at that version); the version number is the snapshot's sequence.
	Source string
	// Files is a folder (or glob) of snapshot files, one full snapshot per file, applied one at a
	// time in name order; a file's position in that order (1, 2, 3, ...) is its sequence. It is
	// decoded like a dataset's `source:` (path, format json, declared schema, mode,
	// rescued_data_column).
	Files           *Source
	Keys            []string // one or more columns identifying a row of a snapshot
	StoredAsSCDType int      // 1 (default) or 2
	// TrackHistoryColumnList / TrackHistoryExceptColumnList choose the columns whose changes open
	// a new SCD type 2 version (at most one is set; SCD type 2 only). Neither: every non-key column.
	TrackHistoryColumnList       []string
	TrackHistoryExceptColumnList []string
	Pos                          Pos
}

// SnapshotSequenceColumn names the sequence of an APPLY CHANGES FROM SNAPSHOT target (the
// snapshot's version: the source table version, or the file's position) where the runner needs a
// column name for it: its CDC state. It is never a column of the target.
const SnapshotSequenceColumn = "snapshot_version"

var snapshotKeys = keySet{
	known: append([]string{"source", "keys", "stored_as_scd_type", "track_history_column_list", "track_history_except_column_list"},
		applyOnlyKeys...),
}

// applyOnlyKeys are apply_changes options that a snapshot flow does not take; each is reported
// with the reason rather than as an unknown key.
var applyOnlyKeys = []string{"sequence_by", "apply_as_deletes", "apply_as_truncates", "column_list", "except_column_list", "ignore_null_updates"}

var applyOnlyReasons = map[string]string{
	"sequence_by":         "the snapshot's version is the sequence: the source table's version, or the file's position in name order",
	"apply_as_deletes":    "a key missing from a snapshot is deleted",
	"apply_as_truncates":  "a snapshot replaces the whole table already",
	"column_list":         "the target has every column of the snapshot",
	"except_column_list":  "the target has every column of the snapshot",
	"ignore_null_updates": "a snapshot row is the whole row: a NULL in it is the value",
}

// snapshotInfo keeps the nodes of an apply_changes_from_snapshot that validation points at.
type snapshotInfo struct {
	source             ref         // the source node (a dataset name or a files mapping)
	files              *sourceInfo // set when source is a mapping
	keys               []ref
	track, trackExcept []ref
}

// snapshot decodes a dataset's `apply_changes_from_snapshot:`. Column names are checked later,
// against the snapshot's schema.
func (d *decoder) snapshot(n *yaml.Node, path string) (*ApplyChangesFromSnapshot, *snapshotInfo) {
	n = resolve(n)
	s := &ApplyChangesFromSnapshot{StoredAsSCDType: 1, Pos: d.pos(n)}
	in := &snapshotInfo{}
	entries, ok := d.mapping(n, path, snapshotKeys)
	if !ok {
		return s, in
	}
	for _, e := range entries {
		switch e.name {
		case "source":
			v := resolve(e.val)
			in.source = ref{v, e.path}
			if v.Kind == yaml.MappingNode {
				s.Files, in.files = d.source(v, e.path)
				d.snapshotFileKeys(v, e.path, s.Files)
				continue
			}
			if name, ok := d.nonEmpty(v, e.path); ok {
				s.Source = name
			}
		case "keys":
			s.Keys, in.keys = d.columns(e.val, e.path, e.name, true)
			if isEmptyList(e.val) {
				d.addAt(resolve(e.val), e.path, "name the column(s) that identify a row", "keys is empty")
			}
		case "stored_as_scd_type":
			if v, ok := d.integer(e.val, e.path); ok {
				switch v {
				case 1, 2:
					s.StoredAsSCDType = v
				default:
					d.addAt(resolve(e.val), e.path, "", "stored_as_scd_type must be 1 or 2, found %d", v)
				}
			}
		case "track_history_column_list":
			s.TrackHistoryColumnList, in.track = d.columns(e.val, e.path, e.name, false)
		case "track_history_except_column_list":
			s.TrackHistoryExceptColumnList, in.trackExcept = d.columns(e.val, e.path, e.name, false)
		default: // an apply_changes option
			d.addAt(e.key, e.path, "remove it; "+applyOnlyReasons[e.name],
				"apply_changes_from_snapshot takes no %s", e.name)
		}
	}
	d.requireKeys(n, path, "apply_changes_from_snapshot", entries, [][2]string{
		{"source", "name the dataset whose versions are snapshots (`source: customers_raw`), or a folder of snapshot files: `source: {path: ./snapshots, format: json, schema: \"...\"}`"},
		{"keys", "name the column(s) that identify a row: `keys: [id]`"},
	})
	return s, in
}

// snapshotReference checks that a dataset named as a snapshot source exists.
func (v *validation) snapshotReference(in *datasetInfo) {
	s := in.ds.ApplyChangesFromSnapshot
	if s.Source == "" || in.snapshot.source.node == nil {
		return
	}
	if _, ok := v.byName[s.Source]; !ok {
		v.d.addAt(in.snapshot.source.node, in.snapshot.source.path, didYouMean(s.Source, v.namesBut(in.ds.Name), "datasets"),
			"unknown dataset %s: apply_changes_from_snapshot reads a dataset of this pipeline, or a folder of snapshot files (`source: {path: ..., format: json, schema: ...}`)", s.Source)
	}
}

// snapshotOutput checks an apply_changes_from_snapshot against the snapshot's schema (the source
// dataset's output, or the files' declared schema plus the rescued-data column) and computes the
// target schema: the snapshot's columns, plus __START_AT and __END_AT BIGINT (the snapshot
// version) under SCD type 2.
func (v *validation) snapshotOutput(in *datasetInfo) bool {
	s := in.ds.ApplyChangesFromSnapshot
	var input schema.Schema
	from := "the snapshot schema"
	switch {
	case s.Files != nil:
		if !in.snapshot.files.schemaOK {
			return false
		}
		input = schema.Schema{Fields: slices.Clone(s.Files.Schema.Fields)}
		if c := s.Files.RescuedDataColumn; c != "" && input.Index(c) < 0 {
			input.Fields = append(input.Fields, schema.Field{Name: c, Type: schema.Type{Kind: schema.String}, Nullable: true})
		}
	case s.Source != "":
		src, known := v.byName[s.Source]
		if !known || !v.output(src) {
			return false
		}
		input, from = src.ds.Schema, "dataset "+s.Source
	default:
		return false
	}
	good := v.snapshotColumns(in.snapshot.keys, input, from)
	v.noMapColumns(in.snapshot.keys, input, "a key")
	for _, list := range [][]ref{in.snapshot.track, in.snapshot.trackExcept} {
		if len(list) > 0 && s.StoredAsSCDType != 2 {
			v.d.addAt(list[0].node, parentPath(list[0].path), "remove it, or use `stored_as_scd_type: 2`",
				"%s applies to SCD type 2 only", lastKey(list[0].path))
		}
		v.snapshotColumns(list, input, from)
	}
	if len(in.snapshot.track) > 0 && len(in.snapshot.trackExcept) > 0 {
		v.d.addAt(in.snapshot.trackExcept[0].node, parentPath(in.snapshot.trackExcept[0].path), "keep one of them",
			"track_history_column_list and track_history_except_column_list cannot be used together")
	}
	v.expectations(in, input)
	out := schema.Schema{Fields: slices.Clone(input.Fields)}
	if names := feedColumnsIn(out); len(names) > 0 {
		v.d.addAt(in.snapshot.source.node, in.snapshot.source.path, "rename those columns in the source",
			"%s has the column(s) %s, which the target's own change data feed adds (Delta reserves the names)", from, strings.Join(names, ", "))
		return false
	}
	if s.StoredAsSCDType == 2 {
		for _, f := range input.Fields {
			if f.Name == StartAt || f.Name == EndAt {
				v.d.addAt(in.snapshot.source.node, in.snapshot.source.path, "rename that column in the source, or use `stored_as_scd_type: 1`",
					"%s has a column %s, which an SCD type 2 target adds itself", from, f.Name)
				return false
			}
		}
		long := schema.Type{Kind: schema.Long}
		out.Fields = append(out.Fields,
			schema.Field{Name: StartAt, Type: long, Nullable: true},
			schema.Field{Name: EndAt, Type: long, Nullable: true})
	}
	in.ds.Schema = out
	return good
}

// snapshotColumns reports every name of refs that is not a column of the snapshot schema s.
func (v *validation) snapshotColumns(refs []ref, s schema.Schema, from string) bool {
	ok := true
	for _, r := range refs {
		name := r.node.Value
		if s.Index(name) >= 0 {
			continue
		}
		ok = false
		v.d.addAt(r.node, r.path, didYouMean(name, s.Names(), "columns"),
			"unknown column %s: %s has no such column", name, from)
	}
	return ok
}
