package spec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

var sourceKeys = keySet{
	known: []string{"path", "format", "schema", "options", "rescued_data_column", "mode", "read", "starting_version", "skip_change_commits"},
	later: map[string]string{
		"table":                 "read files (`path:` and `format: json`) or a Delta table by path (`format: delta`), or use apply_changes to read a dataset's changes",
		"schema_hints":          "declare every column in `schema:` instead",
		"schema_evolution_mode": "remove it; the declared schema is fixed",
	},
}

// supportedFormats are the formats this release reads; laterFormats are recognised and refused.
var (
	supportedFormats = []string{"json", FormatDelta}
	laterFormats     = []string{"csv", "parquet", "avro", "orc", "text", "xml", "binaryfile", "debezium"}
)

// sourceInfo keeps the nodes of a source that validation points at.
type sourceInfo struct {
	// schemaOK: the schema was declared and the name of each of its columns is known (the type of
	// a column declared wrong is not: it is the zero schema.Type, see parseColumns).
	schemaOK    bool
	rescuedNode *yaml.Node // the rescued_data_column value, when given
	path        string     // key path of the source
}

// source decodes a dataset's `source:` (Auto Loader style file ingestion).
func (d *decoder) source(n *yaml.Node, path string) (*Source, *sourceInfo) {
	n = resolve(n)
	src := &Source{Mode: ModePermissive, Options: map[string]string{}, Pos: d.pos(n)}
	in := &sourceInfo{path: path}
	entries, ok := d.mapping(n, path, sourceKeys)
	if !ok {
		return src, in
	}
	has := map[string]bool{}
	var schemaNode *yaml.Node
	deltaKeys := map[string]entry{} // read, starting_version, skip_change_commits: format delta only
	for _, e := range entries {
		has[e.name] = true
		switch e.name {
		case "read", "starting_version", "skip_change_commits":
			deltaKeys[e.name] = e
		case "path":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				src.Path = resolvePath(d.dir, s)
			}
		case "format":
			src.Format = d.format(e.val, e.path)
		case "schema":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				src.SchemaDDL, schemaNode = s, resolve(e.val)
			}
		case "options":
			src.Options = d.options(e.val, e.path)
		case "rescued_data_column":
			if s, ok := d.ident(e.val, e.path, "column"); ok {
				src.RescuedDataColumn, in.rescuedNode = s, resolve(e.val)
			}
		case "mode":
			if s, ok := d.oneOf(e.val, e.path, ModePermissive, ModeDropMalformed, ModeFailFast); ok {
				src.Mode = s
			}
		}
	}
	if has["table"] {
		return src, in // refused already; path, format and schema do not apply
	}
	if src.Format == FormatDelta {
		d.deltaSource(n, path, src, in, entries, deltaKeys)
		return src, in
	}
	for _, k := range []string{"read", "starting_version", "skip_change_commits"} {
		if e, ok := deltaKeys[k]; ok {
			d.addAt(e.key, e.path, "remove it, or read a Delta table with `format: delta`", "%s applies to `format: delta` only", k)
		}
	}
	if !has["path"] {
		d.addAt(n, child(path, "path"), "add `path: ./landing/...` (a folder or a glob, relative to the spec's folder)", "the source has no path")
	}
	if !has["format"] {
		d.addAt(n, child(path, "format"), "add `format: json`", "the source has no format")
	}
	if !has["schema"] {
		d.addAt(n, child(path, "schema"), "declare `schema:`, e.g. schema: \"id BIGINT, name STRING\"",
			"schema inference is not supported yet")
	}
	if schemaNode != nil {
		// Column by column: a bad column is reported, and the others (and the bad one's name)
		// stay known for the checks that use them.
		s, problems, complete := parseColumns(src.SchemaDDL)
		for _, pr := range problems {
			d.add(d.posInBytes(schemaNode, pr.Offset), child(path, "schema"),
				"write Spark DDL: \"name TYPE, ...\"", "invalid schema: %s", pr.Msg)
		}
		src.Schema, in.schemaOK = s, complete
	}
	if in.rescuedNode != nil && src.Schema.Index(src.RescuedDataColumn) >= 0 {
		d.addAt(in.rescuedNode, child(path, "rescued_data_column"), "choose a name that is not a column, e.g. _rescued_data",
			"column %s is already declared in the schema", src.RescuedDataColumn)
	}
	return src, in
}

// format decodes `format:`: json, or a recognised format that is not supported yet.
func (d *decoder) format(n *yaml.Node, path string) string {
	s, ok := d.nonEmpty(n, path)
	if !ok {
		return ""
	}
	f := strings.ToLower(strings.TrimSpace(s))
	for _, v := range supportedFormats {
		if f == v {
			return v
		}
	}
	for _, v := range laterFormats {
		if f == v {
			d.addAt(resolve(n), path, "convert the input to JSON lines and use `format: json`",
				"format %s is not supported yet", v)
			return v
		}
	}
	all := append(append([]string(nil), supportedFormats...), laterFormats...)
	hint := didYouMean(s, all, "formats")
	d.addAt(resolve(n), path, hint, "unknown format %q", s)
	return ""
}

// options decodes `options:`. The json reader takes no option yet, so each one is refused.
func (d *decoder) options(n *yaml.Node, path string) map[string]string {
	m, keys, _ := d.strMap(n, path)
	for _, k := range sortedKeys(m) {
		d.addAt(keys[k], child(path, k), "remove it; the json reader takes no options yet", "option %s is not supported yet", k)
	}
	return m
}
