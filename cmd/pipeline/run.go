package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"tributary/update"
)

func newRunCmd() *cobra.Command {
	var confs, fullRefresh []string
	var fullRefreshAll bool
	cmd := &cobra.Command{
		Use:   "run SPEC [--full-refresh-all | --full-refresh T,..] [--conf k=v]",
		Short: "Run one triggered update: every flow processes the input available now, then the command exits",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fullRefreshAll && len(fullRefresh) > 0 {
				return usageError(errors.New("--full-refresh-all refreshes every dataset: give it or --full-refresh with a list, not both"))
			}
			p, err := load(args[0], confs)
			if err != nil {
				return err
			}
			for _, name := range fullRefresh {
				if p.Dataset(name) == nil {
					return usageError(fmt.Errorf("--full-refresh: %s", unknownDataset(p, name)))
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err = update.Run(ctx, p, update.Options{Out: cmd.OutOrStdout(), FullRefresh: fullRefresh, FullRefreshAll: fullRefreshAll})
			if err != nil {
				return failure(err)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value), overriding the spec's configuration; repeatable")
	cmd.Flags().StringSliceVar(&fullRefresh, "full-refresh", nil, "datasets to rebuild from all of their input (comma-separated): their tables, checkpoints and CDC state are removed first")
	cmd.Flags().BoolVar(&fullRefreshAll, "full-refresh-all", false, "rebuild every dataset from all of its input")
	return cmd
}
