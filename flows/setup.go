package flows

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// ErrSchemaChanged is returned (wrapped) by Setup when a table's schema differs from the spec's.
var ErrSchemaChanged = errors.New("the schema changed")

// resetAllowedProperty is the table property that, set to "false", turns a full refresh of the
// table into a normal update (update.ResetAllowedProperty).
const resetAllowedProperty = "pipelines.reset.allowed"

// RefreshHint returns the command that fully refreshes the named datasets of p, with the
// `--conf` values p was loaded with (spec.Pipeline.Overrides), so that it refreshes the same
// storage from the same input. When some of them set pipelines.reset.allowed to "false", which
// makes their full refresh a normal update, the hint says to set it to "true" first: the command
// alone would not rebuild them.
func RefreshHint(p *spec.Pipeline, names ...string) string {
	hint := "`pipeline run " + shellWord(p.File) + " --full-refresh " + strings.Join(names, ",") + confArgs(p) + "`"
	var denied []string
	for _, name := range names {
		if d := p.Dataset(name); d != nil && strings.EqualFold(d.TableProperties[resetAllowedProperty], "false") {
			denied = append(denied, name)
		}
	}
	if len(denied) > 0 {
		hint += fmt.Sprintf(" (after setting %s to \"true\" in the table_properties of %s, whose full refresh it otherwise makes a normal update)", resetAllowedProperty, strings.Join(denied, ", "))
	}
	return hint
}

// RefreshWithReaders is RefreshHint for dataset name and every dataset that reads it, directly
// or through others: a table rebuilt from scratch is a new source to its readers, which must be
// rebuilt from it too.
func RefreshWithReaders(p *spec.Pipeline, name string) string {
	names := []string{name}
	if g, err := p.Graph(); err == nil {
		names = append(names, g.Descendants(name)...)
	}
	return RefreshHint(p, names...)
}

// RunHint returns the command that runs an update of p, with the `--conf` values p was loaded
// with (spec.Pipeline.Overrides), so that it writes the storage the command that gives the hint
// read (a `--conf storage=...` left out would run the spec's own storage instead).
func RunHint(p *spec.Pipeline) string {
	return "`pipeline run " + shellWord(p.File) + confArgs(p) + "`"
}

// EventsHint is the command that prints the event log of p with args (such as "--level WARN")
// after the spec, in backquotes as RunHint writes it.
func EventsHint(p *spec.Pipeline, args string) string {
	return "`pipeline events " + shellWord(p.File) + confArgs(p) + " " + args + "`"
}

// confArgs writes the `--conf` values p was loaded with as command-line arguments, each after a
// space, in key order.
func confArgs(p *spec.Pipeline) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p.Overrides)) {
		b.WriteString(" --conf " + shellWord(k+"="+p.Overrides[k]))
	}
	return b.String()
}

// shellWord returns s as one word of a POSIX shell command: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Reset removes everything a full refresh rebuilds for dataset d: its table, its ingest
// checkpoint and its APPLY CHANGES state (semantics.md "Refresh"). A postgres source that has
// committed a batch keeps its replication slot's marker (pgSlotMarker), written now if it is not
// there yet, so that its next run replaces the slot. The caller holds the lock.
func Reset(p *spec.Pipeline, d *spec.Dataset) error {
	if d.Source != nil && d.Source.Postgres != nil {
		// A postgres source that has committed a batch has read its slot: the storage owns it
		// (pgSlotMarker), which a storage from before the markers does not say yet, and the
		// refreshed source's first run replaces it.
		if snap, err := delta.New(TableDir(p.Storage, d.Name)).Snapshot(-1); err == nil {
			if _, started := snap.AppTxns[AppID(p, d.Name)]; started {
				slot, _ := PostgresNames(p, d)
				if err := markSlot(pgSlotMarker(p.Storage, slot)); err != nil {
					return fmt.Errorf("full refresh of %s: %w", d.Name, err)
				}
			}
		}
	}
	for _, dir := range []string{TableDir(p.Storage, d.Name), TableDir(p.Storage, d.Name+spec.QuarantineSuffix), CheckpointDir(p.Storage, d.Name), StateDir(p.Storage, d.Name)} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("full refresh of %s: %w", d.Name, err)
		}
	}
	stateCache.Delete(StateDir(p.Storage, d.Name))
	return nil
}

// Setup creates the dataset's Delta table when it does not exist yet (version 0: protocol,
// metadata with the dataset's schema and table properties, change data feed on), and checks that
// an existing table still has the schema the spec declares (an error wrapping ErrSchemaChanged).
// A source whose schema is inferred gets it first (the table's, or inferred from its files), an
// APPLY CHANGES target of one gets its columns from it then (spec.Dataset.ResolveSchema: a
// spec.Errors when the flow does not fit them), and a dataset with quarantine expectations gets
// its quarantine table. A query dataset's table is
// created by its first commit, when the query's columns are known (setupQuery).
func Setup(p *spec.Pipeline, d *spec.Dataset) error {
	return setup(p, d, false)
}

// setup is Setup; atRun: made by d's flow (setupAtRun), not by the update's set-up, which runs
// alone.
func setup(p *spec.Pipeline, d *spec.Dataset, atRun bool) error {
	if d.FileView() {
		return nil // not stored: the flows that read it read its files
	}
	if d.Query != nil {
		return setupQuery(p, d)
	}
	if err := resolveInferred(p, d); err != nil {
		return err
	}
	// An APPLY CHANGES target of a source whose schema is inferred is checked against the
	// source's columns now that its set-up, before this one, has inferred them; one of a query
	// streaming table, against its table's columns once its query has made it (until then, the
	// target is set up by its flow, which runs after the query's: setupAtRun).
	if d.SchemaAtRun() {
		if known, err := querySourceColumns(p, d, !atRun); err != nil || !known {
			return err
		}
		if err := d.ResolveSchema(); err != nil {
			return err
		}
	}
	if err := setupQuarantine(p, d); err != nil {
		return err
	}
	t := delta.New(TableDir(p.Storage, d.Name))
	snap, err := t.Snapshot(-1)
	if err == nil {
		if err := viewResult(p, d, t, snap); err != nil {
			return err
		}
		partitioned := !slices.Equal(snap.Metadata.PartitionColumns, d.PartitionBy) && (len(snap.Metadata.PartitionColumns) > 0 || len(d.PartitionBy) > 0)
		if (!snap.Metadata.Schema.Equal(d.Schema) || partitioned) && len(snap.Files) == 0 && len(snap.AppTxns) == 0 {
			// The table never held a row nor recorded progress (its first update failed before
			// its first batch committed, say): it takes the spec's schema now, as a new table
			// would, with no full refresh to run.
			m := snap.Metadata
			m.Schema, m.PartitionColumns = d.Schema, d.PartitionBy
			tx := t.Begin(snap)
			tx.SetMetadata(m)
			if _, err := tx.Commit("REPLACE TABLE", map[string]any{"isManaged": "true", "description": d.Comment}); err != nil {
				return fmt.Errorf("dataset %s: %w", d.Name, err)
			}
			if snap, err = t.Snapshot(-1); err != nil {
				return err
			}
			return setProperties(t, snap, d)
		}
		if !snap.Metadata.Schema.Equal(d.Schema) {
			// A Delta source's columns are its table's, read when the spec is: that table
			// changed, not the spec.
			gives := "the spec now gives"
			if d.Source != nil && d.Source.Format == spec.FormatDelta {
				gives = "its source table " + d.Source.Path + " now has"
			}
			if d.SchemaAtRun() {
				// The columns of a source whose schema is inferred evolve with its files, and
				// those of a query streaming table with its query.
				gives = "the columns inferred for its source " + d.ApplyChanges.Source + " now give"
				if src := p.Dataset(d.ApplyChanges.Source); src != nil && src.Query != nil {
					gives = "the columns of its source " + d.ApplyChanges.Source + " (its query's) now give"
				}
			}
			return fmt.Errorf("dataset %s: %w (%s): the table has (%s) but %s (%s)",
				d.Name, ErrSchemaChanged, schemaDiff(snap.Metadata.Schema, d.Schema), snap.Metadata.Schema.DDL(), gives, d.Schema.DDL())
		}
		if partitioned {
			return fmt.Errorf("dataset %s: %w: the table is partitioned by [%s] but the spec now gives partition_by [%s]",
				d.Name, ErrSchemaChanged, strings.Join(snap.Metadata.PartitionColumns, ", "), strings.Join(d.PartitionBy, ", "))
		}
		return setProperties(t, snap, d)
	}
	if !errors.Is(err, delta.ErrNoTable) {
		return err
	}
	conf := map[string]string{"delta.enableChangeDataFeed": "true"}
	if d.Source != nil && d.Source.Read == spec.ReadChangeFeed {
		// The rows carry _change_type, _commit_version and _commit_timestamp, the names a
		// change data feed reserves: the table cannot have one (as in Delta).
		conf["delta.enableChangeDataFeed"] = "false"
	}
	for k, v := range d.TableProperties {
		conf[k] = v
	}
	tx := t.Begin(nil)
	tx.SetMetadata(delta.Metadata{Name: d.Name, Description: d.Comment, Schema: d.Schema, PartitionColumns: d.PartitionBy, Configuration: conf})
	if _, err := tx.Commit("CREATE TABLE", map[string]any{"isManaged": "true", "description": d.Comment}); err != nil && !errors.Is(err, delta.ErrConflict) {
		return err
	}
	return nil
}

// replaceOperation is the commit operation of a materialized view's result, which replaces
// every row of its table.
const replaceOperation = "CREATE OR REPLACE TABLE AS SELECT"

// viewResult refuses a table that d's flow would append to (any flow but a materialized
// view's) when the table holds a materialized view's result: d was a materialized view of
// this name, and its flow keeps no progress there, so it would add every row of its input to
// that result. As Delta Live Tables refuses to change a table's type in place, the error names
// the full refresh that rebuilds the table as d.
func viewResult(p *spec.Pipeline, d *spec.Dataset, t *delta.Table, snap *delta.Snapshot) error {
	if d.Type == spec.MaterializedView || d.Type == spec.View {
		return nil
	}
	own := AppID(p, d.Name)
	for id := range snap.AppTxns {
		if id == own || strings.HasPrefix(id, own+":") {
			return nil // d's flow has committed here
		}
	}
	for v := snap.Version; v >= 0; v-- {
		c, err := t.ReadCommit(v)
		if err != nil {
			return nil // the log before v is gone: nothing more to tell
		}
		if c.Info.Operation == replaceOperation {
			return fmt.Errorf("dataset %s is a %s, but its table holds the result of a materialized view of that name (version %d of %s): its flow would add its rows to that result; run %s to rebuild the table as a %s",
				d.Name, d.Type, v, t.Dir, RefreshHint(p, d.Name), d.Type)
		}
	}
	return nil
}

// setProperties brings the table properties of an existing table in line with the spec's
// `table_properties:` (a SET TBLPROPERTIES commit when one differs); properties the spec does not
// name are left as they are.
func setProperties(t *delta.Table, snap *delta.Snapshot, d *spec.Dataset) error {
	var changed []string
	for k, v := range d.TableProperties {
		if old, ok := snap.Metadata.Configuration[k]; !ok || old != v {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed)
	m := snap.Metadata
	m.Configuration = maps.Clone(m.Configuration)
	props := map[string]string{}
	for _, k := range changed {
		m.Configuration[k] = d.TableProperties[k]
		props[k] = d.TableProperties[k]
	}
	tx := t.Begin(snap)
	tx.SetMetadata(m)
	if _, err := tx.Commit("SET TBLPROPERTIES", map[string]any{"properties": props}); err != nil {
		return fmt.Errorf("dataset %s: setting table properties %s: %w", d.Name, strings.Join(changed, ", "), err)
	}
	return nil
}

// Run runs the flow that fills dataset d.
func Run(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	switch {
	case d.FileView():
		return Metrics{Version: -1}, nil // read by the APPLY CHANGES flows that name it (ApplyChanges)
	case d.Query != nil:
		return Query(ctx, env, d)
	case d.ApplyChanges != nil:
		return ApplyChanges(ctx, env, d)
	case d.ApplyChangesFromSnapshot != nil:
		return ApplySnapshots(ctx, env, d)
	case d.Source != nil && d.Source.Format == spec.FormatDelta:
		return ReadDelta(ctx, env, d)
	case d.Source != nil && d.Source.Format == spec.FormatPostgres:
		return ReadPostgres(ctx, env, d)
	case d.Source != nil:
		return Ingest(ctx, env, d)
	}
	return Metrics{Version: -1}, fmt.Errorf("dataset %s has no flow this release can run", d.Name)
}

// schemaDiff names what differs between a table's schema and the spec's, column by column:
// "column tags ARRAY<STRING> is now ARRAY<INT>; column note is new; column x is gone"; columns
// in another order, or differing only in nullability, read "the columns are in another order".
func schemaDiff(table, spec schema.Schema) string {
	var parts []string
	for _, f := range table.Fields {
		switch i := spec.Index(f.Name); {
		case i < 0:
			parts = append(parts, fmt.Sprintf("column %s is gone", f.Name))
		case !spec.Fields[i].Type.Equal(f.Type):
			parts = append(parts, fmt.Sprintf("column %s %s is now %s", f.Name, f.Type.DDL(), spec.Fields[i].Type.DDL()))
		}
	}
	for _, f := range spec.Fields {
		if table.Index(f.Name) < 0 {
			parts = append(parts, fmt.Sprintf("column %s is new", f.Name))
		}
	}
	if len(parts) == 0 {
		return "the columns are in another order"
	}
	return strings.Join(parts, "; ")
}

// atRunSetup serializes the set-ups that flows make (setupAtRun), which may run at once, since
// they fill the columns of the dataset they read (querySourceColumns) and check their own
// against them (spec.Dataset.ResolveSchema).
var atRunSetup sync.Mutex

// setupAtRun sets up d, an APPLY CHANGES target whose columns are known only when an update runs
// (spec.Dataset.SchemaAtRun), if the update's set-up could not: its source is a query streaming
// table whose query had not made its table then (its first update), and has run since. It
// reports whether d has its columns: false when the query has made no table yet.
func setupAtRun(p *spec.Pipeline, d *spec.Dataset) (bool, error) {
	atRunSetup.Lock()
	defer atRunSetup.Unlock()
	if len(d.Schema.Fields) > 0 {
		return true, nil
	}
	if err := setup(p, d, true); err != nil {
		if errors.Is(err, ErrSchemaChanged) {
			// The update's set-up, which names the full refresh of such a change, ran before.
			err = fmt.Errorf("%w; run %s", err, RefreshWithReaders(p, d.Name))
		}
		return false, err
	}
	return len(d.Schema.Fields) > 0, nil
}

// querySourceColumns fills the columns of the source of d, an APPLY CHANGES target, when it is a
// query streaming table (whose Schema the spec leaves empty) from its table, as its query made
// it: always at the update's set-up (refresh), which runs alone, and only when not filled yet
// otherwise (setupAtRun), so that flows reading it meanwhile see them unchanged. It reports
// whether the source's columns are known: false for a query that has made no table yet.
func querySourceColumns(p *spec.Pipeline, d *spec.Dataset, refresh bool) (bool, error) {
	src := p.Dataset(d.ApplyChanges.Source)
	if src == nil || src.Query == nil {
		return true, nil // an inferred source's set-up filled them
	}
	if len(src.Schema.Fields) > 0 && !refresh {
		return true, nil
	}
	snap, err := delta.New(TableDir(p.Storage, src.Name)).Snapshot(-1)
	switch {
	case errors.Is(err, delta.ErrNoTable):
		return false, nil
	case err != nil:
		return false, err
	}
	src.Schema = snap.Metadata.Schema
	return true, nil
}
