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
		if err := silver.ResolveSchema(); err == nil || !strings.Contains(err.Error(), "dataset silver: its columns come from dataset bronze, whose schema is not inferred yet") {
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
