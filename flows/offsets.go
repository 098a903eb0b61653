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
	Batch int64  `json:"batch"`
	Base  string `json:"base"`
	// BaseFromCheckpoint is Base relative to the checkpoint folder (set by writeOffsets; absent
	// in offsets written before it was), so that a storage moved together with its source
	// folder still finds the folder its batches read (checkBase).
	BaseFromCheckpoint string       `json:"base_from_checkpoint,omitempty"`
	Files              []offsetFile `json:"files"`
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
	if o.Base != "" {
		o.BaseFromCheckpoint, _ = relativeTo(dir, o.Base)
	}
	b, err := json.MarshalIndent(o, "", " ")
	if err != nil {
		return err
	}
	return writeFileAtomic(offsetsPath(dir, o.Batch), b)
}

// relativeTo returns path relative to folder dir, both made absolute first.
func relativeTo(dir, path string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.Rel(d, p)
}

// checkBase checks that the source folder base is the one the last committed batch (committed)
// of the checkpoint folder ckpt read: its files are known by their path below the folder, so a
// file of another folder named as one read before would be skipped (or reported changed) rather
// than read. The folder counts as the same when it is, when it lies where it did relative to
// the checkpoint (the storage moved with it), or when it holds that batch's files as they were
// read (same path below it, size and modification time: the folder reached by another path,
// moved, or copied with its times). Without committed batches, or their offsets, there is
// nothing to compare. dataset names the flow's dataset in the error; refresh gives the command
// that reads every file again (RefreshHint), made only for the error.
func checkBase(ckpt string, committed int64, base, dataset string, refresh func() string) error {
	if committed <= 0 {
		return nil
	}
	o, err := readOffsets(ckpt, committed)
	if err != nil || o.Base == "" {
		return nil
	}
	if o.Base == base {
		return nil
	}
	if o.BaseFromCheckpoint != "" {
		if r, err := relativeTo(ckpt, base); err == nil && r == o.BaseFromCheckpoint {
			return nil // moved together with the storage
		}
	}
	if sameFiles(base, o.Files) {
		return nil // the folder reached another way, moved or copied: it holds the files read
	}
	return fmt.Errorf("the source folder of %s is %s, and its batches so far read %s: the flow knows the files it read by their path below the folder, so files of the new folder named as files read before would be skipped. Point source.path back at %s, or run %s to rebuild from the files of the new folder", dataset, base, o.Base, o.Base, refresh())
}

// sameFiles says whether folder base holds every file of files (at least one) with the size and
// modification time recorded.
func sameFiles(base string, files []offsetFile) bool {
	if len(files) == 0 {
		return false
	}
	same := func(st os.FileInfo, err error, f offsetFile) bool {
		return err == nil && st.Size() == f.Size && st.ModTime().UnixMilli() == f.ModTime
	}
	for _, f := range files {
		// As listed: a folder's files by their own entry (a link's own time), a glob's by
		// what they point to.
		path := filepath.Join(base, filepath.FromSlash(f.Path))
		st, err := os.Lstat(path)
		if !same(st, err, f) {
			if st, err = os.Stat(path); !same(st, err, f) {
				return false
			}
		}
	}
	return true
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
// (size and modification time as they were when read). It starts from the newest compacted list
// of dir (committed/<n>.json, n <= upTo) and reads the offsets of the batches after it; when
// those are committedCompactAfter or more, it writes the list for upTo, so that a checkpoint of
// many batches costs one file and a few offsets to read (as Spark's CompactibleFileStreamLog
// compacts a file source's log). A committed batch whose offsets file is missing is an error:
// the checkpoint was damaged.
func committedFiles(dir string, upTo int64) (map[string]offsetFile, error) {
	removeStaleTemps(dir)
	seen := map[string]offsetFile{}
	from, err := readCommittedList(dir, upTo, seen)
	if err != nil {
		return nil, err
	}
	for b := from + 1; b <= upTo; b++ {
		o, err := readOffsets(dir, b)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the checkpoint %s has no offsets for committed batch %d; run with --full-refresh of this dataset to re-ingest its input", dir, b)
		}
		if err != nil {
			return nil, err
		}
		for _, f := range o.Files {
			f.Lines = nil
			seen[f.Path] = f
		}
	}
	if upTo-from >= committedCompactAfter {
		// Best effort: without the list, the next run reads the offsets again.
		writeCommittedList(dir, upTo, seen)
	}
	return seen, nil
}

// removeStaleTemps removes the temporary files that writeFileAtomic leaves in dir's offsets and
// compacted-list folders when the process is killed between creating one and renaming it
// (".tmp-<name>-<random>"). Only the flow that owns dir writes there, one file at a time, and
// it calls this before writing: any such file is left over from a run that ended. Best effort.
func removeStaleTemps(dir string) {
	for _, sub := range []string{filepath.Join(dir, "offsets"), committedListDir(dir)} {
		entries, _ := os.ReadDir(sub)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") && e.Type().IsRegular() {
				os.Remove(filepath.Join(sub, e.Name()))
			}
		}
	}
}

// committedCompactAfter is how many batches' offsets committedFiles reads past the newest
// compacted list before it writes a new one.
const committedCompactAfter = 100

// committedList is <checkpoint>/committed/<upTo>.json: every file the batches 1..upTo read,
// as their offsets record it (without the line numbers), in path order.
type committedList struct {
	UpTo  int64           `json:"up_to_batch"`
	Files []committedFile `json:"files"`
}

// committedFile is a file of a committedList: an offsetFile without its lines.
type committedFile struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ms"`
}

func committedListDir(dir string) string { return filepath.Join(dir, "committed") }

// readCommittedList adds the files of the newest compacted list of dir whose batch is at most
// upTo into seen, and returns that batch (0: none).
func readCommittedList(dir string, upTo int64, seen map[string]offsetFile) (int64, error) {
	entries, err := os.ReadDir(committedListDir(dir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	best := int64(0)
	for _, e := range entries {
		n, err := strconv.ParseInt(strings.TrimSuffix(e.Name(), ".json"), 10, 64)
		if err == nil && strings.HasSuffix(e.Name(), ".json") && n <= upTo && n > best {
			best = n
		}
	}
	if best == 0 {
		return 0, nil
	}
	path := filepath.Join(committedListDir(dir), strconv.FormatInt(best, 10)+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var l committedList
	if err := json.Unmarshal(b, &l); err != nil || l.UpTo != best {
		if _, serr := os.Stat(offsetsPath(dir, 1)); serr == nil {
			return 0, fmt.Errorf("the checkpoint's list of committed files %s is damaged (%v); remove it, and the offsets of every batch are read instead", path, err)
		}
		// The offsets it covers were removed (writeCommittedList): only a full refresh knows
		// which files were read.
		return 0, fmt.Errorf("the checkpoint's list of committed files %s is damaged (%v), and the offsets of the batches it covers were removed once listed; run with --full-refresh of this dataset to re-ingest its input", path, err)
	}
	for _, f := range l.Files {
		seen[f.Path] = offsetFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime}
	}
	return best, nil
}

// offsetsRetained is how many batches' offsets files a checkpoint keeps (the newest) once a
// compacted list covers them, as Spark's minBatchesToRetain: they name the input line of a
// row in an error about it (locate) and replay a pending batch; the older ones are removed, so
// that a long-running flow does not fill its checkpoint with a file per batch.
const offsetsRetained = 100

// writeCommittedList writes the compacted list of seen for batch upTo, removes the older lists,
// and removes the offsets files of batches up to upTo - offsetsRetained (which the list covers).
// It ignores errors: the list only saves reading offsets, and an offsets file left is read no
// more.
func writeCommittedList(dir string, upTo int64, seen map[string]offsetFile) {
	l := committedList{UpTo: upTo, Files: make([]committedFile, 0, len(seen))}
	for _, f := range seen {
		l.Files = append(l.Files, committedFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime})
	}
	sort.Slice(l.Files, func(i, j int) bool { return l.Files[i].Path < l.Files[j].Path })
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	name := strconv.FormatInt(upTo, 10) + ".json"
	if writeFileAtomic(filepath.Join(committedListDir(dir), name), b) != nil {
		return
	}
	entries, _ := os.ReadDir(committedListDir(dir))
	for _, e := range entries {
		if n, err := strconv.ParseInt(strings.TrimSuffix(e.Name(), ".json"), 10, 64); err == nil && n < upTo {
			os.Remove(filepath.Join(committedListDir(dir), e.Name()))
		}
	}
	entries, _ = os.ReadDir(filepath.Join(dir, "offsets"))
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if n, err := strconv.ParseInt(name, 10, 64); ok && err == nil && n <= upTo-offsetsRetained {
			os.Remove(filepath.Join(dir, "offsets", e.Name()))
		}
	}
}

// find returns the file (its path under the batch's base folder) and line of the rowIndex-th row
// (0-based) of a batch; ok is false when unknown.
func (o *offsets) find(rowIndex int64) (file string, line int64, ok bool) {
	for _, f := range o.Files {
		for _, run := range f.Lines {
			if rowIndex < run[1] {
				return filepath.Join(o.Base, filepath.FromSlash(f.Path)), run[0] + rowIndex, true
			}
			rowIndex -= run[1]
		}
	}
	return "", 0, false
}

// addLine records that the next row of the batch came from line of f.
func (f *offsetFile) addLine(line int64) {
	if n := len(f.Lines); n > 0 && f.Lines[n-1][0]+f.Lines[n-1][1] == line {
		f.Lines[n-1][1]++
		return
	}
	f.Lines = append(f.Lines, [2]int64{line, 1})
}
