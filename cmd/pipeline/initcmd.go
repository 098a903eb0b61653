package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// template is what `pipeline init` writes: the shop-orders example (examples/pipelines/orders_cdc,
// which TestInitTemplateIsTheExample keeps it equal to), a spec and its four change files.
//
//go:embed template
var template embed.FS

func newInitCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "init DIR",
		Short: "Write a new runnable pipeline with sample data into DIR: the shop-orders example",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return initPipeline(cmd.OutOrStdout(), args[0])
		},
	}
}

// initPipeline writes the template into dir, which must not exist or be empty (nothing is
// overwritten), and says how to run it.
func initPipeline(w io.Writer, dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return usageError(fmt.Errorf("init: %s is a file; give a new folder (nothing was written)", dir))
	}
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return usageError(fmt.Errorf("init: %s is not empty; give a new folder (nothing was written)", dir))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return failure(fmt.Errorf("init: %w", err))
	}
	err = fs.WalkDir(template, "template", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel("template", path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := template.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		return failure(fmt.Errorf("init: writing %s: %w", dir, err))
	}
	spec := filepath.Join(dir, "pipeline.yaml")
	fmt.Fprintf(w, "wrote a pipeline to %s: pipeline.yaml and four change files in landing/\n", dir)
	// The command as it was invoked (bin/pipeline, say), so that the lines run as printed.
	self := "pipeline"
	if len(os.Args) > 0 && strings.ContainsRune(os.Args[0], filepath.Separator) {
		self = os.Args[0]
	}
	fmt.Fprintf(w, "run it:     %s run %s\n", self, spec)
	fmt.Fprintf(w, "read it:    %s show %s orders\n", self, spec)
	fmt.Fprintf(w, "its feed:   %s changes %s orders --from-version 0\n", self, spec)
	return nil
}
