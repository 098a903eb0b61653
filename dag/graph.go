package dag

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
)

// Node is one vertex of a dependency graph: Name, and the names of the nodes it reads from.
type Node struct {
	Name string
	Deps []string // names of the nodes this node reads from; repeats are ignored
	// Kind, when set, is shown beside the name by the renderers (Text, DOT, Mermaid): "view"
	// for a dataset that is not stored (Delta Live Tables' views).
	Kind string
}

// Graph is an acyclic dependency graph over named nodes, built by New. It is read-only after
// New, so its methods are safe for concurrent use.
type Graph struct {
	g     graph.Graph[string, string] // edges dep -> node
	index map[string]int              // input position of each node, the tie-breaker everywhere
	deps  map[string][]string         // direct deps in declared order, without repeats
	kinds map[string]string           // Node.Kind of the nodes that have one
	down  map[string][]string         // direct downstream nodes in Order
	order []string                    // topological order
}

// CycleError reports nodes that depend on each other in a circle. Members lists them in cycle
// order along the data flow: each member is read by the next one, and the last one is read by
// the first. A node that reads itself is a cycle of one member.
type CycleError struct {
	Members []string
}

// Error returns "dag: dependency cycle: a -> b -> a".
func (e *CycleError) Error() string {
	return "dag: dependency cycle: " + strings.Join(append(append([]string{}, e.Members...), e.Members[0]), " -> ")
}

// UnknownError reports that Node names a dep that is not a node of the graph.
type UnknownError struct {
	Node string
	Dep  string
}

// Error returns "dag: <node> reads from <dep>, which is not a node".
func (e *UnknownError) Error() string {
	return fmt.Sprintf("dag: %s reads from %s, which is not a node", e.Node, e.Dep)
}

// DuplicateError reports a name given to more than one node.
type DuplicateError struct {
	Node string
}

// Error returns "dag: node <name> is given more than once".
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("dag: node %s is given more than once", e.Node)
}

// New builds the graph of nodes. It returns every problem at once, joined with errors.Join:
// a *DuplicateError per repeated name, an *UnknownError per dep that names no node, and a
// *CycleError per cycle (one per strongly connected component, found in input order).
// On any problem the graph is nil.
func New(nodes []Node) (*Graph, error) {
	gr := &Graph{
		g:     graph.New(graph.StringHash, graph.Directed()),
		index: make(map[string]int, len(nodes)),
		deps:  make(map[string][]string, len(nodes)),
		kinds: map[string]string{},
		down:  make(map[string][]string, len(nodes)),
	}
	var errs []error
	for _, n := range nodes {
		if _, dup := gr.index[n.Name]; dup {
			errs = append(errs, &DuplicateError{Node: n.Name})
			continue
		}
		gr.index[n.Name] = len(gr.index)
		if err := gr.g.AddVertex(n.Name); err != nil {
			return nil, fmt.Errorf("dag: add %s: %w", n.Name, err)
		}
	}
	seenNode := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if seenNode[n.Name] {
			continue // a duplicate, reported above
		}
		seenNode[n.Name] = true
		if n.Kind != "" {
			gr.kinds[n.Name] = n.Kind
		}
		seen := map[string]bool{}
		for _, d := range n.Deps {
			if seen[d] {
				continue
			}
			seen[d] = true
			if _, ok := gr.index[d]; !ok {
				errs = append(errs, &UnknownError{Node: n.Name, Dep: d})
				continue
			}
			gr.deps[n.Name] = append(gr.deps[n.Name], d)
			if err := gr.g.AddEdge(d, n.Name); err != nil {
				return nil, fmt.Errorf("dag: add edge %s -> %s: %w", d, n.Name, err)
			}
		}
	}
	for _, c := range gr.cycles() {
		errs = append(errs, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	gr.order = gr.topo()
	for _, n := range gr.order {
		for _, d := range gr.deps[n] {
			gr.down[d] = append(gr.down[d], n)
		}
	}
	return gr, nil
}

// cycles finds one elementary cycle in each strongly connected component that has one: the
// shortest cycle through the component's first node in input order.
func (gr *Graph) cycles() []*CycleError {
	sccs, err := graph.StronglyConnectedComponents(gr.g)
	if err != nil {
		return nil
	}
	adj, err := gr.g.AdjacencyMap()
	if err != nil {
		return nil
	}
	var out []*CycleError
	for _, comp := range sccs {
		in := make(map[string]bool, len(comp))
		first := comp[0]
		for _, n := range comp {
			in[n] = true
			if gr.index[n] < gr.index[first] {
				first = n
			}
		}
		if len(comp) == 1 {
			if _, self := adj[first][first]; !self {
				continue
			}
			out = append(out, &CycleError{Members: []string{first}})
			continue
		}
		out = append(out, &CycleError{Members: gr.shortestCycle(first, in, adj)})
	}
	slices.SortFunc(out, func(a, b *CycleError) int { return gr.index[a.Members[0]] - gr.index[b.Members[0]] })
	return out
}

// shortestCycle walks breadth-first from start inside the component until it gets back to
// start; successors are visited in input order so the result is deterministic.
func (gr *Graph) shortestCycle(start string, in map[string]bool, adj map[string]map[string]graph.Edge[string]) []string {
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		next := make([]string, 0, len(adj[cur]))
		for n := range adj[cur] {
			next = append(next, n)
		}
		slices.SortFunc(next, func(a, b string) int { return gr.index[a] - gr.index[b] })
		for _, n := range next {
			if !in[n] {
				continue
			}
			if n == start {
				path := []string{cur}
				for p := cur; p != start; {
					p = prev[p]
					path = append(path, p)
				}
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[n]; !seen {
				prev[n] = cur
				queue = append(queue, n)
			}
		}
	}
	return []string{start} // not reached: start is in a component with a cycle
}

// topo is Kahn's algorithm that always takes the ready node given first to New, so an input
// that is already in dependency order comes out unchanged.
func (gr *Graph) topo() []string {
	names := make([]string, len(gr.index))
	for n, i := range gr.index {
		names[i] = n
	}
	waiting := make(map[string]int, len(names))
	for _, n := range names {
		waiting[n] = len(gr.deps[n])
	}
	readers := make(map[string][]string, len(names))
	for _, n := range names {
		for _, d := range gr.deps[n] {
			readers[d] = append(readers[d], n)
		}
	}
	done := make([]bool, len(names))
	out := make([]string, 0, len(names))
	for len(out) < len(names) {
		for i, n := range names {
			if done[i] || waiting[n] > 0 {
				continue
			}
			done[i] = true
			out = append(out, n)
			for _, r := range readers[n] {
				waiting[r]--
			}
			break
		}
	}
	return out
}

// Order returns every node name in topological order: each node after all its deps. Among
// nodes free to go at the same point, the one given first to New comes first.
func (gr *Graph) Order() []string { return append([]string(nil), gr.order...) }

// Has reports whether name is a node of the graph.
func (gr *Graph) Has(name string) bool { _, ok := gr.index[name]; return ok }

// Deps returns the direct deps of name in the order its Node declared them (nil for an unknown
// name or a node without deps).
func (gr *Graph) Deps(name string) []string { return append([]string(nil), gr.deps[name]...) }

// Downstream returns the nodes that read name directly, in Order.
func (gr *Graph) Downstream(name string) []string { return append([]string(nil), gr.down[name]...) }

// Descendants returns every node that reads name directly or through other nodes, in Order;
// name itself is not included.
func (gr *Graph) Descendants(name string) []string {
	reach := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, d := range gr.down[n] {
			if !reach[d] {
				reach[d] = true
				walk(d)
			}
		}
	}
	walk(name)
	var out []string
	for _, n := range gr.order {
		if reach[n] {
			out = append(out, n)
		}
	}
	return out
}
