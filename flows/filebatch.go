package flows

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tributary/eventlog"
	"tributary/schema"
	"tributary/spec"
)

// pendingFiles returns the files of files that no committed batch read (seen: the committed
// batches' files by path), in the order given. A file read before whose size or modification time
// has changed since is not read again; with warn, the first maxWarnEvents of them are reported
// as a WARN event of flow each (about dataset, the one whose source lists it), and the rest in
// one WARN that counts them. changed counts those files.
func pendingFiles(env *Env, flow, dataset string, seen map[string]offsetFile, files []inputFile, warn bool) (todo []inputFile, changed int) {
	var more []string // the changed files past maxWarnEvents
	defer func() {
		if len(more) > 0 {
			env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset,
				fmt.Sprintf("%d more files changed after they were read (the first: %s); they are not read again. Land files complete: write them elsewhere and move them in, or give new data a new file name", len(more), pipelinePath(env.Pipeline, more[0])),
				map[string]any{"files": more}, "")
		}
	}()
	for _, f := range files {
		old, read := seen[f.rel]
		if !read {
			todo = append(todo, f)
			continue
		}
		if (old.Size != f.size || old.ModTime != f.modTime) && warn {
			changed++
			if changed > maxWarnEvents {
				more = append(more, f.abs)
				continue
			}
			how := fmt.Sprintf("size %d → %d bytes", old.Size, f.size)
			if old.Size == f.size {
				// Rewritten (or replaced) with as many bytes: only its time says so.
				how = fmt.Sprintf("same size, %d bytes, but modified at %s, read as of %s", f.size, msTime(f.modTime), msTime(old.ModTime))
			}
			env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset,
				fmt.Sprintf("%s changed after it was read (%s); it is not read again. Land files complete: write them elsewhere and move them in, or give new data a new file name", pipelinePath(env.Pipeline, f.abs), how),
				map[string]any{"file": f.abs}, "")
		}
	}
	return todo, changed
}

// msTime is a file modification time in ms since the epoch as RFC 3339 UTC text with ms.
func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// badRecords applies a file source's `mode` to the values and lines that do not fit its schema
// (semantics.md "Ingestion", malformed input): failfast fails the batch, dropmalformed drops a
// line that did not parse, permissive keeps the row with NULLs. The first maxWarnEvents lines
// with bad values are WARN events of flow (about dataset); count counts every bad value or line.
type badRecords struct {
	env           *Env
	flow, dataset string
	src           *spec.Source
	count         int64
	warned        int
	reported      int64
	// fileWarnings counts the files warnFile was told about.
	fileWarnings int
	// said, when not nil, holds the WARN messages said already in this update: a batch run again
	// without an incomplete file (unreadFiles.putBack) says those of the files before it once.
	said map[string]bool
	// malformed holds, for the first maxWarnEvents lines that did not parse and were kept as rows
	// of NULLs, the reason, by "file:line": an error about such a row then says why it is empty.
	malformed map[string]string
}

// take applies the mode to the bad values of one line (none: the row is kept). keep is false for
// a line dropmalformed drops; the error is failfast's, naming file, line and column.
func (r *badRecords) take(file string, lineNo int64, parsed bool, bad []badValue) (keep bool, err error) {
	if len(bad) == 0 {
		return true, nil
	}
	r.count += int64(len(bad))
	// The file as the WARN about ties names one: relative to the pipeline's folder.
	shown := file
	if r.env != nil && r.env.Pipeline != nil {
		shown = pipelinePath(r.env.Pipeline, file)
	}
	where := fmt.Sprintf("%s:%d", shown, lineNo)
	if r.src.Mode == spec.ModeFailFast {
		b := bad[0]
		if b.RestOfFile {
			return false, fmt.Errorf("%s: %s (mode: failfast; replace the file with the complete one, written elsewhere and moved in once complete, or use mode: permissive to keep the rows before this line)", where, b.Reason)
		}
		if b.Column == "" {
			return false, fmt.Errorf("%s: %s (mode: failfast; fix the line or use mode: permissive)", where, b.Reason)
		}
		return false, fmt.Errorf("%s: column %s: %s (mode: failfast; fix the value or use mode: permissive)", where, b.Column, b.Reason)
	}
	if !parsed && r.src.Mode == spec.ModeDropMalformed {
		if r.warned < maxWarnEvents {
			msg := fmt.Sprintf("%s: dropped a malformed line (mode: dropmalformed): %s", where, bad[0].Reason)
			if bad[0].RestOfFile {
				msg = fmt.Sprintf("%s: %s; the rows before this line are kept and the rest of the file is dropped (mode: dropmalformed). %s", where, bad[0].Reason, restOfFileFix)
			}
			r.emit(msg, map[string]any{"file": file, "line": lineNo})
			r.warned++
			r.reported += int64(len(bad))
		}
		return false, nil
	}
	if !parsed && len(r.malformed) < maxWarnEvents {
		if r.malformed == nil {
			r.malformed = map[string]string{}
		}
		r.malformed[fmt.Sprintf("%s:%d", file, lineNo)] = bad[0].Reason
	}
	if r.warned < maxWarnEvents {
		for _, b := range bad {
			msg := fmt.Sprintf("%s: %s; the line becomes a row of NULLs (mode: permissive; the dataset's expectations still apply to it)", where, b.Reason)
			switch {
			case b.Column != "":
				msg = fmt.Sprintf("%s: column %s: %s; the value is NULL", where, b.Column, b.Reason)
			case b.RestOfFile:
				lost := ""
				if r.src.RescuedDataColumn != "" {
					lost = ", whose " + r.src.RescuedDataColumn + " says what was lost"
				}
				msg = fmt.Sprintf("%s: %s; the rows before this line are kept and the rest of the file becomes a row of NULLs%s (mode: permissive; the dataset's expectations still apply to it). %s", where, b.Reason, lost, restOfFileFix)
			}
			if r.src.RescuedDataColumn != "" && !b.RestOfFile {
				msg += " and the original is in " + r.src.RescuedDataColumn
			}
			details := map[string]any{"file": file, "line": lineNo}
			if b.Column != "" { // a line that does not parse names no column
				details["column"] = b.Column
			}
			r.emit(msg, details)
		}
		r.warned++
		r.reported += int64(len(bad))
	}
	return true, nil
}

// restOfFileFix says how to read the rest of a compressed file that could not be decompressed
// to its end: the file counts as read once its batch commits.
const restOfFileFix = "A file is read once: to read the rest, land the complete (or corrected) file under a new name (write files elsewhere and move them in once complete)"

// damagedRow is the row of NULLs that stands for the rest of a compressed file that cannot be
// decompressed to its end, with the reason in the rescued-data column when the source has one.
func damagedRow(src *spec.Source, filePath string, dmg *damagedInput) []any {
	width := len(src.Schema.Fields)
	if src.RescuedDataColumn == "" {
		return make([]any, width, width+rowSpare)
	}
	row := make([]any, width+1, width+1+rowSpare)
	lr := newLineReader(src.Schema, src.RescuedDataColumn, filePath)
	row[width] = lr.rescue(map[string]any{"_corrupt_record": fmt.Sprintf("line %d and after: %s", dmg.line, dmg.reason)})
	return row
}

// emit says a WARN of the flow about the dataset, unless this update said it already (said).
func (r *badRecords) emit(msg string, details map[string]any) {
	if r.said != nil {
		if r.said[msg] {
			return
		}
		r.said[msg] = true
	}
	r.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, r.flow, r.dataset, msg, details, "")
}

// warnFile reports what is wrong with a file as a whole though it is read on (eachRow's warn): a
// WARN event of flow, for the first maxWarnEvents files of a batch; finish counts the others.
func (r *badRecords) warnFile(file, msg string) {
	if r.fileWarnings < maxWarnEvents {
		// The message names the file as the WARNs about lines do: relative to the pipeline's
		// folder (the details keep the full path).
		if r.env != nil {
			msg = strings.ReplaceAll(msg, file, pipelinePath(r.env.Pipeline, file))
		}
		r.emit(msg, map[string]any{"file": file})
	}
	r.fileWarnings++
}

// finish reports, once the batch is read, how many bad values or lines, and files warnFile was
// told about, were not reported one by one.
func (r *badRecords) finish() {
	if r.fileWarnings > maxWarnEvents {
		r.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, r.flow, r.dataset, fmt.Sprintf("%d more files of this batch have a warning like the %d above", r.fileWarnings-maxWarnEvents, maxWarnEvents), nil, "")
	}
	if r.count > r.reported {
		r.env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, r.flow, r.dataset, fmt.Sprintf("%d bad values or lines in this batch; %d were reported one by one", r.count, r.reported), nil, "")
	}
}

// readFiles reads the files todo in order, one after another, each by its source's format
// (eachRow, with pool), applies the source's mode to what does not fit its schema (bad), and
// calls fn with every row kept (with the file's path and modification time after its values
// under include_metadata), the file's index in todo and the row's line number. A compressed
// file that cannot be decompressed to its end (truncated, not compressed, damaged: damagedInput)
// keeps the rows before the damage, and the rest of it is one malformed record at the line where
// its text stops (the mode applies), as a Parquet file that cannot be read is. An empty file,
// and a JSON-lines file whose last line has no line end and is a JSON value cut short (cutLine), are
// *incompleteInput errors, as a compressed file whose stream ends early is: still being
// written, most likely, they are left for an update after they are complete. It returns how
// many files it read whole; an error reading a file names it, and the first error of fn or of
// ctx ends the reading. With cols not nil, a JSON-lines source is read by column instead: cols
// gets each block's rows (blockColumns), those the mode drops taken out, with the file's index;
// fn is not called.
func readFiles(ctx context.Context, src *spec.Source, todo []inputFile, pool *blockPool, bad *badRecords, fn func(row []any, fi int, lineNo int64) error, cols func(c *blockColumns, fi int) error) (files int, err error) {
	for fi, f := range todo {
		if err := ctx.Err(); err != nil {
			return files, err
		}
		in, err := openInput(f.abs, readLines(src))
		if err != nil {
			return files, err
		}
		if _, plain := in.(*os.File); plain && f.size == 0 {
			// Emptied since the listing (which leaves empty files out: unreadFiles.list): read
			// now, it would be recorded as read with no rows, and what is written into it then
			// would be "changed after it was read", never read. It is read once it holds
			// something. (An empty compressed file says so itself: openInput.)
			in.Close()
			return files, &incompleteInput{path: f.abs, reason: "the file is empty: it is being written, most likely"}
		}
		emit := func(row []any, parsed bool, bads []badValue, lineNo int64) error {
			if keep, err := bad.take(f.abs, lineNo, parsed, bads); !keep || err != nil {
				return err
			}
			if src.IncludeMetadata {
				row = append(row, f.abs, schema.Timestamp(f.modTime*1000))
			}
			return fn(row, fi, lineNo)
		}
		var blocks func(b *lineBlock) error
		if cols != nil {
			blocks = func(b *lineBlock) error {
				if err := settleColumns(b, f.abs, bad); err != nil {
					return err
				}
				return cols(b.cols, fi)
			}
		}
		err = eachRowOrBlock(src, f.abs, in, pool, emit, blocks, func(msg string) { bad.warnFile(f.abs, msg) })
		if dmg := (*damagedInput)(nil); errors.As(err, &dmg) {
			// The rows before the damage are kept; the rest of the file is one malformed record.
			row, bads := damagedRow(src, f.abs, dmg), []badValue{{Line: dmg.line, Reason: dmg.reason, RestOfFile: true}}
			if blocks == nil {
				err = emit(row, false, bads, dmg.line)
			} else {
				// A block of its own, of that one row.
				l := newColumnLayout(src.Schema)
				b := &lineBlock{rows: []lineRow{{bad: bads, lineNo: dmg.line}}}
				b.cols = b.cols.reset(l, 1, len(row), 0, 0)
				b.cols.add(l, row, dmg.line)
				err = blocks(b)
			}
		}
		in.Close()
		if err != nil {
			return files, fmt.Errorf("reading %s: %w", f.abs, err)
		}
		files++
	}
	return files, nil
}

// unreadFiles carries, from batch to batch of one run of a flow that reads files (an ingest, or
// APPLY CHANGES from a view over files), the files its listing found that no committed batch had
// read, so that a run of many batches (max_files_per_trigger) lists the source folder and reads
// its checkpoint's offsets once, not once a batch: each batch takes the next files of the
// listing, and the run ends when none is left. So a triggered update reads the files there were
// when it started, in batches; files that land meanwhile are the next update's (Spark's
// FileStreamSource keeps the unread files of a listing for the next batches in the same way).
type unreadFiles struct {
	listed     bool
	base       string      // the folder the files' relative paths start from
	files      []inputFile // not yet taken, in name order
	unsettled  int         // files the listing left for a later update (Env.Settle)
	incomplete int         // files left out as found incomplete earlier in the update (Env.waitingFile)
	// said holds the WARNs about bad lines and files said in this update (badRecords.said).
	said map[string]bool
	// vanished are the listed files that take found removed before their batch (skipped), not
	// yet reported (reportVanished).
	vanished []string
}

// reportVanished says, in one WARN event of flow about dataset, which listed files take skipped
// since they were removed before their batch read them (at most maxWarnEvents named), and
// forgets them.
func (u *unreadFiles) reportVanished(env *Env, flow, dataset string) {
	if len(u.vanished) == 0 {
		return
	}
	var names []string
	for _, f := range u.vanished[:min(len(u.vanished), maxWarnEvents)] {
		names = append(names, pipelinePath(env.Pipeline, f))
	}
	if n := len(u.vanished) - len(names); n > 0 {
		names = append(names, fmt.Sprintf("and %d more", n))
	}
	env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset,
		fmt.Sprintf("%d listed file(s) were removed before their batch read them, so they were skipped: %s; a file landed again (moved back) is read by a later update", len(u.vanished), strings.Join(names, ", ")),
		map[string]any{"files": u.vanished}, "")
	u.vanished = nil
}

// globMissSample is how many of the files below a glob's folder globMiss names.
const globMissSample = 3

// globMiss says why the glob path (its folder base) matched no file, when that looks like a
// mistake rather than no data yet: the folder does not exist, or it holds files (other than
// hidden ones) that the pattern does not match, up to globMissSample of them named. It returns
// "" when the folder exists and holds no file. Paths are named relative to p's folder.
func globMiss(p *spec.Pipeline, path, base string) string {
	shown := pipelinePath(p, path)
	if _, err := os.Stat(base); errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("source path %s matches no file: its folder %s does not exist (yet); the flow is idle until it does and holds a matching file (a relative path is resolved against the spec's folder)", shown, pipelinePath(p, base))
	}
	var sample []string
	n := 0
	const most = 10_000 // files looked at, at most
	filepath.WalkDir(base, func(q string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case q != base && hidden(e.Name()):
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case e.IsDir():
			return nil
		}
		if n++; len(sample) < globMissSample {
			sample = append(sample, pipelinePath(p, q))
		}
		if n >= most {
			return filepath.SkipAll
		}
		return nil
	})
	if n == 0 {
		return ""
	}
	count := strconv.Itoa(n)
	if n >= most {
		count = "at least " + count
	}
	return fmt.Sprintf("source path %s matches none of the %s files below %s (e.g. %s): check the pattern (its extension, case and folders); the flow is idle until a file matches", shown, count, pipelinePath(p, base), strings.Join(sample, ", "))
}

// saidWarnings returns the set of the WARNs said in this update (badRecords.said).
func (u *unreadFiles) saidWarnings() map[string]bool {
	if u.said == nil {
		u.said = map[string]bool{}
	}
	return u.said
}

// list lists the source at path and keeps its files that the batches 1..committed recorded in
// the checkpoint folder ckpt did not read (pendingFiles, which reports changed files when warn).
// changed counts the files read before and changed since. A source folder other than the one
// the committed batches read is an error (checkBase). Empty files are left out, and so are the
// files found incomplete earlier in the update and unchanged since (Env.waitingFile, counted in
// u.incomplete). With env.Settle, files modified more recently are left out (counted in
// u.unsettled).
func (u *unreadFiles) list(env *Env, ckpt string, committed int64, path, flow, dataset string, warn bool) (changed int, err error) {
	seen, err := committedFiles(ckpt, committed)
	if err != nil {
		return 0, err
	}
	base, files, dangling, err := listInputs(path)
	if err != nil {
		return 0, err
	}
	reportDangling(env, flow, dataset, dangling)
	if len(files) == 0 && isGlob(path) {
		if msg := globMiss(env.Pipeline, path, base); msg != "" && !u.saidWarnings()[msg] {
			u.said[msg] = true
			env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset, msg, map[string]any{"path": path}, "")
		}
	}
	if err := checkBase(ckpt, committed, base, dataset, func() string { return RefreshWithReaders(env.Pipeline, flow) }); err != nil {
		return 0, err
	}
	u.files, changed = pendingFiles(env, flow, dataset, seen, files, warn)
	// An empty file has no rows yet: created and not written, most likely (`cp`, a shell
	// redirect and most writers create the file first). Recorded as read, what is written into
	// it then would be "changed after it was read", never read; it is left out of the listing,
	// without a word (an export of no rows stays empty for good), until it holds something.
	// A file an earlier batch of this update (continuous mode) found incomplete and that has
	// not changed since is left out too: read again, it would be incomplete again, and its
	// WARN said again at every batch while other files land.
	kept := u.files[:0]
	for _, f := range u.files {
		switch {
		case f.size == 0:
		case env.waitingFile(flow, f.abs, f.size, f.modTime):
			u.incomplete++
		default:
			kept = append(kept, f)
		}
	}
	u.files = kept
	if env.Settle > 0 {
		// Files still being written, perhaps: a later update reads them whole.
		kept := u.files[:0]
		for _, f := range u.files {
			if env.settling(f.modTime) {
				u.unsettled++
				continue
			}
			kept = append(kept, f)
		}
		u.files = kept
	}
	u.listed, u.base = true, base
	return changed, nil
}

// putBack returns the files of a batch that met the incomplete file inc (a compressed file still
// being written: incompleteInput) to the front of the listing, all but inc itself, which this
// update leaves unread (not recorded: a later update reads it once complete), with a WARN of
// flow about dataset. The batch, which committed nothing, is then run again without it.
func (u *unreadFiles) putBack(env *Env, flow, dataset string, todo []inputFile, inc *incompleteInput) {
	var keep []inputFile
	for _, f := range todo {
		if f.abs != inc.path {
			keep = append(keep, f)
		} else {
			env.markWaiting(flow, f.abs, f.size, f.modTime)
		}
	}
	u.files = append(keep, u.files...)
	env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, flow, dataset,
		fmt.Sprintf("%s: %s; it is left unread, and an update after it is complete reads it whole (write files elsewhere and move them in once complete)", pipelinePath(env.Pipeline, inc.path), inc.reason),
		map[string]any{"file": inc.path}, "")
}

// incomplete returns the incompleteInput err holds, or nil.
func incomplete(err error) *incompleteInput {
	var inc *incompleteInput
	if errors.As(err, &inc) {
		return inc
	}
	return nil
}

// take returns the next files, at most n (n <= 0: all of them), and whether files are left for
// a batch after. Each file is looked at again, as a listing made now would see it: one removed
// since the listing is left out, and the others have their size and modification time of now,
// which the batch's offsets record (a file completed after the update's listing is read whole;
// recorded as the listing saw it, it would look changed after it was read). A file that cannot
// be looked at keeps what the listing saw: reading it reports the error.
func (u *unreadFiles) take(n int) (files []inputFile, more bool) {
	for len(u.files) > 0 && (n <= 0 || len(files) < n) {
		f, err := u.files[0].restat()
		u.files = u.files[1:]
		if errors.Is(err, fs.ErrNotExist) {
			u.vanished = append(u.vanished, f.abs)
			continue
		}
		files = append(files, f)
	}
	return files, len(u.files) > 0
}

// runBatches runs batch, the first time with first, again while the batch before left files for
// the next one (Metrics.more: max_files_per_trigger), and returns the batches' metrics summed
// (Metrics.addBatch); an error ends the run with the metrics so far. A batch stopped by the
// update's cancellation commits nothing, so its metrics (rows, expectations' counts) are left
// out. The batches share one unreadFiles.
func runBatches(batch func(first bool, unread *unreadFiles) (Metrics, error)) (Metrics, error) {
	total := Metrics{Version: -1}
	unread := &unreadFiles{}
	for first := true; ; first = false {
		m, err := batch(first, unread)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return total, err
		}
		total.addBatch(m, first)
		if err != nil || !m.more {
			return total, err
		}
	}
}
