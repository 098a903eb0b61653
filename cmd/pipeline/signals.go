package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"tributary/spec"
	"tributary/update"
	"tributary/watch"
)

// stopSignals implements the two-step stop of the long-running commands: the first SIGINT or
// SIGTERM closes stop (finish the batch in flight, then end cleanly); the second cancels ctx
// (stop the running flows at once; a flow stopped so commits nothing). release undoes it.
func stopSignals() (ctx context.Context, stop <-chan struct{}, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stopCh := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			close(stopCh)
		case <-done:
			return
		}
		select {
		case <-sig:
			cancel()
		case <-done:
		}
	}()
	return ctx, stopCh, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}

// wakeOnInput watches the input folders of p and returns a channel that receives (without
// blocking the watcher) after each debounced burst of changes, and a function that stops
// watching. Without notifications (an error from fsnotify) the channel never fires and the
// caller's polling takes over.
func wakeOnInput(p *spec.Pipeline) (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	w, err := watch.New(update.InputDirs(p)...)
	if err != nil {
		return wake, func() {}
	}
	batches := watch.Debounce(w.Events, 100*time.Millisecond, time.Second)
	go func() {
		for range batches {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return wake, func() { _ = w.Close() }
}
