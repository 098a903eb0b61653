// Package dag orders named nodes by their dependencies and runs work over them.
//
// A node names the nodes it reads from (its deps); edges run from a dep to the node that reads
// it, the direction data flows. The package knows nothing of pipelines: spec turns datasets into
// nodes, and the runner of an update calls Run.
//
// Invariants: a *Graph is acyclic and every dep names a node of the graph (New refuses anything
// else); every listing (Order, Deps, Downstream, Descendants, Text, DOT, Mermaid) is
// deterministic, ties broken by the order in which New was given the nodes.
package dag
