package flows

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"tributary/dag"
	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
	"tributary/sqlengine"
)

// QueryProblem is a query dataset whose query DuckDB would refuse when the update runs it, or
// whose expectations would not compile against its query's result when its flow runs
// (ErrBadExpectation). For a query DuckDB refuses, Err says why, in DuckDB's words (a column,
// table or function it does not know, arguments of the wrong types), and At is the byte offset
// in the query's SQL of the name DuckDB refused, -1 when the message names none the SQL holds.
// For a query that binds, Err is nil and Expectations are the problems of its expectations
// (spec.CheckExpectations), each at its place in the spec.
type QueryProblem struct {
	Dataset      *spec.Dataset
	Err          error
	At           int
	Expectations spec.Errors
}

// refusedName matches the name a DuckDB bind error refuses: a column or table it does not find
// (a column qualified with a table's name or alias too), a function it does not have, or one
// whose arguments it cannot take.
var refusedName = regexp.MustCompile(`Referenced column "([^"]+)" not found|does not have a column named "([^"]+)"|Referenced table "([^"]+)" not found|Function with name "?([^" ]+?)"? does not exist|argument types '([A-Za-z_][A-Za-z0-9_]*)\(`)

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
// (sqlengine.Describe), and returns those DuckDB refuses, in spec order. The queries are bound
// in dependency order (dag.Graph.Order), each once, so that a query dataset's columns, which
// its readers bind against, are its query's result, however long the chain of queries. A query
// that reads a dataset whose columns are known only once it runs is not checked; nor is one
// DuckDB cannot describe, nor one with a PIVOT whose columns are its input's values
// (spec.Query.DynamicPivot), nor one reading it. The expectations of a query that binds are
// compiled against its result's columns (spec.CheckExpectations), as its flow compiles them
// (expectationSet), and an APPLY CHANGES flow reading a query streaming table that binds is
// checked against them (spec.Dataset.CheckSchemaWith); those of a query not checked are left to
// its flow. The error is one of opening DuckDB.
func CheckQueries(ctx context.Context, p *spec.Pipeline) ([]QueryProblem, error) {
	return bindQueries(ctx, p, nil)
}

// CheckDraftQueries is CheckQueries for a spec that may have problems (spec.LoadDraft): it binds
// the queries d.Bindable allows against the datasets d.Sound accepts, so that `pipeline
// validate` reports them with the spec's other problems. A query that reads a dataset with
// problems (or one whose columns are not known because of them) is not checked: one mistake
// makes one problem. A draft whose Pipeline is nil has no query to bind.
func CheckDraftQueries(ctx context.Context, d *spec.Draft) ([]QueryProblem, error) {
	if d.Pipeline == nil {
		return nil, nil
	}
	return bindQueries(ctx, d.Pipeline, d)
}

// bindQueries is CheckQueries, for the queries draft allows when it is not nil.
func bindQueries(ctx context.Context, p *spec.Pipeline, draft *spec.Draft) ([]QueryProblem, error) {
	c := &queryChecker{p: p, draft: draft, known: map[string]*boundSchema{}}
	defer func() {
		if c.eng != nil {
			c.eng.Release(p.Dir)
		}
	}()
	bound := map[*spec.Dataset]bool{}
	for _, d := range c.order() {
		if err := c.bind(ctx, d); err != nil {
			return nil, err
		}
		bound[d] = true
	}
	var out []QueryProblem
	for _, d := range p.Datasets {
		b := c.known[d.Name]
		switch {
		case !bound[d]:
		case b.err != nil:
			out = append(out, QueryProblem{Dataset: d, Err: b.err, At: problemAt(d.Query, b.err.Error())})
		case b.ok:
			if es := spec.CheckExpectations(d, b.s); len(es) > 0 {
				out = append(out, QueryProblem{Dataset: d, At: -1, Expectations: es})
			}
		}
	}
	// An APPLY CHANGES flow reading a query streaming table is checked against the columns its
	// query binds to, as its update's set-up checks it against the query's table (a key the
	// query does not return is a spec error now, not a failed flow later).
	for _, d := range p.Datasets {
		if !d.SchemaAtRun() || (draft != nil && !draft.Sound(d)) {
			continue
		}
		src := p.Dataset(d.ApplyChanges.Source)
		if src == nil || src.Query == nil || c.known[src.Name] == nil || !c.known[src.Name].ok {
			continue
		}
		if es := d.CheckSchemaWith(c.known[src.Name].s); len(es) > 0 {
			out = append(out, QueryProblem{Dataset: d, At: -1, Expectations: es})
		}
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
	draft *spec.Draft             // nil: p is valid, every query is bound
	known map[string]*boundSchema // by dataset name, the result of its query
	eng   *sqlengine.Engine
}

// bindable reports whether d's query is to be bound (spec.Draft.Bindable).
func (c *queryChecker) bindable(d *spec.Dataset) bool {
	return d.Query != nil && (c.draft == nil || c.draft.Bindable(d))
}

// sound reports whether the columns of d may be bound against (spec.Draft.Sound).
func (c *queryChecker) sound(d *spec.Dataset) bool {
	return c.draft == nil || c.draft.Sound(d)
}

// order returns the query datasets to bind, each after the query datasets it reads: the order of
// the graph of those datasets (their names unique, as validation makes them; a repeat is not
// bound). A graph the dag package refuses, a cycle that validation reports, is bound in spec
// order: a query whose input is not bound yet is then not checked.
func (c *queryChecker) order() []*spec.Dataset {
	byName := map[string]*spec.Dataset{}
	var queries []*spec.Dataset
	for _, d := range c.p.Datasets {
		if _, dup := byName[d.Name]; dup || !c.bindable(d) {
			continue
		}
		byName[d.Name] = d
		queries = append(queries, d)
	}
	nodes := make([]dag.Node, len(queries))
	for i, d := range queries {
		nodes[i].Name = d.Name
		for _, r := range d.Query.Refs {
			if _, ok := byName[r.Name]; ok && r.Quarantine == "" && !slices.Contains(nodes[i].Deps, r.Name) {
				nodes[i].Deps = append(nodes[i].Deps, r.Name)
			}
		}
	}
	g, err := dag.New(nodes)
	if err != nil {
		return queries
	}
	out := make([]*spec.Dataset, 0, len(queries))
	for _, name := range g.Order() {
		out = append(out, byName[name])
	}
	return out
}

// tableSchema returns the columns a query reading dataset name's table (or, for a view, its rows)
// finds once the flows before it have run: what the spec declares or derives for the dataset (as
// its flow creates or evolves the table; a table on disk may still have the columns of an older
// spec), a query dataset's query result (bound before, in dependency order); for a quarantine
// table, its dataset's and _failed_expectations (quarantineSchema: the update creates it so
// before the dataset's flow runs, and refuses one on disk with other columns, which a full
// refresh rebuilds so). ok is false when they are known only once the dataset's flow runs (a
// file source that infers its schema, which a new file may widen, and its quarantine table), or
// not at all (a dataset that is not sound, a query that does not bind or was not bound).
func (c *queryChecker) tableSchema(name string) boundSchema {
	d := c.p.Dataset(name)
	switch {
	case d == nil: // a quarantine table
		q := c.p.QuarantineOf(name)
		if q == nil || !c.sound(q) || (q.Source != nil && q.Source.InferSchema) || len(q.Schema.Fields) == 0 {
			return boundSchema{}
		}
		return boundSchema{s: quarantineSchema(q), ok: true}
	case !c.sound(d):
		return boundSchema{}
	case d.Query != nil:
		if b, ok := c.known[d.Name]; ok {
			return boundSchema{s: b.s, ok: b.ok}
		}
		return boundSchema{}
	case d.Source != nil && d.Source.InferSchema, len(d.Schema.Fields) == 0:
		return boundSchema{}
	}
	return boundSchema{s: d.Schema, ok: true}
}

// bind binds dataset d's query against its inputs (tableSchema), bound before it, and records
// the result in c.known: ok with the result's columns, err when DuckDB refuses it, neither when
// it cannot be checked. The error is one of opening DuckDB.
func (c *queryChecker) bind(ctx context.Context, d *spec.Dataset) error {
	c.known[d.Name] = &boundSchema{}
	if len(d.Query.Files) > 0 {
		// A query that reads files binds against what they hold when it runs, which is data,
		// not spec: a lookup file empty or absent now may be filled before a scheduled update.
		return nil
	}
	if d.Query.DynamicPivot() {
		// Over empty tables the PIVOT has none of the columns its input's values make, which
		// the query (or one reading it) may name: neither binds as it runs.
		return nil
	}
	var rels []sqlengine.Relation
	names := map[string]string{}
	for _, r := range d.Query.Refs {
		k := relationKey(r)
		if _, done := names[k]; done {
			continue
		}
		in := c.tableSchema(r.Name)
		if !in.ok {
			return nil
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
			return err
		}
	}
	sql := d.Query.Rewrite(func(r spec.QueryRef) string { return sqlengine.RelationRef(names[relationKey(r)]) })
	s, err := c.eng.Describe(ctx, sql, rels)
	b := &boundSchema{s: s, ok: err == nil}
	if err != nil && sqlengine.BindError(err) {
		b.err = bindMessage(err)
	}
	c.known[d.Name] = b
	return nil
}

// internalRelation matches the names under which the runner registers STREAM(x) and
// table_changes('x', ...) (relationName), whose default alias in a query they are.
var internalRelation = regexp.MustCompile(`__stream_(\w+)|__changes_\d+_(\w+)`)

// fewerCandidates keeps the first n of the candidate functions DuckDB lists, one a line, after
// "Candidate functions:" (about 40 for an operator such as - over a wrong type), and says how many
// it left out.
func fewerCandidates(msg string, n int) string {
	head, list, ok := strings.Cut(msg, "Candidate functions:\n")
	if !ok {
		return msg
	}
	lines := strings.Split(strings.TrimRight(list, "\n"), "\n")
	if len(lines) <= n {
		return msg
	}
	return head + "Candidate functions:\n" + strings.Join(lines[:n], "\n") + fmt.Sprintf("\n(and %d more)", len(lines)-n)
}

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
	msg = fewerCandidates(msg, 5)
	// One line: DuckDB lists candidates on lines of their own, and for a qualified column after
	// a colon too many.
	msg = strings.Join(strings.Fields(msg), " ")
	msg = strings.ReplaceAll(msg, "Candidate bindings: : ", "Candidate bindings: ")
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
