package watch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Event is a change under a watched folder: the path that was created, written, removed,
// renamed or changed mode.
type Event struct {
	Path string
	Op   string
}

// Watcher watches folders recursively and sends an Event for each change.
type Watcher struct {
	// Events receives the changes; it is closed by Close.
	Events <-chan Event
	w      *fsnotify.Watcher
	events chan Event
	done   chan struct{}
	mu     sync.Mutex
	dirs   map[string]bool
	skip   []string
	wg     sync.WaitGroup
}

// Skip leaves folders at or below dir out of later Adds (the runner's own storage, whose writes
// are no input).
func (w *Watcher) Skip(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.skip = append(w.skip, filepath.Clean(dir))
}

func (w *Watcher) skipped(p string) bool {
	for _, s := range w.skip {
		if p == s || strings.HasPrefix(p, s+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// New watches dirs and every folder below them. A folder that does not exist yet is watched
// through its nearest existing parent, and added once it appears.
func New(dirs ...string) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, 256)
	w := &Watcher{Events: ch, w: fw, events: ch, done: make(chan struct{}), dirs: map[string]bool{}}
	for _, d := range dirs {
		w.Add(d)
	}
	w.wg.Add(1)
	go w.loop()
	return w, nil
}

// Add watches dir (recursively) too; a missing dir is watched through its nearest existing
// parent.
func (w *Watcher) Add(dir string) {
	if d := existing(dir); d != "" {
		w.addTree(d, new([]string))
	}
}

// existing returns dir (cleaned) or its nearest parent that is an existing folder; "" when none
// is.
func existing(dir string) string {
	dir = filepath.Clean(dir)
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// addTree watches dir and every folder below it, following symbolic links to folders (dir
// itself included) as the runner's listing of a source folder does; a folder is watched under
// the path through the links, so that its events name the files as the listing does. roots
// holds the folders walked (their resolved paths, each walked whole): a link to a folder inside
// one of them, or holding one (a loop), is not followed.
func (w *Watcher) addTree(dir string, roots *[]string) {
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return
	}
	for _, r := range *roots {
		if within(real, r) || within(r, real) {
			return
		}
	}
	*roots = append(*roots, real)
	_ = filepath.WalkDir(real, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		under, _ := filepath.Rel(real, p)
		name := filepath.Join(dir, under)
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			switch {
			case err == nil && fi.IsDir():
				w.addTree(name, roots)
			case errors.Is(err, fs.ErrNotExist):
				w.addLinkTarget(p)
			}
			return nil
		}
		if !e.IsDir() {
			return nil
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.skipped(name) || w.skipped(p) {
			return filepath.SkipDir
		}
		if !w.dirs[name] && w.w.Add(name) == nil {
			w.dirs[name] = true
		}
		return nil
	})
}

// addLinkTarget watches the folder that the target of link, a symbolic link whose target does
// not exist yet, would be created in (that folder alone, when it exists): the runner's listing
// skips such a link, and reads it once its target appears, which is then a change.
func (w *Watcher) addLinkTarget(link string) {
	target, err := os.Readlink(link)
	if err != nil {
		return
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(link), target)
	}
	dir := filepath.Dir(filepath.Clean(target))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.skipped(dir) && !w.dirs[dir] && w.w.Add(dir) == nil {
		w.dirs[dir] = true
	}
}

// forget stops watching the folder at path p and the folders below it, which were removed or
// renamed (the kernel drops its watch of a removed folder; a renamed one would report its files
// under the old path), so that a folder created again at p, or below it, is watched again when it
// appears: Add skips the folders it knows. When p was watched, it is watched through its nearest
// existing parent until then, as a folder missing from the start is.
//
// Watching a parent that was not watched before can race with the removal of another watched
// folder below it: fsnotify drops the report of a watched folder's own removal when its parent
// is watched, and a parent watched only after the folder went reports nothing, so that folder
// would stay known, and never be watched again when created anew. In that case forget also drops
// every known folder below that parent that no longer exists, watches it through its parent in
// the same way, and returns those folders (sorted) for the caller to report as removed.
func (w *Watcher) forget(p string) []string {
	w.mu.Lock()
	known := w.dirs[p]
	w.drop(p)
	w.mu.Unlock()
	if !known {
		return nil
	}
	parent := existing(p)
	w.mu.Lock()
	fresh := parent != "" && !w.dirs[parent]
	w.mu.Unlock()
	w.Add(p)
	if !fresh {
		return nil
	}
	var below, gone []string
	w.mu.Lock()
	for d := range w.dirs {
		if d != parent && within(d, parent) {
			below = append(below, d)
		}
	}
	w.mu.Unlock()
	for _, d := range below {
		if _, err := os.Stat(d); err != nil {
			gone = append(gone, d)
		}
	}
	w.mu.Lock()
	for _, d := range gone {
		w.drop(d)
	}
	w.mu.Unlock()
	slices.Sort(gone)
	for _, d := range gone {
		w.Add(d)
	}
	return gone
}

// drop stops watching folder p and the known folders below it; w.mu is held.
func (w *Watcher) drop(p string) {
	for d := range w.dirs {
		if within(d, p) {
			delete(w.dirs, d)
			_ = w.w.Remove(d) // already gone with a removed folder
		}
	}
}

// within says whether path p is folder dir or lies below it (both clean and absolute).
func within(p, dir string) bool {
	sep := string(filepath.Separator)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, sep)+sep)
}

func (w *Watcher) loop() {
	defer w.wg.Done()
	defer close(w.events)
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			w.mu.Lock()
			skip := w.skipped(ev.Name)
			w.mu.Unlock()
			if skip {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					w.Add(ev.Name)
				}
			}
			var gone []string
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				gone = w.forget(ev.Name)
			}
			out := []Event{{Path: ev.Name, Op: ev.Op.String()}}
			for _, d := range gone {
				if d != ev.Name {
					out = append(out, Event{Path: d, Op: fsnotify.Remove.String()})
				}
			}
			for _, e := range out {
				select {
				case w.events <- e:
				case <-w.done:
					return
				}
			}
		case _, ok := <-w.w.Errors:
			if !ok {
				return
			}
			// A lost notification (queue overflow) is made up for by the caller's polling.
		}
	}
}

// Close stops watching and closes Events.
func (w *Watcher) Close() error {
	close(w.done)
	err := w.w.Close()
	w.wg.Wait()
	return err
}

// Debounce collects the events of in until none came for quiet, or for at most maxWait after
// the first of them (events that keep coming less than quiet apart would otherwise never make a
// batch), then sends their paths (each once, in arrival order) as one batch. The returned
// channel is closed when in is closed (after sending what is pending).
func Debounce(in <-chan Event, quiet, maxWait time.Duration) <-chan []string {
	out := make(chan []string)
	go func() {
		defer close(out)
		var pending []string
		seen := map[string]bool{}
		var timer, deadline <-chan time.Time
		flush := func() {
			out <- pending
			pending, seen, timer, deadline = nil, map[string]bool{}, nil, nil
		}
		for {
			select {
			case ev, ok := <-in:
				if !ok {
					if len(pending) > 0 {
						out <- pending
					}
					return
				}
				if !seen[ev.Path] {
					seen[ev.Path] = true
					pending = append(pending, ev.Path)
				}
				timer = time.After(quiet)
				if deadline == nil {
					deadline = time.After(maxWait)
				}
			case <-timer:
				flush()
			case <-deadline:
				flush()
			}
		}
	}()
	return out
}
