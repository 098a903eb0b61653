package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"tributary/spec"
)

func newValidateCmd() *cobra.Command {
	var confs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "validate SPEC",
		Aliases: []string{"dry-run"},
		Short:   "Check the spec and report every problem at once; reads and writes no data",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadChecked(args[0], confs)
			out := cmd.OutOrStdout()
			if err != nil {
				if asJSON {
					var list spec.Errors
					if errors.As(err, &list) {
						b, _ := json.MarshalIndent(list, "", "  ")
						fmt.Fprintln(out, string(b))
					}
				}
				return err
			}
			if asJSON {
				fmt.Fprintln(out, "[]")
				return nil
			}
			fmt.Fprintf(out, "%s: pipeline %s is valid: %d dataset(s)\n", p.File, p.Name, len(p.Datasets))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the problems as a JSON array")
	return cmd
}
