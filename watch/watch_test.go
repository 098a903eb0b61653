package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// wait returns the first event whose path is want, failing after a bounded wait.
func wait(t *testing.T, w *Watcher, want string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if ev.Path == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event for %s", want)
		}
	}
}

// TestWatcherFolders: a file saved by rename, a file in a new sub-folder, and a folder that did
// not exist when watching began all give events.
func TestWatcherFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "later")
	w, err := New(dir, missing)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	tmp := filepath.Join(dir, ".spec.yaml.swp")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(dir, "spec.yaml")
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	wait(t, w, final)

	if err := os.MkdirAll(filepath.Join(missing, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	wait(t, w, missing)
	time.Sleep(50 * time.Millisecond) // let the new folders be added before writing into them
	f := filepath.Join(missing, "deep", "1.json")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.Events:
			if ev.Path == f {
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event for %s in a folder created after watching began", f)
		}
	}
}

// TestDebounce: a burst of synthetic events becomes one batch with each path once, in arrival
// order; a later event starts a new batch.
func TestDebounce(t *testing.T) {
	t.Parallel()
	in := make(chan Event)
	out := Debounce(in, 50*time.Millisecond, time.Minute)
	for _, p := range []string{"a", "b", "a", "c"} {
		in <- Event{Path: p, Op: "WRITE"}
	}
	if got := <-out; !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("first batch %v, want [a b c]", got)
	}
	in <- Event{Path: "d"}
	close(in)
	if got := <-out; !slices.Equal(got, []string{"d"}) {
		t.Errorf("second batch %v, want [d]", got)
	}
	if _, ok := <-out; ok {
		t.Error("the batches did not end when the input closed")
	}
}

// TestDebounceMaxWait: events that keep coming less than quiet apart still make batches, each
// sent at most maxWait after its first event, with the paths that came by then.
func TestDebounceMaxWait(t *testing.T) {
	t.Parallel()
	in := make(chan Event)
	out := Debounce(in, 200*time.Millisecond, 500*time.Millisecond)
	start := time.Now()
	var first []string
	got := make(chan []string, 1)
	go func() { got <- <-out }()
	for i := 0; ; i++ {
		select {
		case first = <-got:
		case in <- Event{Path: fmt.Sprint(i)}:
			if time.Since(start) > 5*time.Second {
				t.Fatal("no batch in 5s of events 20ms apart")
			}
			time.Sleep(20 * time.Millisecond) // ten times as often as quiet
			continue
		}
		break
	}
	if d := time.Since(start); d > 5*time.Second || len(first) == 0 || first[0] != "0" {
		t.Errorf("first batch %v after %s, want one starting with 0 about 500ms after it", first, d)
	}
	close(in)
	for range out {
	}
}

// TestWatcherLinkedFolders: a watched folder given as a symbolic link, and a link to a folder
// inside it, are watched where they point; the events name the files through the links.
func TestWatcherLinkedFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, extra, landing := filepath.Join(dir, "data"), filepath.Join(dir, "extra"), filepath.Join(dir, "landing")
	for _, d := range []string{data, extra} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{landing: data, filepath.Join(data, "more"): extra, filepath.Join(extra, "loop"): data} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(landing)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, f := range []string{filepath.Join(landing, "a.json"), filepath.Join(landing, "more", "b.json")} {
		if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		wait(t, w, f)
	}
}

// TestWatcherDanglingLink: a symbolic link in a watched folder whose target does not exist yet
// (the runner skips it) has the target's folder watched, so that the target's creation, which
// makes the link a file to read, is a change.
func TestWatcherDanglingLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	landing, elsewhere := filepath.Join(dir, "landing"), filepath.Join(dir, "elsewhere")
	for _, d := range []string{landing, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(elsewhere, "later.json")
	if err := os.Symlink(target, filepath.Join(landing, "link.json")); err != nil {
		t.Fatal(err)
	}
	w, err := New(landing)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.WriteFile(target, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait(t, w, target)
}

// TestWatcherFolderRecreated: a watched folder (and a sub-folder) removed and created again is
// watched again: a file written into it afterwards gives an event. (The watch of a removed folder
// goes with it; a folder the watcher still took for watched was once never added again.)
func TestWatcherFolderRecreated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	sub := filepath.Join(landing, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := New(landing)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range []struct{ remove, file string }{
		{sub, filepath.Join(sub, "1.json")},         // a sub-folder: its parent stays watched
		{landing, filepath.Join(landing, "2.json")}, // the watched folder itself
		{landing, filepath.Join(sub, "3.json")},     // and a folder below it, created with it
	} {
		if err := os.RemoveAll(c.remove); err != nil {
			t.Fatal(err)
		}
		wait(t, w, c.remove)
		time.Sleep(50 * time.Millisecond) // let the removal be handled before the folder is back
		if err := os.MkdirAll(filepath.Dir(c.file), 0o755); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
	written:
		for {
			if err := os.WriteFile(c.file, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			timeout := time.After(200 * time.Millisecond)
			for {
				select {
				case ev := <-w.Events:
					if ev.Path == c.file {
						break written
					}
					continue
				case <-timeout:
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no event for %s after %s was removed and created again", c.file, c.remove)
			}
		}
	}
}
