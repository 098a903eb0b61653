package flows

import (
	"context"
	"errors"
	"fmt"

	"tributary/delta"
	"tributary/spec"
)

// Setup creates the dataset's Delta table when it does not exist yet (version 0: protocol,
// metadata with the dataset's schema and table properties, change data feed on), and checks that
// an existing table still has the schema the spec declares.
func Setup(p *spec.Pipeline, d *spec.Dataset) error {
	t := delta.New(TableDir(p.Storage, d.Name))
	snap, err := t.Snapshot(-1)
	if err == nil {
		if !snap.Metadata.Schema.Equal(d.Schema) {
			return fmt.Errorf("dataset %s: the table has the schema (%s) but the spec now gives (%s); schema changes need a full refresh of this dataset (remove %s and run again)",
				d.Name, snap.Metadata.Schema.DDL(), d.Schema.DDL(), t.Dir)
		}
		return nil
	}
	if !errors.Is(err, delta.ErrNoTable) {
		return err
	}
	conf := map[string]string{"delta.enableChangeDataFeed": "true"}
	for k, v := range d.TableProperties {
		conf[k] = v
	}
	tx := t.Begin(nil)
	tx.SetMetadata(delta.Metadata{Name: d.Name, Description: d.Comment, Schema: d.Schema, Configuration: conf})
	if _, err := tx.Commit("CREATE TABLE", map[string]any{"isManaged": "true", "description": d.Comment}); err != nil && !errors.Is(err, delta.ErrConflict) {
		return err
	}
	return nil
}

// Run runs the flow that fills dataset d.
func Run(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	switch {
	case d.ApplyChanges != nil:
		return ApplyChanges(ctx, env, d)
	case d.Source != nil:
		return Ingest(ctx, env, d)
	}
	return Metrics{Version: -1}, fmt.Errorf("dataset %s has no flow this release can run", d.Name)
}
