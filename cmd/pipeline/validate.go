package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tributary/spec"
	"tributary/sqlengine"
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
			p, err := load(args[0], confs)
			if err == nil {
				err = checkSQL(p)
			}
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

// checkSQL parses the query of each SQL dataset of p with DuckDB's parser (sqlengine.Syntax):
// a query that does not parse is a spec error (exit 2) at its place in the spec, found before
// an update runs anything rather than when its flow's turn comes. What the parser cannot see
// (a column or a function that does not exist) is left to the run.
func checkSQL(p *spec.Pipeline) error {
	var queries []*spec.Query
	var texts []string
	for _, d := range p.Datasets {
		if d.Query != nil {
			queries, texts = append(queries, d.Query), append(texts, d.Query.SQL)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	bad, err := sqlengine.Syntax(texts)
	if err != nil {
		return failure(err)
	}
	var list spec.Errors
	for i, q := range queries {
		se, ok := bad[i]
		if !ok {
			continue
		}
		off := se.Offset
		if end := len(strings.TrimRight(q.SQL, " \t\r\n")); off > end {
			off = end // "at end of input": where the text ends, not past its last line break
		}
		list = append(list, &spec.Error{Pos: q.PosAt(off), Path: q.Path, Msg: "the SQL does not parse: " + se.Message,
			Hint: "queries are DuckDB SQL (README \"SQL datasets\")"})
	}
	if len(list) == 0 {
		return nil
	}
	return usageError(list)
}
