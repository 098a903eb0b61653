package flows

import (
	"testing"

	"tributary/schema"
)

// TestSchemaDiff: the schema-changed error names each changed, new and gone column.
func TestSchemaDiff(t *testing.T) {
	t.Parallel()
	ddl := func(s string) schema.Schema {
		out, err := schema.ParseDDL(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct{ table, spec, want string }{
		{"id BIGINT, tags ARRAY<STRING>, x INT", "id BIGINT, tags ARRAY<INT>, note STRING",
			"column tags ARRAY<STRING> is now ARRAY<INT>; column x is gone; column note is new"},
		{"a INT, b INT", "b INT, a INT", "the columns are in another order"},
	} {
		if got := schemaDiff(ddl(c.table), ddl(c.spec)); got != c.want {
			t.Errorf("%s -> %s: %q, want %q", c.table, c.spec, got, c.want)
		}
	}
}
