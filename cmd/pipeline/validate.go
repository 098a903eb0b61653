package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

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
					return validateJSON(out, args[0], err)
				}
				return err
			}
			if asJSON {
				fmt.Fprintln(out, "[]")
				return nil
			}
			fmt.Fprintf(out, "%s: pipeline %s is valid: %d dataset(s)\n", p.File, p.Name, len(p.Datasets))
			for _, n := range append(missingSources(p), checkedAtRun(p)...) {
				fmt.Fprintln(out, n)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the problems as a JSON array")
	return cmd
}

// validateJSON prints the problems of err, the error of loading the spec at path, as the JSON
// array of `validate --json`: a spec.Errors as it is, any other error (a --conf that is not
// key=value) as one problem of the spec. The error returned keeps err's exit status and is not
// printed again on stderr, which tells only of a failure to write the JSON.
func validateJSON(out io.Writer, path string, err error) error {
	var list spec.Errors
	if !errors.As(err, &list) {
		list = spec.Errors{{Pos: spec.Pos{File: path}, Msg: err.Error()}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // hints hold `>=` and `!=` as written
	enc.SetIndent("", "  ")
	if merr := enc.Encode(list); merr != nil {
		return failure(fmt.Errorf("writing the problems as JSON: %w", merr))
	}
	if _, werr := out.Write(b.Bytes()); werr != nil {
		return failure(fmt.Errorf("writing the problems as JSON: %w", werr))
	}
	code := 2
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	return &exitError{code: code, err: err, said: true}
}

// missingSources returns a note for each source path of p (a folder or file, not a glob, which
// may match nothing yet) that does not exist: the spec is valid, as a landing folder may be made
// after it, but `pipeline run` fails until it exists (flows.listInputs), which validate, reading
// no data, would otherwise not say.
func missingSources(p *spec.Pipeline) []string {
	var notes []string
	for _, d := range p.Datasets {
		src := d.Source
		if src == nil || src.Format == spec.FormatPostgres || src.Path == "" || strings.ContainsAny(src.Path, "*?[{") {
			continue
		}
		if _, err := os.Stat(src.Path); errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("%s: note: dataset %s: source path %s does not exist yet; `pipeline run` fails until it does: create it, or fix source.path (a relative path is resolved against the spec's folder)", src.Pos, d.Name, src.Path))
		}
	}
	return notes
}

// checkedAtRun returns a note for each APPLY CHANGES target of p whose source infers its schema
// (spec.Dataset.SchemaAtRun): validate, reading no data, leaves the checks of its flow against
// the source's columns to the update that infers them. One reading a query streaming table is
// checked against the columns its query binds to (flows.CheckQueries).
func checkedAtRun(p *spec.Pipeline) []string {
	var notes []string
	for _, d := range p.Datasets {
		if !d.SchemaAtRun() {
			continue
		}
		src := d.ApplyChanges.Source
		if s := p.Dataset(src); s != nil && s.Query != nil {
			continue // checked against the columns its query binds to (flows.CheckQueries)
		}
		notes = append(notes, fmt.Sprintf("%s: note: dataset %s: its keys, sequence_by and column lists are checked against the columns of dataset %s when an update infers them (%s declares no `schema:`)", d.ApplyChanges.Pos, d.Name, src, src))
	}
	return notes
}
