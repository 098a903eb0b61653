package flows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/uuid"

	"tributary/delta"
	"tributary/schema"
)

// maxSegments is the most segments a state keeps before the next batch compacts them into one.
const maxSegments = 32

// minCompactRows: delta segments are compacted once they hold more rows than the base segment
// or this many, whichever is larger, so that compaction stays amortised O(batch).
const minCompactRows = 100_000

// segment is one file of a CDC state, with its row count and format.
type segment struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
	// Format is how the file is written: segmentFormatKeyed (SCD type 1 states, cdcsegment.go),
	// segmentFormatHistory (states kept as histories, histsegment.go), segmentFormatHistoryColumns
	// (the state of an SCD type 2 first batch folded in columns, histcolsegment.go), or "" for a
	// Parquet file of state rows (cdcState.segmentSchema, histState.segmentSchema): the form of
	// every state written before the keyed forms, still read, and of history states with a
	// nested column.
	Format string `json:"format,omitempty"`
}

// manifest is <state>/manifests/<id>.json: the state at the target version whose commit names it.
// Segments are read oldest first, later rows winning. Renames maps a data file that a batch
// rewrote to the file that replaced it ("" when no row survived), so that the key-to-file index
// follows a rewrite in O(1) instead of one state row per relocated key.
type manifest struct {
	Segments []segment         `json:"segments"`
	Renames  map[string]string `json:"renames,omitempty"`
	// Truncate is the highest truncate sequence applied (SCD type 1), one JSON value per
	// sequence_by column in the jsonl form of spec.md §2; absent when none.
	Truncate []json.RawMessage `json:"truncate,omitempty"`
}

// stateLog is what both kinds of CDC state share: the folder, the segments, the renames and the
// id of the manifest they came from.
type stateLog struct {
	dir      string
	segments []segment
	renames  map[string]string
	id       string
	lastGC   int64 // ms; the last tombstone GC of a cached state
	// rebuilt is set when the key-to-file index was rebuilt from the table: the next save must
	// write the whole state.
	rebuilt bool
	// mergeDeltas is set when the delta segments (all but the first) were loaded whole to be
	// merged: the next save that does not write the whole state writes them as one segment after
	// the first, so the log stays within maxSegments without rewriting the base.
	mergeDeltas bool
}

// resolve follows the renames of a data file path to the file that holds its rows now ("" when
// the rows are gone), and remembers the answer for p (path compression): it writes the renames.
func (l *stateLog) resolve(p string) string {
	q := l.lookup(p)
	if q != p {
		l.renames[p] = q // an equivalent mapping
	}
	return q
}

// lookup is resolve without the path compression: it only reads the renames, so that several
// goroutines may call it at once (keyWorker).
func (l *stateLog) lookup(p string) string {
	if p == "" || len(l.renames) == 0 {
		return p
	}
	q := p
	for i := 0; i < 1_000_000; i++ {
		n, ok := l.renames[q]
		if !ok {
			break
		}
		q = n
		if q == "" {
			break
		}
	}
	return q
}

// rename records that old was rewritten into new ("" when nothing replaced it).
func (l *stateLog) rename(old, new string) {
	if l.renames == nil {
		l.renames = map[string]string{}
	}
	l.renames[old] = new
}

// readManifest reads manifest id of the state folder.
func (l *stateLog) readManifest(table *delta.Table, id string) (manifest, error) {
	var m manifest
	b, err := os.ReadFile(filepath.Join(l.dir, "manifests", id+".json"))
	if err != nil {
		return m, fmt.Errorf("reading the CDC state of %s: %w (the state folder %s was damaged; run a full refresh of %s)", table.Dir, err, l.dir, filepath.Base(table.Dir))
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("CDC state manifest %s: %w", id, err)
	}
	return m, nil
}

// shouldCompact says whether the next save writes the whole state as one segment.
func (l *stateLog) shouldCompact(newRows int64) bool {
	if l.rebuilt || len(l.segments) == 0 || (len(l.segments)+1 > maxSegments && !l.mergeDeltas) {
		return true
	}
	var deltaRows int64
	for _, s := range l.segments[1:] {
		deltaRows += s.Rows
	}
	return deltaRows+newRows > max(l.segments[0].Rows, minCompactRows)
}

// write saves a new segment of rows state rows, written by seg into the segments folder
// (appended to the log, or, with full, replacing it and the renames), and writes a manifest; it
// returns the manifest id and the new log. A log that is empty gets a segment even without rows.
func (l *stateLog) write(rows int64, full bool, truncate []json.RawMessage, seg func(dir string) (segment, error)) (string, []segment, map[string]string, error) {
	segs := append([]segment(nil), l.segments...)
	renames := l.renames
	switch {
	case full:
		segs, renames = nil, nil
	case l.mergeDeltas && len(segs) > 0:
		segs = segs[:1] // the new segment holds the keys of the others
	}
	if rows > 0 || len(segs) == 0 {
		segDir := filepath.Join(l.dir, "segments")
		if err := os.MkdirAll(segDir, 0o755); err != nil {
			return "", nil, nil, err
		}
		s, err := seg(segDir)
		if err != nil {
			return "", nil, nil, fmt.Errorf("writing a CDC state segment: %w", err)
		}
		segs = append(segs, s)
	}
	l.rebuilt, l.mergeDeltas = false, false
	id := uuid.NewString()
	b, _ := json.Marshal(manifest{Segments: segs, Renames: renames, Truncate: truncate})
	if err := writeFileAtomic(filepath.Join(l.dir, "manifests", id+".json"), b); err != nil {
		return "", nil, nil, fmt.Errorf("writing the CDC state manifest: %w", err)
	}
	return id, segs, renames, nil
}

// prune removes from the state folder what neither the manifest id, just committed, nor prev,
// the one its batch started from, names: the manifests of earlier batches, the segments a
// compaction replaced before that, and the segments, manifests and temporary files of batches
// whose process was killed or failed before its commit. Only the manifest of the target's last
// APPLY CHANGES commit is read (lastApply); the one before it stays too, with its segments, so
// that the state of the previous version is still there should that commit be undone. Without
// this the folder would grow by a manifest every batch and by the whole state every
// compaction. It ignores errors: a file left is read no more, and the next commit prunes again.
func (l *stateLog) prune(id string, segs []segment, prev string, prevSegs []segment) {
	keep := map[string]bool{}
	for _, s := range slices.Concat(segs, prevSegs) {
		keep[filepath.FromSlash(s.Name)] = true
	}
	dirs := []struct {
		dir  string
		keep func(name string) bool
	}{
		{filepath.Join(l.dir, "manifests"), func(name string) bool { return name == id+".json" || (prev != "" && name == prev+".json") }},
		{filepath.Join(l.dir, "segments"), func(name string) bool { return keep[name] }},
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type().IsRegular() && !d.keep(e.Name()) {
				os.Remove(filepath.Join(d.dir, e.Name()))
			}
		}
	}
}

// parquetSegment returns a segment writer (for write) of rows as one Parquet file of schema sch.
func parquetSegment(sch schema.Schema, rows [][]any) func(dir string) (segment, error) {
	return func(dir string) (segment, error) {
		add, err := delta.New(dir).WriteFile(sch, rows)
		if err != nil {
			return segment{}, err
		}
		return segment{Name: add.Path, Rows: int64(len(rows))}, nil
	}
}
