package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"tributary/spec"
	"tributary/update"
)

func newScheduleCmd() *cobra.Command {
	var confs []string
	var expr string
	cmd := &cobra.Command{
		Use:   "schedule SPEC [--cron EXPR] [--conf k=v]",
		Short: "Run triggered updates on a cron schedule (default: the spec's `schedule`), never two at once, until stopped",
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
			if expr == "" {
				expr = p.Schedule
			}
			if expr == "" {
				return usageError(errors.New("no schedule: give --cron EXPR (e.g. \"*/15 * * * *\", @hourly, \"CRON_TZ=Europe/Paris 0 6 * * *\") or `schedule:` in the spec"))
			}
			if _, err := spec.ParseCron(expr); err != nil {
				return usageError(fmt.Errorf("--cron %q: %v; write five fields (minute hour day-of-month month day-of-week), a descriptor such as @hourly or @every 10m, optionally after CRON_TZ=Area/City", expr, err))
			}
			ctx, stop, release := stopSignals()
			defer release()
			err = update.Schedule(ctx, p, expr, update.ScheduleOptions{
				Options: update.Options{Out: cmd.OutOrStdout()},
				Stop:    stop,
				Log:     cmd.OutOrStdout(),
				Conf:    conf,
				Load:    loadCheckedConf,
			})
			if err != nil {
				return failure(err)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value), overriding the spec's configuration; repeatable")
	cmd.Flags().StringVar(&expr, "cron", "", "the schedule: five cron fields, @hourly-style descriptors or @every DURATION, optionally after CRON_TZ=Area/City (default: the spec's schedule)")
	return cmd
}
