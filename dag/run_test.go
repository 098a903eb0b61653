package dag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunStates(t *testing.T) {
	t.Parallel()
	// bronze -> silver -> gold -> report; bronze -> side; lone
	g, err := New(nodes(
		"bronze", []string{},
		"silver", []string{"bronze"},
		"gold", []string{"silver"},
		"report", []string{"gold", "side"},
		"side", []string{"bronze"},
		"lone", []string{},
	))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		fail map[string]bool
		want map[string]State
	}{
		{"all complete", nil, map[string]State{
			"bronze": StateCompleted, "silver": StateCompleted, "gold": StateCompleted,
			"report": StateCompleted, "side": StateCompleted, "lone": StateCompleted,
		}},
		{"failure skips downstream transitively", map[string]bool{"silver": true}, map[string]State{
			"bronze": StateCompleted, "silver": StateFailed, "gold": StateSkipped,
			"report": StateSkipped, "side": StateCompleted, "lone": StateCompleted,
		}},
		{"root failure", map[string]bool{"bronze": true}, map[string]State{
			"bronze": StateFailed, "silver": StateSkipped, "gold": StateSkipped,
			"report": StateSkipped, "side": StateSkipped, "lone": StateCompleted,
		}},
	}
	for _, c := range cases {
		for _, parallel := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("%s/parallel=%d", c.name, parallel), func(t *testing.T) {
				t.Parallel()
				var mu sync.Mutex
				ran := map[string]int{}
				got := g.Run(context.Background(), parallel, func(_ context.Context, n string) error {
					mu.Lock()
					defer mu.Unlock()
					for _, d := range g.Deps(n) {
						if ran[d] == 0 {
							t.Errorf("%s ran before its dep %s", n, d)
						}
					}
					ran[n]++
					if c.fail[n] {
						return errors.New("boom")
					}
					return nil
				})
				if !maps.Equal(got, c.want) {
					t.Errorf("states = %v, want %v", got, c.want)
				}
				for n, k := range ran {
					if k != 1 || c.want[n] == StateSkipped {
						t.Errorf("%s ran %d times with final state %s", n, k, c.want[n])
					}
				}
			})
		}
	}
}

// TestRunConcurrent proves that two independent nodes run at the same time: each waits until
// the other has started, which can only finish if both are running at once.
func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	g, err := New(nodes("a", []string{}, "b", []string{}, "c", []string{"a", "b"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a measurement
	defer cancel()
	started := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	other := map[string]string{"a": "b", "b": "a"}
	got := g.Run(ctx, 2, func(ctx context.Context, n string) error {
		if n == "c" {
			return nil
		}
		close(started[n])
		select {
		case <-started[other[n]]:
			return nil
		case <-ctx.Done():
			return errors.New("the other node never started alongside")
		}
	})
	want := map[string]State{"a": StateCompleted, "b": StateCompleted, "c": StateCompleted}
	if !maps.Equal(got, want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
}

func TestRunParallelLimit(t *testing.T) {
	t.Parallel()
	var ns []Node
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		ns = append(ns, Node{Name: n})
	}
	g, err := New(ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 2} {
		var now, peak atomic.Int32
		g.Run(context.Background(), limit, func(context.Context, string) error {
			v := now.Add(1)
			for {
				p := peak.Load()
				if v <= p || peak.CompareAndSwap(p, v) {
					break
				}
			}
			now.Add(-1)
			return nil
		})
		if p := peak.Load(); p > int32(limit) {
			t.Errorf("parallel %d: %d nodes ran at once", limit, p)
		}
	}
}

func TestRunCanceled(t *testing.T) {
	t.Parallel()
	g, err := New(nodes("a", []string{}, "b", []string{"a"}, "c", []string{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := g.Run(ctx, 1, func(_ context.Context, n string) error {
		cancel() // the first node cancels; nothing else may start
		return nil
	})
	want := map[string]State{"a": StateCompleted, "b": StateSkipped, "c": StateSkipped}
	if !maps.Equal(got, want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
}

func TestRunPanic(t *testing.T) {
	t.Parallel()
	g, err := New(nodes("a", []string{}, "b", []string{}))
	if err != nil {
		t.Fatal(err)
	}
	var bRan atomic.Bool
	defer func() {
		if recover() == nil {
			t.Fatal("Run did not re-raise the panic")
		}
		if !bRan.Load() {
			t.Error("b did not run although it does not depend on a")
		}
	}()
	g.Run(context.Background(), 1, func(_ context.Context, n string) error {
		if n == "a" {
			panic("bug")
		}
		bRan.Store(true)
		return nil
	})
}
