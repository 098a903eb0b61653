package spec

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

var applyChangesKeys = keySet{
	known: []string{"source", "keys", "sequence_by", "apply_as_deletes", "apply_as_truncates", "column_list", "except_column_list",
		"stored_as_scd_type", "ignore_null_updates", "track_history_column_list", "track_history_except_column_list"},
}

// applyInfo keeps the nodes of an apply_changes that validation points at.
type applyInfo struct {
	source, deletes, truncates ref // zero when not given
	keys, seq                  []ref
	cols, except               []ref
	track, trackExcept         []ref
	scdType                    ref
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
			ac.Keys, in.keys = d.columns(e.val, e.path, e.name, true)
			if isEmptyList(e.val) {
				d.addAt(resolve(e.val), e.path, "name the column(s) that identify a row", "keys is empty")
			}
		case "sequence_by":
			ac.SequenceBy, in.seq = d.columns(e.val, e.path, e.name, true)
			if isEmptyList(e.val) {
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
			list, nodes := d.columns(e.val, e.path, e.name, false)
			if e.name == "column_list" {
				if isEmptyList(e.val) {
					d.addAt(resolve(e.val), e.path, "list the columns to keep, or remove column_list to keep them all", "column_list is empty")
				}
				ac.ColumnList, in.cols = list, nodes
			} else {
				ac.ExceptColumnList, in.except = list, nodes
			}
		case "stored_as_scd_type":
			if v, ok := d.integer(e.val, e.path); ok {
				switch v {
				case 1, 2:
					ac.StoredAsSCDType = int(v)
					in.scdType = ref{resolve(e.val), e.path}
				default:
					d.addAt(resolve(e.val), e.path, "", "stored_as_scd_type must be 1 or 2, found %d", v)
				}
			}
		case "ignore_null_updates":
			if v, ok := d.boolean(e.val, e.path); ok {
				ac.IgnoreNullUpdates = v
			}
		case "apply_as_truncates":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				ac.ApplyAsTruncates, in.truncates = s, ref{resolve(e.val), e.path}
			}
		case "track_history_column_list":
			ac.TrackHistoryColumnList, in.track = d.columns(e.val, e.path, e.name, false)
		case "track_history_except_column_list":
			ac.TrackHistoryExceptColumnList, in.trackExcept = d.columns(e.val, e.path, e.name, false)
		}
	}
	d.requireKeys(n, path, "apply_changes", entries, [][2]string{
		{"source", "name the dataset that delivers the change events: `source: my_changes`"},
		{"keys", "name the column(s) that identify a row: `keys: [id]`"},
		{"sequence_by", "name the column that orders the events: `sequence_by: seq`"},
	})
	return ac, in
}

// isEmptyList reports whether n is a list with no items.
func isEmptyList(n *yaml.Node) bool {
	n = resolve(n)
	return n.Kind == yaml.SequenceNode && len(n.Content) == 0
}

// columnExamples show each column-list key written right, for hints.
var columnExamples = map[string]string{
	"keys":                             "keys: [id]",
	"sequence_by":                      "sequence_by: seq",
	"column_list":                      "column_list: [id, name]",
	"except_column_list":               "except_column_list: [op]",
	"track_history_column_list":        "track_history_column_list: [status]",
	"track_history_except_column_list": "track_history_except_column_list: [updated_at]",
}

// columns reads the value of key (keys, sequence_by, column_list or except_column_list): a list
// of column names or, with single, one name alone. A name must be a YAML string: `keys: 5` is
// the number 5, not a column (a column named 5 is written "5"). Repeats are reported too.
// It returns the names with their nodes and key paths ("keys[1]", or "keys" for a name alone).
func (d *decoder) columns(n *yaml.Node, path, key string, single bool) ([]string, []ref) {
	n = resolve(n)
	if d.broken[n] {
		return nil, nil
	}
	var refs []ref
	switch {
	case single && isString(n):
		refs = []ref{{n, path}}
	case n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			c, p := resolve(c), item(path, i)
			if d.broken[c] {
				continue
			}
			if !isString(c) {
				d.addAt(c, p, nameHint(c, "write one column name per item"), "each item of %s must be a column name, got %s", key, describe(c))
				continue
			}
			refs = append(refs, ref{c, p})
		}
	default:
		want := "a list of column names"
		if single {
			want = "a column name or " + want
		}
		example := columnExamples[key]
		if isString(n) { // one name where a list is needed: the list of it
			example = key + ": [" + n.Value + "]"
		}
		d.addAt(n, path, nameHint(n, "write `"+example+"`"), "%s must be %s, got %s", key, want, describe(n))
		return nil, nil
	}
	seen := map[string]bool{}
	var names []string
	var kept []ref
	for _, r := range refs {
		c := r.node.Value
		if seen[c] {
			d.addAt(r.node, r.path, "remove the repeat", "column %s is listed twice", c)
			continue
		}
		seen[c] = true
		names, kept = append(names, c), append(kept, r)
	}
	return names, kept
}

// nameHint is the hint for a value n that is not a column name: for a number or a boolean, to
// quote it if it really is one; else hint.
func nameHint(n *yaml.Node, hint string) string {
	switch n.ShortTag() {
	case "!!int", "!!float", "!!bool":
		return fmt.Sprintf("write a column's name; if a column is really named %s, quote it: \"%s\"", n.Value, n.Value)
	}
	return hint
}
