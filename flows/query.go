package flows

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
	"tributary/sqlengine"
)

// Query runs the flow of a `query:` dataset (spec.Query) on DuckDB (package sqlengine):
//   - a materialized view is recomputed: its table then holds exactly the query's result,
//     replaced in one commit whose change data feed holds the rows that left (delete) and the
//     rows that came (insert), compared as whole rows (a view has no keys, so a changed row is a
//     delete and an insert); a result equal to the table commits nothing;
//   - a streaming table reads, for each STREAM(x), only the rows x appended since the last
//     update, and appends the query's result in one commit that records x's version in a txn
//     action (appId AppID(d) + ":" + x); a version of x that updates or deletes rows fails the
//     flow unless skip_change_commits is set;
//   - a view is evaluated (its expectations counted) and nothing is stored.
//
// Expectations check the query's result rows. The table is created by the first commit, with
// the result's columns; a later result with other columns is an error wrapping
// ErrSchemaChanged that names the full refresh to run.
func Query(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	m := Metrics{Version: -1}
	switch d.Type {
	case spec.View:
		_, rows, q, err := viewRows(ctx, env, d, 0)
		m.Quality.Add(q)
		if err != nil {
			return m, err
		}
		m.NumOutputRows = int64(len(rows))
		return m, nil
	case spec.StreamingTable:
		return streamQuery(ctx, env, d)
	}
	return materialize(ctx, env, d)
}

// setupQuery is Setup for a query dataset: a view has no table; an existing table gets the
// spec's table properties. The table itself is created by the first commit of the flow, when
// the result's columns are known.
func setupQuery(p *spec.Pipeline, d *spec.Dataset) error {
	if d.Type == spec.View {
		return nil
	}
	t := delta.New(TableDir(p.Storage, d.Name))
	snap, err := t.Snapshot(-1)
	if errors.Is(err, delta.ErrNoTable) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := viewResult(p, d, t, snap); err != nil {
		return err
	}
	return setProperties(t, snap, d)
}

// runSQL runs d's query with its references bound: plain ones to the referenced datasets'
// current contents, table_changes to change feeds, STREAM(x) to streams[x] (rows of x's schema).
func runSQL(ctx context.Context, env *Env, d *spec.Dataset, streams map[string]sqlengine.Relation, depth int) (schema.Schema, [][]any, error) {
	// Validation refuses a cycle, so a chain of views is never deeper than the pipeline has
	// datasets: a backstop, not a limit.
	if depth > len(env.Pipeline.Datasets) {
		return schema.Schema{}, nil, fmt.Errorf("dataset %s: views read each other in a cycle", d.Name)
	}
	p := env.Pipeline
	var rels []sqlengine.Relation
	names := map[string]string{}
	for _, r := range d.Query.Refs {
		k := relationKey(r)
		if _, done := names[k]; done {
			continue
		}
		src := p.Dataset(r.Dataset())
		if src == nil {
			return schema.Schema{}, nil, fmt.Errorf("dataset %s: the query reads %s, which is not a dataset of this pipeline", d.Name, r.Name)
		}
		var rel sqlengine.Relation
		var err error
		switch r.Kind {
		case spec.RefStream:
			rel = streams[r.Name]
			rel.Name = relationName(r, len(rels))
		case spec.RefChanges:
			rel.Name = relationName(r, len(rels))
			rel.RowsOnly = true
			t := delta.New(TableDir(p.Storage, r.Name))
			if rel.Schema, rel.Rows, err = t.Changes(r.From, r.To); errors.Is(err, delta.ErrFeedSchemaChange) {
				return schema.Schema{}, nil, fmt.Errorf("dataset %s: table_changes('%s', %d, ...): %w (give table_changes a start after that version)", d.Name, r.Name, r.From, err)
			} else if err != nil {
				return schema.Schema{}, nil, fmt.Errorf("dataset %s: table_changes('%s', ...): %w", d.Name, r.Name, err)
			}
		default:
			if r.Quarantine == "" && src.Type == spec.View {
				rel.Schema, rel.Rows, _, err = viewRows(ctx, env, src, depth+1)
				rel.RowsOnly = true
			} else {
				rel, err = tableRelation(p, r.Name)
			}
			if err != nil {
				return schema.Schema{}, nil, fmt.Errorf("dataset %s: %w", d.Name, err)
			}
			rel.Name = r.Name
		}
		names[k] = rel.Name
		rels = append(rels, rel)
	}
	sql := d.Query.Rewrite(func(r spec.QueryRef) string { return sqlengine.RelationRef(names[relationKey(r)]) })
	eng, err := sqlengine.Open(p.Dir)
	if err != nil {
		return schema.Schema{}, nil, err
	}
	defer eng.Release(p.Dir)
	s, rows, err := eng.Query(ctx, sql, rels)
	if err != nil {
		if sqlengine.BindError(err) {
			err = bindMessage(err) // the spec's names, not the runner's relations
		}
		return schema.Schema{}, nil, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if err := uniqueColumns(d, s); err != nil {
		return schema.Schema{}, nil, err
	}
	return s, rows, nil
}

// relationKey identifies the relation a reference of a query reads: the references of one kind,
// dataset and versions share one.
func relationKey(r spec.QueryRef) string {
	return fmt.Sprintf("%s|%s|%d|%d", r.Kind, r.Name, r.From, r.To)
}

// relationName is the name under which a query's relation for reference r, the n-th relation
// registered, is registered in DuckDB: STREAM(x) as __stream_x, table_changes('x', ...) as
// __changes_<n>_x (internalRelation reads both back), a table or view as its dataset's name.
func relationName(r spec.QueryRef, n int) string {
	switch r.Kind {
	case spec.RefStream:
		return "__stream_" + r.Name
	case spec.RefChanges:
		return fmt.Sprintf("__changes_%d_%s", n, r.Name)
	}
	return r.Name
}

// uniqueColumns refuses a query result with two columns of one name, in any case (`SELECT a.id,
// b.id FROM a JOIN b ...`): a table's columns are named without regard to case (Delta), and an
// expectation or a query reading the dataset could not tell them apart.
func uniqueColumns(d *spec.Dataset, s schema.Schema) error {
	seen := map[string]string{}
	for _, f := range s.Fields {
		k := strings.ToLower(f.Name)
		if first, dup := seen[k]; dup {
			what := "twice"
			if first != f.Name {
				what = "twice (as " + first + " and " + f.Name + ": column names are case-insensitive)"
			}
			return fmt.Errorf("dataset %s: the query returns column %s %s; give each a name of its own with AS (e.g. `... %s AS %s_2`)",
				d.Name, first, what, f.Name, k)
		}
		seen[k] = f.Name
	}
	return nil
}

// tableRelation binds a dataset's current table: its snapshot's Parquet files, with the rows
// their deletion vectors delete in Relation.Deleted (DuckDB leaves them out), or its rows when
// DuckDB cannot read the files alone (partition columns live in the log; a column named like
// one read_parquet adds to find deleted rows).
func tableRelation(p *spec.Pipeline, name string) (sqlengine.Relation, error) {
	t := delta.New(TableDir(p.Storage, name))
	snap, err := t.Snapshot(-1)
	if err != nil {
		if errors.Is(err, delta.ErrNoTable) {
			return sqlengine.Relation{}, fmt.Errorf("dataset %s has no table yet: run an update that fills it", name)
		}
		return sqlengine.Relation{}, err
	}
	rel := sqlengine.Relation{Schema: snap.Metadata.Schema, Files: []string{}}
	direct := len(snap.Metadata.PartitionColumns) == 0
	hasDV := false
	for _, f := range snap.Files {
		hasDV = hasDV || f.DeletionVector != nil
	}
	if hasDV {
		for _, f := range snap.Metadata.Schema.Fields {
			for _, c := range sqlengine.ReservedColumns {
				direct = direct && !strings.EqualFold(f.Name, c)
			}
		}
	}
	if !direct {
		rel.RowsOnly = true
		rel.Rows, err = t.Rows(snap)
		return rel, err
	}
	if len(snap.Files) == 0 {
		rel.RowsOnly = true
		return rel, nil
	}
	for _, f := range snap.Files {
		path, err := url.PathUnescape(f.Path)
		if err != nil {
			path = f.Path
		}
		file := filepath.Join(t.Dir, filepath.FromSlash(path))
		rel.Files = append(rel.Files, file)
		if f.DeletionVector == nil {
			continue
		}
		deleted, err := t.ReadDeletionVector(f.DeletionVector)
		if err != nil {
			return rel, fmt.Errorf("dataset %s: %w (data file %s)", name, err, f.Path)
		}
		if rel.Deleted == nil {
			rel.Deleted = map[string][]int64{}
		}
		pos := make([]int64, len(deleted))
		for i, d := range deleted {
			pos[i] = int64(d)
		}
		rel.Deleted[file] = pos
	}
	return rel, nil
}

// viewRows evaluates a view: its query's result, less the rows its drop expectations drop.
func viewRows(ctx context.Context, env *Env, d *spec.Dataset, depth int) (schema.Schema, [][]any, expectations.Quality, error) {
	var q expectations.Quality
	s, rows, err := runSQL(ctx, env, d, nil, depth)
	if err != nil {
		return s, nil, q, err
	}
	set, err := expectationSet(d, s)
	if err != nil {
		return s, nil, q, err
	}
	kept, q, err := set.Check(rows)
	return s, kept, q, err
}

// checkResult applies d's expectations to a query result.
func checkResult(d *spec.Dataset, s schema.Schema, rows [][]any, m *Metrics) ([][]any, error) {
	set, err := expectationSet(d, s)
	if err != nil {
		return nil, err
	}
	kept, q, err := set.Check(rows)
	m.Quality.Add(q)
	return kept, err
}

// streamColumns returns the schema a streaming table takes for a query result of columns result,
// and where each of its columns lies in a result row: the table's columns unchanged (nil order:
// the result's columns are the table's, in order); or, when the result keeps every column of the
// table with its type and adds others (its source gained a column, schema_evolution_mode:
// addNewColumns), the table's columns and then the new ones, as a Delta Live Tables streaming
// table takes an additive schema change. A column dropped or
// retyped is an error wrapping ErrSchemaChanged that names the full refresh to run.
func streamColumns(p *spec.Pipeline, d *spec.Dataset, table, result schema.Schema) (schema.Schema, []int, error) {
	if table.Equal(result) {
		return table, nil, nil
	}
	out := schema.Schema{Fields: append([]schema.Field(nil), table.Fields...)}
	var order []int
	for _, f := range table.Fields {
		i := result.Index(f.Name)
		if i < 0 || !result.Fields[i].Type.Equal(f.Type) {
			return table, nil, fmt.Errorf("dataset %s: %w: the table has (%s) but the query now returns (%s); run %s",
				d.Name, ErrSchemaChanged, table.DDL(), result.DDL(), RefreshWithReaders(p, d.Name))
		}
		order = append(order, i)
	}
	for i, f := range result.Fields {
		if table.Index(f.Name) < 0 {
			f.Nullable = true // the rows already in the table have none
			out.Fields = append(out.Fields, f)
			order = append(order, i)
		}
	}
	return out, order, nil
}

// newTableTx starts the transaction that creates d's table with the columns s, with a change
// data feed unless s has a column whose name the feed reserves.
func newTableTx(t *delta.Table, d *spec.Dataset, s schema.Schema) *delta.Transaction {
	conf := map[string]string{"delta.enableChangeDataFeed": "true"}
	if reservesFeedName(s) {
		// the names a change data feed reserves: such a table cannot have one (as in Delta)
		conf["delta.enableChangeDataFeed"] = "false"
	}
	for k, v := range d.TableProperties {
		conf[k] = v
	}
	tx := t.Begin(nil)
	tx.SetMetadata(delta.Metadata{Name: d.Name, Description: d.Comment, Schema: s, Configuration: conf})
	return tx
}

// warnColumnNames emits a WARN when a query's result columns s, which become d's table's columns,
// have names with a character Spark's Delta writer refuses unless column mapping is on
// (` ,;{}()\n\t=`; DuckDB names an unaliased count(*) "count_star()"): Spark, DuckDB and delta-rs
// read the table, but a Spark job could not write to it. The fix is an alias in the query.
func warnColumnNames(env *Env, d *spec.Dataset, s schema.Schema) {
	var bad []string
	for _, f := range s.Fields {
		if strings.ContainsAny(f.Name, " ,;{}()\n\t=") {
			bad = append(bad, "`"+f.Name+"`")
		}
	}
	if len(bad) == 0 {
		return
	}
	env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
		fmt.Sprintf("dataset %s: the column name(s) %s hold characters (space , ; { } ( ) tab newline =) that Spark's Delta writer refuses without column mapping (readers take them); name such columns in the query, e.g. %s", d.Name, strings.Join(bad, ", "), aliasExample(strings.Trim(bad[0], "`"))),
		map[string]any{"columns": bad}, "")
}

// aliasExample is the alias warnColumnNames suggests for a column named name: count(*) AS n for
// a column DuckDB named after an expression (count_star(), sum(x): a parenthesis, no space),
// otherwise the column quoted and given the plain name of its words ("Company Name" AS
// company_name).
func aliasExample(name string) string {
	if strings.Contains(name, "(") && !strings.Contains(name, " ") {
		return "count(*) AS n"
	}
	plain := strings.Join(strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}), "_")
	if plain == "" || plain[0] >= '0' && plain[0] <= '9' {
		plain = "c_" + plain
	}
	return sqlengine.Quote(name) + " AS " + plain
}

// reservesFeedName says whether s has a column named as a change data feed's own columns
// (_change_type, _commit_version, _commit_timestamp; Delta PROTOCOL.md "Change Data Files").
func reservesFeedName(s schema.Schema) bool {
	for _, c := range []string{delta.ChangeTypeColumn, delta.CommitVersionColumn, delta.CommitTimestampColumn} {
		if s.Index(c) >= 0 {
			return true
		}
	}
	return false
}

// materialize recomputes a materialized view and replaces its table with the result: the rows
// that changed, or, when the query's columns changed, the table's schema and every row.
func materialize(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	m := Metrics{Version: -1}
	p := env.Pipeline
	s, rows, err := runSQL(ctx, env, d, nil, 0)
	if err != nil {
		return m, err
	}
	if rows, err = checkResult(d, s, rows, &m); err != nil {
		return m, err
	}
	t := delta.New(TableDir(p.Storage, d.Name))
	snap, err := t.Snapshot(-1)
	if err != nil && !errors.Is(err, delta.ErrNoTable) {
		return m, err
	}
	var tx *delta.Transaction
	var ins, del [][]any
	var meta delta.Metadata
	if snap == nil || !snap.Metadata.Schema.Equal(s) {
		warnColumnNames(env, d, s)
	}
	switch {
	case snap == nil:
		tx, ins = newTableTx(t, d, s), rows
		meta = delta.Metadata{Schema: s}
	case !snap.Metadata.Schema.Equal(s):
		// The query's columns changed: the view is recomputed whole anyway, so its table is
		// replaced, schema and all, as CREATE OR REPLACE TABLE does (as a Delta Live Tables
		// materialized view takes a changed query). The commit has no change data file: its
		// rows of two schemas cannot share one, so a feed reader takes its removes and adds.
		if del, err = t.Rows(snap); err != nil {
			return m, err
		}
		tx, ins = t.Begin(snap), rows
		for _, f := range snap.Files {
			tx.Remove(t.RemoveFor(f, 0))
		}
		meta = snap.Metadata
		meta.Schema = s
		if meta.ChangeDataFeed() && reservesFeedName(s) {
			// as newTableTx: a table with a column the feed reserves cannot have one
			meta.Configuration = maps.Clone(meta.Configuration)
			meta.Configuration["delta.enableChangeDataFeed"] = "false"
		}
		tx.SetMetadata(meta)
	default:
		meta = snap.Metadata
		old, err := t.Rows(snap)
		if err != nil {
			return m, err
		}
		ins, del = diffRows(old, rows)
		if len(ins) == 0 && len(del) == 0 {
			return m, nil // the table already holds the result
		}
		tx = t.Begin(snap)
		for _, f := range snap.Files {
			tx.Remove(t.RemoveFor(f, 0))
		}
		if snap.Metadata.ChangeDataFeed() {
			changes := append(append([][]any{}, del...), ins...)
			types := make([]string, 0, len(changes))
			for range del {
				types = append(types, delta.ChangeDelete)
			}
			for range ins {
				types = append(types, delta.ChangeInsert)
			}
			cdc, err := t.WriteCDCFile(s, changes, types)
			if err != nil {
				return m, err
			}
			tx.AddCDC(cdc)
		}
	}
	if len(rows) > 0 {
		adds, err := t.WriteData(meta, rows)
		if err != nil {
			return m, err
		}
		tx.Add(adds...)
	}
	tx.SetCommitInfo(nil, map[string]string{"numOutputRows": strconv.Itoa(len(rows)), "numInsertedRows": strconv.Itoa(len(ins)), "numDeletedRows": strconv.Itoa(len(del))})
	v, err := tx.Commit(replaceOperation, map[string]any{"isManaged": "true", "queryId": AppID(p, d.Name)})
	if err != nil {
		return m, err
	}
	m.Version, m.NumOutputRows = v, int64(len(rows))
	m.NumUpsertedRows, m.NumDeletedRows = int64(len(ins)), int64(len(del))
	return m, nil
}

// diffRows compares two multisets of rows: ins are the rows of now not in old (as many times as
// they are missing), del the rows of old not in now, each in its set's order.
func diffRows(old, now [][]any) (ins, del [][]any) {
	count := map[string]int{}
	for _, r := range old {
		count[rowKey(r)]++
	}
	for _, r := range now {
		k := rowKey(r)
		if count[k] > 0 {
			count[k]--
			continue
		}
		ins = append(ins, r)
	}
	for _, r := range old {
		k := rowKey(r)
		if count[k] > 0 {
			count[k]--
			del = append(del, r)
		}
	}
	return ins, del
}

// rowKey is a row's identity for diffRows: each value with its Go type (appendKey).
func rowKey(r []any) string {
	var b []byte
	for _, v := range r {
		b = appendKey(b, v)
	}
	return string(b)
}

// appendKey appends an encoding of v that no other value shares: strings quoted, and a nested
// value (STRUCT and ARRAY as []any, MAP as schema.Map) element by element, each encoded so, in
// brackets. With %v alone, the arrays ["a b"] and ["a", "b"] (or a string holding a separator)
// would print alike, and a view whose result changed so would keep its old rows.
func appendKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "nil;"...)
	case string:
		return append(strconv.AppendQuote(append(b, 's'), x), ';')
	case []any:
		b = append(b, '[')
		for _, e := range x {
			b = appendKey(b, e)
		}
		return append(b, "];"...)
	case schema.Map:
		b = append(b, '{')
		for _, e := range x {
			b = appendKey(appendKey(b, e.Key), e.Value)
		}
		return append(b, "};"...)
	}
	return fmt.Appendf(b, "%T:%v;", v, v)
}

// streamAppID is the txn appId under which a query streaming table records how far it read the
// stream source x.
func streamAppID(p *spec.Pipeline, d *spec.Dataset, x string) string {
	return AppID(p, d.Name) + ":" + x
}

// streamQuery runs a streaming table defined by a query over STREAM(x).
func streamQuery(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	m := Metrics{Version: -1}
	p := env.Pipeline
	t := delta.New(TableDir(p.Storage, d.Name))
	snap, err := t.Snapshot(-1)
	if err != nil && !errors.Is(err, delta.ErrNoTable) {
		return m, err
	}
	streams := map[string]sqlengine.Relation{}
	upTo := map[string]int64{}
	ids := map[string]any{}
	var before map[string]any
	if snap != nil {
		before = lastStreamSources(t, snap)
		if err := checkStreamSources(p, d, snap, before); err != nil {
			return m, err
		}
	}
	fresh := snap == nil
	for _, x := range d.Query.Streams() {
		rel, latest, id, news, err := streamRows(ctx, env, d, snap, before, x)
		if err != nil {
			return m, err
		}
		streams[x], upTo[x], ids[x] = rel, latest, id
		fresh = fresh || news
	}
	if !fresh {
		m.Idle = true
		if snap != nil && before != nil && !sameKeys(before, ids) {
			// The query's sources changed with nothing new to read (one dropped): the table
			// records them, so that a source added later is not taken for a renamed one.
			tx := t.Begin(snap)
			tx.SetCommitInfo(map[string]any{streamSourcesKey: ids}, map[string]string{"numOutputRows": "0"})
			if _, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "queryId": AppID(p, d.Name)}); err != nil {
				return m, err
			}
		}
		return m, nil
	}
	s, rows, err := runSQL(ctx, env, d, streams, 0)
	if err != nil {
		return m, err
	}
	if rows, err = checkResult(d, s, rows, &m); err != nil {
		return m, err
	}
	var tx *delta.Transaction
	meta := delta.Metadata{Schema: s}
	if snap == nil {
		warnColumnNames(env, d, s)
		tx = newTableTx(t, d, s)
	} else {
		cols, order, err := streamColumns(p, d, snap.Metadata.Schema, s)
		if err != nil {
			return m, err
		}
		tx, meta = t.Begin(snap), snap.Metadata
		if order != nil {
			for i, r := range rows {
				out := make([]any, len(order))
				for j, k := range order {
					out[j] = r[k]
				}
				rows[i] = out
			}
			if !cols.Equal(meta.Schema) {
				meta.Schema = cols
				tx.SetMetadata(meta)
			}
		}
	}
	if len(rows) > 0 {
		adds, err := t.WriteData(meta, rows)
		if err != nil {
			return m, err
		}
		tx.Add(adds...)
	}
	for x, v := range upTo {
		if v >= 0 {
			tx.SetAppTxn(streamAppID(p, d, x), v)
		}
	}
	tx.SetCommitInfo(map[string]any{streamSourcesKey: ids}, map[string]string{"numOutputRows": strconv.Itoa(len(rows))})
	v, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "queryId": AppID(p, d.Name)})
	if err != nil {
		return m, err
	}
	m.Version, m.NumOutputRows = v, int64(len(rows))
	return m, nil
}

// checkStreamSources refuses a query streaming table whose STREAM sources changed in a way that
// would read rows it holds again: its last update streamed a source its query no longer streams
// (before: the sources that update recorded, lastStreamSources; nil for a table that recorded
// none, whose progress in each source stands for them), and it now streams a source it has no
// progress in (a source renamed, or replaced by another table), which would be read from its
// start into the rows read from the old one. As Spark's streaming checkpoint refuses a query
// whose sources changed, the error names the full refresh that rebuilds the table from its new
// sources. A source added beside the old ones is read from its start, and one dropped is no
// longer read: neither is refused, nor a source added in an update after one was dropped.
func checkStreamSources(p *spec.Pipeline, d *spec.Dataset, snap *delta.Snapshot, before map[string]any) error {
	streams := d.Query.Streams()
	prefix := AppID(p, d.Name) + ":"
	var gone []string
	if before != nil {
		for x := range before {
			if !slices.Contains(streams, x) {
				gone = append(gone, x)
			}
		}
	} else {
		for appID := range snap.AppTxns {
			if x, ok := strings.CutPrefix(appID, prefix); ok && !slices.Contains(streams, x) {
				gone = append(gone, x)
			}
		}
	}
	var unread []string
	for _, x := range streams {
		if _, ok := snap.AppTxns[prefix+x]; !ok {
			unread = append(unread, x)
		}
	}
	if len(gone) == 0 || len(unread) == 0 {
		return nil
	}
	sort.Strings(gone)
	return fmt.Errorf("dataset %s holds the rows it read from STREAM(%s), which its query no longer reads, and now streams %s, which it has not read: reading %s from the start would add rows it may hold already (a renamed source is read again whole); run %s to rebuild %s from its current sources",
		d.Name, strings.Join(gone, "), STREAM("), streamList(unread), strings.Join(unread, ", "), RefreshHint(p, d.Name), d.Name)
}

// sameKeys says whether two maps have the same keys.
func sameKeys(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// streamList names the STREAM sources xs ("STREAM(a)", "STREAM(a) and STREAM(b)").
func streamList(xs []string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = "STREAM(" + x + ")"
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// streamSourcesKey is the commitInfo key under which a query streaming table records the table
// id (metaData.id) of each STREAM source it read, so that a re-created source is noticed.
const streamSourcesKey = "tributaryStreamSources"

// lastStreamSources returns the source table ids the newest commit of t that records them holds
// (nil when none is left in the log).
func lastStreamSources(t *delta.Table, snap *delta.Snapshot) map[string]any {
	for v := snap.Version; v >= 0; v-- {
		c, err := t.ReadCommit(v)
		if err != nil {
			return nil
		}
		if ids, ok := c.Info.Extra[streamSourcesKey].(map[string]any); ok {
			return ids
		}
	}
	return nil
}

// streamRows returns the rows the table of x appended after the version d last read (all of
// its versions the first time), x's latest version, its table id and whether there are versions
// d has not read. before holds the table ids d's last commit recorded: a source re-created
// since (another id, or fewer versions than were read) is an error naming the full refresh.
func streamRows(ctx context.Context, env *Env, d *spec.Dataset, snap *delta.Snapshot, before map[string]any, x string) (sqlengine.Relation, int64, string, bool, error) {
	p := env.Pipeline
	rel := sqlengine.Relation{RowsOnly: true}
	src := delta.New(TableDir(p.Storage, x))
	srcSnap, err := src.Snapshot(-1)
	if errors.Is(err, delta.ErrNoTable) {
		return rel, -1, "", false, fmt.Errorf("dataset %s reads STREAM(%s), which has no table yet: run an update that fills it", d.Name, x)
	}
	if err != nil {
		return rel, -1, "", false, err
	}
	rel.Schema = srcSnap.Metadata.Schema
	id := srcSnap.Metadata.ID
	from := int64(0)
	started := false
	if snap != nil {
		if last, ok := snap.AppTxns[streamAppID(p, d, x)]; ok {
			from, started = last+1, true
		}
	}
	latest := srcSnap.Version
	if old, ok := before[x].(string); started && ((ok && old != id) || from > latest+1) {
		return rel, -1, "", false, fmt.Errorf("dataset %s read STREAM(%s) up to version %d, but %s was re-created since; run %s to read it again from the start", d.Name, x, from-1, x, RefreshWithReaders(p, d.Name))
	}
	// A log metadata cleanup shortened starts with the snapshot at its first version.
	init, start, err := firstCommit(p, src, srcSnap, x, d.Name, from-1)
	if err != nil {
		return rel, -1, "", false, err
	}
	for v := start; v <= latest; v++ {
		if err := ctx.Err(); err != nil {
			return rel, -1, "", false, err
		}
		c := init
		if c == nil || v != init.Version {
			if c, err = src.ReadCommit(v); err != nil {
				return rel, -1, "", false, err
			}
		}
		changes := false
		for _, r := range c.Removes {
			changes = changes || r.DataChange
		}
		if changes {
			if d.SkipChangeCommits {
				continue
			}
			return rel, -1, "", false, fmt.Errorf("dataset %s reads STREAM(%s), but version %d of %s updated or deleted rows (operation %s); a stream reads appends only: set `skip_change_commits: true` on %s to skip such versions, or read %s without STREAM", d.Name, x, v, x, c.Info.Operation, d.Name, x)
		}
		var meta delta.Metadata
		loaded := false
		for _, a := range c.Adds {
			if !a.DataChange {
				continue
			}
			if !loaded {
				vs, err := src.Snapshot(v)
				if err != nil {
					return rel, -1, "", false, err
				}
				meta, loaded = vs.Metadata, true
			}
			fr, err := src.FileRows(meta, a)
			if err != nil {
				return rel, -1, "", false, vacuumedHint(err, p, d, x, false)
			}
			rel.Rows = append(rel.Rows, fr...)
		}
	}
	return rel, latest, id, from <= latest, nil
}
