package spec

import (
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tributary/schema"
)

// FormatPostgres reads a PostgreSQL table's changes through logical replication (pgoutput): an
// initial snapshot, then every committed insert, update, delete and truncate (Source.Postgres).
const FormatPostgres = "postgres"

// PostgresSource is where a `format: postgres` source reads.
type PostgresSource struct {
	Connection  string // a libpq URL or key=value string (after ${} substitution)
	Schema      string // the table's schema ("public" unless `table:` names one)
	Table       string // the table's name
	Slot        string // the logical replication slot; "": PostgresDefaultName
	Publication string // the publication; "": like Slot
}

// The columns a postgres source adds after the table's.
const (
	// PostgresOpColumn is the change: r (a row of the initial snapshot), c (insert), u (update),
	// d (delete), t (truncate).
	PostgresOpColumn = "_op"
	// PostgresLSNColumn is the change's own WAL position (BIGINT); 0 for snapshot rows, which
	// precede every change. It orders the changes of a key: use it as sequence_by.
	PostgresLSNColumn = "_lsn"
	// PostgresCommitTimeColumn is the commit time of the change's transaction (NULL for snapshot
	// rows).
	PostgresCommitTimeColumn = "_commit_time"
	// PostgresTxIDColumn is the change's transaction id (NULL for snapshot rows).
	PostgresTxIDColumn = "_tx_id"
)

// PostgresColumns returns the columns a postgres source adds after the table's.
func PostgresColumns() []schema.Field {
	return []schema.Field{
		{Name: PostgresOpColumn, Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: PostgresLSNColumn, Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: PostgresCommitTimeColumn, Type: schema.Type{Kind: schema.TimestampKind}, Nullable: true},
		{Name: PostgresTxIDColumn, Type: schema.Type{Kind: schema.Long}, Nullable: true},
	}
}

// PostgresDefaultName is the slot and publication of a postgres source that names neither:
// tributary_<pipeline>_<dataset> in lower case, cut to PostgreSQL's 63 characters.
func PostgresDefaultName(pipeline, dataset string) string {
	def := strings.ToLower("tributary_" + pipeline + "_" + dataset)
	if len(def) > 63 {
		def = def[:63]
	}
	return def
}

// postgresSlots reports a replication slot that two postgres sources of the pipeline would use
// (named so, or by default), at the second: a slot is read by one source, which tells the server
// what it may discard, so another reading it would lose the changes the first confirmed, or fail
// finding it active.
func (v *validation) postgresSlots(p *Pipeline, infos []*datasetInfo) {
	first := map[string]*datasetInfo{}
	for _, in := range infos {
		src := in.ds.Source
		if src == nil || src.Postgres == nil || in.source == nil || in.ds.Name == "" {
			continue
		}
		slot := src.Postgres.Slot
		if slot == "" {
			slot = PostgresDefaultName(p.Name, in.ds.Name)
		}
		prev, dup := first[slot]
		if !dup {
			first[slot] = in
			continue
		}
		node, path := in.source.slotNode, child(in.source.path, "slot")
		if node == nil {
			node, path = in.nameNode, child(in.path, "name")
		}
		v.d.addAt(node, path, "give each postgres source its own slot (or leave `slot:` out for tributary_<pipeline>_<dataset>)",
			"the replication slot %s is read by dataset %s too: a slot serves one source, which confirms to the server what it may discard", slot, prev.ds.Name)
	}
}

var pgName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// pgTableName is a schema or table name a postgres source takes: letters (either case, matched
// as written, as a quoted identifier is: an ORM's "User"), digits, _ and $, at most 63 bytes.
var pgTableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)

// postgresKeys are the keys a postgres source takes.
var postgresKeys = []string{"format", "connection", "table", "slot", "publication", "schema"}

// postgresSource decodes a `source:` with `format: postgres`: connection and table are
// required, slot and publication default to tributary_<pipeline>_<dataset> (set by the flow), `schema:` declares the
// table columns to read (Spark DDL), and the change columns are added after them.
func (d *decoder) postgresSource(n *yaml.Node, path string, src *Source, in *sourceInfo, entries []entry) {
	pg := &PostgresSource{}
	src.Postgres = pg
	src.Path = ""
	src.SchemaEvolutionMode = EvolutionNone
	has := map[string]bool{}
	var schemaNode *yaml.Node
	for _, e := range entries {
		has[e.name] = true
		switch e.name {
		case "connection":
			pg.Connection, _ = d.nonEmpty(e.val, e.path)
		case "table":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				pg.Schema, pg.Table = "public", s
				if i := strings.IndexByte(s, '.'); i >= 0 {
					pg.Schema, pg.Table = s[:i], s[i+1:]
				}
				if !pgTableName.MatchString(pg.Schema) || !pgTableName.MatchString(pg.Table) {
					d.addAt(resolve(e.val), e.path, "write schema.table as PostgreSQL names them, with letters, digits, _ and $ (e.g. public.orders, or public.User for a table created as \"User\")", "table %q is not a PostgreSQL name this source takes", s)
				}
			}
		case "slot", "publication":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				if !pgName.MatchString(s) || len(s) > 63 {
					d.addAt(resolve(e.val), e.path, "use lower-case letters, digits and _ (at most 63)", "%s %q is not a valid name", e.name, s)
				}
				if e.name == "slot" {
					pg.Slot, in.slotNode = s, resolve(e.val)
				} else {
					pg.Publication = s
				}
			}
		case "schema":
			schemaNode = resolve(e.val)
		default:
			if !slices.Contains(postgresKeys, e.name) {
				d.addAt(e.key, e.path, "remove it; it applies to file formats", "%s does not apply to `format: postgres`", e.name)
			}
		}
	}
	for _, k := range []string{"connection", "table", "schema"} {
		if !has[k] {
			hint := map[string]string{
				"connection": "add `connection: postgres://user:${PGPASSWORD}@host:5432/db`",
				"table":      "add `table: public.orders`",
				"schema":     "declare the table's columns, e.g. schema: \"id BIGINT, status STRING\"",
			}[k]
			d.addAt(n, child(path, k), hint, "a postgres source needs %s", k)
		}
	}
	if schemaNode != nil {
		s, problems, complete := parseColumns(src.SchemaDDL)
		in.schemaOK = complete
		for _, pr := range problems {
			d.add(d.posInBytes(schemaNode, pr.Offset), child(path, "schema"), "write Spark DDL: \"name TYPE, ...\"", "invalid schema: %s", pr.Msg)
		}
		for _, f := range s.Fields {
			if f.Type.Nested() {
				d.addAt(schemaNode, child(path, "schema"), "declare it STRING (its text)", "column %s: %s columns are not supported for format postgres", f.Name, kindWord(f.Type))
			}
			for _, c := range PostgresColumns() {
				if strings.EqualFold(f.Name, c.Name) {
					d.addAt(schemaNode, child(path, "schema"), "leave it out; the source adds it", "column %s is added by format postgres", f.Name)
				}
			}
		}
		s.Fields = append(s.Fields, PostgresColumns()...)
		src.Schema = s
	}
}
