// Command pipeline runs declarative data pipelines (Delta Live Tables style) on one machine:
// see README.md and spec.md §2 for the commands. Exit status: 0 success, 1 the update failed,
// 2 the spec or the command line is invalid.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"tributary/internal/hugepages"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tributary/flows"
	"tributary/internal/suggest"
	"tributary/spec"
	"tributary/sqlengine"
)

// exitError carries the process exit status of a failed command.
type exitError struct {
	code int
	err  error
	// said: the command reported err on stdout in the form asked for (`validate --json`), so it
	// is not repeated on stderr.
	said bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks an invalid command line or spec (exit 2).
func usageError(err error) error { return &exitError{code: 2, err: err} }

// failure marks a failed update or read (exit 1).
func failure(err error) error { return &exitError{code: 1, err: err} }

func newRoot() *cobra.Command {
	root, _ := newRootProfiled()
	return root
}

// newRootProfiled builds the command tree and the profiles its --cpuprofile, --memprofile and
// --trace flags fill; the caller stops them after Execute.
func newRootProfiled() (*cobra.Command, *profiles) {
	prof := &profiles{}
	root := &cobra.Command{
		Use:           "pipeline",
		Short:         "Run declarative data pipelines (streaming tables, APPLY CHANGES, expectations) on Delta Lake tables",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = version()
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(flagHint(c, err)) })
	root.AddCommand(newRunCmd(), newValidateCmd(), newGraphCmd(), newShowCmd(), newChangesCmd(), newEventsCmd())
	root.AddCommand(newHistoryCmd(), newOptimizeCmd(), newVacuumCmd())
	root.AddCommand(newScheduleCmd(), newDevCmd(), newInitCmd())
	prof.addFlags(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if dataCommands[c.Name()] {
			hugepages.Reserve(hugeHeap)
		}
		return prof.start()
	}
	return root, prof
}

// dataCommands are the commands that process data: their heap grows first into a span backed by
// transparent huge pages where small pages are slow to fault in (internal/hugepages, which
// probes; TRIBUTARY_HUGE_PAGES=on or off decides instead).
var dataCommands = map[string]bool{"run": true, "dev": true, "schedule": true, "optimize": true}

// hugeHeap is the most heap a data command advises huge pages on (bytes; at most an eighth of
// the machine's memory): a batch of a million SCD type 2 events or ten million SCD type 1
// events peaks below it.
const hugeHeap = 1 << 30

// loadChecked is load for the commands that run updates or check a spec (run, validate, dev,
// schedule): the spec's SQL is parsed too (parseSQL), in this spec and in every one the command
// loads after it (dev's edits), and its queries are bound, the expectations of those that bind
// compiled against their results' columns (checkQueries), those of a spec with other problems
// too, as far as they can be (flows.CheckDraftQueries): one report holds the spec's problems
// and the queries', in the order of their positions. The commands that only read tables (show,
// events, ...) leave the SQL alone: they neither need it valid nor pay for the parser.
func loadChecked(path string, confs []string) (*spec.Pipeline, error) {
	conf, err := parseConf(confs)
	if err != nil {
		return nil, err
	}
	return loadCheckedConf(path, conf)
}

// loadCheckedConf is loadChecked with the --conf values parsed: what dev and schedule load the
// spec again with (update.DevOptions.Load, update.ScheduleOptions.Load).
func loadCheckedConf(path string, conf map[string]string) (*spec.Pipeline, error) {
	spec.SQLParser = parseSQL
	d := spec.LoadDraft(path, conf)
	if len(d.Errors) == 0 {
		if _, err := d.Pipeline.Graph(); err != nil {
			return nil, usageError(err)
		}
	}
	bound, err := checkQueries(d)
	if err != nil {
		if len(d.Errors) == 0 {
			return nil, err
		}
		// The spec's own problems are the report; that the queries could not be bound is one more.
		bound = spec.Errors{{Pos: spec.Pos{File: path}, Msg: fmt.Sprintf("the queries could not be bound against their inputs' columns: %v", err)}}
	}
	if problems := d.Errors.With(bound...); len(problems) > 0 {
		return nil, usageError(problems)
	}
	return d.Pipeline, nil
}

// checkQueries binds the queries of d as the update would run them (flows.CheckDraftQueries): a
// query DuckDB refuses (a misspelt column, a function it does not have) is a spec error at the
// query, and an expectation that does not compile against the columns of a query that binds
// (a misspelt column, a string compared with a number) a spec error at the expectation, before
// anything runs, rather than a failed flow once the flows before it have run. The error is one
// of opening DuckDB.
func checkQueries(d *spec.Draft) (spec.Errors, error) {
	problems, err := flows.CheckDraftQueries(context.Background(), d)
	if err != nil {
		return nil, err
	}
	var es spec.Errors
	for _, pr := range problems {
		if pr.Err == nil {
			es = append(es, pr.Expectations...)
			continue
		}
		path := pr.Dataset.Query.Path()
		if path == "" {
			path = fmt.Sprintf("datasets[%d].query", slices.Index(d.Pipeline.Datasets, pr.Dataset))
		}
		hint := "its inputs have the columns the spec declares for them (a query dataset's, its query's); queries are DuckDB SQL (README \"SQL datasets\")"
		if h, ok := spec.DoubleQuoteHint(pr.Dataset.Query.SQL, pr.Err.Error()); ok {
			hint = h
		} else if h, ok := spec.BacktickHint(pr.Dataset.Query.SQL); ok {
			hint = h + "; its inputs have the columns the spec declares for them"
		}
		es = append(es, &spec.Error{Pos: pr.Dataset.Query.PosAt(pr.At), Path: path,
			Msg: "the query does not bind: " + pr.Err.Error(), Hint: hint})
	}
	return es, nil
}

// parseSQL is spec.SQLParser: DuckDB's parser (sqlengine.Syntax), so that SQL that does not
// parse is reported at its line and column, with the spec's other problems.
func parseSQL(dir string, sqls []string) (map[int]spec.SQLSyntaxError, error) {
	bad, err := sqlengine.Syntax(dir, sqls)
	if err != nil {
		return nil, err
	}
	out := make(map[int]spec.SQLSyntaxError, len(bad))
	for i, se := range bad {
		out[i] = spec.SQLSyntaxError{Message: se.Message, Offset: se.Offset}
	}
	return out, nil
}

// flagHint adds to an unknown flag error the command's closest flags ("did you mean"). A long
// flag given with one dash (`-full-refresh-all`, which the command reads as shorthand flags) is
// told to take two.
func flagHint(c *cobra.Command, err error) error {
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if _, given, ok := strings.Cut(err.Error(), "unknown shorthand flag: "); ok {
		if _, arg, ok := strings.Cut(given, " in -"); ok && len(arg) > 1 {
			arg, _, _ = strings.Cut(arg, "=")
			close := suggest.Closest(arg, names)
			if slices.Contains(names, arg) {
				close = []string{arg}
			}
			if len(close) > 0 {
				return fmt.Errorf("%w (long flags take two dashes: did you mean --%s?)", err, strings.Join(close, " or --"))
			}
		}
		return err
	}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	if close := suggest.Closest(name, names); len(close) > 0 {
		return fmt.Errorf("%w (did you mean --%s?)", err, strings.Join(close, " or --"))
	}
	return err
}

// version is the build's version: the module version, else the VCS revision it was built from
// (with "+dirty" for uncommitted changes), else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

func main() {
	if wantsMemProfile(os.Args[1:]) {
		runtime.MemProfileRate = memProfileRate
	}
	root, prof := newRootProfiled()
	err := root.Execute()
	if perr := prof.stop(); perr != nil {
		// The command's own outcome decides the exit status: a profile that could not be
		// written is said, and changes nothing of what the command did.
		fmt.Fprintln(os.Stderr, "pipeline: writing a profile:", perr)
	}
	if err == nil {
		return
	}
	code := 2
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.said {
			os.Exit(code)
		}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pipeline:") {
		msg = "pipeline: " + msg
	}
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(code)
}

// parseConf turns --conf k=v flags into a map; a flag without '=' is a usage error.
func parseConf(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError(fmt.Errorf("--conf %q: write it as key=value", kv))
		}
		out[k] = v
	}
	return out, nil
}

// loadRead is load for the commands that only read what the pipeline stored (show, history,
// changes, events, graph) and those that maintain its tables (optimize, vacuum), none of which
// connects to a source: a ${NAME} that is not set is no problem for them when only what they
// do not use needs it (a postgres source's connection, with the password in the environment of
// the runs). The spec is then read again with each such name standing for a placeholder, and
// kept unless the storage folder's path holds one; any other problem is load's.
func loadRead(path string, confs []string) (*spec.Pipeline, error) {
	p, err := load(path, confs)
	var es spec.Errors
	if err == nil || !errors.As(err, &es) {
		return p, err
	}
	unset := map[string]string{}
	for _, e := range es {
		if e.Unset == "" {
			return nil, err
		}
		unset[e.Unset] = "\x00unset:" + e.Unset + "\x00"
	}
	conf, cerr := parseConf(confs)
	data, rerr := os.ReadFile(path)
	if cerr != nil || rerr != nil {
		return nil, err
	}
	env := func(name string) (string, bool) {
		if v, ok := unset[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}
	lp, lerr := spec.Parse(path, data, conf, env)
	if lerr != nil || strings.Contains(lp.Storage, "\x00unset:") {
		return nil, err
	}
	if _, gerr := lp.Graph(); gerr != nil {
		return nil, err
	}
	return lp, nil
}

// loadStored is loadRead for the commands that print what the storage holds (show, history,
// changes, events): a spec with problems elsewhere (a typo in one dataset while it is being
// fixed) does not keep them from reading the tables already written. When loadRead refuses the
// spec, the spec as far as it decodes (spec.ParseDraft) is used, with a note on w naming its
// first three problems, provided its name, storage and configuration have none (they say which
// pipeline's storage to read); otherwise loadRead's error stands.
func loadStored(w io.Writer, path string, confs []string) (*spec.Pipeline, error) {
	p, err := loadRead(path, confs)
	var es spec.Errors
	if err == nil || !errors.As(err, &es) || len(es) == 0 {
		return p, err
	}
	conf, cerr := parseConf(confs)
	data, rerr := os.ReadFile(path)
	if cerr != nil || rerr != nil {
		return nil, err
	}
	d := spec.ParseDraft(path, data, conf, os.LookupEnv)
	if d.Pipeline == nil || d.Pipeline.Storage == "" || d.Pipeline.Name == "" {
		return nil, err
	}
	for _, e := range d.Errors {
		if e.Path == "" || e.Path == "name" || e.Path == "storage" || strings.HasPrefix(e.Path, "configuration") {
			return nil, err
		}
	}
	// The first few problems: a misspelt key and what follows from it (a key then missing)
	// come together.
	var shown []string
	for _, e := range d.Errors[:min(len(d.Errors), 3)] {
		shown = append(shown, e.Error())
	}
	more := ""
	if n := len(d.Errors) - len(shown); n > 0 {
		more = fmt.Sprintf(" (and %d more)", n)
	}
	problem := "a problem"
	if len(d.Errors) > 1 {
		problem = "problems"
	}
	fmt.Fprintf(w, "pipeline: note: the spec has %s, which this command does not need fixed: %s%s; reading what the storage %s holds all the same (`pipeline validate %s` lists the problems)\n",
		problem, strings.Join(shown, "; "), more, d.Pipeline.Storage, path)
	return d.Pipeline, nil
}

// load reads and validates the spec; any spec problem is a usage error (exit 2).
func load(path string, confs []string) (*spec.Pipeline, error) {
	conf, err := parseConf(confs)
	if err != nil {
		return nil, err
	}
	p, err := spec.Load(path, conf)
	if err != nil {
		return nil, usageError(err)
	}
	if _, err := p.Graph(); err != nil {
		return nil, usageError(err)
	}
	return p, nil
}

// exactArgs is cobra.ExactArgs with exit status 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError(fmt.Errorf("%w; usage: %s", err, cmd.UseLine()))
		}
		return nil
	}
}
