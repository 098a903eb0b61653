package spec

import (
	"fmt"
	"strings"

	"tributary/schema"

	"go.yaml.in/yaml/v3"
)

var sourceKeys = keySet{
	known: []string{"path", "format", "schema", "options", "rescued_data_column", "mode", "read", "starting_version", "skip_change_commits", "include_metadata", "max_files_per_trigger", "schema_hints", "schema_evolution_mode", "table", "connection", "slot", "publication"},
}

// supportedFormats are the formats this release reads; laterFormats are recognised and refused.
var (
	supportedFormats = []string{"json", FormatCSV, FormatParquet, FormatDelta, FormatDebezium, FormatPostgres}
	laterFormats     = []string{"avro", "orc", "text", "xml", "binaryfile"}
)

// sourceInfo keeps the nodes of a source that validation points at.
type sourceInfo struct {
	// schemaOK: the schema was declared and the name of each of its columns is known (the type of
	// a column declared wrong is not: it is the zero schema.Type, see parseColumns).
	schemaOK      bool
	rescuedNode   *yaml.Node // the rescued_data_column value, when given
	metadataNode  *yaml.Node // the include_metadata key, when given
	evolutionNode *yaml.Node // the schema_evolution_mode value, when given
	path          string     // key path of the source
	tableNode     *yaml.Node // the `table:` value, when given
	slotNode      *yaml.Node // the `slot:` value of a postgres source, when given
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
	var schemaNode, optionsNode, hintsNode *yaml.Node
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
			optionsNode = e.val
		case "rescued_data_column":
			if s, ok := d.ident(e.val, e.path, "column"); ok {
				src.RescuedDataColumn, in.rescuedNode = s, resolve(e.val)
			}
		case "mode":
			if s, ok := d.oneOf(e.val, e.path, ModePermissive, ModeDropMalformed, ModeFailFast); ok {
				src.Mode = s
			}
		case "schema_evolution_mode":
			if s, ok := d.oneOf(e.val, e.path, EvolutionAddNewColumns, EvolutionRescue, EvolutionFailOnNewColumns, EvolutionNone); ok {
				src.SchemaEvolutionMode, in.evolutionNode = s, resolve(e.val)
			}
		case "schema_hints":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				src.SchemaHintsDDL, hintsNode = s, resolve(e.val)
			}
		case "include_metadata":
			src.IncludeMetadata, _ = d.boolean(e.val, e.path)
			in.metadataNode = e.key
		case "max_files_per_trigger":
			if v, ok := d.integer(e.val, e.path); ok {
				if v < 1 {
					d.addAt(resolve(e.val), e.path, "give 1 or more, or remove it to read every new file in one batch", "max_files_per_trigger must be 1 or more, found %d", v)
				} else {
					src.MaxFilesPerTrigger = v
				}
			}
		}
	}
	if src.Format == FormatPostgres {
		d.postgresSource(n, path, src, in, entries) // a PostgreSQL table's changes (postgres.go)
		return src, in
	}
	if has["table"] {
		d.tableSource(n, path, src, in, entries, deltaKeys) // another dataset's table (tablesource.go)
		return src, in
	}
	if src.Format == FormatDelta {
		d.deltaSource(n, path, src, in, entries, deltaKeys)
		return src, in
	}
	if optionsNode != nil {
		src.Options = d.options(optionsNode, child(path, "options"), src.Format)
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
	switch {
	case !has["schema"] && (src.Format == "json" || src.Format == FormatCSV || src.Format == FormatParquet):
		src.InferSchema = true
		if src.SchemaEvolutionMode == "" {
			src.SchemaEvolutionMode = EvolutionAddNewColumns
		}
		if src.RescuedDataColumn == "" && src.Mode != ModeFailFast && src.SchemaEvolutionMode != EvolutionNone {
			src.RescuedDataColumn = DefaultRescuedDataColumn
		}
	case !has["schema"] && src.Format != "":
		d.addAt(n, child(path, "schema"), "declare `schema:`, e.g. schema: \"id BIGINT, name STRING\"",
			"schema inference is not supported yet for format %s", src.Format)
	}
	switch {
	case src.Format == FormatParquet && src.SchemaEvolutionMode == EvolutionRescue:
		d.addAt(in.evolutionNode, child(path, "schema_evolution_mode"), "use addNewColumns (inferred schema), failOnNewColumns or none",
			"schema_evolution_mode %s is not supported yet for format parquet", src.SchemaEvolutionMode)
		src.SchemaEvolutionMode = EvolutionNone
	case src.SchemaEvolutionMode == "":
		src.SchemaEvolutionMode = EvolutionNone
	case src.SchemaEvolutionMode == EvolutionAddNewColumns && !src.InferSchema && has["schema"]:
		d.addAt(in.evolutionNode, child(path, "schema_evolution_mode"), "remove `schema:` to infer the schema, or use rescue, failOnNewColumns or none",
			"schema_evolution_mode addNewColumns is not supported yet with a declared schema")
	case src.SchemaEvolutionMode == EvolutionRescue && src.RescuedDataColumn == "" && src.Mode != ModeFailFast:
		src.RescuedDataColumn = DefaultRescuedDataColumn
	}
	if hintsNode != nil {
		if !src.InferSchema {
			d.addAt(hintsNode, child(path, "schema_hints"), "remove it, or remove `schema:` to infer the schema",
				"schema_hints applies only when the schema is inferred (no `schema:`)")
		} else {
			s, problems, _ := parseColumns(src.SchemaHintsDDL)
			for _, pr := range problems {
				d.add(d.posInBytes(hintsNode, pr.Offset), child(path, "schema_hints"),
					"write Spark DDL: \"name TYPE, ...\"", "invalid schema_hints: %s", pr.Msg)
			}
			if src.Format == FormatCSV {
				for _, f := range s.Fields {
					if f.Type.Nested() {
						d.add(d.posInBytes(hintsNode, columnOffset(src.SchemaHintsDDL, f.Name)), child(path, "schema_hints"), "hint it STRING (the field's text), or read JSON or Parquet",
							"column %s: %s columns are not supported for format csv", f.Name, kindWord(f.Type))
					}
				}
			}
			src.SchemaHints = s
		}
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
		if src.Format == FormatCSV {
			for _, f := range s.Fields {
				if f.Type.Nested() {
					d.add(d.posInBytes(schemaNode, columnOffset(src.SchemaDDL, f.Name)), child(path, "schema"), "declare it STRING (the field's text), or read JSON or Parquet",
						"column %s: %s columns are not supported for format csv", f.Name, kindWord(f.Type))
				}
			}
		}
	}
	if src.Format == FormatDebezium {
		d.debeziumSource(path, src, in, schemaNode)
	}
	if src.IncludeMetadata {
		for _, c := range []string{FilePathColumn, FileModificationTimeColumn} {
			if src.Schema.Index(c) >= 0 || src.RescuedDataColumn == c {
				d.addAt(in.metadataNode, child(path, "include_metadata"), "rename the column, or remove include_metadata",
					"include_metadata adds column %s, which is already declared", c)
			}
		}
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

// options decodes `options:` for a reader of format. Values are YAML scalars (`true` and "true"
// are the same). The csv reader takes the options of csvOptions, checked and normalised (header
// "true"/"false", encoding "utf-8"/"iso-8859-1"); the json reader takes JSONMultiline.
func (d *decoder) options(n *yaml.Node, path, format string) map[string]string {
	m, keys, _ := d.strMap(n, path)
	if format == "json" {
		out := map[string]string{}
		for _, k := range sortedKeys(m) {
			if k != JSONMultiline && k != InferColumnTypes {
				if hint := sparkOptionHint(k, format); hint != "" {
					d.addAt(keys[k], child(path, k), hint, "unknown json option %s", k)
					continue
				}
				d.addAt(keys[k], child(path, k), "remove it; the json reader takes `multiline` and `infer_column_types` only", "option %s is not supported yet", k)
				continue
			}
			norm, problem := csvOptions[CSVHeader](m[k])
			if problem != "" {
				d.addAt(keys[k], child(path, k), "", "json option %s: %s", k, problem)
				continue
			}
			out[k] = norm
		}
		return out
	}
	if format != FormatCSV {
		for _, k := range sortedKeys(m) {
			d.addAt(keys[k], child(path, k), "remove it; the "+format+" reader takes no options yet", "option %s is not supported yet", k)
		}
		return m
	}
	out := map[string]string{}
	for _, k := range sortedKeys(m) {
		v, p := m[k], child(path, k)
		check, known := csvOptions[k]
		if !known {
			hint := sparkOptionHint(k, format)
			if hint == "" {
				hint = didYouMean(k, sortedKeys(csvOptions), "csv options")
			}
			d.addAt(keys[k], p, hint, "unknown csv option %s", k)
			continue
		}
		norm, problem := check(v)
		if problem != "" {
			d.addAt(keys[k], p, "", "csv option %s: %s", k, problem)
			continue
		}
		out[k] = norm
	}
	delim, quote, ok := ",", `"`, true
	if v, set := out[CSVDelimiter]; set {
		delim = v
	}
	if v, set := out[CSVQuote]; set {
		quote = v
	}
	for _, k := range []string{CSVQuote, CSVEscape, CSVComment} {
		if v, set := out[k]; set && v != "" && v == delim && ok {
			d.addAt(keys[k], child(path, k), "choose characters that differ", "csv option %s is the delimiter %q", k, delim)
			ok = false
		}
	}
	if v, set := out[CSVComment]; set && v != "" && v == quote && ok {
		d.addAt(keys[CSVComment], child(path, CSVComment), "choose characters that differ", "csv option comment is the quote %q", quote)
	}
	return out
}

// sparkOptionHint says what to write instead of an option named as Spark's readers or Auto
// Loader (cloudFiles.*) name it, matched without regard to case: the option of this spec
// (multiLine is `multiline`, sep is `delimiter`), or the source key that does its work (mode is
// `mode:` of the source, not an option). It returns "" for names it does not know.
func sparkOptionHint(k, format string) string {
	name := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(k, "cloudFiles."), "cloudfiles."))
	option := func(o string) string { return "did you mean `" + o + "`?" }
	key := func(o, what string) string {
		return "set `" + o + "` of the source, beside `options:` (" + what + "), not an option"
	}
	switch name {
	case "multiline":
		if format == "json" {
			return option(JSONMultiline)
		}
		return "remove it: a quoted csv field may always hold line ends"
	case "inferschema", "infercolumntypes":
		return option(InferColumnTypes)
	case "sep", "delimiter":
		if format == FormatCSV {
			return option(CSVDelimiter)
		}
	case "nullvalue":
		if format == FormatCSV {
			return option(CSVNullValue)
		}
	case "emptyvalue":
		if format == FormatCSV {
			return option(CSVEmptyValue)
		}
	case "charset":
		if format == FormatCSV {
			return option(CSVEncoding)
		}
	case "ignoreleadingwhitespace":
		if format == FormatCSV {
			return option(CSVIgnoreLeadingWhiteSpace)
		}
	case "ignoretrailingwhitespace":
		if format == FormatCSV {
			return option(CSVIgnoreTrailingWhiteSpace)
		}
	case "format":
		return key("format", "json, csv, parquet, ...")
	case "mode":
		return key("mode", "permissive, dropmalformed or failfast")
	case "rescueddatacolumn":
		return key("rescued_data_column", "the column's name")
	case "schemaevolutionmode":
		return key("schema_evolution_mode", "none, rescue, failOnNewColumns or addNewColumns")
	case "schemahints":
		return key("schema_hints", "Spark DDL")
	case "maxfilespertrigger":
		return key("max_files_per_trigger", "a number of files")
	case "includemetadata":
		return key("include_metadata", "true or false")
	case "timestampformat", "timestamp_format", "dateformat", "date_format", "timestampntzformat":
		return "a custom pattern is not supported: declare the column STRING and convert it in a SQL dataset, e.g. strptime(col, '%d/%m/%Y %H:%M'); without a pattern, DATE and TIMESTAMP text is read as Spark's readers read it without one (README, \"The spec\")"
	}
	return ""
}

// JSONMultiline is the json reader's option: "true" reads each file as one JSON value (an array
// of objects, or objects one after another, each over any number of lines), as Spark's
// multiLine; the default "false" reads one object a line.
const JSONMultiline = "multiline"

// InferColumnTypes is the option (json and csv) that says whether schema inference infers column
// types (BIGINT, INT, DOUBLE, BOOLEAN, STRING, and for JSON STRUCT and ARRAY) or makes every
// column STRING, as Auto Loader's cloudFiles.inferColumnTypes. Unset, JSON columns are typed
// and CSV columns STRING.
const InferColumnTypes = "infer_column_types"

// The values of Source.SchemaEvolutionMode, as Auto Loader's cloudFiles.schemaEvolutionMode:
// what a column the schema does not have does when it appears in a new file.
const (
	// EvolutionAddNewColumns adds it to the table (old rows read NULL); the default when the
	// schema is inferred, and only then.
	EvolutionAddNewColumns = "addNewColumns"
	// EvolutionRescue keeps its values in the rescued-data column (added as _rescued_data when
	// the source names none).
	EvolutionRescue = "rescue"
	// EvolutionFailOnNewColumns fails the update, naming the file and the column.
	EvolutionFailOnNewColumns = "failOnNewColumns"
	// EvolutionNone ignores it (it is kept only when the source sets rescued_data_column); the
	// default with a declared schema.
	EvolutionNone = "none"
)

// DefaultRescuedDataColumn is the rescued-data column of a source whose schema is inferred
// (unless it names its own, or its mode is failfast), as Auto Loader's.
const DefaultRescuedDataColumn = "_rescued_data"

// The options of format csv (Source.Options keys), with Spark's CSV reader defaults.
const (
	CSVHeader     = "header"      // "true": the first record names the columns; default "false"
	CSVDelimiter  = "delimiter"   // one character between fields; default ","
	CSVQuote      = "quote"       // the quote character; default `"`; "" turns quoting off
	CSVEscape     = "escape"      // escapes a quote inside a quoted field; default `\`
	CSVNullValue  = "null_value"  // a field with this text is NULL (an unquoted empty field always is)
	CSVEmptyValue = "empty_value" // what a quoted empty field "" reads as; default ""
	CSVComment    = "comment"     // a record starting with this character is skipped; default none
	CSVEncoding   = "encoding"    // "utf-8" (default; a byte-order mark is skipped) or "iso-8859-1"
	// CSVIgnoreLeadingWhiteSpace and CSVIgnoreTrailingWhiteSpace ("true"; default "false", as
	// Spark's reader: ignoreLeadingWhiteSpace, ignoreTrailingWhiteSpace) drop the white space
	// (characters up to U+0020) before and after an unquoted value, header names included.
	CSVIgnoreLeadingWhiteSpace  = "ignore_leading_white_space"
	CSVIgnoreTrailingWhiteSpace = "ignore_trailing_white_space"
)

// csvOptions checks each csv option's value and returns it normalised, or a problem.
var csvOptions = map[string]func(string) (string, string){
	CSVHeader:    func(v string) (string, string) { return boolOption(v) },
	CSVDelimiter: func(v string) (string, string) { return oneChar(v, false) },
	CSVQuote:     func(v string) (string, string) { return oneChar(v, true) },
	CSVEscape:    func(v string) (string, string) { return oneChar(v, false) },
	CSVComment:   func(v string) (string, string) { return oneChar(v, true) },
	CSVNullValue: func(v string) (string, string) { return v, "" },
	CSVEmptyValue: func(v string) (string, string) {
		return v, ""
	},
	InferColumnTypes:            func(v string) (string, string) { return boolOption(v) },
	CSVIgnoreLeadingWhiteSpace:  func(v string) (string, string) { return boolOption(v) },
	CSVIgnoreTrailingWhiteSpace: func(v string) (string, string) { return boolOption(v) },
	CSVEncoding: func(v string) (string, string) {
		switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(v), "_", "-")) {
		case "utf-8", "utf8":
			return "utf-8", ""
		case "iso-8859-1", "latin1", "latin-1":
			return "iso-8859-1", ""
		}
		return "", fmt.Sprintf("encoding %q is not supported yet (use utf-8 or iso-8859-1)", v)
	},
}

// boolOption checks an option that is true or false (any case).
func boolOption(v string) (string, string) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return "true", ""
	case "false":
		return "false", ""
	}
	return "", fmt.Sprintf("%q is not true or false", v)
}

// oneChar checks a csv option that is one ASCII character ("\t" is a tab); empty is allowed when
// emptyOK (the feature is off).
func oneChar(v string, emptyOK bool) (string, string) {
	if v == `\t` {
		return "\t", ""
	}
	if v == "" && emptyOK {
		return "", ""
	}
	if len(v) != 1 || v[0] >= 0x80 || v == "\n" || v == "\r" {
		return "", fmt.Sprintf("%q must be one ASCII character other than a line end", v)
	}
	return v, ""
}

// The columns `include_metadata: true` adds, as Auto Loader's _metadata fields file_path and
// file_modification_time.
const (
	FilePathColumn             = "_file_path"
	FileModificationTimeColumn = "_file_modification_time"
)

// MetadataColumns returns the columns include_metadata adds: the input file's absolute path
// (STRING) and its modification time (TIMESTAMP).
func MetadataColumns() []schema.Field {
	return []schema.Field{
		{Name: FilePathColumn, Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: FileModificationTimeColumn, Type: schema.Type{Kind: schema.TimestampKind}, Nullable: true},
	}
}

// snapshotFileKeys refuses the ingest-only keys in the `source:` of apply_changes_from_snapshot.
func (d *decoder) snapshotFileKeys(n *yaml.Node, path string, src *Source) {
	if src.InferSchema {
		src.InferSchema = false
		d.addAt(n, child(path, "schema"), "declare `schema:`, e.g. schema: \"id BIGINT, name STRING\"",
			"schema inference is not supported yet for snapshot files")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Value == "include_metadata" || k.Value == "max_files_per_trigger" || k.Value == "schema_evolution_mode" {
			d.addAt(k, child(path, k.Value), "remove it; each snapshot file is read whole, one a batch",
				"%s does not apply to snapshot files", k.Value)
		}
	}
}
