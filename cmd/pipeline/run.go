package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"tributary/flows"
	"tributary/spec"
	"tributary/update"
)

func newRunCmd() *cobra.Command {
	var confs, fullRefresh, refresh []string
	var fullRefreshAll, continuous bool
	cmd := &cobra.Command{
		Use:   "run SPEC [--full-refresh-all | --full-refresh T,..] [--refresh T,..] [--continuous] [--conf k=v]",
		Short: "Run one update: triggered (process the input available now, then exit) or continuous (keep processing new input until stopped)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if fullRefresh, err = datasetList("--full-refresh", cmd.Flags().Changed("full-refresh"), fullRefresh); err != nil {
				return err
			}
			if refresh, err = datasetList("--refresh", cmd.Flags().Changed("refresh"), refresh); err != nil {
				return err
			}
			if err := checkSelection(fullRefreshAll, fullRefresh, refresh); err != nil {
				return err
			}
			p, err := loadChecked(args[0], confs)
			if err != nil {
				return err
			}
			for _, names := range [][]string{fullRefresh, refresh} {
				for i, name := range names {
					name = datasetName(p, name)
					names[i] = name
					if p.Dataset(name) == nil {
						return usageError(fmt.Errorf("--full-refresh/--refresh: %s", unknownDataset(p, name)))
					}
					if p.Dataset(name).FileView() {
						// Nothing of it is stored: which files were read is its readers'.
						readers := viewReaders(p, name)
						if len(readers) == 0 {
							return usageError(fmt.Errorf("--full-refresh/--refresh: %s is a view over files that no dataset reads: it is not stored and has no flow of its own, so there is nothing to refresh (read it from an apply_changes dataset)", name))
						}
						return usageError(fmt.Errorf("--full-refresh/--refresh: %s is a view over files: it is not stored and has no flow of its own; its readers (%s) read its files, each keeping which ones it has read: name them instead (%s reads every file again)",
							name, strings.Join(readers, ", "), flows.RefreshHint(p, readers...)))
					}
				}
			}
			if err := checkSelection(fullRefreshAll, fullRefresh, refresh); err != nil {
				return err // again, with the names as the spec gives them
			}
			opts := update.Options{Out: cmd.OutOrStdout(), FullRefresh: fullRefresh, FullRefreshAll: fullRefreshAll, Refresh: refresh}
			if isTerminal(cmd.OutOrStdout()) {
				live := newLiveProgress(cmd.OutOrStdout())
				opts.Progress = live.update
				opts.Out = endOfBlock{live}
			} else {
				opts.Progress = (&plainProgress{w: cmd.OutOrStdout(), now: time.Now}).update
			}
			if !cmd.Flags().Changed("continuous") {
				continuous = p.Continuous
			}
			if continuous {
				return runContinuous(p, opts)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err = update.Run(ctx, p, opts)
			return runFailure(ctx, err)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value), overriding the spec's configuration; repeatable")
	cmd.Flags().StringSliceVar(&fullRefresh, "full-refresh", nil, "datasets to rebuild from all of their input (comma-separated): their tables, checkpoints and CDC state are removed first")
	cmd.Flags().BoolVar(&fullRefreshAll, "full-refresh-all", false, "rebuild every dataset from all of its input")
	cmd.Flags().StringSliceVar(&refresh, "refresh", nil, "datasets to update (comma-separated); the others are EXCLUDED from the update")
	cmd.Flags().BoolVar(&continuous, "continuous", false, "keep running and process new input as it lands (default: the spec's continuous: key; --continuous=false runs one triggered update); Ctrl-C or SIGTERM stops cleanly")
	return cmd
}

// checkSelection refuses conflicting refresh flags (exit 2): --full-refresh-all with a list, or
// a dataset named in both --refresh and --full-refresh.
func checkSelection(all bool, full, refresh []string) error {
	if all && (len(full) > 0 || len(refresh) > 0) {
		return usageError(errors.New("--full-refresh-all refreshes every dataset: give it or --full-refresh/--refresh with a list, not both"))
	}
	for _, r := range refresh {
		for _, f := range full {
			if r == f {
				return usageError(fmt.Errorf("dataset %s is given to both --refresh and --full-refresh: choose one", r))
			}
		}
	}
	return nil
}

// runFailure is the exit error of a triggered update that ended with err (nil: success); ctx is
// the update's, cancelled by SIGINT or SIGTERM: a cancelled update is told as such, not as the
// context's error.
func runFailure(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return failure(errors.New("the update was canceled (SIGINT or SIGTERM): the flows that completed keep their commits, a flow stopped commits nothing of its batch in flight, and the next run goes on from the last commit"))
	}
	return failure(err)
}

// runContinuous runs a continuous update until the first signal (clean stop, exit 0).
func runContinuous(p *spec.Pipeline, opts update.Options) error {
	ctx, stop, release := stopSignals()
	defer release()
	wake, unwatch := wakeOnInput(p)
	defer unwatch()
	_, err := update.Continuous(ctx, p, update.ContinuousOptions{Options: opts, Stop: stop, Wake: wake})
	if err != nil {
		return failure(err)
	}
	return nil
}

// endOfBlock writes the update's summary below the live progress block and starts a new block
// for the next update (continuous mode).
type endOfBlock struct{ live *liveProgress }

func (e endOfBlock) Write(b []byte) (int, error) {
	e.live.done()
	return e.live.w.Write(b)
}

// datasetList trims the names of a comma-separated dataset list flag; a flag given with no name
// (`--full-refresh ""`) is a usage error rather than a silent no-op.
func datasetList(flag string, given bool, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	if given && len(out) == 0 {
		return nil, usageError(fmt.Errorf("%s names no dataset: give a comma-separated list, e.g. %s orders,orders_changes", flag, flag))
	}
	return out, nil
}
