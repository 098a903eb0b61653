package update

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tributary/delta"
	"tributary/flows"
	"tributary/spec"
)

// ownerFile is <storage>/pipeline.json: the name of the pipeline whose tables the storage
// holds. A flow's progress in its table is kept under an id that names the pipeline
// (flows.AppID), so a pipeline of another name (a renamed spec, or a second spec given the same
// storage) would read every input file again into the same tables.
const ownerFile = "pipeline.json"

// storageOwner is the content of the owner file.
type storageOwner struct {
	Name string `json:"name"`
}

// checkOwner checks that p's storage belongs to p: the owner file names p, or the storage has
// none yet and its tables were written by p (or there are none). A storage of another pipeline
// is an error that says how to go on, unless renaming is set (--full-refresh-all, which
// rebuilds every table under p's name; claimOwner then records p once the tables are reset).
// Errors: another pipeline's storage, or an owner file that cannot be read.
func checkOwner(p *spec.Pipeline, renaming bool) error {
	owner, err := readOwner(p.Storage, p.Name)
	if err != nil {
		return err
	}
	if owner == "" || owner == p.Name {
		return nil
	}
	if renaming {
		for _, d := range p.Datasets {
			if strings.EqualFold(d.TableProperties[ResetAllowedProperty], "false") {
				return fmt.Errorf("the storage %s holds the tables of pipeline %s, and this spec names pipeline %s; --full-refresh-all cannot move them to the new name, since dataset %s keeps its table (%s is \"false\"): keep the name %s, or give this spec a storage of its own", p.Storage, owner, p.Name, d.Name, ResetAllowedProperty, owner)
			}
		}
		return nil
	}
	return fmt.Errorf("the storage %s holds the tables of pipeline %s, and this spec names pipeline %s: its flows would read every input file again into the same tables. Keep the name %s, give this spec a storage of its own (storage: in the spec), or run once with --full-refresh-all to rebuild every table from its input under the name %s", p.Storage, owner, p.Name, owner, p.Name)
}

// claimOwner records p as the owner of its storage, when the owner file does not name it yet.
func claimOwner(p *spec.Pipeline) error {
	path := filepath.Join(p.Storage, ownerFile)
	if b, err := os.ReadFile(path); err == nil {
		var o storageOwner
		if json.Unmarshal(b, &o) == nil && o.Name == p.Name {
			return nil
		}
	}
	return writeJSONFile(path, storageOwner{Name: p.Name}, "the storage's pipeline")
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

// readOwner returns the name of the pipeline that owns storage: the owner file's, or for a
// storage written before there was one, a pipeline named by the flow progress its tables record
// (flows.AppID: "tributary:<pipeline>:<dataset>"): prefer when one of them names it, else the
// first in name order; "" when there is neither.
func readOwner(storage, prefer string) (string, error) {
	path := filepath.Join(storage, ownerFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var o storageOwner
		if err := json.Unmarshal(b, &o); err != nil || o.Name == "" {
			return "", fmt.Errorf("%s is damaged (%v): it should hold {\"name\": \"<pipeline name>\"}, the pipeline whose tables the storage holds; write the name there, or remove the file", path, err)
		}
		return o.Name, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("update: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(storage, "tables"))
	if err != nil {
		return "", nil // no tables: a new storage
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		snap, err := delta.New(filepath.Join(storage, "tables", e.Name())).Snapshot(-1)
		if err != nil {
			continue
		}
		for id := range snap.AppTxns {
			if parts := strings.Split(id, ":"); len(parts) == 3 && parts[0]+":" == flows.AppIDPrefix {
				if parts[1] == prefer {
					return prefer, nil
				}
				names = append(names, parts[1])
			}
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	return slices.Min(names), nil
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
