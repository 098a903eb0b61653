package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tributary/delta"
	"tributary/flows"
	"tributary/spec"
)

func newVacuumCmd() *cobra.Command {
	var confs []string
	var retain string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "vacuum SPEC [DATASET] [--retain DURATION] [--dry-run]",
		Short: "Delete files no version within the retention window needs (default: the table's delta.deletedFileRetentionDuration, 7 days)",
		Args:  specAndDataset,
		RunE: func(cmd *cobra.Command, args []string) error {
			keep := time.Duration(-1)
			if cmd.Flags().Changed("retain") {
				d, err := delta.ParseInterval(retain)
				if err != nil {
					return usageError(fmt.Errorf("--retain: %w", err))
				}
				keep = d
			}
			p, tables, release, err := openMaintenance(args, confs, "vacuum")
			if err != nil {
				return err
			}
			defer release()
			return vacuum(cmd.OutOrStdout(), p, tables, keep, dryRun)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&retain, "retain", "", "keep every version of this last period readable: 168h, 7d, \"interval 7 days\" (at least the table's delta.deletedFileRetentionDuration)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the files that would be deleted, delete nothing")
	return cmd
}

// vacuum runs VACUUM on each table and prints what it deleted (or would delete). A table that a
// flow of the pipeline reads (APPLY CHANGES, or APPLY CHANGES FROM SNAPSHOT of a dataset) keeps
// the files of the versions that flow has not read yet.
func vacuum(w io.Writer, p *spec.Pipeline, tables []maintained, retain time.Duration, dryRun bool) error {
	// A retention too short for the named table refuses the command; without a name, the tables
	// it is too short for are skipped (each says so) and the others vacuumed.
	var short []error
	skip := map[string]string{}
	for _, m := range tables {
		snap, err := m.table.Snapshot(-1)
		if err != nil {
			return failure(fmt.Errorf("%s: %w", m.name, err))
		}
		min, err := snap.Metadata.DeletedFileRetention()
		if err != nil {
			return failure(fmt.Errorf("%s: %w", m.name, err))
		}
		pending := pendingRetention(p, m, min)
		if retain >= 0 && retain < min && len(tables) > 1 {
			skip[m.name] = fmt.Sprintf("--retain %s is shorter than its delta.deletedFileRetentionDuration (%s)%s", days(retain), days(min), pending)
		} else if retain >= 0 && retain < min && pending != "" {
			short = append(short, fmt.Errorf("%s: --retain %s is shorter than its delta.deletedFileRetentionDuration (%s)%s", m.name, days(retain), days(min), pending))
		} else if retain >= 0 && retain < min {
			short = append(short, fmt.Errorf("%s: --retain %s is shorter than its delta.deletedFileRetentionDuration (%s): versions a reader may still use would lose files; lower the property with table_properties (e.g. delta.deletedFileRetentionDuration: \"interval 1 hour\") to allow it", m.name, days(retain), days(min)))
		}
	}
	if len(skip) == len(tables) {
		for _, m := range tables {
			short = append(short, fmt.Errorf("%s: %s", m.name, skip[m.name]))
		}
		short = append(short, errors.New("lower delta.deletedFileRetentionDuration with the datasets' table_properties to vacuum with a shorter retention"))
	}
	if len(short) > 0 {
		return usageError(errors.Join(short...))
	}
	var errs []error
	for _, m := range tables {
		if why, ok := skip[m.name]; ok {
			fmt.Fprintf(w, "%s: skipped: %s\n", m.name, why)
			continue
		}
		opts := delta.VacuumOptions{Retain: retain, DryRun: dryRun, KeepFromVersion: -1}
		if m.dataset != nil {
			from, err := flows.UnreadFrom(p, m.dataset.Name)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
				continue
			}
			opts.KeepFromVersion = from
		}
		res, err := m.table.Vacuum(opts)
		if errors.Is(err, delta.ErrRetentionTooShort) {
			return usageError(fmt.Errorf("%s: %w", m.name, err))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
			continue
		}
		verb := "deleted"
		if dryRun {
			verb = "would delete"
		}
		fmt.Fprintf(w, "%s: %s %d files (%s) that no version of the last %s needs\n", m.name, verb, len(res.Files), byteSize(res.Bytes), days(res.Retain))
		if dryRun {
			for _, f := range res.Files {
				fmt.Fprintf(w, "  %s\n", f)
			}
		}
	}
	if len(errs) > 0 {
		return failure(errors.Join(errs...))
	}
	return nil
}

// pendingRetention says, when the spec's table_properties give m's dataset another
// delta.deletedFileRetentionDuration than its table has (current), that the next update sets it:
// table properties reach a table with its next commit, and VACUUM goes by the table's.
func pendingRetention(p *spec.Pipeline, m maintained, current time.Duration) string {
	if m.dataset == nil {
		return ""
	}
	v, ok := m.dataset.TableProperties[delta.ConfigDeletedFileRetention]
	if !ok {
		return ""
	}
	if d, err := delta.ParseInterval(v); err != nil || d == current {
		return ""
	}
	return fmt.Sprintf("; the spec sets it to %q, which the table takes with the next update: run %s first", v, flows.RunHint(p))
}

// days writes a retention for people: "7 days", "36h", "1h30m", "0s".
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		if d == 24*time.Hour {
			return "1 day"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	// 1h0m0s reads 1h, 1h30m0s 1h30m, as --retain takes them.
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}
