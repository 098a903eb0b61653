package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newGraphCmd() *cobra.Command {
	var confs []string
	var format string
	cmd := &cobra.Command{
		Use:   "graph SPEC",
		Short: "Print the datasets and their dependencies as text, Graphviz dot or Mermaid",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadRead(args[0], confs)
			if err != nil {
				return err
			}
			g, err := p.Graph()
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			switch format {
			case "text":
				fmt.Fprint(out, g.Text())
			case "dot":
				fmt.Fprint(out, g.DOT())
			case "mermaid":
				fmt.Fprint(out, g.Mermaid())
			default:
				return usageError(fmt.Errorf("--format %q: use text, dot or mermaid", format))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&format, "format", "text", "text, dot or mermaid")
	return cmd
}
