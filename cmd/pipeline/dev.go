package main

import (
	"time"

	"github.com/spf13/cobra"

	"tributary/update"
	"tributary/watch"
)

func newDevCmd() *cobra.Command {
	var confs []string
	cmd := &cobra.Command{
		Use:   "dev SPEC [--conf k=v]",
		Short: "Development mode: run an update (no retries), then watch the spec and the input folders and re-run what changed",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := parseConf(confs)
			if err != nil {
				return err
			}
			p, err := loadChecked(args[0], confs)
			if err != nil {
				return err
			}
			w, err := watch.New()
			if err != nil {
				return failure(err)
			}
			defer w.Close()
			w.Skip(p.Storage)
			ctx, stop, release := stopSignals()
			defer release()
			err = update.Dev(ctx, p, update.DevOptions{
				Options: update.Options{Out: cmd.OutOrStdout()},
				Conf:    conf,
				Load:    loadCheckedConf,
				Stop:    stop,
				Changes: watch.Debounce(w.Events, 200*time.Millisecond, time.Second),
				Watch: func(dirs []string) {
					for _, d := range dirs {
						w.Add(d)
					}
				},
				Log: cmd.ErrOrStderr(),
			})
			if err != nil {
				return failure(err)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value), overriding the spec's configuration; repeatable")
	return cmd
}
