package spec

import (
	"go.yaml.in/yaml/v3"
)

var applyChangesKeys = keySet{
	known: []string{"source", "keys", "sequence_by", "apply_as_deletes", "column_list", "except_column_list",
		"stored_as_scd_type", "ignore_null_updates"},
	later: map[string]string{
		"apply_as_truncates":               "remove it; truncate events are not applied in this release",
		"track_history_column_list":        "it applies to SCD type 2, which is not supported yet; remove it",
		"track_history_except_column_list": "it applies to SCD type 2, which is not supported yet; remove it",
	},
}

// applyInfo keeps the nodes of an apply_changes that validation points at.
type applyInfo struct {
	source, deletes ref // zero when not given
	keys, seq       []ref
	cols, except    []ref
}

// ref is a node and its key path.
type ref struct {
	node *yaml.Node
	path string
}

// applyChanges decodes a dataset's `apply_changes:` (AUTO CDC, semantics.md "APPLY CHANGES").
// Column names are checked later, against the source's output schema.
func (d *decoder) applyChanges(n *yaml.Node, path string) (*ApplyChanges, *applyInfo) {
	n = resolve(n)
	ac := &ApplyChanges{StoredAsSCDType: 1, Pos: d.pos(n)}
	in := &applyInfo{}
	entries, ok := d.mapping(n, path, applyChangesKeys)
	if !ok {
		return ac, in
	}
	var colsEntry *entry
	for _, e := range entries {
		switch e.name {
		case "source":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				ac.Source, in.source = s, ref{resolve(e.val), e.path}
			}
		case "keys":
			ac.Keys, in.keys = d.columns(e.val, e.path, true)
			if len(ac.Keys) == 0 && resolve(e.val).Kind == yaml.SequenceNode {
				d.addAt(resolve(e.val), e.path, "name the column(s) that identify a row", "keys is empty")
			}
		case "sequence_by":
			ac.SequenceBy, in.seq = d.columns(e.val, e.path, true)
			if len(ac.SequenceBy) == 0 && resolve(e.val).Kind == yaml.SequenceNode {
				d.addAt(resolve(e.val), e.path, "name the column(s) that order the events", "sequence_by is empty")
			}
		case "apply_as_deletes":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				ac.ApplyAsDeletes, in.deletes = s, ref{resolve(e.val), e.path}
			}
		case "column_list", "except_column_list":
			if colsEntry != nil {
				d.addAt(e.key, e.path, "keep one of them", "column_list and except_column_list cannot be used together")
			}
			colsEntry = &e
			list, nodes := d.columns(e.val, e.path, false)
			if e.name == "column_list" {
				if len(list) == 0 && resolve(e.val).Kind == yaml.SequenceNode {
					d.addAt(resolve(e.val), e.path, "list the columns to keep, or remove column_list to keep them all", "column_list is empty")
				}
				ac.ColumnList, in.cols = list, nodes
			} else {
				ac.ExceptColumnList, in.except = list, nodes
			}
		case "stored_as_scd_type":
			if v, ok := d.integer(e.val, e.path); ok {
				switch v {
				case 1:
				case 2:
					d.addAt(resolve(e.val), e.path, "use `stored_as_scd_type: 1`", "stored_as_scd_type: 2 is not supported yet")
				default:
					d.addAt(resolve(e.val), e.path, "", "stored_as_scd_type must be 1 or 2, found %d", v)
				}
			}
		case "ignore_null_updates":
			if v, ok := d.boolean(e.val, e.path); ok && v {
				d.addAt(resolve(e.val), e.path, "remove it or write `ignore_null_updates: false`",
					"ignore_null_updates: true is not supported yet")
			}
		}
	}
	for _, req := range []struct{ key, hint string }{
		{"source", "name the dataset that delivers the change events: `source: my_changes`"},
		{"keys", "name the column(s) that identify a row: `keys: [id]`"},
		{"sequence_by", "name the column that orders the events: `sequence_by: seq`"},
	} {
		if !hasKey(entries, req.key) {
			d.addAt(n, child(path, req.key), req.hint, "apply_changes has no %s", req.key)
		}
	}
	return ac, in
}

// columns reads a list of column names (or, with single, one name alone), reporting repeats.
func (d *decoder) columns(n *yaml.Node, path string, single bool) ([]string, []ref) {
	list, refs, _ := d.strList(n, path, single, "column name")
	seen := map[string]bool{}
	var names []string
	var kept []ref
	for i, c := range list {
		if seen[c] {
			d.addAt(refs[i].node, refs[i].path, "remove the repeat", "column %s is listed twice", c)
			continue
		}
		seen[c] = true
		names, kept = append(names, c), append(kept, refs[i])
	}
	return names, kept
}
