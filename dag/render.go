package dag

import (
	"fmt"
	"regexp"
	"strings"
)

// Text renders the graph for people, one line per node in Order: the node alone when it reads
// nothing ("orders_changes"), else the node, " <- " and its deps joined by ", "
// ("orders <- orders_changes"); a node with a Kind has it in parentheses after its name
// ("orders_changes (view)"). Every line ends with a newline.
func (gr *Graph) Text() string {
	var b strings.Builder
	for _, n := range gr.order {
		b.WriteString(gr.label(n))
		if deps := gr.deps[n]; len(deps) > 0 {
			b.WriteString(" <- ")
			b.WriteString(strings.Join(deps, ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// DOT renders the graph in Graphviz DOT: a "digraph pipeline" laid out left to right, every
// node declared in Order, then one edge "dep" -> "node" per dependency (nodes in Order, deps in
// declared order). Names are double-quoted with DOT's escapes. A node with a Kind is drawn
// dashed, labelled with its name and kind.
func (gr *Graph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph pipeline {\n  rankdir=LR;\n  node [shape=box];\n")
	for _, n := range gr.order {
		if _, ok := gr.kinds[n]; ok {
			fmt.Fprintf(&b, "  %s [label=%s, style=dashed];\n", dotQuote(n), dotQuote(gr.label(n)))
			continue
		}
		fmt.Fprintf(&b, "  %s;\n", dotQuote(n))
	}
	for _, n := range gr.order {
		for _, d := range gr.deps[n] {
			fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(d), dotQuote(n))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

var mermaidID = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Mermaid renders the graph as a Mermaid "flowchart LR": every node declared in Order as
// id["name"] (a node with a Kind as a rounded id("name (kind)")), then one edge "dep --> node"
// per dependency. The id is the name itself when it is an identifier Mermaid accepts, else
// n<position in Order>.
func (gr *Graph) Mermaid() string {
	ids := make(map[string]string, len(gr.order))
	for i, n := range gr.order {
		id := n
		if !mermaidID.MatchString(n) || strings.EqualFold(n, "end") || strings.HasPrefix(n, "n") && isNumbered(n) {
			id = fmt.Sprintf("n%d", i)
		}
		ids[n] = id
	}
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, n := range gr.order {
		open, end := "[", "]"
		if _, ok := gr.kinds[n]; ok {
			open, end = "(", ")"
		}
		fmt.Fprintf(&b, "    %s%s\"%s\"%s\n", ids[n], open, strings.ReplaceAll(gr.label(n), `"`, "#quot;"), end)
	}
	for _, n := range gr.order {
		for _, d := range gr.deps[n] {
			fmt.Fprintf(&b, "    %s --> %s\n", ids[d], ids[n])
		}
	}
	return b.String()
}

// label is node n's name, followed by its Kind in parentheses when it has one.
func (gr *Graph) label(n string) string {
	if k, ok := gr.kinds[n]; ok {
		return n + " (" + k + ")"
	}
	return n
}

// isNumbered reports whether s looks like n<digits>, the form of generated ids, so that a node
// really named n3 cannot collide with one.
func isNumbered(s string) bool {
	if len(s) < 2 {
		return false
	}
	for _, r := range s[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
