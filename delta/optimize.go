package delta

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"tributary/internal/fault"
	"tributary/schema"
)

// OptimizeOptions tune Optimize.
type OptimizeOptions struct {
	// TargetSize is the size in bytes files are bin-packed to; 0 means the table's
	// delta.targetFileSize (default 128 MiB).
	TargetSize int64
	// Auto marks a compaction started by AutoOptimize (operationParameters.auto).
	Auto bool
}

// OptimizeResult says what Optimize did. Version is the OPTIMIZE commit, or -1 when there was
// nothing to compact (no partition had two small files that fit one bin).
type OptimizeResult struct {
	Version      int64
	FilesRemoved int
	FilesAdded   int
	BytesRemoved int64
	BytesAdded   int64
	Rows         int64
}

// Optimize compacts the small files of the latest snapshot, as Delta's OPTIMIZE does: within
// each partition, files smaller than the target size and files with a deletion vector are taken
// in snapshot order and packed into bins of at most the target size; each bin of two or more
// files, or with a file that has a deletion vector, is rewritten as one file (the live rows of
// its files in order, without the rows the deletion vectors delete, new statistics and no
// deletion vector; a bin whose rows are all deleted is removed without a new file). The commit removes the old files and adds the new
// ones with dataChange false, so readers of the change data feed and streaming readers see no
// change, and the table's rows are the same before and after. It writes no cdc files and
// touches no txn. A concurrent commit that removed one of the files fails Optimize with
// ErrConflict (nothing is lost: the new files are left unreferenced for VACUUM); commits that
// only add files do not conflict.
//
// Files the table rewrites are named in commitInfo.operationMetrics and in the remove actions;
// a writer that keeps its own index of which file holds which row (the APPLY CHANGES state)
// must treat an index entry naming a file that is no longer live as stale.
func (t *Table) Optimize(opts OptimizeOptions) (OptimizeResult, error) {
	res := OptimizeResult{Version: -1}
	snap, err := t.Snapshot(-1)
	if err != nil {
		return res, err
	}
	if err := CheckReadable(snap); err != nil {
		return res, err
	}
	if mode := snap.Metadata.ColumnMappingMode(); mode != "none" {
		// This package writes data files by column name only (and its commits refuse the
		// columnMapping feature): refused before any file is read or written.
		return res, fmt.Errorf("delta: the table uses column mapping (mode %s), and this writer does not write such tables; run OPTIMIZE on it with the engine that wrote it", mode)
	}
	target := opts.TargetSize
	if target <= 0 {
		target = snap.Metadata.TargetFileSize()
	}
	bins := planBins(snap.Files, target)
	if len(bins) == 0 {
		return res, nil
	}
	meta := snap.Metadata
	fileSchema, _ := dataColumns(meta)
	nowMs := nowMillis()
	tx := t.Begin(snap)
	for _, bin := range bins {
		a, rows, err := t.writeCompacted(fileSchema, bin)
		if err != nil {
			return res, err
		}
		for _, f := range bin {
			rm := t.RemoveFor(f, nowMs) // the logical file: path and deletion vector
			rm.DataChange = false
			tx.Remove(rm)
			res.FilesRemoved++
			res.BytesRemoved += f.Size
		}
		if a.Path == "" {
			continue // every row of the bin was deleted
		}
		a.DataChange = false
		tx.Add(a)
		res.FilesAdded++
		res.BytesAdded += a.Size
		res.Rows += rows
	}
	tx.SetCommitInfo(nil, map[string]string{
		"numRemovedFiles": strconv.Itoa(res.FilesRemoved), "numAddedFiles": strconv.Itoa(res.FilesAdded),
		"numRemovedBytes": strconv.FormatInt(res.BytesRemoved, 10), "numAddedBytes": strconv.FormatInt(res.BytesAdded, 10),
		"numBatches": strconv.Itoa(len(bins)), "numOutputRows": strconv.FormatInt(res.Rows, 10),
	})
	fault.Point("optimize.before-commit")
	v, err := tx.Commit("OPTIMIZE", map[string]any{"predicate": []string{}, "zOrderBy": []string{}, "auto": opts.Auto, "targetFileSize": strconv.FormatInt(target, 10)})
	if err != nil {
		return res, err
	}
	res.Version = v
	return res, nil
}

// AutoOptimize compacts the table (Optimize with Auto set) when automatic compaction is on
// (table property pipelines.autoOptimize.managed is not "false") and some partition holds at
// least pipelines.autoOptimize.minNumFiles (default 50) files smaller than the target size, or a
// file's deletion vector deletes more than MaxDeletedRowsRatio of its rows. It
// returns Version -1 when it did nothing. A concurrent commit that conflicts (ErrConflict) is not
// an error: the next call tries again.
func (t *Table) AutoOptimize() (OptimizeResult, error) {
	none := OptimizeResult{Version: -1}
	snap, err := t.Snapshot(-1)
	if err != nil {
		return none, err
	}
	on, minFiles := snap.Metadata.AutoOptimize()
	if !on {
		return none, nil
	}
	target := snap.Metadata.TargetFileSize()
	small := map[string]int{}
	most := 0
	for _, f := range snap.Files {
		if f.Size >= target && needsPurge(f) {
			most = minFiles // a file whose deleted rows are past the ratio is purged now
		}
		if f.Size < target {
			k := partitionKey(f.PartitionValues)
			small[k]++
			most = max(most, small[k])
		}
	}
	if most < minFiles {
		return none, nil
	}
	res, err := t.Optimize(OptimizeOptions{TargetSize: target, Auto: true})
	if errors.Is(err, ErrConflict) {
		return none, nil
	}
	return res, err
}

// MaxDeletedRowsRatio is the fraction of a file's rows its deletion vector may delete before
// OPTIMIZE rewrites the file although it is not small (Databricks'
// spark.databricks.delta.optimize.maxDeletedRowsRatio, 0.05): a table under steady merge-on-read
// changes has its files purged once every 1/MaxDeletedRowsRatio rows changed per file, so the
// rewriting stays proportional to the changes, not to the table.
const MaxDeletedRowsRatio = 0.05

// needsPurge says whether f's deletion vector deletes more than MaxDeletedRowsRatio of its rows
// (or f has a deletion vector and no row count in its stats).
func needsPurge(f Add) bool {
	if f.DeletionVector == nil {
		return false
	}
	n, ok := f.NumRecords()
	if !ok || n <= 0 {
		return true
	}
	return float64(f.DeletionVector.Cardinality) > MaxDeletedRowsRatio*float64(n)
}

// planBins groups the small files, and the files whose deletion vector needs a purge
// (needsPurge), of each partition, in snapshot order, into bins of at most target bytes; only
// bins of two or more files or with a deletion vector are returned. A small file with a deletion
// vector is compacted with the others.
func planBins(files []Add, target int64) [][]Add {
	byPart := map[string][]Add{}
	var parts []string
	for _, f := range files {
		if f.Size >= target && !needsPurge(f) {
			continue
		}
		k := partitionKey(f.PartitionValues)
		if _, ok := byPart[k]; !ok {
			parts = append(parts, k)
		}
		byPart[k] = append(byPart[k], f)
	}
	var bins [][]Add
	for _, k := range parts {
		var cur []Add
		var size int64
		flush := func() {
			if len(cur) >= 2 || (len(cur) == 1 && cur[0].DeletionVector != nil) {
				bins = append(bins, cur)
			}
			cur, size = nil, 0
		}
		for _, f := range byPart[k] {
			if len(cur) > 0 && size+f.Size > target {
				flush()
			}
			cur = append(cur, f)
			size += f.Size
		}
		flush()
	}
	return bins
}

// partitionKey is a canonical text of a file's partition values.
func partitionKey(pv map[string]string) string {
	keys := make([]string, 0, len(pv))
	for k := range pv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(pv[k]))
		b.WriteByte(';')
	}
	return b.String()
}

// dataColumns returns the columns a data file of the table holds: the schema without the
// partition columns, and the positions of those columns in the table schema.
func dataColumns(m Metadata) (schema.Schema, []int) {
	var s schema.Schema
	var idx []int
	for j, f := range m.Schema.Fields {
		if !slices.Contains(m.PartitionColumns, f.Name) {
			s.Fields = append(s.Fields, f)
			idx = append(idx, j)
		}
	}
	return s, idx
}

// compactFlushRows is how many rows Optimize gathers from a bin's files before writing them as
// a row group of the compacted file: memory holds at most about that many rows plus one input
// file's, whatever the size of the bin.
var compactFlushRows = 250_000

// writeCompacted writes the live rows of the files of bin (without the rows their deletion
// vectors delete), in order, as one file beside the bin's first file (the same partition folder),
// with the bin's partition values, reading and writing a few files at a time. It returns the add
// action and the number of rows; when no row is left it writes no file and returns an add with
// an empty path.
func (t *Table) writeCompacted(s schema.Schema, bin []Add) (Add, int64, error) {
	like := bin[0]
	dir := ""
	if local, err := localPathRel(like.Path); err == nil {
		if d := path.Dir(local); d != "." && !strings.HasPrefix(d, "/") {
			dir = d + "/"
		}
	}
	rel := dir + NewDataFileName()
	pf, err := t.createParquet(rel, s, false, false)
	if err != nil {
		return Add{}, 0, err
	}
	var pending [][]any
	for _, f := range bin {
		r, err := t.ReadFile(f.Path, s)
		if err == nil && f.DeletionVector != nil {
			r, _, err = t.applyDV(f, r, false)
		}
		if err != nil {
			pf.abort()
			return Add{}, 0, fmt.Errorf("delta: optimize %s: %w", t.Dir, err)
		}
		if pending = append(pending, r...); len(pending) >= compactFlushRows {
			if err := pf.add(pending, nil); err != nil {
				pf.abort()
				return Add{}, 0, err
			}
			pending = nil
		}
	}
	if err := pf.add(pending, nil); err != nil {
		pf.abort()
		return Add{}, 0, err
	}
	if pf.rows == 0 {
		pf.abort()
		return Add{}, 0, nil
	}
	rows := pf.rows
	size, mtime, stats, err := pf.close()
	if err != nil {
		return Add{}, 0, err
	}
	a := Add{
		Path: EscapePath(rel), PartitionValues: make(map[string]string, len(like.PartitionValues)), Size: size,
		ModificationTime: mtime, DataChange: true, Stats: stats,
	}
	for k, v := range like.PartitionValues {
		a.PartitionValues[k] = v
	}
	return a, rows, nil
}
