package flows

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/internal/fault"
	"tributary/spec"
)

// chunkRows and chunkBytes bound the rows an ingest flow buffers before it checks expectations
// and writes them: at most chunkRows rows, or rows whose values take about chunkBytes
// (rowBytes), whichever comes first. The chunks of a batch are written as the input is read (a
// chunk while the start of the next chunk is read; see fileWriter and chunkAhead) as row groups
// of the batch's open data files, which are finished at the table's target file size
// (delta.DataWriter) and committed together, so memory stays bounded by two chunks whatever the
// size of the input (BenchmarkIngestJSONLines measures it), and a large batch makes files of the
// target size rather than one per chunk. 122,880 rows is DuckDB's row group size, about 12 MB
// of the bench's rows. Variables for tests.
var (
	chunkRows  = 122_880
	chunkBytes = 64 << 20
)

// While a chunk's data file is written, reading goes on until the next chunk holds
// 1/chunkAhead of the bounds, then waits for the write to end. The write overlaps the parsing
// of the next rows, yet memory holds little more than one chunk. On the bench's 1 GB ingest
// (2 cores), with the blocks' memory reused (blockPool): a quarter of a chunk ahead took
// 2.6-3.0 s and peaked at 300-330 MiB; half a chunk, 2.5-2.6 s and 340-370 MiB; a whole chunk,
// 2.35-2.45 s and 410-450 MiB, too close to the 500 MiB bound. (Before the reuse: a quarter,
// 3.2 s and 290 MiB; half, 3.2 s and 370 MiB; whole, 2.9 s and past 500 MiB; none, 4.5 s.)
// Those chunks were of 250,000 rows. Chunks of half that, a whole one ahead, are faster still
// and take less memory (2026-12-01, the bench's ingest in turn with the 250,000 rows and half a
// chunk ahead of before: 4.02-4.11 s and 281-293 MiB against 4.74-4.88 s and 359-361 MiB; the
// baseline took 3.4-3.8 s): the parser waits less often for the write, and the memory a
// chunk's rows take is reused sooner.
const chunkAhead = 1

// rowBytes estimates the memory a row's values take: a slice header, an interface per value,
// and the bytes of strings (nested STRUCT values counted recursively).
func rowBytes(row []any) int {
	n := 24 + 16*len(row)
	for _, v := range row {
		switch x := v.(type) {
		case string:
			n += 16 + len(x)
		case []any:
			n += rowBytes(x)
		case nil:
		default:
			n += 8
		}
	}
	return n
}

// maxWarnEvents bounds the WARN events one batch emits for bad values; the rest are counted.
const maxWarnEvents = 20

// inputFile is one file found under a source path.
type inputFile struct {
	abs, rel string
	size     int64
	modTime  int64
	// lstat: the size and time are the path's own (a folder walk), not those of what a
	// symbolic link points to (a glob or a single file); a new look at the file (restat) must
	// see it the same way, so that a file is compared with itself.
	lstat bool
}

// restat looks at the file again, the way its listing did; err is fs.ErrNotExist (wrapped)
// when it is gone.
func (f inputFile) restat() (inputFile, error) {
	st, err := os.Stat(f.abs)
	if f.lstat {
		st, err = os.Lstat(f.abs)
	}
	if err != nil {
		return f, err
	}
	f.size, f.modTime = st.Size(), st.ModTime().UnixMilli()
	return f, nil
}

// listInputs returns the files under a source path (a folder, walked recursively, or a glob), in
// name order, skipping names that start with "." or "_" as Spark does. base is the folder paths
// are recorded relative to. A symbolic link whose target does not exist (yet) is no file: it is
// left out and returned in dangling (reportDangling), and listed once its target exists.
//
// A glob takes Hadoop's glob syntax, as Spark and Auto Loader read a path: `*`, `?`, `[abc]`,
// `[^a]` and `{ab,cd}` (nested too, `{ab,c{de,fh}}`), and is a prefix filter as Auto Loader's
// path is: a folder it matches is walked like a source folder, every file below it read
// (`landing/2024-*` reads the files of the folders landing/2024-01-01, ...).
func listInputs(path string) (base string, files []inputFile, dangling []danglingLink, err error) {
	if isGlob(path) {
		// The folder before the first pattern character: every match lies below it.
		base = filepath.Dir(path[:strings.IndexAny(path, "*?[{")] + "x")
		seen := map[string]bool{}
		w := &sourceWalk{}
		for _, pattern := range expandBraces(path) {
			matches, err := filepath.Glob(pattern)
			if err != nil {
				return "", nil, nil, fmt.Errorf("source path %s is not a valid glob: %w", path, err)
			}
			for _, m := range matches {
				if seen[m] {
					continue
				}
				seen[m] = true
				st, err := os.Stat(m)
				if err != nil && !hidden(filepath.Base(m)) {
					if l, ok := danglingAt(m); ok {
						dangling = append(dangling, l)
					}
				}
				if err != nil || hidden(filepath.Base(m)) {
					continue
				}
				rel, _ := filepath.Rel(base, m)
				if st.IsDir() {
					if files, err = walkSource(m, filepath.ToSlash(rel), files, w); err != nil {
						return "", nil, nil, fmt.Errorf("listing %s: %w", m, err)
					}
					continue
				}
				files = append(files, inputFile{abs: m, rel: filepath.ToSlash(rel), size: st.Size(), modTime: st.ModTime().UnixMilli()})
			}
		}
		dangling = append(dangling, w.dangling...)
		// A file matched by the glob and below a folder it matches ({a,a/x.json}) is one file.
		sort.SliceStable(files, func(i, j int) bool { return files[i].rel < files[j].rel })
		files = slices.CompactFunc(files, func(a, b inputFile) bool { return a.rel == b.rel })
	} else {
		base = path
		st, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", nil, nil, fmt.Errorf("source path %s does not exist; create the folder, or fix source.path in the spec (or the --conf value it takes: a relative path is resolved against the spec's folder, not the working directory)", path)
			}
			return "", nil, nil, err
		}
		if !st.IsDir() {
			base = filepath.Dir(path)
			files = append(files, inputFile{abs: path, rel: filepath.Base(path), size: st.Size(), modTime: st.ModTime().UnixMilli()})
		} else {
			w := &sourceWalk{}
			if files, err = walkSource(path, "", files, w); err != nil {
				return "", nil, nil, fmt.Errorf("listing %s: %w", path, err)
			}
			dangling = w.dangling
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return base, files, dangling, nil
}

// isGlob says whether a source path is a glob: it holds `*`, `?`, `[` or a `{...}` group (a
// path that exists as written is not one, so a folder named with braces is read as itself).
func isGlob(path string) bool {
	if strings.ContainsAny(path, "*?[") {
		return true
	}
	if i := strings.IndexByte(path, '{'); i >= 0 && strings.IndexByte(path[i:], '}') > 0 {
		if _, err := os.Lstat(path); err != nil {
			return true
		}
	}
	return false
}

// expandBraces expands the {a,b} groups of a glob, as Hadoop's GlobPattern reads them (nested
// groups too: {ab,c{de,fh}} is ab, cde and cfh), into the patterns filepath.Glob takes. A `{`
// without its `}` is kept as written.
func expandBraces(pattern string) []string {
	open := strings.IndexByte(pattern, '{')
	if open < 0 {
		return []string{pattern}
	}
	depth, start := 0, open+1
	var alts []string
	for i := open; i < len(pattern); i++ {
		switch pattern[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alts = append(alts, pattern[start:i])
				start = i + 1
			}
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, pattern[start:i])
				var out []string
				for _, rest := range expandBraces(pattern[i+1:]) {
					for _, a := range alts {
						for _, head := range expandBraces(pattern[:open] + a) {
							out = append(out, head+rest)
						}
					}
				}
				return out
			}
		}
	}
	return []string{pattern}
}

// danglingLink is a symbolic link found in a source folder whose target does not exist, or
// cannot be looked at: no file (yet).
type danglingLink struct {
	path, target string
	err          error // the error of following it
}

// danglingAt returns the link at path when it is a symbolic link that cannot be followed.
func danglingAt(path string) (danglingLink, bool) {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return danglingLink{}, false
	}
	target, _ := os.Readlink(path)
	_, err = os.Stat(path)
	if err == nil {
		return danglingLink{}, false
	}
	return danglingLink{path: path, target: target, err: err}, true
}

// reportDangling emits a WARN event of flow (about dataset) for each link, at most
// maxWarnEvents of them and then their count.
func reportDangling(env *Env, flow, dataset string, links []danglingLink) {
	for i, l := range links {
		shown := pipelinePath(env.Pipeline, l.path) // the target stays as the link says it
		if i == maxWarnEvents {
			env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset, fmt.Sprintf("%d symbolic links in the source folder lead nowhere; %d were reported one by one", len(links), maxWarnEvents), nil, "")
			return
		}
		msg := fmt.Sprintf("%s is a symbolic link to %s, which does not exist (yet): it is skipped, and read once its target exists; land the target before the link, or fix or remove the link", shown, l.target)
		if !errors.Is(l.err, fs.ErrNotExist) {
			msg = fmt.Sprintf("%s is a symbolic link to %s, which cannot be followed (%v): it is skipped; fix or remove the link", shown, l.target, l.err)
		}
		env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset, msg, map[string]any{"file": l.path, "target": l.target}, "")
	}
}

// SourceFile is one input file of a source folder, as SourceFiles lists it.
type SourceFile struct {
	Path    string    // the folder joined with the file's names under it (through symbolic links)
	Size    int64     // bytes
	ModTime time.Time // the last modification
}

// SourceFiles lists the files a source folder holds, as a flow reads them: walked recursively
// in name order, following symbolic links to folders (the folder itself included), skipping
// names that start with "." or "_", each file under one path (walkSource). A file that is a
// symbolic link has the link's own size and time; a symbolic link whose target does not exist
// is left out (it is listed once the target exists). Errors: the folder cannot be listed, or a link
// leads to a folder that overlaps one listed under another path (the files listed before the
// error are returned with it).
func SourceFiles(dir string) ([]SourceFile, error) {
	files, err := walkSource(dir, "", nil, &sourceWalk{})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	out := make([]SourceFile, len(files))
	for i, f := range files {
		out[i] = SourceFile{Path: f.abs, Size: f.size, ModTime: time.UnixMilli(f.modTime)}
	}
	return out, err
}

// GlobFiles lists the files a glob source path matches, as a flow reads them (listInputs: the
// files it matches and those below the folders it matches), in name order.
func GlobFiles(path string) ([]SourceFile, error) {
	_, files, _, err := listInputs(path)
	out := make([]SourceFile, len(files))
	for i, f := range files {
		out[i] = SourceFile{Path: f.abs, Size: f.size, ModTime: time.UnixMilli(f.modTime)}
	}
	return out, err
}

// IsGlob says whether a source path is a glob (isGlob).
func IsGlob(path string) bool { return isGlob(path) }

// walkSource appends to files the files under folder dir (a source folder, or a folder in it;
// rel: its path relative to the source folder, "" for the source folder itself), recursively,
// skipping names that start with "." or "_". Symbolic links to folders are followed, the source
// folder itself included, as Spark's local file system lists them, but each file keeps one path,
// whatever the order of the names: roots holds the folders walked whole so far (the source folder
// first). A link to a folder that the source folder's walk lists is skipped (its files are listed
// under their own path); a link to a hidden folder of it, or to a folder outside it, is walked,
// under the link's path; a link to a folder that overlaps another one walked (the same, inside
// it, or holding it: the source folder included) is an error, since its files would be listed
// twice (or without end), and which of two paths a file gets must not depend on names. A file's
// path is recorded through the links (dir joined with the names under it). A symbolic link that
// cannot be followed (its target does not exist yet) is no file: it is left out and kept in
// w.dangling.
func walkSource(dir, rel string, files []inputFile, w *sourceWalk) ([]inputFile, error) {
	roots := &w.roots
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return files, err
	}
	for i, r := range *roots {
		switch {
		case i == 0 && within(real, r.real) && !hiddenBelow(r.real, real):
			return files, nil // listed by the source folder's walk, under its own path
		case i == 0 && within(real, r.real):
			continue // a hidden folder of the source folder, which its walk skips
		case within(real, r.real) || within(r.real, real):
			return files, fmt.Errorf("%s is a symbolic link to %s, which overlaps %s (listed as %s): its files would be listed twice, or without end; remove the link or point it elsewhere", dir, real, r.real, r.via)
		}
	}
	*roots = append(*roots, walkedFolder{real: real, via: dir})
	err = filepath.WalkDir(real, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == real {
			return nil
		}
		if hidden(de.Name()) {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		under, _ := filepath.Rel(real, p)
		abs, r := filepath.Join(dir, under), filepath.ToSlash(filepath.Join(rel, under))
		if de.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(p)
			if err != nil {
				target, _ := os.Readlink(p)
				w.dangling = append(w.dangling, danglingLink{path: abs, target: target, err: err})
				return nil
			}
			if st.IsDir() {
				files, err = walkSource(abs, r, files, w)
				return err
			}
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		files = append(files, inputFile{abs: abs, rel: r, size: info.Size(), modTime: info.ModTime().UnixMilli(), lstat: true})
		return nil
	})
	return files, err
}

// sourceWalk is what walkSource keeps across the folders of one walk: the folders walked whole
// so far (the source folder first), and the symbolic links it could not follow.
type sourceWalk struct {
	roots    []walkedFolder
	dangling []danglingLink
}

// walkedFolder is a folder walkSource walked whole: its resolved path, and the path it was
// reached by (the source folder, or a symbolic link in it).
type walkedFolder struct{ real, via string }

// within says whether path p is folder dir or lies below it (both clean and absolute).
func within(p, dir string) bool {
	sep := string(filepath.Separator)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, sep)+sep)
}

// hiddenBelow says whether a folder between dir and p (below dir, p included) has a name that
// starts with "." or "_", which a walk of dir skips; p lies within dir.
func hiddenBelow(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." {
		return false
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if hidden(name) {
			return true
		}
	}
	return false
}

// hidden says whether a name is no input, as Spark's file listing (InMemoryFileIndex
// shouldFilterOutPathName) skips it: it starts with "." or "_", or ends with "._COPYING_", the
// name `hadoop fs -put` and `-cp` write a file under until it is complete and renamed (read then,
// it would be read again under its final name).
func hidden(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || strings.HasSuffix(name, "._COPYING_")
}

// Ingest runs the flow of a bronze streaming table: it reads every file under the source path
// that no committed batch has read, types each line by the declared schema (semantics.md
// "Ingestion"), applies the dataset's expectations, and appends the rows in one Delta commit
// that also records the batch (txn version = batch id). With max_files_per_trigger, each batch
// takes at most that many files, in name order, and batches follow until every file available
// is read (Auto Loader's Trigger.AvailableNow). The table must exist (Setup).
//
// The APPLY CHANGES target that reads the table and runs next in the update may have its batch
// folded as the rows are landed (follower).
func Ingest(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	fol := newFollowing(env, d)
	m, err := runBatches(func(first bool, unread *unreadFiles) (Metrics, error) {
		return ingestBatch(ctx, env, d, first, unread, fol)
	})
	fol.finish(err)
	return m, err
}

// ingestBatch runs one batch of Ingest; warnChanged: report input files changed after they were
// read (once an update); unread: the files the update's listing found unread, which the batch
// takes from (and lists first, when there was no listing yet); fol: the run's follower (nil for
// none), fed the batch's rows when they are written by column.
func ingestBatch(ctx context.Context, env *Env, d *spec.Dataset, warnChanged bool, unread *unreadFiles, fol *following) (Metrics, error) {
	m := Metrics{Version: -1}
	storage := env.Pipeline.Storage
	table := delta.New(TableDir(storage, d.Name))
	snap, err := table.Snapshot(-1)
	if err != nil {
		return m, err
	}
	appID := AppID(env.Pipeline, d.Name)
	committed, ok := snap.AppTxns[appID]
	if !ok {
		committed = 0
	}
	ckpt := CheckpointDir(storage, d.Name)
	src := d.Source
	quar, err := openQuarantine(storage, d)
	if err != nil {
		return m, err
	}
	var todo []inputFile
	var base string
	replay := quar.committed(appID, committed+1)
	if replay {
		// The quarantine rows of this batch were committed, its rows not: it reads again the
		// files its offsets list. The batch after lists the source again.
		var files []inputFile
		if base, files, _, err = listInputs(src.Path); err != nil {
			return m, err
		}
		if todo, err = replayFiles(ckpt, committed+1, files); err != nil {
			return m, err
		}
		*unread = unreadFiles{}
		m.more = true
	} else {
		if !unread.listed {
			changed, err := unread.list(env, ckpt, committed, src.Path, d.Name, d.Name, warnChanged)
			if err != nil {
				return m, err
			}
			m.ChangedFiles, m.Unsettled, m.Incomplete = m.ChangedFiles+changed, unread.unsettled, unread.incomplete
		}
		base = unread.base
		todo, m.more = unread.take(src.MaxFilesPerTrigger)
		unread.reportVanished(env, d.Name, d.Name)
	}
	if len(todo) == 0 {
		m.Idle = true
		return m, nil
	}
	meta := snap.Metadata
	// The dataset's columns before this batch's new ones: a batch run again (an incomplete
	// file) evolves from them again.
	schemaBefore, sourceBefore := d.Schema, d.Source.Schema
	evolved, err := evolveSchema(d, todo, &meta, RefreshHint(env.Pipeline, d.Name))
	if err != nil {
		return m, err
	}
	set, err := expectationSet(d, d.Schema)
	if err != nil {
		return m, err
	}
	byColumns := ingestByColumns(d, meta, set, quar)
	if byColumns {
		ingestColumnBatches.Add(1)
	}
	batch := committed + 1
	off := &offsets{Batch: batch, Base: base}
	var chunk [][]any // each row carries two trailing values: file index, line number
	chunkSize := 0    // rowBytes of the rows in chunk
	// The line numbers are boxed in a slab: an int64 put in an interface allocates each.
	lineNos := newBoxSlab(4096, 0)
	width := len(d.Schema.Fields)
	bad := &badRecords{env: env, flow: d.Name, dataset: d.Name, src: src, said: unread.saidWarnings()}
	fw, err := newFileWriter(table, meta)
	if err != nil {
		return m, err
	}
	// On an early return, the write in flight ends and the batch's data files are removed
	// (nothing once they were handed over for the commit); so are the quarantine table's.
	defer fw.abort()
	defer quar.abort()
	// The memory of the rows read is reused once they are written: writing is the only use an
	// ingest makes of them (the data and quarantine writers copy what they keep).
	pool := &blockPool{}
	// A batch written by column with the table's schema feeds the follower, if any: its blocks
	// are then reused once both the write and the fold are done with them.
	fol.begin(snap, byColumns && !evolved, pool)
	defer fol.abort()        // a batch that does not commit breaks the follower
	var writing []*lineBlock // the blocks whose rows the write in flight may hold
	var outRows [][]any      // the array of the rows handed to the writer, reused by each write
	// collect takes the result of the write in flight and releases the memory of its rows.
	collect := func() error {
		n, err := fw.wait()
		m.NumOutputRows += n
		pool.release(writing)
		writing = nil
		return err
	}
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		kept, quarantined, q, err := set.CheckQuarantine(chunk)
		m.Quality.Add(q)
		if err != nil {
			return err
		}
		if quar != nil && !quar.committed(appID, batch) {
			if err := quar.write(quarantined, width, d); err != nil {
				return err
			}
		}
		if len(kept) == 0 {
			clear(chunk)
			chunk, chunkSize = chunk[:0], 0
			return nil
		}
		if err := collect(); err != nil {
			return err
		}
		// The array the write before used is free again: no write is in flight.
		rows := outRows[:0]
		for _, r := range kept {
			off.Files[r[width].(int)].addLine(r[width+1].(int64))
			rows = append(rows, r[:width])
		}
		outRows = rows
		clear(chunk) // release the rows: the backing array is reused for the next chunk
		chunk, chunkSize = chunk[:0], 0
		// Every block emitted so far has its rows in this chunk or in chunks already written.
		writing = pool.seal()
		fw.start(rows)
		return nil
	}
	for _, f := range todo {
		off.Files = append(off.Files, offsetFile{Path: f.rel, Size: f.size, ModTime: f.modTime})
	}
	// By column (ingestByColumns), a chunk is runs of rows of blocks, bounded as the rows are.
	chunkCols := &chunkColumns{}
	if byColumns {
		flush = func() error {
			if chunkCols.n == 0 {
				return nil
			}
			if err := collect(); err != nil {
				return err
			}
			// Every block emitted so far has its rows in this chunk or in chunks already
			// written; the one being emitted is released with the next chunk's.
			writing = pool.seal()
			fw.startColumns(chunkCols)
			chunkCols, chunkSize = &chunkColumns{}, 0
			return nil
		}
	}
	var cols func(c *blockColumns, fi int) error
	if byColumns {
		cols = func(c *blockColumns, fi int) error {
			fol.add(c)
			f := &off.Files[fi]
			for _, l := range c.lines[:c.n] {
				f.addLine(l)
			}
			for lo := 0; lo < c.n; {
				hi, full := lo, false
				for hi < c.n && !full {
					chunkSize += c.rowBytes(hi)
					hi++
					full = chunkCols.n+hi-lo >= chunkRows || chunkSize >= chunkBytes
				}
				chunkCols.add(c, lo, hi)
				lo = hi
				if full {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if fw.busy() && (chunkAhead*chunkCols.n >= chunkRows || chunkAhead*chunkSize >= chunkBytes) {
				return collect()
			}
			return nil
		}
	}
	m.Files, err = readFiles(ctx, src, todo, pool, bad, func(row []any, fi int, lineNo int64) error {
		chunk = append(chunk, append(row, fi, lineNos.int64(lineNo)))
		chunkSize += rowBytes(row)
		if len(chunk) >= chunkRows || chunkSize >= chunkBytes {
			return flush()
		}
		if fw.busy() && (chunkAhead*len(chunk) >= chunkRows || chunkAhead*chunkSize >= chunkBytes) {
			return collect()
		}
		return nil
	}, cols)
	m.BadRecords = bad.count
	if inc := incomplete(err); inc != nil && !replay {
		// A compressed file still being written: this batch (whose files are removed on
		// return) runs again without it, and a later update reads it once complete.
		unread.putBack(env, d.Name, d.Name, todo, inc)
		d.Schema, d.Source.Schema = schemaBefore, sourceBefore
		return Metrics{Version: -1, Idle: true, more: true, ChangedFiles: m.ChangedFiles, Unsettled: m.Unsettled, Incomplete: m.Incomplete + 1}, nil
	}
	if err != nil {
		return m, err
	}
	if err := flush(); err != nil {
		return m, err
	}
	if err := collect(); err != nil {
		return m, err
	}
	adds, err := fw.close()
	if err != nil {
		return m, err
	}
	if err := quar.finish(); err != nil {
		return m, err
	}
	m.BadRecords = bad.count
	bad.finish()
	if err := writeOffsets(ckpt, off); err != nil {
		return m, fmt.Errorf("writing the offsets of batch %d: %w", batch, err)
	}
	fault.Point("ingest.after-data-files")
	if err := quar.commit(appID, batch); err != nil {
		return m, fmt.Errorf("committing batch %d to the quarantine table: %w", batch, err)
	}
	fault.Point("ingest.after-quarantine-commit")
	tx := table.Begin(snap)
	if evolved {
		tx.SetMetadata(meta)
	}
	tx.Add(adds...)
	tx.SetAppTxn(appID, batch)
	tx.SetCommitInfo(nil, map[string]string{"numFiles": fmt.Sprint(len(adds)), "numOutputRows": fmt.Sprint(m.NumOutputRows), "numInputFiles": fmt.Sprint(m.Files)})
	v, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "queryId": appID, "epochId": batch})
	if err != nil {
		return m, err
	}
	m.Version = v
	fol.committed(v)
	fault.Point("ingest.after-commit")
	return m, nil
}

// fileWriter writes the chunks of an ingest batch to the batch's data files (one
// delta.DataWriter, whose files reach the table's target size across chunks) on a goroutine of
// its own, so that the next rows are read, parsed and checked while a chunk is written. At most
// one write is in flight: the caller waits for it before it starts the next, and before the
// chunk being filled grows past 1/chunkAhead of the bounds (busy). The rows handed to start must
// not be changed until the write ends (wait); the writer keeps none of them after. close
// finishes the files and returns their add actions for the batch's commit; abort removes them.
// Its methods are called from one goroutine.
type fileWriter struct {
	dw   *delta.DataWriter
	done chan struct{} // closed when the write in flight ends; nil when none is in flight

	// The result of the last write, set by its goroutine before done is closed.
	rows int64
	err  error
}

// newFileWriter returns the fileWriter of a batch of table, whose metadata (the schema the rows
// are typed by, the partition columns, delta.targetFileSize) is meta.
func newFileWriter(table *delta.Table, meta delta.Metadata) (*fileWriter, error) {
	dw, err := table.NewDataWriter(meta)
	if err != nil {
		return nil, err
	}
	return &fileWriter{dw: dw}, nil
}

// start begins writing rows to the batch's data files (delta.DataWriter.Write); its result is
// left for wait. No write may be in flight: wait for it (and take its result) first.
func (w *fileWriter) start(rows [][]any) {
	w.begin(func() error { return w.dw.Write(rows) }, len(rows))
}

// begin runs write, of n rows, on a goroutine of its own.
func (w *fileWriter) begin(write func() error, n int) {
	if w.done != nil {
		panic("flows: fileWriter.start with a write in flight")
	}
	done := make(chan struct{})
	w.done = done
	go func() {
		defer close(done)
		w.err = write()
		if w.err == nil {
			w.rows = int64(n)
		}
	}()
}

// startColumns is start for rows given by column (delta.DataWriter.WriteColumns).
func (w *fileWriter) startColumns(part delta.ColumnPart) {
	w.begin(func() error { return w.dw.WriteColumns(part) }, part.Len())
}

// busy reports whether a write is in flight and has not ended.
func (w *fileWriter) busy() bool {
	if w.done == nil {
		return false
	}
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// wait waits for the write in flight and returns its number of rows, or its error; with no
// write in flight, or once its result was taken, it returns nothing. After an error the batch's
// files are to be aborted.
func (w *fileWriter) wait() (rows int64, err error) {
	if w.done == nil {
		return 0, nil
	}
	<-w.done
	w.done = nil
	rows, err = w.rows, w.err
	w.rows, w.err = 0, nil
	return rows, err
}

// close finishes the batch's data files once the last write was waited for, and returns their
// add actions in the order the files were opened (delta.DataWriter.Close); a batch whose rows
// were all dropped has none. On error the files are removed.
func (w *fileWriter) close() ([]delta.Add, error) {
	if w.done != nil {
		panic("flows: fileWriter.close with a write in flight")
	}
	return w.dw.Close()
}

// abort waits for the write in flight, if any, and removes the batch's data files, unless
// close returned them.
func (w *fileWriter) abort() {
	w.wait()
	w.dw.Abort()
}
