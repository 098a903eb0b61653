package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newChangesCmd() *cobra.Command {
	var confs []string
	var format string
	var from, to int64
	cmd := &cobra.Command{
		Use:   "changes SPEC DATASET --from-version N [--to-version M]",
		Short: "Print a dataset's change data feed (_change_type, _commit_version, _commit_timestamp)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("from-version") {
				return usageError(fmt.Errorf("--from-version is required"))
			}
			if from < 0 {
				return usageError(fmt.Errorf("--from-version %d: versions start at 0", from))
			}
			if cmd.Flags().Changed("to-version") && to < from {
				return usageError(fmt.Errorf("--to-version %d is before --from-version %d", to, from))
			}
			p, err := loadStored(cmd.ErrOrStderr(), args[0], confs)
			if err != nil {
				return err
			}
			args[1] = datasetName(p, args[1])
			t, err := changesTable(p, args[1])
			if err != nil {
				return err
			}
			noteOtherWriters(cmd.ErrOrStderr(), p, args[1])
			s, rows, err := t.Changes(from, to)
			if err != nil {
				return failure(err)
			}
			return writeRows(cmd.OutOrStdout(), format, s, rows)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&format, "format", "table", "table, jsonl or csv")
	cmd.Flags().Int64Var(&from, "from-version", 0, "first table version `N` to include (required)")
	cmd.Flags().Int64Var(&to, "to-version", -1, "last table version `M` to include (default: the latest)")
	hideDefault(cmd, "to-version")
	return cmd
}
