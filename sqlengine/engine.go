package sqlengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"tributary/schema"
)

// Relation is one dataset a query reads, registered under Name. Either Files lists the absolute
// paths of Parquet files holding its rows in Schema's columns (read with read_parquet; none
// means an empty relation), or, when Files is nil and Rows is set or RowsOnly is true, Rows holds
// its rows (schema.Kind Go values in Schema's order).
//
// Deleted, with Files, maps a path of Files to the rows of that file the relation leaves out:
// 0-based physical row positions, ascending (the rows a Delta deletion vector deletes, Delta
// PROTOCOL.md "Reader Requirements for Deletion Vectors"). DuckDB still reads the files itself
// and drops those rows by an anti join on (filename, file_row_number); a relation with Deleted
// may therefore not have a column named filename or file_row_number (an error).
type Relation struct {
	Name     string
	Schema   schema.Schema
	Files    []string
	Rows     [][]any
	RowsOnly bool
	Deleted  map[string][]int64
}

// ReservedColumns are the columns read_parquet adds to find the rows of Relation.Deleted; a
// relation with Deleted cannot have a column of these names (compared case-insensitively).
var ReservedColumns = []string{"filename", "file_row_number"}

// deletedTable is the name of the temporary table of the rows Relation.Deleted leaves out: the
// relation's name followed by "$deleted_rows", which no dataset name (an identifier) ends with.
func deletedTable(name string) string { return name + "$deleted_rows" }

// Engine is an embedded, in-memory DuckDB database.
type Engine struct {
	db *sql.DB
}

// queryError wraps an error of DuckDB's driver running a query; the driver's "empty name" (it
// cannot describe a STRUCT whose fields have no names, as DuckDB's row(...) builds them, and no
// table could hold one) gets the fix, and so does DuckDB's overflow of a DECIMAL(38,s) result.
func queryError(err error) error {
	if strings.Contains(err.Error(), "empty name") {
		return fmt.Errorf("sqlengine: a result column is a STRUCT with unnamed fields (%w); name them: {'a': 1, 'b': 'x'} or struct_pack(a := 1, b := 'x') instead of row(1, 'x')", err)
	}
	if strings.Contains(err.Error(), "Overflow in HUGEINT") {
		// DuckDB computes DECIMAL(38,s) sums and differences on the unscaled 128-bit integers.
		return fmt.Errorf("sqlengine: %w (a DECIMAL result went past 38 digits; the numbers are its unscaled values, without the decimal point: CAST the column to DOUBLE first, e.g. sum(CAST(x AS DOUBLE)))", err)
	}
	return fmt.Errorf("sqlengine: %w", err)
}

// Open starts an in-memory DuckDB database; its connections are set up as OpenDB's. The
// instance that Syntax opened for dir, when one is kept, is taken instead of a new one.
func Open(dir string) (*Engine, error) {
	if db := takeWarm(dir); db != nil {
		return &Engine{db: db}, nil
	}
	db, err := OpenDB(dir)
	if err != nil {
		return nil, err
	}
	return &Engine{db: db}, nil
}

// sessionSettings are set on every connection to DuckDB, so that a query's result does not
// depend on the machine it runs on: all timestamps of the product are UTC, so TIMESTAMP (read
// as DuckDB's TIMESTAMPTZ) is shown, truncated and split into parts in UTC whatever TZ says,
// and on the Gregorian calendar whatever the locale says. An ORDER BY without NULLS FIRST or
// NULLS LAST puts NULLs first when ascending and last when descending, as Spark SQL does
// (DuckDB's own default puts them last either way), so that a query ported from Delta Live
// Tables numbers, ranks, limits and aggregates its rows in Spark's order: row_number() OVER
// (ORDER BY ts) gives 1 to a NULL ts, ORDER BY x LIMIT 1 keeps a NULL x. A division or modulo
// by zero is NULL, as Spark SQL's (without ANSI mode, which fails the query instead), where
// DuckDB's own IEEE 754 arithmetic gives an infinity or NaN (5 / 0 is +Inf there), which a table
// would keep.
var sessionSettings = []string{
	"SET TimeZone = 'UTC'",
	"SET Calendar = 'gregorian'",
	"SET default_null_order = 'nulls_first_on_asc_last_on_desc'",
	"SET ieee_floating_point_ops = false",
}

// OpenDB opens an in-memory DuckDB database for code that runs its own SQL on it (Open's
// Engine, the bench command's baseline): every connection the pool opens first runs
// sessionSettings, so results are those of a UTC session on any machine (CastMacro's macros are
// DefineMacros's, when a query calls them). A dir other than "" is DuckDB's file_search_path: a relative file
// path that DuckDB does not find in the working directory is looked up in dir (the spec's
// folder; the spec package rewrites the paths a query writes as literals itself, so the working
// directory never comes first for those). A dir with a comma is not set (file_search_path is a
// comma-separated list).
func OpenDB(dir string) (*sql.DB, error) {
	settings := sessionSettings
	if dir != "" && !strings.Contains(dir, ",") {
		settings = append(slices.Clone(settings), "SET file_search_path = "+quoteString(dir))
	}
	c, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
		for _, s := range settings {
			if _, err := ex.ExecContext(context.Background(), s, nil); err != nil {
				return fmt.Errorf("sqlengine: %s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlengine: opening DuckDB: %w", err)
	}
	return sql.OpenDB(c), nil
}

// Close releases the database.
func (e *Engine) Close() error {
	forgetMacros(e.db)
	return e.db.Close()
}

// Release hands the database back instead of closing it: it becomes the instance the next Open
// of dir takes (dir must be the one the engine was opened for), so that the queries of one run
// (the spec's check, then each query dataset of the update) open DuckDB once rather than once
// each (about 7 ms an opening, and 4 ms more a closing after a large query). The engine is not
// to be used after. The instance kept before, if any, is closed; the one kept last is released
// when the process ends.
func (e *Engine) Release(dir string) {
	putWarm(dir, e.db)
	e.db = nil
}

// Query registers rels as temporary views on one connection, runs query and returns the
// result's schema and rows. Column types map to schema kinds: integers up to 32 bits INT, wider
// ones BIGINT, FLOAT/DOUBLE DOUBLE, DECIMAL(p,s) DECIMAL (p capped at 18), VARCHAR STRING,
// BLOB BINARY (a STRING of raw bytes, as a BINARY column of another engine's table reads),
// BOOLEAN, DATE, TIMESTAMPTZ TIMESTAMP, TIMESTAMP (without time zone) TIMESTAMP_NTZ when a
// relation has a TIMESTAMP_NTZ column and else TIMESTAMP (see resultNTZ), LIST (and fixed-size ARRAY)
// ARRAY, MAP MAP (entries in DuckDB's order), STRUCT STRUCT, nested at any depth. Any other type,
// or a value that does not fit, is an error that names the column and suggests a CAST.
//
// When ctx ends while the query runs, the error wraps ctx.Err() (context.Canceled): DuckDB
// answers by interrupting the query ("INTERRUPT Error: Interrupted!"), which says nothing of
// why, and the caller must be able to tell a query stopped by a Ctrl-C from one that failed.
func (e *Engine) Query(ctx context.Context, query string, rels []Relation) (_ schema.Schema, _ [][]any, err error) {
	defer func() {
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("sqlengine: the query was stopped (%v): %w", err, ctx.Err())
		}
	}()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return schema.Schema{}, nil, fmt.Errorf("sqlengine: %w", err)
	}
	defer conn.Close()
	if usesMacros(query) {
		if err := DefineMacros(ctx, e.db); err != nil {
			return schema.Schema{}, nil, err
		}
	}
	drop, err := registerAll(ctx, conn, rels)
	defer drop()
	if err != nil {
		return schema.Schema{}, nil, err
	}
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return schema.Schema{}, nil, queryError(err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return schema.Schema{}, nil, queryError(err)
	}
	var out schema.Schema
	rt := resultTypesOf(rels)
	for _, ct := range cts {
		t, err := kindOf(ct.DatabaseTypeName(), rt)
		if err != nil {
			return schema.Schema{}, nil, fmt.Errorf("sqlengine: result column %s: %w", ct.Name(), err)
		}
		out.Fields = append(out.Fields, schema.Field{Name: castName(ct.Name()), Type: t, Nullable: true})
	}
	var result [][]any
	vals := make([]any, len(cts))
	ptrs := make([]any, len(cts))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return schema.Schema{}, nil, queryError(err)
		}
		row := make([]any, len(vals))
		for i, v := range vals {
			if row[i], err = convert(v, out.Fields[i].Type); err != nil {
				return schema.Schema{}, nil, fmt.Errorf("sqlengine: result column %s: %w", out.Fields[i].Name, err)
			}
		}
		result = append(result, row)
	}
	if err := rows.Err(); err != nil {
		return schema.Schema{}, nil, queryError(err)
	}
	return out, result, nil
}

// resultNTZ reports whether a query over rels gives DuckDB TIMESTAMP results the type
// TIMESTAMP_NTZ: when some relation has a TIMESTAMP_NTZ column (at any depth). A TIMESTAMP_NTZ
// column enters DuckDB as its TIMESTAMP (without time zone) and a TIMESTAMP column as its
// TIMESTAMPTZ, so that a TIMESTAMP_NTZ column selected, compared, aggregated or shifted by an
// interval stays TIMESTAMP_NTZ, as in Spark SQL. Without such a relation, a DuckDB TIMESTAMP
// (CAST(s AS TIMESTAMP), make_timestamp, strptime) is TIMESTAMP, as it was before TIMESTAMP_NTZ
// existed, so that the schemas of existing datasets do not change. Within a query that reads a
// TIMESTAMP_NTZ column, CAST(x AS TIMESTAMPTZ) gives a TIMESTAMP result.
func resultNTZ(rels []Relation) bool {
	for _, r := range rels {
		if r.Schema.HasNTZ() {
			return true
		}
	}
	return false
}

// resultWide reports whether a query over rels gives DuckDB DECIMAL results of precision above
// 18 their own precision (up to 38, a schema.Decimal128 column): when some relation has a DECIMAL
// column of precision above 18 (at any depth). DuckDB types sum(x) of any DECIMAL as
// DECIMAL(38,s); without such a relation such a result is DECIMAL(18,s), as it was when 18 digits
// were the most a dataset stored, so that the schemas of existing datasets do not change (and a
// value beyond 18 digits is an error that says how to CAST it).
func resultWide(rels []Relation) bool {
	for _, r := range rels {
		if r.Schema.HasWideDecimal() {
			return true
		}
	}
	return false
}

// resultTypes are the choices of result types that depend on a query's relations.
type resultTypes struct {
	ntz  bool // DuckDB TIMESTAMP is TIMESTAMP_NTZ (resultNTZ)
	wide bool // DuckDB DECIMAL keeps a precision above 18 (resultWide)
}

func resultTypesOf(rels []Relation) resultTypes {
	return resultTypes{ntz: resultNTZ(rels), wide: resultWide(rels)}
}

// Describe binds query against rels as Query would run it, without running it (DuckDB's
// DESCRIBE), and returns the schema of its result. A query DuckDB cannot bind (a column, table or
// function it does not know, arguments of the wrong types) is an error whose BindError is true;
// so is nothing else.
func (e *Engine) Describe(ctx context.Context, query string, rels []Relation) (schema.Schema, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return schema.Schema{}, fmt.Errorf("sqlengine: %w", err)
	}
	defer conn.Close()
	empty := make([]Relation, len(rels))
	for i, r := range rels {
		empty[i] = Relation{Name: r.Name, Schema: r.Schema} // an empty table of its columns binds alike
	}
	drop, err := registerAll(ctx, conn, empty)
	defer drop()
	if err != nil {
		return schema.Schema{}, inputError{err}
	}
	if usesMacros(query) {
		if err := DefineMacros(ctx, e.db); err != nil {
			return schema.Schema{}, err
		}
	}
	rt := resultTypesOf(rels)
	rows, err := conn.QueryContext(ctx, "DESCRIBE "+query)
	if err != nil {
		return schema.Schema{}, queryError(err)
	}
	defer rows.Close()
	var out schema.Schema
	for rows.Next() {
		var name, typ string
		var rest [4]any
		if err := rows.Scan(&name, &typ, &rest[0], &rest[1], &rest[2], &rest[3]); err != nil {
			return schema.Schema{}, queryError(err)
		}
		t, err := kindOf(typ, rt)
		if err != nil {
			return schema.Schema{}, fmt.Errorf("sqlengine: result column %s: %w", name, err)
		}
		out.Fields = append(out.Fields, schema.Field{Name: castName(name), Type: t, Nullable: true})
	}
	if err := rows.Err(); err != nil {
		return schema.Schema{}, queryError(err)
	}
	return out, nil
}

// registerAll registers rels on conn (register) and returns the function that drops what it
// registered: the pool keeps the connection, and its temporary views and tables with it, so
// nothing a query registers may outlive it. drop is to be called also when err is not nil.
func registerAll(ctx context.Context, conn *sql.Conn, rels []Relation) (drop func(), err error) {
	var registered []Relation
	drop = func() {
		for _, r := range registered {
			conn.ExecContext(context.Background(), "DROP VIEW IF EXISTS "+Quote(r.Name))
			conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+Quote(r.Name))
			if len(r.Deleted) > 0 {
				conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+Quote(deletedTable(r.Name)))
			}
		}
	}
	for _, r := range rels {
		registered = append(registered, r)
		if err := register(ctx, conn, r); err != nil {
			return drop, err
		}
	}
	return drop, nil
}

// inputError is Describe failing to register a relation (columns DuckDB cannot hold: two of one
// name), which is no fault of the query: BindError is false for it, whatever DuckDB said.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// BindError reports whether err is DuckDB refusing to bind a query (a Binder or Catalog error:
// a column, table, function or argument types it does not know), which Describe finds as the
// query would fail when run, rather than a failure to read or run it, or to register its inputs.
func BindError(err error) bool {
	if errors.As(err, new(inputError)) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "Binder Error: ") || strings.Contains(msg, "Catalog Error: ")
}

// RelationRef returns the SQL that names the relation Query registers as name, for the text of
// a query: the quoted name qualified by DuckDB's temporary catalog (temp.main), where Query
// registers it, so that a CTE of the same name does not hide it (`WITH a AS (SELECT * FROM
// temp.main."a") SELECT * FROM a` reads the relation, then the CTE). The relation's default
// alias is still name (`a.v` names its column v).
func RelationRef(name string) string { return "temp.main." + Quote(name) }

// Quote returns name as a DuckDB quoted identifier.
func Quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// register creates the temporary view (or table) of one relation.
func register(ctx context.Context, conn *sql.Conn, r Relation) error {
	if len(r.Files) > 0 && !r.RowsOnly && r.Rows == nil {
		files := make([]string, len(r.Files))
		for i, f := range r.Files {
			files[i] = quoteString(f)
		}
		deleted := hasDeleted(r)
		src := "" // the alias of read_parquet with deleted rows
		if deleted {
			src = "p."
		}
		cols := make([]string, len(r.Schema.Fields))
		for i, f := range r.Schema.Fields {
			t, err := duckType(f.Type)
			if err != nil {
				return fmt.Errorf("sqlengine: dataset %s column %s: %w", r.Name, f.Name, err)
			}
			cols[i] = fmt.Sprintf("CAST(%s%s AS %s) AS %s", src, Quote(f.Name), t, Quote(f.Name))
		}
		q := fmt.Sprintf("CREATE TEMP VIEW %s AS SELECT %s FROM read_parquet([%s], union_by_name = true)",
			Quote(r.Name), strings.Join(cols, ", "), strings.Join(files, ", "))
		if deleted {
			if err := registerDeleted(ctx, conn, r); err != nil {
				return err
			}
			q = fmt.Sprintf("CREATE TEMP VIEW %s AS SELECT %s FROM read_parquet([%s], union_by_name = true, filename = true, file_row_number = true) AS p ANTI JOIN %s AS d ON p.filename = d.file AND p.file_row_number = d.pos",
				Quote(r.Name), strings.Join(cols, ", "), strings.Join(files, ", "), Quote(deletedTable(r.Name)))
		}
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlengine: registering dataset %s: %w", r.Name, err)
		}
		return nil
	}
	cols := make([]string, len(r.Schema.Fields))
	for i, f := range r.Schema.Fields {
		t, err := duckType(f.Type)
		if err != nil {
			return fmt.Errorf("sqlengine: dataset %s column %s: %w", r.Name, f.Name, err)
		}
		cols[i] = Quote(f.Name) + " " + t
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s (%s)", Quote(r.Name), strings.Join(cols, ", "))); err != nil {
		return fmt.Errorf("sqlengine: registering dataset %s: %w", r.Name, err)
	}
	if len(r.Rows) == 0 {
		return nil
	}
	return conn.Raw(func(dc any) error {
		ddc, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("sqlengine: unexpected driver connection %T", dc)
		}
		app, err := duckdb.NewAppenderFromConn(ddc, "", r.Name)
		if err != nil {
			return fmt.Errorf("sqlengine: loading dataset %s: %w", r.Name, err)
		}
		for _, row := range r.Rows {
			args := make([]driver.Value, len(row))
			for i, v := range row {
				args[i] = toDuck(v, r.Schema.Fields[i].Type)
			}
			if err := app.AppendRow(args...); err != nil {
				app.Close()
				return fmt.Errorf("sqlengine: loading dataset %s: %w", r.Name, err)
			}
		}
		if err := app.Close(); err != nil {
			return fmt.Errorf("sqlengine: loading dataset %s: %w", r.Name, err)
		}
		return nil
	})
}

// hasDeleted reports whether a relation leaves any row of its files out.
func hasDeleted(r Relation) bool {
	for _, d := range r.Deleted {
		if len(d) > 0 {
			return true
		}
	}
	return false
}

// registerDeleted creates the temporary table (file VARCHAR, pos BIGINT) of the rows
// r.Deleted leaves out, after checking that r's columns do not clash with ReservedColumns and
// that every path of r.Deleted is one of r.Files.
func registerDeleted(ctx context.Context, conn *sql.Conn, r Relation) error {
	for _, f := range r.Schema.Fields {
		for _, c := range ReservedColumns {
			if strings.EqualFold(f.Name, c) {
				return fmt.Errorf("sqlengine: dataset %s has a column %s, the name DuckDB gives the column that finds its deleted rows; rename the column or pass the rows instead of the files", r.Name, f.Name)
			}
		}
	}
	known := make(map[string]bool, len(r.Files))
	for _, f := range r.Files {
		known[f] = true
	}
	for f := range r.Deleted {
		if !known[f] {
			return fmt.Errorf("sqlengine: dataset %s: Deleted names %s, which is not one of its files", r.Name, f)
		}
	}
	if err := LoadDeletedRows(ctx, conn, deletedTable(r.Name), r.Deleted); err != nil {
		return fmt.Errorf("sqlengine: the deleted rows of dataset %s: %w", r.Name, err)
	}
	return nil
}

// LoadDeletedRows creates the temporary table named table (file VARCHAR, pos BIGINT) on conn, a
// connection of the DuckDB driver, with one row per deleted row of deleted (a file path -> its
// 0-based physical row positions, as Relation.Deleted): the other side of an anti join with
// read_parquet(..., filename = true, file_row_number = true) on (filename, file_row_number) that
// leaves out the rows Delta deletion vectors delete. The rows go in through DuckDB's appender.
func LoadDeletedRows(ctx context.Context, conn *sql.Conn, table string, deleted map[string][]int64) error {
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s (file VARCHAR, pos BIGINT)", Quote(table))); err != nil {
		return err
	}
	return conn.Raw(func(dc any) error {
		ddc, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		app, err := duckdb.NewAppenderFromConn(ddc, "", table)
		if err != nil {
			return err
		}
		for f, ps := range deleted {
			for _, p := range ps {
				if err := app.AppendRow(f, p); err != nil {
					app.Close()
					return err
				}
			}
		}
		return app.Close()
	})
}

// duckType is the DuckDB type of a column type.
func duckType(t schema.Type) (string, error) {
	switch t.Kind {
	case schema.Long:
		return "BIGINT", nil
	case schema.Integer:
		return "INTEGER", nil
	case schema.String:
		if t.Storage == schema.StorageBinary {
			return "BLOB", nil // the raw bytes, not their text
		}
		return "VARCHAR", nil
	case schema.Double:
		return "DOUBLE", nil
	case schema.Boolean:
		return "BOOLEAN", nil
	case schema.DecimalKind:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), nil
	case schema.DateKind:
		return "DATE", nil
	case schema.TimestampKind:
		if t.IsNTZ() {
			return "TIMESTAMP", nil // DuckDB's timestamp without time zone
		}
		return "TIMESTAMPTZ", nil
	case schema.StructKind:
		if t.Struct == nil || len(t.Struct.Fields) == 0 {
			break
		}
		parts := make([]string, len(t.Struct.Fields))
		for i, f := range t.Struct.Fields {
			ft, err := duckType(f.Type)
			if err != nil {
				return "", err
			}
			parts[i] = Quote(f.Name) + " " + ft
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	case schema.ArrayKind:
		if t.Elem == nil {
			break
		}
		et, err := duckType(*t.Elem)
		if err != nil {
			return "", err
		}
		return et + "[]", nil
	case schema.MapKind:
		if t.Key == nil || t.Value == nil {
			break
		}
		kt, err := duckType(*t.Key)
		if err != nil {
			return "", err
		}
		vt, err := duckType(*t.Value)
		if err != nil {
			return "", err
		}
		return "MAP(" + kt + ", " + vt + ")", nil
	}
	return "", fmt.Errorf("type %s cannot be read by SQL queries yet", t.DDL())
}

// toDuck converts a schema value to what the DuckDB appender takes.
func toDuck(v any, t schema.Type) driver.Value {
	if v == nil {
		return nil
	}
	switch x := v.(type) {
	case string:
		if t.Storage == schema.StorageBinary {
			return []byte(x)
		}
	case schema.Decimal:
		return duckdb.Decimal{Width: uint8(t.Precision), Scale: uint8(t.Scale), Value: big.NewInt(int64(x))}
	case schema.Decimal128:
		return duckdb.Decimal{Width: uint8(t.Precision), Scale: uint8(t.Scale), Value: x.Big()}
	case schema.Date:
		return time.Unix(int64(x)*86400, 0).UTC()
	case schema.Timestamp:
		return time.UnixMicro(int64(x)).UTC()
	case []any:
		switch {
		case t.Kind == schema.ArrayKind && t.Elem != nil:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = toDuck(e, *t.Elem)
			}
			return out
		case t.Kind == schema.StructKind && t.Struct != nil:
			out := make(map[string]any, len(x))
			for i, f := range t.Struct.Fields {
				out[f.Name] = toDuck(x[i], f.Type)
			}
			return out
		}
	case schema.Map:
		if t.Kind == schema.MapKind && t.Key != nil && t.Value != nil {
			var out duckdb.OrderedMap
			for _, e := range x {
				out.Set(toDuck(e.Key, *t.Key), toDuck(e.Value, *t.Value))
			}
			return out
		}
	}
	return v
}

// kindOf maps a DuckDB result type name to a column type: nested types by their DuckDB
// spelling (DuckDB "Data Types": LIST "T[]" and ARRAY "T[n]" to ARRAY, "MAP(K, V)" to MAP,
// "STRUCT(name T, ...)" to STRUCT, names quoted with double quotes), the rest as primitiveKind
// says, with the choices rt.
func kindOf(name string, rt resultTypes) (schema.Type, error) {
	name = strings.TrimSpace(name)
	if strings.HasSuffix(name, "]") {
		if i := strings.LastIndexByte(name, '['); i > 0 {
			et, err := kindOf(name[:i], rt)
			if err != nil {
				return schema.Type{}, err
			}
			return schema.ArrayOf(et), nil
		}
	}
	if inner, ok := strings.CutPrefix(name, "MAP("); ok && strings.HasSuffix(inner, ")") {
		parts := splitTop(strings.TrimSuffix(inner, ")"))
		if len(parts) == 2 {
			kt, err := kindOf(parts[0], rt)
			if err != nil {
				return schema.Type{}, err
			}
			vt, err := kindOf(parts[1], rt)
			if err != nil {
				return schema.Type{}, err
			}
			return schema.MapOf(kt, vt), nil
		}
	}
	if inner, ok := strings.CutPrefix(name, "STRUCT("); ok && strings.HasSuffix(inner, ")") {
		var fields schema.Schema
		for _, part := range splitTop(strings.TrimSuffix(inner, ")")) {
			fname, ftype, err := structField(strings.TrimSpace(part))
			if err != nil {
				return schema.Type{}, fmt.Errorf("type %s: %w", name, err)
			}
			ft, err := kindOf(ftype, rt)
			if err != nil {
				return schema.Type{}, err
			}
			fields.Fields = append(fields.Fields, schema.Field{Name: fname, Type: ft, Nullable: true})
		}
		if len(fields.Fields) > 0 {
			return schema.Type{Kind: schema.StructKind, Struct: &fields}, nil
		}
	}
	return primitiveKind(name, rt)
}

// splitTop splits s at the commas outside parentheses and double quotes.
func splitTop(s string) []string {
	var out []string
	depth, start, quoted := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// structField splits one `name TYPE` of a DuckDB STRUCT type; the name may be double-quoted
// ("" inside for a quote).
func structField(s string) (name, typ string, err error) {
	if strings.HasPrefix(s, `"`) {
		for i := 1; i < len(s); i++ {
			if s[i] != '"' {
				continue
			}
			if i+1 < len(s) && s[i+1] == '"' {
				i++
				continue
			}
			return strings.ReplaceAll(s[1:i], `""`, `"`), strings.TrimSpace(s[i+1:]), nil
		}
		return "", "", fmt.Errorf("unclosed quote in field %s", s)
	}
	name, typ, ok := strings.Cut(s, " ")
	if !ok {
		return "", "", fmt.Errorf("field %q has no type", s)
	}
	return name, strings.TrimSpace(typ), nil
}

// primitiveKind maps the name of a DuckDB primitive type to a column type. DuckDB's TIMESTAMP
// (without time zone) is TIMESTAMP_NTZ when ntz is true, else TIMESTAMP (see resultNTZ);
// TIMESTAMPTZ and the other precisions are TIMESTAMP.
func primitiveKind(name string, rt resultTypes) (schema.Type, error) {
	switch name {
	case "BIGINT", "HUGEINT", "UBIGINT", "UINTEGER", "UHUGEINT":
		return schema.Type{Kind: schema.Long}, nil
	case "INTEGER", "SMALLINT", "TINYINT", "USMALLINT", "UTINYINT":
		return schema.Type{Kind: schema.Integer}, nil
	case "DOUBLE", "FLOAT":
		return schema.Type{Kind: schema.Double}, nil
	case "VARCHAR":
		return schema.Type{Kind: schema.String}, nil
	case "BLOB":
		return schema.Type{Kind: schema.String, Storage: schema.StorageBinary}, nil
	case "BOOLEAN":
		return schema.Type{Kind: schema.Boolean}, nil
	case "DATE":
		return schema.Type{Kind: schema.DateKind}, nil
	case "TIMESTAMP":
		if rt.ntz {
			return schema.TimestampNTZ, nil
		}
		return schema.Type{Kind: schema.TimestampKind}, nil
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_MS", "TIMESTAMP_S", "TIMESTAMP_NS":
		return schema.Type{Kind: schema.TimestampKind}, nil
	}
	if strings.HasPrefix(name, "DECIMAL(") && strings.HasSuffix(name, ")") {
		ps := strings.Split(strings.TrimSuffix(strings.TrimPrefix(name, "DECIMAL("), ")"), ",")
		if len(ps) == 2 {
			p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
			s, err2 := strconv.Atoi(strings.TrimSpace(ps[1]))
			if err1 == nil && err2 == nil {
				if p > schema.MaxLongDecimalPrecision && !rt.wide {
					p = schema.MaxLongDecimalPrecision
				}
				if s > p {
					return schema.Type{}, fmt.Errorf("type %s has more fraction digits than DECIMAL(%d,s) holds; CAST it", name, p)
				}
				return schema.Type{Kind: schema.DecimalKind, Precision: p, Scale: s}, nil
			}
		}
	}
	if name == "" {
		name = "NULL"
	}
	return schema.Type{}, fmt.Errorf("type %s cannot be stored in a dataset yet; CAST it to BIGINT, INT, DOUBLE, DECIMAL(p,s), STRING, BOOLEAN, DATE, TIMESTAMP, or a LIST, MAP or STRUCT of those", name)
}

// decimalText writes the unscaled value v of scale scale as a decimal number ("-12.345").
func decimalText(v *big.Int, scale int) string {
	digits := new(big.Int).Abs(v).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if v.Sign() < 0 {
		return "-" + digits
	}
	return digits
}

// errOverflow reports a value too large for its column.
var errOverflow = errors.New("value out of range")

// convert maps a scanned DuckDB value to the Go value of t's kind.
func convert(v any, t schema.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t.Kind {
	case schema.Long:
		switch x := v.(type) {
		case int64:
			return x, nil
		case uint64:
			if x > math.MaxInt64 {
				return nil, fmt.Errorf("%w: %d does not fit in BIGINT (an unsigned value above %d); CAST it to DECIMAL(20,0) or DOUBLE in the query", errOverflow, x, int64(math.MaxInt64))
			}
			return int64(x), nil
		case uint32:
			return int64(x), nil
		case *big.Int:
			if !x.IsInt64() {
				return nil, fmt.Errorf("%w: %s does not fit in BIGINT", errOverflow, x)
			}
			return x.Int64(), nil
		}
	case schema.Integer:
		switch x := v.(type) {
		case int32:
			return x, nil
		case int16:
			return int32(x), nil
		case int8:
			return int32(x), nil
		case uint16:
			return int32(x), nil
		case uint8:
			return int32(x), nil
		}
	case schema.Double:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
	case schema.String:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte: // a BLOB
			return string(x), nil
		}
	case schema.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case schema.DateKind:
		if tm, ok := v.(time.Time); ok {
			return schema.Date(tm.UTC().Unix() / 86400), nil
		}
	case schema.TimestampKind:
		if tm, ok := v.(time.Time); ok {
			return schema.Timestamp(tm.UnixMicro()), nil
		}
	case schema.ArrayKind:
		if a, ok := v.([]any); ok {
			out := make([]any, len(a))
			for i, e := range a {
				x, err := convert(e, *t.Elem)
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
				out[i] = x
			}
			return out, nil
		}
	case schema.MapKind:
		if m, ok := v.(duckdb.OrderedMap); ok {
			keys, vals := m.Keys(), m.Values()
			out := make(schema.Map, len(keys))
			for i := range keys {
				k, err := convert(keys[i], *t.Key)
				if err != nil {
					return nil, fmt.Errorf("key %v: %w", keys[i], err)
				}
				if k == nil {
					return nil, fmt.Errorf("a MAP key is NULL")
				}
				x, err := convert(vals[i], *t.Value)
				if err != nil {
					return nil, fmt.Errorf("value of key %v: %w", keys[i], err)
				}
				out[i] = schema.MapEntry{Key: k, Value: x}
			}
			return out, nil
		}
	case schema.StructKind:
		if m, ok := v.(map[string]any); ok {
			out := make([]any, len(t.Struct.Fields))
			for i, f := range t.Struct.Fields {
				x, err := convert(m[f.Name], f.Type)
				if err != nil {
					return nil, fmt.Errorf("field %s: %w", f.Name, err)
				}
				out[i] = x
			}
			return out, nil
		}
	case schema.DecimalKind:
		if d, ok := v.(duckdb.Decimal); ok {
			val := new(big.Int).Set(d.Value)
			for s := int(d.Scale); s < t.Scale; s++ {
				val.Mul(val, big.NewInt(10))
			}
			if t.WideDecimal() {
				x, ok := schema.Decimal128FromBig(val)
				if !ok || !x.FitsPrecision(t.Precision) {
					fix := "CAST it to DOUBLE"
					if t.Scale > 0 {
						fix += ", or to a DECIMAL of fewer fraction digits"
					}
					return nil, fmt.Errorf("%w: %s has more than the %d digits of %s; %s",
						errOverflow, decimalText(d.Value, int(d.Scale)), t.Precision, t.DDL(), fix)
				}
				return x, nil
			}
			if new(big.Int).Abs(val).Cmp(big.NewInt(pow10(t.Precision))) >= 0 { // -2^63 too: 19 digits
				fix := "CAST it to DOUBLE"
				if scale := t.Scale - (len(new(big.Int).Abs(val).String()) - t.Precision); scale >= 0 {
					fix += fmt.Sprintf(", or round it to fewer fraction digits: CAST(... AS DECIMAL(%d,%d))", t.Precision, scale)
				}
				return nil, fmt.Errorf("%w: %s has more than the %d digits of DECIMAL(%d,%d), the widest DECIMAL of a query that reads no DECIMAL column of more than 18 digits; %s; "+
					"or, to keep every digit, declare the input's column DECIMAL(38,%d) (a query over such a column keeps up to 38 digits)",
					errOverflow, decimalText(d.Value, int(d.Scale)), t.Precision, t.Precision, t.Scale, fix, t.Scale)
			}
			return schema.Decimal(val.Int64()), nil
		}
	}
	return nil, fmt.Errorf("unexpected value %v (%T) for type %s", v, v, t.DDL())
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}
