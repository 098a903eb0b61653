package spec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// FormatDebezium reads files of Debezium change events (the JSON converter's output, one event a
// line): the envelope `{op, before, after, source, ts_ms}`, optionally inside the converter's
// `{schema, payload}` wrapper and/or a Kafka record `{key, value}`. Each event is a row: the
// declared columns are taken from `after` (from `before` for a delete), and the reserved columns
// DebeziumOpColumn, DebeziumTsColumn and DebeziumSourcePrefix+field from the envelope. Kafka
// tombstones (a null value) are skipped.
const FormatDebezium = "debezium"

// The reserved columns of format debezium, filled from the envelope rather than the row image.
const (
	// DebeziumOpColumn receives the envelope's `op`: c (create), r (snapshot read), u (update),
	// d (delete) or t (truncate).
	DebeziumOpColumn = "_op"
	// DebeziumTsColumn receives the envelope's `ts_ms`: when the connector processed the event.
	DebeziumTsColumn = "_ts_ms"
	// DebeziumSourcePrefix prefixes a column that receives a field of the envelope's `source`
	// block: `_source_lsn`, `_source_ts_ms` (the commit time in the database), `_source_txId`.
	DebeziumSourcePrefix = "_source_"
)

// debeziumSource checks what format debezium takes: a declared schema (it is never inferred), no
// options, and no schema evolution but none or rescue (rescue: image fields the schema lacks go
// to the rescued-data column).
func (d *decoder) debeziumSource(path string, src *Source, in *sourceInfo, schemaNode *yaml.Node) {
	if src.SchemaEvolutionMode == EvolutionFailOnNewColumns || src.SchemaEvolutionMode == EvolutionAddNewColumns {
		d.addAt(in.evolutionNode, child(path, "schema_evolution_mode"), "use rescue or none",
			"schema_evolution_mode %s is not supported yet for format debezium", src.SchemaEvolutionMode)
		src.SchemaEvolutionMode = EvolutionNone
	}
	if in.schemaOK && len(src.Schema.Fields) > 0 {
		data := 0
		for _, f := range src.Schema.Fields {
			if !IsDebeziumMetaColumn(f.Name) {
				data++
			}
		}
		if data == 0 {
			d.addAt(schemaNode, child(path, "schema"), "declare the table's columns too, e.g. \"id BIGINT, name STRING, _op STRING\"",
				"the schema has only envelope columns (_op, _ts_ms, _source_*)")
		}
	}
}

// IsDebeziumMetaColumn reports whether a column of a debezium source is filled from the envelope
// (`_op`, `_ts_ms`, `_source_<field>`) rather than from the row image.
func IsDebeziumMetaColumn(name string) bool {
	return name == DebeziumOpColumn || name == DebeziumTsColumn ||
		(strings.HasPrefix(name, DebeziumSourcePrefix) && len(name) > len(DebeziumSourcePrefix))
}
