// Package expectations compiles row expressions (expectations, apply_as_deletes) with expr-lang
// and evaluates them over batches of rows.
//
// Semantics (semantics.md "Expectations", spec.md §1): a row passes only when its expression
// evaluates to true; false, nil or an evaluation error is a violation. warn keeps the row and
// counts it, drop removes it and counts it, fail stops the flow with nothing of the batch
// committed, naming the expectation, the dataset and one violating row.
package expectations
