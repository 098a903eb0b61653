package spec

import (
	"testing"

	"tributary/schema"
)

// TestCheckExpectations: the expectations of a query dataset, compiled against its result's
// columns, are problems at the place in their `expect` that expr names (several lines: the
// expression's start), as Load reports those over declared columns; a valid one and one whose
// syntax Load refused are not; an expectation not decoded from a spec is at its Pos.
func TestCheckExpectations(t *testing.T) {
	t.Parallel()
	d := ParseDraft("p.yaml", []byte(`name: p
datasets:
  - name: raw
    source: {path: ./l, format: json, schema: "id BIGINT"}
  - name: q
    query: SELECT id, 'x' AS name FROM raw
    expectations:
      - {name: ok, expect: 'id > 0'}
      - {name: typo, expect: 'nme != nil'}
      - {name: bad, expect: 'id >'}
      - name: lines
        expect: |
          id > 0 and
          name > 1
`), nil, nil)
	if len(d.Errors) != 1 || d.Errors[0].Path != "datasets[1].expectations[2].expect" {
		t.Fatalf("Load's problems %v, want the syntax of bad alone", d.Errors)
	}
	cols, err := schema.ParseDDL("id BIGINT, name STRING")
	if err != nil {
		t.Fatal(err)
	}
	want := "p.yaml:9:31: datasets[1].expectations[1].expect: expectation typo does not compile: unknown name nme (hint: did you mean `name`?)\n" +
		"p.yaml:12:17: datasets[1].expectations[3].expect: expectation lines does not compile: invalid operation: > (mismatched types string and int) (hint: columns: id, name)"
	if got := CheckExpectations(d.Pipeline.Dataset("q"), cols); got.Error() != want {
		t.Errorf("problems\n%v\nwant\n%s", got, want)
	}
	built := &Dataset{Name: "b", Expectations: []Expectation{{Name: "e", Expect: "zzz", Pos: Pos{File: "b.yaml", Line: 3, Column: 5}}}}
	if got := CheckExpectations(built, cols).Error(); got != "b.yaml:3:5: expectation e does not compile: unknown name zzz (hint: columns: id, name)" {
		t.Errorf("built: %s", got)
	}
	// SQL's NULL (or Python's None) is nil here.
	for _, null := range []string{"null", "NULL", "None"} {
		built.Expectations[0].Expect = "name != " + null
		if got, want := CheckExpectations(built, cols).Error(), "b.yaml:3:5: expectation e does not compile: unknown name "+null+" (hint: NULL is `nil` in row expressions: write `name != nil`, `amount == nil`)"; got != want {
			t.Errorf("%s:\n%s\nwant\n%s", null, got, want)
		}
	}
}
