package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"tributary/delta"
	"tributary/flows"
	"tributary/spec"
	"tributary/update"
)

// maintained is one table a maintenance command works on: a dataset's table, or the event log.
type maintained struct {
	name    string // the dataset, "event log", or the folder of a postgres source's dropped changes
	table   *delta.Table
	dataset *spec.Dataset // nil for the event log, a quarantine table and dropped changes
	// vacuumOnly: the dropped changes of a postgres source, which its flow compacts itself
	// (keeping the latest row of each key, which needs the source's primary key): OPTIMIZE
	// leaves them alone.
	vacuumOnly bool
}

// maintainedTables lists the tables of p that exist, in spec order (each dataset's, then its
// quarantine table and, for a postgres source, its dropped changes), then the event log; or,
// when name is given, that dataset's table alone (an unknown dataset is a usage error, a table
// never created a failure).
func maintainedTables(p *spec.Pipeline, name string) ([]maintained, error) {
	if name != "" {
		t, err := datasetTable(p, name)
		if err != nil {
			return nil, err
		}
		return []maintained{{name: name, table: t, dataset: p.Dataset(name)}}, nil
	}
	var out []maintained
	for _, d := range p.Datasets {
		t := delta.New(flows.TableDir(p.Storage, d.Name))
		if v, err := t.LatestVersion(); err != nil {
			return nil, failure(err)
		} else if v >= 0 {
			out = append(out, maintained{name: d.Name, table: t, dataset: d})
		}
		if q := d.Name + spec.QuarantineSuffix; d.Quarantines() {
			if qt := delta.New(flows.TableDir(p.Storage, q)); latest(qt) >= 0 {
				out = append(out, maintained{name: q, table: qt}) // its quarantine table
			}
		}
		if d.Source != nil && d.Source.Format == spec.FormatPostgres {
			if dt := delta.New(flows.PostgresDroppedDir(p.Storage, d.Name)); latest(dt) >= 0 {
				out = append(out, maintained{name: filepath.ToSlash(filepath.Join("system", "postgres_dropped", d.Name)), table: dt, vacuumOnly: true})
			}
		}
	}
	events := delta.New(filepath.Join(p.Storage, "system", "events"))
	if v, err := events.LatestVersion(); err != nil {
		return nil, failure(err)
	} else if v >= 0 {
		out = append(out, maintained{name: "event log", table: events})
	}
	if len(out) == 0 {
		return nil, failure(fmt.Errorf("pipeline %s has no table yet at %s: run %s first", p.Name, p.Storage, flows.RunHint(p)))
	}
	return out, nil
}

// specAndDataset is the positional arguments of a maintenance command: SPEC [DATASET].
func specAndDataset(cmd *cobra.Command, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError(fmt.Errorf("accepts 1 or 2 arguments, received %d; usage: %s", len(args), cmd.UseLine()))
	}
	return nil
}

// openMaintenance loads the spec, lists the tables a maintenance command works on (the dataset
// args[1], or all) and takes the storage lock; the caller releases it.
func openMaintenance(args, confs []string, what string) (*spec.Pipeline, []maintained, func(), error) {
	p, err := loadRead(args[0], confs) // a postgres source's connection is not needed: nothing connects
	if err != nil {
		return nil, nil, nil, err
	}
	name := ""
	if len(args) == 2 {
		name = datasetName(p, args[1])
	}
	tables, err := maintainedTables(p, name)
	if err != nil {
		return nil, nil, nil, err
	}
	release, err := lockStorage(p, what)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, tables, release, nil
}

// lockStorage takes the storage lock for a maintenance command; a running update is a failure
// that names it.
func lockStorage(p *spec.Pipeline, what string) (func(), error) {
	release, err := update.Lock(p, what)
	if err != nil {
		if errors.Is(err, update.ErrLocked) {
			return nil, failure(fmt.Errorf("%w; %s runs between updates", err, what))
		}
		return nil, failure(err)
	}
	return release, nil
}

func newOptimizeCmd() *cobra.Command {
	var confs []string
	cmd := &cobra.Command{
		Use:   "optimize SPEC [DATASET]",
		Short: "Compact small files of the tables (every dataset and the event log, or DATASET) without changing data",
		Args:  specAndDataset,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, tables, release, err := openMaintenance(args, confs, "optimize")
			if err != nil {
				return err
			}
			defer release()
			return optimize(cmd.OutOrStdout(), tables, len(args) == 2)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	return cmd
}

// optimize runs OPTIMIZE on each table and prints one line per table.
func optimize(w io.Writer, tables []maintained, named bool) error {
	var errs []error
	for _, m := range tables {
		if m.vacuumOnly {
			continue
		}
		res, err := m.table.Optimize(delta.OptimizeOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
			continue
		}
		if res.Version < 0 {
			fmt.Fprintf(w, "%s: nothing to compact\n", m.name)
			continue
		}
		fmt.Fprintf(w, "%s: compacted %d files (%s) into %d (%s) at version %d; the data is unchanged\n",
			m.name, res.FilesRemoved, byteSize(res.BytesRemoved), res.FilesAdded, byteSize(res.BytesAdded), res.Version)
	}
	if len(errs) > 0 {
		return failure(errors.Join(errs...))
	}
	return nil
}

// byteSize writes a size for people: 950 B, 12.3 KiB, 4.0 MiB.
func byteSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// latest returns t's latest version, or -1 when it has none or cannot be read.
func latest(t *delta.Table) int64 {
	v, err := t.LatestVersion()
	if err != nil {
		return -1
	}
	return v
}
