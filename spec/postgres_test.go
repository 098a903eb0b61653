package spec

import (
	"strings"
	"testing"
)

// TestPostgresAndDebeziumSources: what `format: postgres` and `format: debezium` take, the
// columns they give, and the mistakes they refuse (each with its key path).
func TestPostgresAndDebeziumSources(t *testing.T) {
	t.Parallel()
	const good = `name: shop
datasets:
  - name: orders_changes
    source:
      format: postgres
      connection: postgres://app:${PGPASSWORD}@localhost:5432/shop
      table: public.orders
      schema: "id BIGINT, status STRING"
  - name: customers_changes
    source:
      format: debezium
      path: ./landing
      schema: "id BIGINT, name STRING, _op STRING, _source_lsn BIGINT"
`
	env := func(k string) (string, bool) { return "s3cret", k == "PGPASSWORD" }
	p, err := Parse("p.yaml", []byte(good), nil, env)
	if err != nil {
		t.Fatal(err)
	}
	src := p.Dataset("orders_changes").Source
	if src.Postgres == nil || src.Postgres.Schema != "public" || src.Postgres.Table != "orders" || !strings.Contains(src.Postgres.Connection, "s3cret") {
		t.Fatalf("postgres source = %+v", src.Postgres)
	}
	if got := p.Dataset("orders_changes").Schema.DDL(); got != "id BIGINT, status STRING, _op STRING, _lsn BIGINT, _commit_time TIMESTAMP, _tx_id BIGINT" {
		t.Fatalf("schema = %s", got)
	}
	// A table created with a quoted mixed-case name (an ORM's "User") is named as it is.
	mixed, err := Parse("p.yaml", []byte(strings.Replace(good, "table: public.orders", "table: Sales.User", 1)), nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if pg := mixed.Dataset("orders_changes").Source.Postgres; pg.Schema != "Sales" || pg.Table != "User" {
		t.Fatalf("mixed-case table = %s.%s, want Sales.User", pg.Schema, pg.Table)
	}
	if got := p.Dataset("customers_changes").Schema.DDL(); got != "id BIGINT, name STRING, _op STRING, _source_lsn BIGINT" {
		t.Fatalf("debezium schema = %s", got)
	}

	for _, tc := range []struct{ name, source, want string }{
		{"postgres needs a connection", "format: postgres\n      table: orders\n      schema: \"id BIGINT\"", "datasets[0].source.connection: a postgres source needs connection"},
		{"postgres refuses file keys", "format: postgres\n      connection: x\n      table: orders\n      path: ./x\n      schema: \"id BIGINT\"", "path does not apply to `format: postgres`"},
		{"postgres change columns are added", "format: postgres\n      connection: x\n      table: orders\n      schema: \"id BIGINT, _lsn BIGINT\"", "column _lsn is added by format postgres"},
		{"postgres table name", "format: postgres\n      connection: x\n      table: public.my-orders\n      schema: \"id BIGINT\"", `table "public.my-orders" is not a PostgreSQL name this source takes`},
		{"postgres slot name", "format: postgres\n      connection: x\n      table: orders\n      slot: Bad-Name\n      schema: \"id BIGINT\"", `slot "Bad-Name" is not a valid name`},
		{"debezium needs a schema", "format: debezium\n      path: ./x", "schema inference is not supported yet for format debezium"},
		{"debezium takes no options", "format: debezium\n      path: ./x\n      schema: \"id BIGINT\"\n      options: {header: true}", "the debezium reader takes no options yet"},
		{"debezium envelope columns only", "format: debezium\n      path: ./x\n      schema: \"_op STRING\"", "the schema has only envelope columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "name: shop\ndatasets:\n  - name: raw\n    source:\n      " + tc.source + "\n"
			_, err := Parse("p.yaml", []byte(text), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestPostgresNoQuarantine: the postgres flow writes no quarantine table, so the rule is refused.
func TestPostgresNoQuarantine(t *testing.T) {
	t.Parallel()
	text := `name: shop
datasets:
  - name: raw
    source: {format: postgres, connection: x, table: orders, schema: "id BIGINT"}
    expectations:
      - {name: pos, expect: id > 0, on_violation: quarantine}
`
	_, err := Parse("p.yaml", []byte(text), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "on_violation quarantine is not supported yet") {
		t.Fatalf("err = %v", err)
	}
}

// TestPostgresSlotPerSource: a replication slot serves one postgres source (it confirms to the
// server what it may discard), so two sources of a pipeline that would read one slot, named so
// or by default (tributary_<pipeline>_<dataset>, cut to 63 characters), are refused at the
// second, naming the first; a shared publication is fine.
func TestPostgresSlotPerSource(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 60)
	for _, tc := range []struct{ name, a, b, want string }{
		{"one slot named twice", "slot: cdc", "slot: cdc",
			"p.yaml:13:13: datasets[1].source.slot: the replication slot cdc is read by dataset a_" + long + " too"},
		{"a slot named as another's default", "publication: pub", "slot: tributary_shop_a_" + long[:46],
			"datasets[1].source.slot: the replication slot tributary_shop_a_" + long[:46] + " is read by dataset a_" + long + " too"},
		{"defaults cut to the same 63 characters", "publication: pub", "publication: pub",
			"datasets[1].name: the replication slot tributary_shop_a_" + long[:46] + " is read by dataset a_" + long + " too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "name: shop\ndatasets:\n  - name: a_" + long + "\n    source:\n      format: postgres\n      connection: x\n      table: t1\n      " + tc.a +
				"\n      schema: \"id BIGINT\"\n  - name: a_" + long + "_2\n    source:\n      format: postgres\n      " + tc.b +
				"\n      connection: x\n      table: t2\n      schema: \"id BIGINT\"\n"
			_, err := Parse("p.yaml", []byte(text), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	ok := "name: shop\ndatasets:\n  - name: a\n    source: {format: postgres, connection: x, table: t1, publication: pub, schema: \"id BIGINT\"}\n" +
		"  - name: b\n    source: {format: postgres, connection: x, table: t2, publication: pub, schema: \"id BIGINT\"}\n"
	if _, err := Parse("p.yaml", []byte(ok), nil, nil); err != nil {
		t.Fatalf("two sources of one publication, each with its own slot: %v", err)
	}
}
