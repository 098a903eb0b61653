package spec

import (
	"strings"
	"testing"
)

// TestTargetSchemaCharVarchar: the dataset-level schema of an APPLY CHANGES target is its table's
// schema, which may declare CHAR(n) and VARCHAR(n) for columns the flow produces as STRING: the
// dataset's schema then has them (in the flow's column order); another type for them, a nested
// one, or one on an apply_changes_from_snapshot target is an error that says what to write; a
// dataset reading the target's table sees STRING, as Spark reads a table's CHAR and VARCHAR.
func TestTargetSchemaCharVarchar(t *testing.T) {
	t.Parallel()
	text := build(map[string]string{
		"#SCHEMA": `      schema: "id BIGINT, op STRING, seq BIGINT, name STRING"`,
		"#AC":     "      except_column_list: [op]",
		"#MORE": `    schema: "name VARCHAR(10), id BIGINT, seq BIGINT"
  - name: copy
    source: {table: silver, read: change_feed}`,
	})
	p, err := Parse("p.yaml", []byte(text), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Dataset("silver").Schema.DDL(), "id BIGINT, seq BIGINT, name VARCHAR(10)"; got != want {
		t.Errorf("silver: %s, want %s", got, want)
	}
	if got, want := p.Dataset("bronze").Schema.DDL(), "id BIGINT, op STRING, seq BIGINT, name STRING"; got != want {
		t.Errorf("bronze: %s, want %s (unchanged)", got, want)
	}
	if got, want := p.Dataset("copy").Schema.DDL(), "id BIGINT, seq BIGINT, name STRING, _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP"; got != want {
		t.Errorf("copy (reading silver): %s, want %s", got, want)
	}

	for _, c := range []struct{ schema, want string }{
		{`    schema: "id VARCHAR(10), op STRING, seq BIGINT"`, "column id is declared VARCHAR(10) but the flow produces BIGINT (hint: declare it as BIGINT)"},
		{`    schema: "id BIGINT, op ARRAY<CHAR(1)>, seq BIGINT"`, "type CHAR(1) inside a STRUCT, ARRAY or MAP is not supported yet; declare it STRING"},
		{`    schema: "id BIGINT, op CHAR(x), seq BIGINT"`, "expected a number"},
	} {
		_, err := Parse("p.yaml", []byte(build(map[string]string{"#MORE": c.schema})), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.schema, err, c.want)
		}
	}

	snap := strings.Replace(snapshotBase, "#SNAP", "      source: raw\n      keys: [id]\n    schema: \"id BIGINT, name VARCHAR(5), city STRING\"", 1)
	_, err = Parse("p.yaml", []byte(snap), nil, nil)
	if want := "column name: VARCHAR(5) is not supported yet in the schema of an apply_changes_from_snapshot target (hint: declare it STRING)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("snapshot target: err = %v, want %q", err, want)
	}
}
