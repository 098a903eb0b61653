package flows

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
	"tributary/sqlengine"
)

// QueryProblem is a query dataset whose query DuckDB would refuse when the update runs it: Err
// says why, in DuckDB's words (a column, table or function it does not know, arguments of the
// wrong types); At is the byte offset in the query's SQL of the name DuckDB refused, -1 when
// the message names none the SQL holds.
type QueryProblem struct {
	Dataset *spec.Dataset
	Err     error
	At      int
}

// refusedName matches the name a DuckDB bind error refuses: a column or table it does not find,
// a function it does not have, or one whose arguments it cannot take.
var refusedName = regexp.MustCompile(`Referenced column "([^"]+)" not found|Referenced table "([^"]+)" not found|Function with name "?([^" ]+?)"? does not exist|argument types '([A-Za-z_][A-Za-z0-9_]*)\(`)

// problemAt returns the offset in q's SQL of the name bind error msg refuses (NameAt), or -1.
func problemAt(q *spec.Query, msg string) int {
	m := refusedName.FindStringSubmatch(msg)
	if m == nil {
		return -1
	}
	for _, name := range m[1:] {
		if name != "" {
			return q.NameAt(name)
		}
	}
	return -1
}

// CheckQueries binds the query of every query dataset of p, as the update would run it, against
// empty tables with the columns its inputs will have (tableSchema), without running it
// (sqlengine.Describe), and returns those DuckDB refuses, in spec order. A query that reads a
// dataset whose columns are known only once it runs is not checked; nor is one DuckDB cannot
// describe, nor one with a PIVOT whose columns are its input's values (spec.Query.DynamicPivot),
// nor one reading it. The error is one of opening DuckDB.
func CheckQueries(ctx context.Context, p *spec.Pipeline) ([]QueryProblem, error) {
	c := &queryChecker{p: p, known: map[string]*boundSchema{}}
	var out []QueryProblem
	for _, d := range p.Datasets {
		if d.Query == nil {
			continue
		}
		b, err := c.bind(ctx, d, 0)
		if err != nil {
			return nil, err
		}
		if b.err != nil {
			out = append(out, QueryProblem{Dataset: d, Err: b.err, At: problemAt(d.Query, b.err.Error())})
		}
	}
	if c.eng != nil {
		c.eng.Close()
	}
	return out, nil
}

// boundSchema is what CheckQueries knows of a dataset's columns: s when ok; err when its query
// does not bind.
type boundSchema struct {
	s   schema.Schema
	ok  bool
	err error
}

// queryChecker binds the queries of p (CheckQueries), each once.
type queryChecker struct {
	p     *spec.Pipeline
	known map[string]*boundSchema // by dataset name, its table's columns
	eng   *sqlengine.Engine
}

// tableSchema returns the columns a query reading dataset name's table (or, for a view, its rows)
// finds once the flows before it have run: what the spec declares or derives for the dataset (as
// its flow creates or evolves the table; a table on disk may still have the columns of an older
// spec), a query dataset's query result; for a quarantine table, its dataset's and
// _failed_expectations (quarantineSchema: the update creates it so before the dataset's flow
// runs, and refuses one on disk with other columns, which a full refresh rebuilds so). ok is
// false when they are known only once the dataset's flow runs (a file source that infers its
// schema, which a new file may widen, and its quarantine table).
func (c *queryChecker) tableSchema(ctx context.Context, name string, depth int) (boundSchema, error) {
	d := c.p.Dataset(name)
	switch {
	case d == nil: // a quarantine table
		q := c.p.QuarantineOf(name)
		if q == nil || (q.Source != nil && q.Source.InferSchema) || len(q.Schema.Fields) == 0 {
			return boundSchema{}, nil
		}
		return boundSchema{s: quarantineSchema(q), ok: true}, nil
	case d.Query != nil:
		b, err := c.bind(ctx, d, depth+1)
		return boundSchema{s: b.s, ok: b.ok}, err
	case d.Source != nil && d.Source.InferSchema, len(d.Schema.Fields) == 0:
		return boundSchema{}, nil
	}
	return boundSchema{s: d.Schema, ok: true}, nil
}

// bind binds dataset d's query (memoized): ok with the result's columns, err when DuckDB refuses
// it, neither when it cannot be checked.
func (c *queryChecker) bind(ctx context.Context, d *spec.Dataset, depth int) (boundSchema, error) {
	if b, ok := c.known[d.Name]; ok {
		return *b, nil
	}
	c.known[d.Name] = &boundSchema{} // a cycle, refused by validation, binds to nothing
	if depth > maxViewDepth {
		return boundSchema{}, nil
	}
	if len(d.Query.Files) > 0 {
		// A query that reads files binds against what they hold when it runs, which is data,
		// not spec: a lookup file empty or absent now may be filled before a scheduled update.
		return boundSchema{}, nil
	}
	if d.Query.DynamicPivot() {
		// Over empty tables the PIVOT has none of the columns its input's values make, which
		// the query (or one reading it) may name: neither binds as it runs.
		return boundSchema{}, nil
	}
	var rels []sqlengine.Relation
	names := map[string]string{}
	for _, r := range d.Query.Refs {
		k := relationKey(r)
		if _, done := names[k]; done {
			continue
		}
		in, err := c.tableSchema(ctx, r.Name, depth)
		if err != nil || !in.ok {
			return boundSchema{}, err
		}
		rel := sqlengine.Relation{Name: relationName(r, len(rels)), Schema: in.s}
		if r.Kind == spec.RefChanges {
			rel.Schema = schema.Schema{Fields: append(append([]schema.Field(nil), in.s.Fields...), delta.FeedColumns()...)}
		}
		names[k] = rel.Name
		rels = append(rels, rel)
	}
	if c.eng == nil {
		var err error
		if c.eng, err = sqlengine.Open(c.p.Dir); err != nil {
			return boundSchema{}, err
		}
	}
	sql := d.Query.Rewrite(func(r spec.QueryRef) string { return sqlengine.RelationRef(names[relationKey(r)]) })
	s, err := c.eng.Describe(ctx, sql, rels)
	b := &boundSchema{s: s, ok: err == nil}
	if err != nil && sqlengine.BindError(err) {
		b.err = bindMessage(err)
	}
	c.known[d.Name] = b
	return *b, nil
}

// internalRelation matches the names under which the runner registers STREAM(x) and
// table_changes('x', ...) (relationName), whose default alias in a query they are.
var internalRelation = regexp.MustCompile(`__stream_(\w+)|__changes_\d+_(\w+)`)

// bindMessage keeps DuckDB's words of a bind error, without the query text it quotes (the
// rewritten query, whose relation names are not the spec's), and the runner's relation names
// replaced by the spec's forms: STREAM(x) and table_changes('x', ...), which have no name of
// their own to qualify a column with, so the message then says to give them an alias.
func bindMessage(err error) error {
	msg := strings.TrimPrefix(err.Error(), "sqlengine: ")
	if i := strings.Index(msg, "\n\nLINE "); i >= 0 {
		msg = msg[:i]
	} else if i := strings.Index(msg, "\nLINE "); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.ReplaceAll(msg, "temp.main.", "")
	msg = strings.Join(strings.Fields(msg), " ") // one line: DuckDB lists candidates on lines of their own
	first := ""
	msg = internalRelation.ReplaceAllStringFunc(msg, func(name string) string {
		m := internalRelation.FindStringSubmatch(name)
		form := "STREAM(" + m[1] + ")"
		if m[1] == "" {
			form = "table_changes('" + m[2] + "', ...)"
		}
		if first == "" {
			first = form
		}
		return form
	})
	if first != "" {
		msg += fmt.Sprintf(" (%s has no name of its own: give it an alias to qualify its columns, as in FROM %s AS s ... s.id)", first, first)
	}
	return errors.New(msg)
}
