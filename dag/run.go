package dag

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
)

// State is the final state of a node after Run, named as the flow states of the Delta Live
// Tables event log (semantics.md "Updates, flows, modes").
type State string

// The states Run gives a node.
const (
	StateCompleted State = "COMPLETED" // fn returned nil
	StateFailed    State = "FAILED"    // fn returned an error (or panicked)
	StateSkipped   State = "SKIPPED"   // not run: a dep failed or was skipped, or ctx was done first
)

// Run calls fn once for every node that can run, in dependency order: a node starts only after
// every one of its deps returned nil. Nodes that do not depend on each other run concurrently,
// at most parallel at a time (values below 1 mean 1); among nodes ready together, the earlier
// in Order starts first.
//
// A node whose dep failed or was skipped is not run and gets StateSkipped, and so, in turn, do
// its descendants. Once ctx is done, no further node starts: those not yet started get
// StateSkipped, while running ones receive the canceled ctx and end with what fn returns.
//
// Run returns when no fn is running any more, with the state of every node. If fn panics, the
// node counts as failed, the others finish as usual, and Run then panics in the caller's
// goroutine with the node's name, the panic value and its stack.
func (gr *Graph) Run(ctx context.Context, parallel int, fn func(ctx context.Context, name string) error) map[string]State {
	if parallel < 1 {
		parallel = 1
	}
	pos := make(map[string]int, len(gr.order))
	waiting := make(map[string]int, len(gr.order))
	var ready []string
	for i, n := range gr.order {
		pos[n] = i
		waiting[n] = len(gr.deps[n])
		if waiting[n] == 0 {
			ready = append(ready, n)
		}
	}
	states := make(map[string]State, len(gr.order))

	var skip func(string)
	skip = func(n string) {
		if states[n] != "" {
			return
		}
		states[n] = StateSkipped
		for _, d := range gr.down[n] {
			skip(d)
		}
	}
	settle := func(n string, st State) {
		if st != StateCompleted {
			if st == StateSkipped {
				skip(n)
				return
			}
			states[n] = st
			for _, d := range gr.down[n] {
				skip(d)
			}
			return
		}
		states[n] = st
		for _, d := range gr.down[n] {
			waiting[d]--
			if waiting[d] == 0 && states[d] == "" {
				i, _ := slices.BinarySearchFunc(ready, d, func(a, b string) int { return pos[a] - pos[b] })
				ready = slices.Insert(ready, i, d)
			}
		}
	}

	type result struct {
		name  string
		err   error
		panic any
	}
	results := make(chan result)
	running := 0
	var panicked any
	for {
		for running < parallel && len(ready) > 0 {
			n := ready[0]
			ready = ready[1:]
			if ctx.Err() != nil {
				settle(n, StateSkipped)
				continue
			}
			running++
			go func() {
				r := result{name: n}
				defer func() {
					if p := recover(); p != nil {
						r.panic = fmt.Sprintf("dag: node %s panicked: %v\n%s", n, p, debug.Stack())
					}
					results <- r
				}()
				r.err = fn(ctx, n)
			}()
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		switch {
		case r.panic != nil:
			if panicked == nil {
				panicked = r.panic
			}
			settle(r.name, StateFailed)
		case r.err != nil:
			settle(r.name, StateFailed)
		default:
			settle(r.name, StateCompleted)
		}
	}
	for _, n := range gr.order {
		if states[n] == "" { // unreachable for an acyclic graph; never leave a node without a state
			states[n] = StateSkipped
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	return states
}
