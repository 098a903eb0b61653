package dag

import (
	"errors"
	"slices"
	"testing"
)

func nodes(pairs ...any) []Node {
	var out []Node
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Node{Name: pairs[i].(string), Deps: pairs[i+1].([]string)})
	}
	return out
}

func TestOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		nodes []Node
		want  []string
	}{
		{"empty", nil, []string{}},
		{"already ordered stays", nodes("a", []string{}, "b", []string{"a"}, "c", []string{}), []string{"a", "b", "c"}},
		{"dep declared later moves first", nodes("gold", []string{"silver"}, "silver", []string{"bronze"}, "bronze", []string{}), []string{"bronze", "silver", "gold"}},
		{"ties keep input order", nodes("z", []string{}, "y", []string{}, "x", []string{"z", "y"}, "w", []string{}), []string{"z", "y", "x", "w"}},
		{"diamond", nodes("d", []string{"b", "c"}, "c", []string{"a"}, "b", []string{"a"}, "a", []string{}), []string{"a", "c", "b", "d"}},
		{"repeated dep", nodes("a", []string{}, "b", []string{"a", "a"}), []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(c.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Order(); !slices.Equal(got, c.want) {
				t.Fatalf("Order() = %v, want %v", got, c.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		nodes   []Node
		cycles  [][]string
		unknown []UnknownError
		dups    []string
		text    string
	}{
		{
			name:   "two-node cycle",
			nodes:  nodes("a", []string{"b"}, "b", []string{"a"}),
			cycles: [][]string{{"a", "b"}},
			text:   "dag: dependency cycle: a -> b -> a",
		},
		{
			name:   "self loop",
			nodes:  nodes("a", []string{"a"}),
			cycles: [][]string{{"a"}},
			text:   "dag: dependency cycle: a -> a",
		},
		{
			name:   "three-node cycle in flow order, starting at the first declared",
			nodes:  nodes("src", []string{}, "x", []string{"src", "z"}, "y", []string{"x"}, "z", []string{"y"}),
			cycles: [][]string{{"x", "y", "z"}},
			text:   "dag: dependency cycle: x -> y -> z -> x",
		},
		{
			name:   "two separate cycles",
			nodes:  nodes("a", []string{"b"}, "b", []string{"a"}, "c", []string{"c"}),
			cycles: [][]string{{"a", "b"}, {"c"}},
			text:   "dag: dependency cycle: a -> b -> a\ndag: dependency cycle: c -> c",
		},
		{
			name:    "unknown dep",
			nodes:   nodes("a", []string{"nope"}),
			unknown: []UnknownError{{Node: "a", Dep: "nope"}},
			text:    "dag: a reads from nope, which is not a node",
		},
		{
			name:  "duplicate",
			nodes: nodes("a", []string{}, "a", []string{}),
			dups:  []string{"a"},
			text:  "dag: node a is given more than once",
		},
		{
			name:    "all problems at once",
			nodes:   nodes("a", []string{"b", "ghost"}, "b", []string{"a"}, "b", []string{}),
			cycles:  [][]string{{"a", "b"}},
			unknown: []UnknownError{{Node: "a", Dep: "ghost"}},
			dups:    []string{"b"},
			text:    "dag: node b is given more than once\ndag: a reads from ghost, which is not a node\ndag: dependency cycle: a -> b -> a",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(c.nodes)
			if err == nil || g != nil {
				t.Fatalf("New() = %v, %v; want nil and an error", g, err)
			}
			if err.Error() != c.text {
				t.Errorf("error text:\n%s\nwant:\n%s", err, c.text)
			}
			var cycles [][]string
			var unknown []UnknownError
			var dups []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *CycleError
				var ue *UnknownError
				var de *DuplicateError
				switch {
				case errors.As(e, &ce):
					cycles = append(cycles, ce.Members)
				case errors.As(e, &ue):
					unknown = append(unknown, *ue)
				case errors.As(e, &de):
					dups = append(dups, de.Node)
				default:
					t.Errorf("unexpected error %T: %v", e, e)
				}
			}
			if !slices.EqualFunc(cycles, c.cycles, slices.Equal) {
				t.Errorf("cycles = %v, want %v", cycles, c.cycles)
			}
			if !slices.Equal(unknown, c.unknown) {
				t.Errorf("unknown = %v, want %v", unknown, c.unknown)
			}
			if !slices.Equal(dups, c.dups) {
				t.Errorf("duplicates = %v, want %v", dups, c.dups)
			}
		})
	}
}

func TestNeighbours(t *testing.T) {
	t.Parallel()
	g, err := New(nodes(
		"bronze", []string{},
		"silver", []string{"bronze"},
		"gold", []string{"silver", "bronze"},
		"report", []string{"gold"},
		"other", []string{},
	))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"deps in declared order", g.Deps("gold"), []string{"silver", "bronze"}},
		{"deps of a root", g.Deps("bronze"), nil},
		{"deps of an unknown name", g.Deps("ghost"), nil},
		{"downstream in order", g.Downstream("bronze"), []string{"silver", "gold"}},
		{"downstream of a leaf", g.Downstream("report"), nil},
		{"descendants transitive", g.Descendants("bronze"), []string{"silver", "gold", "report"}},
		{"descendants of silver", g.Descendants("silver"), []string{"gold", "report"}},
		{"descendants of a leaf", g.Descendants("other"), nil},
	}
	for _, c := range cases {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if !g.Has("gold") || g.Has("ghost") {
		t.Errorf("Has: gold=%v ghost=%v", g.Has("gold"), g.Has("ghost"))
	}
}
