package dag

import "testing"

func TestRender(t *testing.T) {
	t.Parallel()
	build := func() *Graph {
		g, err := New(nodes(
			"orders", []string{"orders_changes"},
			"orders_changes", []string{},
			"revenue", []string{"orders", "orders_changes"},
		))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	cases := []struct {
		name   string
		render func(*Graph) string
		want   string
	}{
		{"text", (*Graph).Text, "orders_changes\norders <- orders_changes\nrevenue <- orders, orders_changes\n"},
		{"dot", (*Graph).DOT, `digraph pipeline {
  rankdir=LR;
  node [shape=box];
  "orders_changes";
  "orders";
  "revenue";
  "orders_changes" -> "orders";
  "orders" -> "revenue";
  "orders_changes" -> "revenue";
}
`},
		{"mermaid", (*Graph).Mermaid, `flowchart LR
    orders_changes["orders_changes"]
    orders["orders"]
    revenue["revenue"]
    orders_changes --> orders
    orders --> revenue
    orders_changes --> revenue
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Build twice: the output must not depend on map iteration.
			a, b := c.render(build()), c.render(build())
			if a != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", a, c.want)
			}
			if a != b {
				t.Errorf("not deterministic:\n%s\nvs\n%s", a, b)
			}
		})
	}
}

func TestMermaidIDs(t *testing.T) {
	t.Parallel()
	g, err := New(nodes("end", []string{}, "a-b", []string{"end"}, "n0", []string{}))
	if err != nil {
		t.Fatal(err)
	}
	want := `flowchart LR
    n0["end"]
    n1["a-b"]
    n2["n0"]
    n0 --> n1
`
	if got := g.Mermaid(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestRenderKind: a node with a Kind (a view, which is not stored) shows it beside its name in
// every format: "(view)" in text, a dashed box labelled with it in DOT, a rounded node in
// Mermaid; the edges and the other nodes are drawn as without it.
func TestRenderKind(t *testing.T) {
	t.Parallel()
	g, err := New([]Node{
		{Name: "changes", Kind: "view"},
		{Name: "orders", Deps: []string{"changes"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Text(), "changes (view)\norders <- changes\n"; got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	wantDOT := `digraph pipeline {
  rankdir=LR;
  node [shape=box];
  "changes" [label="changes (view)", style=dashed];
  "orders";
  "changes" -> "orders";
}
`
	if got := g.DOT(); got != wantDOT {
		t.Errorf("dot:\n%s\nwant:\n%s", got, wantDOT)
	}
	wantMermaid := `flowchart LR
    changes("changes (view)")
    orders["orders"]
    changes --> orders
`
	if got := g.Mermaid(); got != wantMermaid {
		t.Errorf("mermaid:\n%s\nwant:\n%s", got, wantMermaid)
	}
}
