// Package spec reads a pipeline spec (YAML, spec.md §1) into a validated *Pipeline.
//
// Load and Parse decode the YAML by hand through yaml.Node, so that every problem carries the
// file, line and column of the node at fault and the key path to it
// ("datasets[1].apply_changes.keys"). They never stop at the first problem: the result is either
// a *Pipeline that passed every check, or nil and an Errors with all problems found, sorted by
// position.
//
// The steps, in order: YAML syntax; `configuration` (its values may use ${NAME} from the
// environment, and the conf argument, i.e. `--conf k=v`, overrides its keys); ${key}
// substitution in every other scalar value (never in mapping keys; $${ is a literal ${),
// before any value is interpreted; decoding with unknown-key, type and
// not-supported-yet checks; then validation across datasets (references, cycles, output
// schemas, columns, expressions).
//
// A check is skipped only when it cannot be done, and no problem is reported that only follows
// from another: a `schema:` is read column by column, so a column whose type is wrong is reported
// and still known by name (with the zero schema.Type, an unknown type that expressions may use
// untyped), and the dataset's other checks and those of the datasets reading it still run.
// A YAML syntax error is the one problem that stops everything; its position is the line where
// the parser stopped, not the start of the enclosing block.
//
// Invariants of a returned *Pipeline: File, Dir and Storage are absolute; every dataset has a
// valid unique name, exactly one way to get its data (a Source, an ApplyChanges, an
// ApplyChangesFromSnapshot or a Query), and its output Schema (except a Query dataset, whose
// columns are the query result's, known when it runs); every expression compiles with
// expectations.Compile against the columns it will see (a Query dataset's expectations only
// parse: they compile against its query's result, with CheckExpectations once the query binds,
// or when it has run); every dataset a query reads exists (query.go finds them in the SQL);
// and the datasets form an acyclic graph.
package spec
