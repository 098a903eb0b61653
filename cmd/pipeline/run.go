package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"tributary/update"
)

func newRunCmd() *cobra.Command {
	var confs []string
	cmd := &cobra.Command{
		Use:   "run SPEC",
		Short: "Run one triggered update: every flow processes the input available now, then the command exits",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUpdate(cmd, args[0], confs)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value), overriding the spec's configuration; repeatable")
	return cmd
}

func runUpdate(cmd *cobra.Command, path string, confs []string) error {
	p, err := load(path, confs)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = update.Run(ctx, p, update.Options{Out: cmd.OutOrStdout()})
	if err != nil {
		if errors.Is(err, update.ErrLocked) {
			return failure(err)
		}
		return failure(err)
	}
	return nil
}
