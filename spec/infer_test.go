package spec

import (
	"errors"
	"strings"
	"testing"

	"tributary/schema"
)

// TestApplyChangesFromInferred: an APPLY CHANGES flow reading a source whose schema is inferred
// loads, its columns unknown (SchemaAtRun), and is checked against the source's columns once
// they are filled (as flows.Setup fills them): the target takes them as a declared schema's
// (column lists applied, __START_AT and __END_AT of the sequence's type under SCD type 2), and a
// flow that does not fit them fails with the problem at its place in the spec.
func TestApplyChangesFromInferred(t *testing.T) {
	t.Parallel()
	inferred := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "op", Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: "seq", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "_rescued_data", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
	load := func(t *testing.T, ac string) *Pipeline {
		t.Helper()
		p, err := Parse("p.yaml", []byte(build(map[string]string{"#SCHEMA": "", "#AC": ac})), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	fill := func(p *Pipeline) {
		// What flows.Setup of the source does (resolveInferred): the columns, then the dataset's.
		b := p.Dataset("bronze")
		b.Source.Schema = schema.Schema{Fields: inferred.Fields[:3]}
		b.Schema = inferred
	}

	t.Run("scd1", func(t *testing.T) {
		t.Parallel()
		p := load(t, "      except_column_list: [op, _rescued_data]")
		silver := p.Dataset("silver")
		if !silver.SchemaAtRun() || len(silver.Schema.Fields) != 0 || p.Dataset("bronze").SchemaAtRun() {
			t.Fatalf("SchemaAtRun = %v, schema %v before the source's columns are known", silver.SchemaAtRun(), silver.Schema.DDL())
		}
		if err := silver.ResolveSchema(); err == nil || !strings.Contains(err.Error(), "dataset silver: its columns come from dataset bronze, whose columns are not known yet") {
			t.Fatalf("ResolveSchema before the source's = %v", err)
		}
		fill(p)
		for range 2 { // each update's set-up resolves it again
			if err := silver.ResolveSchema(); err != nil {
				t.Fatal(err)
			}
			if got, want := silver.Schema.DDL(), "id BIGINT, seq BIGINT"; got != want {
				t.Fatalf("schema = %s, want %s", got, want)
			}
		}
	})
	t.Run("scd2", func(t *testing.T) {
		t.Parallel()
		p := load(t, "      stored_as_scd_type: 2\n      apply_as_deletes: op == 'D'")
		fill(p)
		silver := p.Dataset("silver")
		if err := silver.ResolveSchema(); err != nil {
			t.Fatal(err)
		}
		if got, want := silver.Schema.DDL(), "id BIGINT, op STRING, seq BIGINT, _rescued_data STRING, __START_AT BIGINT, __END_AT BIGINT"; got != want {
			t.Fatalf("schema = %s, want %s", got, want)
		}
	})
	t.Run("misfit", func(t *testing.T) {
		t.Parallel()
		p := load(t, "      column_list: [id, seq, amount]\n      apply_as_deletes: kind == 'D'")
		fill(p)
		err := p.Dataset("silver").ResolveSchema()
		var es Errors
		if !errors.As(err, &es) || len(es) != 2 {
			t.Fatalf("err = %v, want two spec problems", err)
		}
		for i, w := range []string{
			"p.yaml:16:30: datasets[1].apply_changes.column_list[2]: unknown column amount: dataset bronze has no such column (hint: columns: id, op, seq, _rescued_data)",
			"p.yaml:17:25: datasets[1].apply_changes.apply_as_deletes: apply_as_deletes does not compile: unknown name kind",
		} {
			if !strings.HasPrefix(es[i].Error(), w) {
				t.Errorf("problem %d = %s\nwant it to start with %s", i, es[i], w)
			}
		}
	})
}

// TestApplyChangesFromQuery: an APPLY CHANGES flow reads a query streaming table (an append-only
// log, as Delta Live Tables' APPLY CHANGES reads a streaming table defined by a query), its
// checks waiting for the query's columns (SchemaAtRun); a materialized view, whose updates
// recompute its rows, is refused with what to write instead; and reading such a target as a
// table is refused.
func TestApplyChangesFromQuery(t *testing.T) {
	t.Parallel()
	more := "  - name: gold\n    type: #TYPE\n    query: SELECT id, seq, op FROM #FROM\n  - name: g2\n    apply_changes: {source: gold, keys: [id], sequence_by: seq}\n"
	p, err := Parse("p.yaml", []byte(build(map[string]string{"#MORE": strings.NewReplacer("#TYPE", "streaming_table", "#FROM", "STREAM(bronze)").Replace(more)})), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g2 := p.Dataset("g2"); !g2.SchemaAtRun() || len(g2.Schema.Fields) != 0 {
		t.Errorf("g2: SchemaAtRun %v, schema %s", g2.SchemaAtRun(), g2.Schema.DDL())
	}
	// Its columns, once the query's table has them (flows.Setup), make the target's.
	p.Dataset("gold").Schema = schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "seq", Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: "op", Type: schema.Type{Kind: schema.String}, Nullable: true},
	}}
	if err := p.Dataset("g2").ResolveSchema(); err != nil || p.Dataset("g2").Schema.DDL() != "id BIGINT, seq BIGINT, op STRING" {
		t.Errorf("ResolveSchema: %v, schema %s", err, p.Dataset("g2").Schema.DDL())
	}

	_, err = Parse("p.yaml", []byte(build(map[string]string{"#MORE": strings.NewReplacer("#TYPE", "materialized_view", "#FROM", "bronze").Replace(more)})), nil, nil)
	if want := "p.yaml:21:29: datasets[3].apply_changes.source: apply_changes reads an append-only change log, but gold is a materialized_view, whose updates recompute its rows (hint: make gold a `type: streaming_table` whose query reads STREAM(...), or feed apply_changes from a dataset with a `source:` (files, a Delta table, or another dataset's change feed: `source: {table: x, read: change_feed}`))"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}

	_, err = Parse("p.yaml", []byte(build(map[string]string{"#MORE": strings.NewReplacer("#TYPE", "streaming_table", "#FROM", "STREAM(bronze)").Replace(more) + "  - name: copy\n    source: {table: g2}\n"})), nil, nil)
	if want := "p.yaml:23:21: datasets[4].source.table: reading dataset g2, whose columns come from the query of dataset gold, as a table or as snapshots is not supported yet (hint: read g2 in a query (`query: SELECT ... FROM g2`))"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
