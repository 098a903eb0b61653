package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"tributary/delta"
	"tributary/flows"
	"tributary/internal/suggest"
	"tributary/schema"
	"tributary/spec"
	"tributary/update"
)

func newShowCmd() *cobra.Command {
	var confs []string
	var format string
	var version int64
	var timestamp string
	var limit int
	cmd := &cobra.Command{
		Use:   "show SPEC DATASET",
		Short: "Print a dataset's rows (the current version, --version N or --timestamp T)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("version") && cmd.Flags().Changed("timestamp") {
				return usageError(errors.New("--version and --timestamp choose the same thing; give one of them"))
			}
			if cmd.Flags().Changed("limit") && limit < 0 {
				return usageError(fmt.Errorf("--limit %d: give a number of rows, 0 or more", limit))
			}
			if cmd.Flags().Changed("version") && version < 0 {
				return usageError(fmt.Errorf("--version %d: table versions start at 0", version))
			}
			var at schema.Timestamp
			if cmd.Flags().Changed("timestamp") {
				var err error
				if at, err = schema.ParseTimestamp(timestamp); err != nil {
					return usageError(fmt.Errorf("--timestamp: %w (a date alone means its midnight UTC)", err))
				}
			}
			p, err := loadStored(cmd.ErrOrStderr(), args[0], confs)
			if err != nil {
				return err
			}
			args[1] = datasetName(p, args[1])
			t, err := datasetTable(p, args[1])
			if err != nil {
				return err
			}
			noteOtherWriters(cmd.ErrOrStderr(), p, args[1])
			if cmd.Flags().Changed("timestamp") {
				// TIMESTAMP AS OF: the newest version committed at or before the time.
				if version, err = t.VersionAsOf(int64(at) / 1000); err != nil {
					return failure(err)
				}
			}
			snap, err := t.Snapshot(version)
			if err != nil {
				return failure(err)
			}
			rows, err := t.Rows(snap)
			if errors.Is(err, fs.ErrNotExist) {
				return failure(fmt.Errorf("version %d of %s needs a data file that is gone (VACUUM deletes the files that only versions older than the retention need, %s); read a later version (`pipeline history` lists them): %w", snap.Version, args[1], delta.ConfigDeletedFileRetention, err))
			}
			if err != nil {
				return failure(err)
			}
			total := len(rows)
			if limit >= 0 && len(rows) > limit {
				rows = rows[:limit]
			}
			if err := writeRows(cmd.OutOrStdout(), format, snap.Metadata.Schema, rows); err != nil {
				return err
			}
			if format == "table" && total > len(rows) {
				// "(1 row(s))" alone would read as the table's size.
				fmt.Fprintf(cmd.OutOrStdout(), "(--limit %d: the table has %d rows)\n", limit, total)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&format, "format", "table", "table, jsonl or csv")
	cmd.Flags().Int64Var(&version, "version", -1, "read table version `N` instead of the latest")
	cmd.Flags().StringVar(&timestamp, "timestamp", "", "read the version current at time `T` (RFC 3339, e.g. 2024-01-31T10:00:00Z; see pipeline history)")
	cmd.Flags().IntVar(&limit, "limit", -1, "print at most `N` rows (default: all)")
	hideDefault(cmd, "version", "limit")
	return cmd
}

// datasetName returns the name p gives the dataset (or quarantine table) a command names: name
// itself, or the one name differs from only in case (names are unique regardless of case, and a
// query may spell them in any case); name itself when there is none, for the caller's error.
func datasetName(p *spec.Pipeline, name string) string {
	if p.Dataset(name) != nil || p.QuarantineOf(name) != nil {
		return name
	}
	for _, d := range p.Datasets {
		if strings.EqualFold(d.Name, name) {
			return d.Name
		}
		if q := d.Name + spec.QuarantineSuffix; d.Quarantines() && strings.EqualFold(q, name) {
			return q
		}
	}
	return name
}

// unknownDataset says that p has no dataset name, with the closest names and the list of datasets.
func unknownDataset(p *spec.Pipeline, name string) string {
	names := make([]string, len(p.Datasets))
	for i, d := range p.Datasets {
		names[i] = d.Name
	}
	msg := fmt.Sprintf("pipeline %s has no dataset %q", p.Name, name)
	if best := suggest.Closest(name, names); len(best) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", best[0])
	}
	return msg + " (datasets: " + strings.Join(names, ", ") + ")"
}

// datasetTable returns the Delta table of a dataset of the spec; an unknown dataset is a usage
// error, a dataset never run is a failure that says to run the pipeline first.
func datasetTable(p *spec.Pipeline, name string) (*delta.Table, error) {
	if p.Dataset(name) == nil && p.QuarantineOf(name) == nil {
		return nil, usageError(errors.New(unknownDataset(p, name)))
	}
	if d := p.Dataset(name); d.FileView() {
		readers := "no dataset reads it yet"
		if r := viewReaders(p, name); len(r) > 0 {
			readers = "the datasets that read it have one: " + strings.Join(r, ", ")
		}
		return nil, usageError(fmt.Errorf("dataset %s is a view over files: it is not stored, so it has no table (rows, versions, changes or files); %s. To keep its rows in a table of its own, make it a streaming_table (remove `type: view`)", name, readers))
	}
	if d := p.Dataset(name); d != nil && d.Type == spec.View {
		return nil, usageError(fmt.Errorf("dataset %s is a view: it is not stored, so it has no table (rows, versions, changes or files); its query runs inside the queries that read it. To keep its rows in a table, make it a materialized_view", name))
	}
	t := delta.New(flows.TableDir(p.Storage, name))
	if _, err := t.LatestVersion(); err != nil {
		return nil, failure(err)
	}
	if v, _ := t.LatestVersion(); v < 0 {
		return nil, failure(fmt.Errorf("dataset %s has no table yet at %s: run %s first", name, t.Dir, flows.RunHint(p)))
	}
	return t, nil
}

// noteOtherWriters tells w when the table of dataset name was written by pipelines other than
// p (update.OtherWriters): a read command shows their rows all the same, and says whose they are,
// since `pipeline run` with this spec would refuse to write to that table.
func noteOtherWriters(w io.Writer, p *spec.Pipeline, name string) {
	others := update.OtherWriters(p, name)
	if len(others) == 0 {
		return
	}
	fmt.Fprintf(w, "pipeline: note: the table of %s in the storage %s was written by pipeline %s, and this spec names pipeline %s: what follows is %s's table. `pipeline run` with this spec refuses to write to it; keep the name %s, or give this spec a storage of its own\n",
		name, p.Storage, strings.Join(others, ", "), p.Name, others[0], others[0])
}

// changesTable returns the table whose change data feed `pipeline changes` prints for a dataset:
// its own table, or, for a dataset that reads the change data feed of a Delta table (`source:`
// with `format: delta` and `read: change_feed`), that Delta table: the dataset holds the feed's
// rows itself and has no feed of its own (its columns include the feed's reserved names).
func changesTable(p *spec.Pipeline, name string) (*delta.Table, error) {
	if d := p.Dataset(name); d != nil && d.Source != nil && d.Source.Format == spec.FormatDelta && d.Source.Read == spec.ReadChangeFeed {
		return delta.New(d.Source.Path), nil
	}
	return datasetTable(p, name)
}

// viewReaders returns the datasets whose APPLY CHANGES flow reads the view over files view.
func viewReaders(p *spec.Pipeline, view string) []string {
	var out []string
	for _, r := range p.Datasets {
		if r.ApplyChanges != nil && r.ApplyChanges.Source == view {
			out = append(out, r.Name)
		}
	}
	return out
}

// hideDefault keeps the help of cmd from printing "(default -1)" for the named integer flags,
// whose -1 only marks "not given" (the command reads cmd.Flags().Changed): their usage says what
// the default is in words.
func hideDefault(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		cmd.Flags().Lookup(n).DefValue = "0"
	}
}
