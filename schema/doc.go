// Package schema holds the column types of Tributary tables and the Go values that carry them.
//
// It parses Spark DDL schema strings ("id BIGINT, amount DECIMAL(10,2)"), renders and reads the
// Delta Lake schemaString (Delta PROTOCOL.md, "Schema Serialization Format"), converts JSON input
// to typed values, and writes values in the `jsonl` form of spec.md §2.
//
// Invariant: a row is a []any whose i-th value is nil (SQL NULL) or exactly the Go type that
// the Kind constants document for the i-th field's Kind. Nested values follow it recursively: a
// STRUCT is a []any of its fields in order, an ARRAY a []any of its elements (nil for a NULL
// element; an empty array is a non-nil empty slice), a MAP a Map ([]MapEntry, entries in order,
// keys never nil). Every package that moves rows relies on it.
package schema
