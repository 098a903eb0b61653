package update

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tributary/flows"
	"tributary/spec"
)

// inputPath returns the folder or glob a dataset reads from outside the pipeline ("" for a
// dataset fed only by another dataset), and whether it is a Delta table.
func inputPath(d *spec.Dataset) (string, bool) {
	switch {
	case d.Source != nil:
		return d.Source.Path, d.Source.Format == spec.FormatDelta
	case d.ApplyChangesFromSnapshot != nil && d.ApplyChangesFromSnapshot.Files != nil:
		return d.ApplyChangesFromSnapshot.Files.Path, false
	}
	return "", false
}

// InputDirs lists the folders to watch for new input of p: each source folder (the fixed
// prefix of a glob), and the _delta_log of each Delta source, sorted and without repeats.
func InputDirs(p *spec.Pipeline) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range p.Datasets {
		path, isDelta := inputPath(d)
		if path == "" {
			continue
		}
		dir := path
		if isDelta {
			dir = filepath.Join(path, "_delta_log")
		} else if i := strings.IndexAny(path, "*?[{"); i >= 0 && flows.IsGlob(path) {
			dir = filepath.Dir(path[:i] + "x")
		}
		if !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	sort.Strings(out)
	return out
}

// fingerprints returns, for each dataset of p that reads input from outside the pipeline, a
// digest of the names, sizes and modification times of its input files (those the runner reads:
// not names starting with . or _): a dataset whose digest changed has new input. A postgres
// source gets a new value every call, so continuous mode reads its changes at every poll.
func fingerprints(p *spec.Pipeline) map[string]string {
	out := map[string]string{}
	for _, d := range p.Datasets {
		if d.Source != nil && d.Source.Format == spec.FormatPostgres {
			// A database's changes cannot be seen from here: read them every poll (an idle
			// read costs a connection and a WAL marker).
			out[d.Name] = time.Now().String()
			continue
		}
		path, isDelta := inputPath(d)
		if path == "" {
			continue
		}
		if isDelta {
			path = filepath.Join(path, "_delta_log")
		}
		h := sha256.New()
		add := func(name string, fi fs.FileInfo) {
			if b := filepath.Base(name); !isDelta && (strings.HasPrefix(b, ".") || strings.HasPrefix(b, "_") || strings.HasSuffix(b, "._COPYING_")) {
				return // never input: files being landed under a temporary name, markers
			}
			fmt.Fprintf(h, "%s\x00%d\x00%d\n", name, fi.Size(), fi.ModTime().UnixNano())
		}
		if !isDelta && flows.IsGlob(path) {
			// The files the runner lists: those the glob matches and those below the
			// folders it matches.
			files, err := flows.GlobFiles(path)
			for _, f := range files {
				fmt.Fprintf(h, "%s\x00%d\x00%d\n", f.Path, f.Size, f.ModTime.UnixNano())
			}
			if err != nil {
				fmt.Fprintf(h, "error %v\n", err)
			}
		} else if st, err := os.Stat(path); err == nil && st.IsDir() && !isDelta {
			// A source folder: the files the runner lists (symbolic links to folders
			// followed); a listing error is part of the digest, so that mending it is new input.
			files, err := flows.SourceFiles(path)
			for _, f := range files {
				fmt.Fprintf(h, "%s\x00%d\x00%d\n", f.Path, f.Size, f.ModTime.UnixNano())
			}
			if err != nil {
				fmt.Fprintf(h, "error %v\n", err)
			}
		} else {
			_ = filepath.WalkDir(path, func(name string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return nil
				}
				if fi, err := e.Info(); err == nil {
					add(name, fi)
				}
				return nil
			})
		}
		out[d.Name] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// withDownstream returns names and every dataset downstream of them in p.
func (s *session) withDownstream(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
		for _, d := range s.g.Descendants(n) {
			out[d] = true
		}
	}
	return out
}

// changedInputs compares fingerprints now with those of the last batch and returns the datasets
// whose input changed, in pipeline order.
func changedInputs(p *spec.Pipeline, last, now map[string]string) []string {
	var out []string
	for _, d := range p.Datasets {
		if v, ok := now[d.Name]; ok && (last == nil || last[d.Name] != v) {
			out = append(out, d.Name)
		}
	}
	return out
}
