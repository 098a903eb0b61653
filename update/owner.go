package update

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tributary/delta"
	"tributary/flows"
	"tributary/spec"
)

// checkOwners checks that the tables of p's datasets were written by p: a flow keeps its
// progress in its table under an id that names the pipeline (flows.AppID), so the flow of a
// pipeline of another name (a renamed spec, or a second spec given the same storage and dataset
// names) would read every input file again into the same table. A table that holds progress of
// other pipelines and none of p's is an error naming the datasets and how to go on, unless the
// update fully refreshes it (refreshed: the datasets of --full-refresh, or all of them). A
// materialized view keeps no progress, but its commit names its writer (queryId): another
// pipeline's would overwrite it. Datasets whose names the other pipeline does not share are no
// concern.
func checkOwners(p *spec.Pipeline, refreshed func(name string) bool) error {
	var taken []string
	var others []string
	for _, d := range p.Datasets {
		if d.FileView() || refreshed(d.Name) {
			continue
		}
		names := OtherWriters(p, d.Name) // none without a table yet (or one Setup reports on)
		if len(names) == 0 {
			continue
		}
		taken = append(taken, d.Name)
		for _, n := range names {
			if !slices.Contains(others, n) {
				others = append(others, n)
			}
		}
	}
	if len(taken) == 0 {
		return nil
	}
	slices.Sort(others)
	return fmt.Errorf("the tables of %s in the storage %s were written by pipeline %s, and this spec names pipeline %s: its flows keep their progress under the pipeline's name, so they would read every input file again into the same tables. Keep the name %s, give this spec a storage of its own (storage: in the spec), or rebuild those tables from their input under the new name with %s",
		strings.Join(taken, ", "), p.Storage, strings.Join(others, ", "), p.Name, others[0], flows.RefreshHint(p, taken...))
}

// OtherWriters returns, sorted, the other pipelines that wrote the table of dataset name (or of
// a quarantine table) under p's storage, when p never did: the pipelines whose names its flows'
// progress or its last commit carries (see checkOwners). It returns nil when p wrote the table,
// when no pipeline is named, or when there is no table. `pipeline show`, `changes` and `history`
// read such a table all the same and say whose it is.
func OtherWriters(p *spec.Pipeline, name string) []string {
	t := delta.New(flows.TableDir(p.Storage, name))
	snap, err := t.Snapshot(-1)
	if err != nil {
		return nil
	}
	var others []string
	for _, w := range writers(t, snap) {
		if w[1] != name && w[1]+spec.QuarantineSuffix != name {
			continue
		}
		if w[0] == p.Name {
			return nil
		}
		if !slices.Contains(others, w[0]) {
			others = append(others, w[0])
		}
	}
	slices.Sort(others)
	return others
}

// writeJSONFile writes v as JSON to path through a temporary file and a rename, so that a
// reader sees the old content or the new; what names the content in an error.
func writeJSONFile(path string, v any, what string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("update: recording %s: %w", what, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("update: recording %s: %w", what, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("update: recording %s: %w", what, err)
	}
	return nil
}

// pendingResetFile is <storage>/full-refresh.json: the datasets a full refresh is removing,
// written before it removes the first and removed after the last, so that an update killed
// meanwhile (a table half removed) has the next update finish the full refresh first.
const pendingResetFile = "full-refresh.json"

// pendingReset is the content of the pending reset file.
type pendingReset struct {
	Datasets []string `json:"datasets"`
}

// readPendingReset returns the datasets of a full refresh that did not finish (none when the
// file is absent). Errors: the file cannot be read or is damaged.
func readPendingReset(storage string) ([]string, error) {
	path := filepath.Join(storage, pendingResetFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	var r pendingReset
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): it lists the datasets of a full refresh that did not finish; remove it and run with --full-refresh-all", path, err)
	}
	return r.Datasets, nil
}

// writePendingReset records the datasets a full refresh is about to remove (pendingResetFile).
func writePendingReset(storage string, datasets []string) error {
	return writeJSONFile(filepath.Join(storage, pendingResetFile), pendingReset{Datasets: datasets}, "the full refresh")
}

// orphanTables returns, sorted, the tables under p's storage that p wrote (their progress or
// their last commit names p) and that no dataset of p writes any more: the tables of datasets
// renamed or removed from the spec (and their quarantine tables). Nothing reads or writes them
// again; their folders stay until removed (Delta Live Tables likewise leaves a removed dataset's
// table to be dropped). A folder that is not a table, or another pipeline's, is not listed.
func orphanTables(p *spec.Pipeline) []string {
	entries, err := os.ReadDir(filepath.Join(p.Storage, "tables"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || p.Dataset(name) != nil || p.QuarantineOf(name) != nil {
			continue
		}
		t := delta.New(flows.TableDir(p.Storage, name))
		snap, err := t.Snapshot(-1)
		if err != nil {
			continue
		}
		for _, w := range writers(t, snap) {
			// A quarantine table's writer is its dataset's flow.
			if w[0] == p.Name && (w[1] == name || w[1]+spec.QuarantineSuffix == name) {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// writers returns the flows that wrote table t (at snap), as [pipeline, dataset] pairs, from the
// ids its progress is kept under ("tributary:<pipeline>:<dataset>", with ":<source>" for a
// streaming query's source: flows.AppID) and, for a table without progress (a materialized
// view), the queryId its last commit names. Ids of other writers are left out.
func writers(t *delta.Table, snap *delta.Snapshot) [][2]string {
	ids := slices.Collect(maps.Keys(snap.AppTxns))
	if len(ids) == 0 && snap.Version >= 0 {
		if c, err := t.ReadCommit(snap.Version); err == nil {
			if id, ok := c.Info.OperationParameters["queryId"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	var out [][2]string
	for _, id := range ids {
		rest, ok := strings.CutPrefix(id, flows.AppIDPrefix)
		if parts := strings.SplitN(rest, ":", 3); ok && len(parts) >= 2 {
			out = append(out, [2]string{parts[0], parts[1]})
		}
	}
	return out
}
