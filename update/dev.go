package update

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tributary/spec"
)

// DevOptions tune Dev.
type DevOptions struct {
	// Options apply to every update (Dev sets Held, Development, Cause and Only).
	Options
	// Conf is the --conf map the spec is loaded with again after an edit.
	Conf map[string]string
	// Stop is closed to stop cleanly (the first signal): the update running finishes first.
	Stop <-chan struct{}
	// Changes receives batches of changed paths (package watch: Debounce over a Watcher; tests
	// send synthetic ones). Dev returns when it is closed.
	Changes <-chan []string
	// Watch, when set, is called with the folders to watch: at the start and after each valid
	// edit of the spec (the spec's folder and the input folders).
	Watch func(dirs []string)
	// Log receives status lines and, for an invalid edit, the spec's errors.
	Log io.Writer
	// Load loads the spec file again after an edit, with Conf; nil is spec.Load. The CLI's also
	// binds the queries against their inputs' columns, as `pipeline validate` does.
	Load func(path string, conf map[string]string) (*spec.Pipeline, error)
	// Ran, when set, is called after each update with the datasets it ran, its result and error.
	Ran func(only []string, res *Result, err error)
}

// Dev runs development mode (`pipeline dev`) for p until stopped: an update of every dataset
// (no retries), then, for each batch of changed files, an update of the datasets that changed
// and everything downstream of them. A changed spec file is loaded and validated again: errors
// are written to Log with file:line:column and the previous spec stays in force; a valid spec
// re-runs the datasets whose definition changed (all of them when a pipeline-level key such as
// `configuration` changed). New input re-runs the datasets that read it, once the new files have
// settled (Options.Settle). Failed updates are
// reported on Log and Dev goes on. It holds the storage lock throughout, and returns nil once
// stopped or the error that kept it from starting.
func Dev(ctx context.Context, p *spec.Pipeline, o DevOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	held, err := Hold(p, "dev")
	if err != nil {
		return err
	}
	defer held.Release()
	defs, top := definitions(p.File)
	watch := func() {
		if o.Watch != nil {
			o.Watch(append([]string{filepath.Dir(p.File)}, InputDirs(p)...))
		}
	}
	watch()
	// Files that an update left for later (still being written, perhaps: Options.Settle) are
	// read by an update of their datasets once they had the time to settle.
	var settled <-chan time.Time
	var unsettled map[string]bool
	// blocked are the datasets of updates that failed at their set-up, which the next update
	// an edit or new input makes runs too.
	blocked := map[string]bool{}
	run := func(only map[string]bool, cause string) {
		opts := o.Options
		opts.Held, opts.Development, opts.Cause, opts.Only = held, true, cause, only
		opts.Settle = cmp.Or(opts.Settle, settleTime)
		res, err := Run(ctx, p, opts)
		if res != nil {
			// The flows that ran have read what settled; those that left files wait again.
			// (Datasets that did not run keep waiting for the timer already set.)
			for name, fr := range res.Flows {
				delete(unsettled, name)
				if fr.Metrics.Unsettled > 0 {
					if unsettled == nil {
						unsettled = map[string]bool{}
					}
					unsettled[name] = true
				}
			}
		}
		if err != nil && (res == nil || len(res.Flows) == 0) {
			// The update failed before any flow ran (at its set-up: a schema change, a flow
			// that does not fit its source's columns): running it again on the timer would
			// fail the same way, every second. Its datasets run with the next update an edit
			// or new input makes.
			if only == nil {
				for _, d := range p.Datasets {
					blocked[d.Name] = true
				}
			}
			for n := range only {
				blocked[n] = true
			}
			for n := range unsettled {
				blocked[n] = true
			}
			clear(unsettled)
		}
		switch {
		case len(unsettled) == 0:
			settled = nil
		case settled == nil:
			settled = time.After(max(opts.Settle, 0))
		}
		var names []string
		if only != nil {
			names = sortedNames(only)
		}
		if err != nil {
			fmt.Fprintln(o.Log, failureLine(p, err))
			if strings.Contains(err.Error(), "--full-refresh") {
				// Its storage lock would refuse the command while dev runs.
				fmt.Fprintf(o.Log, "pipeline %s: stop `pipeline dev` (Ctrl-C) before running the full refresh above, which needs the storage dev holds; then start dev again\n", p.Name)
			}
		}
		if o.Ran != nil {
			o.Ran(names, res, err)
		}
		fmt.Fprintf(o.Log, "pipeline %s: watching %s and the input folders for changes (stop with Ctrl-C)\n", p.Name, p.File)
	}
	last := fingerprints(p)
	invalid := false // the last edit of the spec was invalid
	run(nil, "USER_ACTION")
	for {
		var paths []string
		var ok bool
		select {
		case <-o.Stop:
			return nil
		case <-ctx.Done():
			return nil
		case paths, ok = <-o.Changes:
			if !ok {
				return nil
			}
		case <-settled:
			settled = nil
			g, _ := p.Graph()
			only := map[string]bool{}
			for n := range unsettled {
				only[n] = true
				for _, d := range g.Descendants(n) {
					only[d] = true
				}
			}
			run(only, "FILE_CHANGE")
			continue
		}
		var changed []string
		if containsPath(paths, p.File) {
			np, err := loadSpec(o.Load, p.File, o.Conf)
			if err == nil {
				_, err = np.Graph()
			}
			if err == nil && np.Storage != p.Storage {
				err = fmt.Errorf("%s: the storage changed from %s to %s: stop `pipeline dev` and start it again", p.File, p.Storage, np.Storage)
			}
			if err != nil {
				fmt.Fprintf(o.Log, "pipeline %s: the spec is invalid; the previous version stays in force until it is fixed:\n%v\n", p.Name, err)
				invalid = true
				continue
			}
			ndefs, ntop := definitions(np.File)
			for _, d := range np.Datasets {
				if ntop != top || ndefs[d.Name] != defs[d.Name] {
					changed = append(changed, d.Name)
				}
			}
			p, defs, top = np, ndefs, ntop
			watch()
			switch {
			case len(changed) > 0:
				fmt.Fprintf(o.Log, "pipeline %s: the spec changed: %s\n", p.Name, strings.Join(changed, ", "))
			case invalid:
				// Said, so that a fix that restores the spec in force is not met with silence.
				fmt.Fprintf(o.Log, "pipeline %s: the spec is valid again, with the definitions in force: nothing to re-run\n", p.Name)
			}
			invalid = false
		}
		edited := len(changed) > 0 // the edit of the spec changed definitions
		now := fingerprints(p)
		inputs := changedInputs(p, last, now)
		last = now
		cause := "SPEC_CHANGE"
		if wait := settleWait(paths, p.File, cmp.Or(o.Settle, settleTime), time.Now()); wait > 0 && len(inputs) > 0 {
			// New input still being written, perhaps: an update now would leave it for later
			// and read nothing. Its datasets run once it has had the time (the settled timer);
			// an edit of the spec in the same batch runs now.
			if unsettled == nil {
				unsettled = map[string]bool{}
			}
			for _, n := range inputs {
				unsettled[n] = true
			}
			settled = time.After(wait)
		} else {
			for _, name := range inputs {
				if !contains(changed, name) {
					changed = append(changed, name)
				}
			}
			if !edited {
				cause = "FILE_CHANGE"
			}
		}
		if len(changed) == 0 {
			continue
		}
		for n := range blocked {
			if p.Dataset(n) != nil && !contains(changed, n) {
				changed = append(changed, n)
			}
		}
		clear(blocked)
		g, _ := p.Graph()
		only := map[string]bool{}
		for _, n := range changed {
			only[n] = true
			for _, d := range g.Descendants(n) {
				only[d] = true
			}
		}
		run(only, cause)
	}
}

// settleWait returns how long from now the youngest of the files paths (modified at most
// settle before now; the spec file is not input) needs to have been left alone for settle, and a
// little more, so that an update then reads it rather than leaving it for later
// (Options.Settle); 0 when none is that young, or settle is negative (no settle time).
func settleWait(paths []string, specFile string, settle time.Duration, now time.Time) time.Duration {
	if settle < 0 {
		return 0
	}
	var wait time.Duration
	for _, p := range paths {
		if containsPath([]string{p}, specFile) {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			continue
		}
		if w := fi.ModTime().Add(settle).Sub(now); w > 0 {
			wait = max(wait, w+50*time.Millisecond)
		}
	}
	return wait
}

// containsPath reports whether paths holds file (compared as cleaned absolute paths).
func containsPath(paths []string, file string) bool {
	for _, p := range paths {
		if a, err := filepath.Abs(p); err == nil && a == filepath.Clean(file) {
			return true
		}
	}
	return false
}

// definitions reads the spec file as plain YAML and returns each dataset's definition and the
// pipeline-level keys that shape data (all but the run-mode keys) as canonical JSON, so that an
// edit can be compared definition by definition whatever lines moved.
func definitions(file string) (map[string]string, string) {
	defs := map[string]string{}
	b, err := os.ReadFile(file)
	if err != nil {
		return defs, ""
	}
	var doc map[string]any
	if yaml.Unmarshal(b, &doc) != nil {
		return defs, ""
	}
	if list, ok := doc["datasets"].([]any); ok {
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				name, _ := m["name"].(string)
				j, _ := json.Marshal(m)
				defs[name] = string(j)
			}
		}
	}
	for _, k := range []string{"datasets", "continuous", "trigger_interval", "development", "schedule", "retries"} {
		delete(doc, k)
	}
	j, _ := json.Marshal(doc)
	return defs, string(j)
}

// failureLine is the line dev mode logs for an update of p that failed with err: "pipeline NAME:
// the update failed: ...", which a *FlowError's text starts with already.
func failureLine(p *spec.Pipeline, err error) string {
	msg := err.Error()
	if !strings.HasPrefix(msg, "the update failed") {
		msg = "the update failed: " + msg
	}
	return "pipeline " + p.Name + ": " + msg
}
