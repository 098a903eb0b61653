package spec

import (
	"tributary/expectations"
	"tributary/schema"
)

// CheckExpectations compiles the expectations of ds against s, the columns of the rows they
// check, with expectations.Compile, as the update compiles them when the dataset's flow runs
// (flows.expectationSet, semantics.md "Expectations"), and returns a problem for each that
// does not compile, in spec order, as Load reports an expectation over declared columns: at
// the key path of its `expect` and the line and column in the spec's file that expr's message
// names, "expectation <name> does not compile: <expr's message>", with a did-you-mean for a
// name that is no column. It is for a query dataset, whose columns (its query's result) Load
// does not know: `pipeline validate` calls it once the query binds (flows.CheckQueries).
// An expectation without an expression, or whose syntax Load refused (expectations.CheckSyntax),
// is left out: Load reports it. Nil when every expectation compiles.
func CheckExpectations(ds *Dataset, s schema.Schema) Errors {
	var es Errors
	for _, x := range ds.Expectations {
		if x.Expect == "" || expectations.CheckSyntax(x.Expect) != nil {
			continue
		}
		if _, err := expectations.Compile(x.Expect, s); err != nil {
			posAt := x.posAt
			if posAt == nil {
				posAt = func(int) Pos { return x.Pos }
			}
			es = append(es, expressionError(err, x.Expect, posAt, x.path, compileHint(err, s), "expectation "+x.Name))
		}
	}
	return es
}
