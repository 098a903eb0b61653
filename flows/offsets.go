package flows

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// offsetFile is one input file of an ingest batch.
type offsetFile struct {
	// Path is relative to the source's base folder, with forward slashes.
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ms"`
	// Lines lists the input line numbers (1-based) of the rows this file contributed to the
	// batch's data files, in row order, as [first, count] runs.
	Lines [][2]int64 `json:"lines"`
}

// offsets is the record of one ingest batch: <checkpoints>/<flow>/offsets/<batch>.json. It is
// written before the batch's commit; it counts only once the table holds txn version >= Batch.
type offsets struct {
	Batch int64        `json:"batch"`
	Base  string       `json:"base"`
	Files []offsetFile `json:"files"`
}

func offsetsPath(dir string, batch int64) string {
	return filepath.Join(dir, "offsets", strconv.FormatInt(batch, 10)+".json")
}

// writeFileAtomic writes data to path through a temp file, fsync and rename.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func writeOffsets(dir string, o *offsets) error {
	b, err := json.MarshalIndent(o, "", " ")
	if err != nil {
		return err
	}
	return writeFileAtomic(offsetsPath(dir, o.Batch), b)
}

func readOffsets(dir string, batch int64) (*offsets, error) {
	b, err := os.ReadFile(offsetsPath(dir, batch))
	if err != nil {
		return nil, err
	}
	var o offsets
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("offsets %s: %w", offsetsPath(dir, batch), err)
	}
	return &o, nil
}

// committedFiles returns the input files read by batches 1..upTo, the committed ones, by path
// (size and modification time as they were when read). A committed batch whose offsets file is
// missing is an error: the checkpoint was damaged.
func committedFiles(dir string, upTo int64) (map[string]offsetFile, error) {
	seen := map[string]offsetFile{}
	entries, err := os.ReadDir(filepath.Join(dir, "offsets"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	have := map[int64]bool{}
	for _, e := range entries {
		n, err := strconv.ParseInt(strings.TrimSuffix(e.Name(), ".json"), 10, 64)
		if err != nil || !strings.HasSuffix(e.Name(), ".json") || n > upTo {
			continue
		}
		have[n] = true
	}
	batches := make([]int64, 0, len(have))
	for b := range have {
		batches = append(batches, b)
	}
	sort.Slice(batches, func(i, j int) bool { return batches[i] < batches[j] })
	for b := int64(1); b <= upTo; b++ {
		if !have[b] {
			return nil, fmt.Errorf("the checkpoint %s has no offsets for committed batch %d; run with --full-refresh of this dataset to re-ingest its input", dir, b)
		}
	}
	for _, b := range batches {
		o, err := readOffsets(dir, b)
		if err != nil {
			return nil, err
		}
		for _, f := range o.Files {
			f.Lines = nil
			seen[f.Path] = f
		}
	}
	return seen, nil
}

// locate returns "file:line" of the rowIndex-th row (0-based) of a batch, or "" if unknown.
func (o *offsets) locate(rowIndex int64) string {
	for _, f := range o.Files {
		for _, run := range f.Lines {
			if rowIndex < run[1] {
				return filepath.Join(o.Base, filepath.FromSlash(f.Path)) + ":" + strconv.FormatInt(run[0]+rowIndex, 10)
			}
			rowIndex -= run[1]
		}
	}
	return ""
}

// addLine records that the next row of the batch came from line of f.
func (f *offsetFile) addLine(line int64) {
	if n := len(f.Lines); n > 0 && f.Lines[n-1][0]+f.Lines[n-1][1] == line {
		f.Lines[n-1][1]++
		return
	}
	f.Lines = append(f.Lines, [2]int64{line, 1})
}
