package flows

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/expectations"
	"tributary/internal/fault"
	"tributary/schema"
	"tributary/spec"
)

// targetFileRows is the most rows an APPLY CHANGES commit puts in one data file (a variable for
// tests).
var targetFileRows = 1_000_000

// defaultTombstoneGCSeconds is pipelines.cdc.tombstoneGCThresholdInSeconds when unset (semantics.md).
const defaultTombstoneGCSeconds = 172800

// origin is where an event came from: a version of the source table and its row index there.
type origin struct {
	version int64
	row     int64
}

// changeBatch is what an APPLY CHANGES flow reads for one batch: the change events the target has
// not applied yet, checked by the dataset's expectations, in arrival order.
type changeBatch struct {
	target  *delta.Table
	snap    *delta.Snapshot // the target before the batch
	appID   string
	srcSnap *delta.Snapshot // the source table at the end of the batch; nil for a view over files
	// progress is the batch's txn version: the source table's version it has read up to, or,
	// for a view over files, the number of the batch (its offsets: view).
	progress int64
	sourceID string     // the source's identity in commitInfo (sourceKey): the table's id, or viewSourceID
	view     *viewBatch // the files of a batch read from a view over files; nil for a table
	stateID  string     // the CDC state manifest of the target's last APPLY CHANGES commit
	events   []event
	// parts, when not nil, holds the events instead of events: in arrival order, part after
	// part (a view's groups, whose count is known only once read; see eventParts).
	parts    [][]event
	dataSch  schema.Schema // the target's data columns (without __START_AT / __END_AT)
	keyIdx   []int         // keys in dataSch
	keySch   schema.Schema
	seqSch   schema.Schema
	truncate []any // the highest sequence of a truncate event in the batch, or nil
	nSource  int   // events read before expectations
	nEvents  int   // events kept by the expectations, truncates included
	// reduced is the batch reduced to each key's winner (truncate events left out, and nothing
	// left out below a truncate sequence: reduceResult.above does that), when it was reduced
	// while read; events is then nil.
	reduced *reduceResult
	// hist holds the batch instead of events when it was folded into columns as read: the first
	// batch of an SCD type 2 target (histColumns).
	hist *histColumns
	// typed holds the batch instead of reduced when it was folded into a typedFold and the
	// target is fresh (freshSCD1): applySCD1Fresh writes the winners from it unboxed.
	typed *typedFold
	spans arrivalSpans // where each event came from, by arrival (the WARN about ties names it)
	// ctx is the update's: once it is done (a stop signal that stops the running flows), the
	// batch commits nothing, however far its fold and files have come (finishBatch). nil: never.
	ctx context.Context
	// histPre, when not nil, is the CDC state of a target kept as per-key histories, loaded
	// while the batch is read (prefetchHistState); applyHistory takes it.
	histPre *histPrefetch
}

// histPrefetch is a target's per-key history state (loadHistState) loaded on a goroutine of its
// own, from the files of the state's manifest, while the batch is read from the source's: once
// done is closed, state and err are set. nowMs is the time the load used, which applyHistory
// then uses as the batch's.
type histPrefetch struct {
	done  chan struct{}
	nowMs int64
	state *histState
	err   error
}

// prefetchHistState starts loading the state of b's target (kept as per-key histories: SCD type
// 2, or SCD type 1 with ignore_null_updates) into b.histPre. It needs b's target, snapshot,
// state id and schemas.
func (b *changeBatch) prefetchHistState(env *Env, d *spec.Dataset) {
	gc := historyGC(d)
	pre := &histPrefetch{done: make(chan struct{}), nowMs: env.now().UnixMilli()}
	dir := StateDir(env.Pipeline.Storage, d.Name)
	// What the load reads of b, taken now: the goroutine shares nothing with the read.
	target, snap, id, keySch, seqSch, dataSch := b.target, b.snap, b.stateID, b.keySch, b.seqSch, b.dataSch
	go func() {
		defer close(pre.done)
		defer func() {
			// A panic fails the batch, as it would on the flow's own goroutine (the DAG's
			// recover), rather than the process.
			if r := recover(); r != nil {
				pre.state, pre.err = nil, fmt.Errorf("loading the CDC state of %s: %v\n\n%s", d.Name, r, debug.Stack())
			}
		}()
		pre.state, pre.err = loadHistState(dir, target, snap, id, keySch, seqSch, dataSch, pre.nowMs, gc)
	}()
	b.histPre = pre
}

// dropHistPrefetch waits for b's state prefetch, if any, when the batch will not be applied
// (its read failed, found nothing to apply, or the update stopped), and caches the state it
// loaded for the next batch, as loadHistState would have left it.
func (b *changeBatch) dropHistPrefetch() {
	pre := b.histPre
	if pre == nil {
		return
	}
	<-pre.done
	b.histPre = nil
	if pre.err == nil && pre.state != nil && pre.state.id != "" && !pre.state.fresh {
		histCache.Store(pre.state.dir, pre.state)
	}
}

// historyGC is the tombstone GC threshold (ms) loadHistState applies to d's per-key histories:
// tombstoneGC for SCD type 1 with ignore_null_updates, -1 (none: a deleted key's history stays)
// for SCD type 2.
func historyGC(d *spec.Dataset) int64 {
	if d.ApplyChanges.StoredAsSCDType == 2 {
		return -1
	}
	return tombstoneGC(d)
}

// keptAsHistories says whether d's APPLY CHANGES target is kept as per-key histories
// (applyHistory): SCD type 2, or SCD type 1 with ignore_null_updates.
func keptAsHistories(d *spec.Dataset) bool {
	return d.ApplyChanges.StoredAsSCDType == 2 || d.ApplyChanges.IgnoreNullUpdates
}

// adjacent returns where the positions idx start when they are side by side, in order (none
// missing, -1), else -1.
func adjacent(idx []int) int {
	if len(idx) == 0 || idx[0] < 0 {
		return -1
	}
	for i, j := range idx {
		if j != idx[0]+i {
			return -1
		}
	}
	return idx[0]
}

// copies is 0 when the values of columns starting at at (adjacent) may be a window of their row,
// else 1.
func copies(at int) int {
	if at < 0 {
		return 1
	}
	return 0
}

// eventParts returns the batch's events (not reduced), in arrival order, in one or more parts.
func (b *changeBatch) eventParts() [][]event {
	if b.parts != nil {
		return b.parts
	}
	return [][]event{b.events}
}

// allEvents returns the batch's events (not reduced), in arrival order, in one slice: a copy
// when they are held in parts.
func (b *changeBatch) allEvents() []event {
	if b.parts != nil {
		return slices.Concat(b.parts...)
	}
	return b.events
}

// eventCount returns the number of the batch's events (not reduced).
func (b *changeBatch) eventCount() int {
	n := len(b.events)
	for _, p := range b.parts {
		n += len(p)
	}
	return n
}

// ApplyChanges runs the APPLY CHANGES flow of dataset d (semantics.md "APPLY CHANGES"): it reads
// the commits of the source table that the target has not applied yet, checks the dataset's
// expectations on those change events, and applies them as SCD type 1 (one row per live key) or
// SCD type 2 (a version per change of the tracked columns). Per key the highest sequence wins,
// late and duplicate events change nothing that in-order arrival would not, deletes leave
// tombstones. Only the data files that hold touched keys are rewritten. Data, change data (cdc)
// files, the CDC state manifest and the progress (txn appId = the flow, version = last source
// version) are one commit.
//
// A view over files as the source (spec.Dataset.FileView) is read by this flow itself: the files
// no committed batch of the target read, with the view's mode and expectations, recorded in the
// target's checkpoint folder (offsets) and committed as txn version = batch number; with
// max_files_per_trigger, batches follow until every available file is read.
func ApplyChanges(ctx context.Context, env *Env, d *spec.Dataset) (Metrics, error) {
	if d.SchemaAtRun() {
		// A query streaming table's first update makes the table whose columns this target
		// takes: the update's set-up, before it, could not set the target up.
		if known, err := setupAtRun(env.Pipeline, d); err != nil || !known {
			return Metrics{Version: -1, Idle: err == nil}, err
		}
		warnTextSequence(env, d)
	}
	return runBatches(func(first bool, unread *unreadFiles) (Metrics, error) {
		return applyBatch(ctx, env, d, first, unread)
	})
}

// applyBatch reads and applies one batch of ApplyChanges; first: the update's first batch;
// unread: the files of a view over files that the update's listing found unread.
func applyBatch(ctx context.Context, env *Env, d *spec.Dataset, first bool, unread *unreadFiles) (Metrics, error) {
	m := Metrics{Version: -1}
	// A view over files reads its rows into memory it reuses, so that reading makes little
	// garbage; a table's rows are read into new memory, group by group, and reading it with the
	// raised target would hold several groups' garbage at once (cdc-bulk from bronze: 600 MB
	// more peak, no faster).
	viewSource := false
	if src := env.Pipeline.Dataset(d.ApplyChanges.Source); src != nil && src.FileView() {
		viewSource = true
		defer relaxGC()()
	}
	b, err := readChangeBatch(ctx, env, d, &m, first, unread)
	if err != nil || b == nil {
		return m, err
	}
	if err := ctx.Err(); err != nil {
		b.dropHistPrefetch()
		return m, err // stopped while reading: nothing to fold
	}
	if !viewSource && b.hist == nil {
		// (A batch folded into columns holds little, and nothing the collector marks long.)
		defer relaxGC()()
	}
	if b.view != nil {
		m.more = b.view.more
	}
	switch {
	case d.ApplyChanges.StoredAsSCDType == 2:
		return applySCD2(env, d, b, m)
	case d.ApplyChanges.IgnoreNullUpdates:
		return applySCD1History(env, d, b, m)
	}
	return applySCD1(env, d, b, m)
}

// readChangeBatch reads and checks the batch; it returns nil (and m.Idle) when there is nothing
// new. For a target kept as per-key histories it loads the target's CDC state meanwhile
// (changeBatch.histPre; waited for and dropped when it returns no batch). first: the update's first batch (files changed since read are reported then); unread:
// for a view over files, the update's unread files (planViewBatch).
func readChangeBatch(ctx context.Context, env *Env, d *spec.Dataset, m *Metrics, first bool, unread *unreadFiles) (out *changeBatch, err error) {
	ac := d.ApplyChanges
	p := env.Pipeline
	srcDS := p.Dataset(ac.Source)
	if srcDS == nil {
		return nil, fmt.Errorf("apply_changes source %q is not a dataset of this pipeline", ac.Source)
	}
	srcSch := srcDS.Schema
	b := &changeBatch{target: delta.New(TableDir(p.Storage, d.Name)), appID: AppID(p, d.Name), ctx: ctx}
	// The fold an ingest flow of the source made of its rows as it landed them, if any: it is
	// taken when it is of this batch's versions (follower.fits), and dropped otherwise.
	pre := env.takeFollower(d.Name)
	b.dataSch = dataSchema(d)
	if b.snap, err = b.target.Snapshot(-1); err != nil {
		return nil, err
	}
	last, ok := b.snap.AppTxns[b.appID]
	if !ok {
		last = -1
	}
	source := delta.New(TableDir(p.Storage, ac.Source))
	var latest int64
	if srcDS.FileView() {
		b.sourceID = viewSourceID(srcDS)
	} else {
		if b.srcSnap, err = source.Snapshot(-1); err != nil {
			return nil, err
		}
		latest = b.srcSnap.Version
		b.sourceID, b.progress = b.srcSnap.Metadata.ID, latest
		if d.SchemaAtRun() {
			warnLeftOut(env, d, b.srcSnap.Metadata.Schema)
		}
	}
	var sourceID string
	var was *applySettings
	if b.stateID, sourceID, was, err = lastApply(b.target, b.snap); err != nil {
		return nil, err
	}
	if now := settingsOf(d); was != nil {
		for _, c := range []struct {
			what     string
			old, cur any
		}{
			{"keys", was.Keys, now.Keys},
			{"sequence_by", was.SequenceBy, now.SequenceBy},
			{"stored_as_scd_type", was.StoredAsSCDType, now.StoredAsSCDType},
			{"ignore_null_updates", was.IgnoreNullUpdates, now.IgnoreNullUpdates},
			{"the tracked columns (track_history_column_list / track_history_except_column_list)", was.TrackHistory, now.TrackHistory},
		} {
			if fmt.Sprint(c.old) != fmt.Sprint(c.cur) {
				return nil, fmt.Errorf("%s of %s changed from %s to %s since the table was built; its CDC state cannot follow: run %s to rebuild it", c.what, d.Name, settingText(c.old), settingText(c.cur), RefreshHint(p, d.Name))
			}
		}
	}
	if sourceID != "" && sourceID != b.sourceID {
		if isViewSourceID(sourceID) || isViewSourceID(b.sourceID) {
			return nil, fmt.Errorf("the source %s of %s is now %s, and %s was built from %s; run %s to rebuild %s from it", ac.Source, d.Name, sourceKind(b.sourceID), d.Name, sourceKind(sourceID), RefreshHint(p, d.Name), d.Name)
		}
		return nil, fmt.Errorf("the source table %s was re-created (a full refresh) or renamed since %s last read it: it is another table than the one %s was built from; run %s to rebuild %s from it", ac.Source, d.Name, d.Name, RefreshWithReaders(p, d.Name), d.Name)
	}
	var todo []inputFile
	if srcDS.FileView() {
		if b.view, todo, err = planViewBatch(env, d, srcDS, max(last, 0), first, unread, m); err != nil {
			return nil, err
		}
		if b.view == nil {
			m.Idle = true
			return nil, nil
		}
		b.progress = b.view.off.Batch
	} else if latest <= last {
		m.Idle = true
		return nil, nil
	}

	// Events: keys, sequence, kind, target columns. NULL keys or sequences fail the batch
	// (truncates need no key).
	set, err := expectationSet(d, srcSch)
	if err != nil {
		return nil, err
	}
	// A view's expectations are checked first, on the rows it reads (they are the view's: its
	// name is their dataset in the data quality metrics).
	var viewSet *expectations.Set
	if b.view != nil && len(srcDS.Expectations) > 0 {
		if viewSet, err = expectationSet(srcDS, srcSch); err != nil {
			return nil, err
		}
	}
	failRule := hasFailRule(set) || (viewSet != nil && hasFailRule(viewSet))
	keyIdx := indexes(srcSch, ac.Keys)
	seqIdx := indexes(srcSch, ac.SequenceBy)
	projIdx := indexes(srcSch, b.dataSch.Names())
	b.keyIdx = indexes(b.dataSch, ac.Keys)
	b.keySch, _, _ = srcSch.Select(ac.Keys)
	b.seqSch, _, _ = srcSch.Select(ac.SequenceBy)
	if keptAsHistories(d) {
		// The target's state is loaded while the batch is read: neither needs the other.
		b.prefetchHistState(env, d)
		defer func() {
			if err != nil || out == nil {
				b.dropHistPrefetch() // nothing outlives a read that applies nothing
			}
		}()
	}
	delProg, err := compileOptional(ac.ApplyAsDeletes, srcSch, "apply_as_deletes")
	if err != nil {
		return nil, err
	}
	truncProg, err := compileOptional(ac.ApplyAsTruncates, srcSch, "apply_as_truncates")
	if err != nil {
		return nil, err
	}
	// An SCD type 1 target needs only each key's winner: unless a fail expectation must see the
	// whole batch first, each source file's events are reduced as they are read (b.reduced), so
	// that the batch is never in memory at once. A goroutine folds one group's events while the
	// next group is read; the events go to it in eventBufs, which it hands back once folded (the
	// folder copies what it keeps), so that the next groups' events reuse their memory. A batch
	// of BIGINT keys and sequences and primitive columns folds into typed columns (typedFold),
	// which copies what it keeps too: a view's rows are then folded straight from the memory of
	// their input, which is reused once the group is folded (eventBuf.done).
	var fold batchFold
	typed := false
	var folded chan *eventBuf
	freeBufs := make(chan *eventBuf, 2)
	var foldDone sync.WaitGroup
	var foldErr error // set by the folding goroutine before foldDone is done
	fold, typed = foldFor(ac, b, failRule, truncProg != nil)
	commits := map[int64]*delta.Commit{} // the source's commits read, by version
	if pre != nil {
		if !failRule && b.view == nil && pre.fits(b, ac, fold, columnSourceFor(fold, srcSch, set, truncProg != nil, keyIdx, seqIdx, projIdx, b.dataSch), source, last, latest, commits) {
			fold, b.hist = pre.fold, pre.hist
			followedBatches.Add(1)
		} else {
			pre = nil
		}
	}
	if fold != nil && pre == nil {
		folded = make(chan *eventBuf)
		foldDone.Add(1)
		go func(in <-chan *eventBuf) {
			defer foldDone.Done()
			foldErr = foldGroups(d.Name, fold, in, freeBufs)
		}(folded)
		defer func() {
			if folded != nil { // an error return: stop the folding goroutine
				close(folded)
				foldDone.Wait()
			}
		}()
	}
	// Unless a fail expectation must see the whole batch first, rows are turned into events a
	// row group at a time, so that the source rows are not all held at once.
	perGroup := !failRule
	nsrc := len(srcSch.Fields)
	nk, ns, np := len(keyIdx), len(seqIdx), len(projIdx)
	nullCols := append(append([]string(nil), ac.Keys...), ac.SequenceBy...)
	nullCounts := make([]int64, len(nullCols))
	nullAt := make([]origin, len(nullCols))
	nullEmpty := make([]bool, len(nullCols)) // whether nullAt's row has no value at all
	var evalErrs kindErrors                  // apply_as_deletes / apply_as_truncates that failed
	checked := false
	// The rows a view reads share the memory of their input (blockPool), which is reused once
	// they are consumed: the events take copies of their values (own), unless they are folded
	// into typed columns, which copy what they keep.
	own := b.view != nil && !typed
	// Events held until the batch is applied (no fold) take their copies from slabs of the
	// batch's own, a few allocations for the whole batch; a fold keeps only some of the values
	// it sees, so theirs are allocated one by one (a slab would live as long as any of them).
	var owned *ownSlab
	if own && fold == nil {
		owned = newOwnSlab()
	}
	// ownCols are the source columns events take values of, each once (a key column is in the
	// row too): those are copied, in place, before the events take them.
	var ownCols []int
	for _, j := range slices.Concat(keyIdx, seqIdx, projIdx) {
		if j >= 0 && !slices.Contains(ownCols, j) {
			ownCols = append(ownCols, j)
		}
	}
	// Folded events may be windows of their source row instead of copies of its values, when
	// the row holds their columns side by side (a change feed's target columns mostly follow
	// its operation column) and the row's memory is reused only once its events are folded (done
	// is called then): the fold copies what it keeps. keyAt, seqAt and rowAt are where the
	// windows start, or -1 for columns that are not side by side.
	keyAt, seqAt, rowAt := adjacent(keyIdx), adjacent(seqIdx), adjacent(projIdx)
	// Key columns that hold a DOUBLE are made canonical in the row (-0.0 is 0.0), so that the
	// event's key and the key column of its target row are the key Spark would match.
	dblKeys := doubleKeyCols(srcSch, keyIdx)
	// consumeAt checks rows (source rows, in arrival order) with the expectations and turns the
	// kept ones into events: appended to b.events, or folded. originOf gives the origin of the
	// i-th kept row r; carried says that each row carries a pointer to it after its values, else
	// the rows' origins follow one another. done, when not nil, is called once the memory of rows
	// may be reused: once their events are folded, or made.
	var viewEvents [][]event // a view's events, group by group, when they are not folded
	consumeAt := func(rows [][]any, originOf func(r []any, i int) origin, carried bool, done func()) error {
		// record adds the rows' quality to the flow's, also when a fail rule stops the batch:
		// the event log counts the rows that passed and failed then too.
		record := func(q expectations.Quality) {
			if !checked {
				m.Quality, checked = q, true
			} else {
				m.Quality.Add(q)
			}
		}
		var viewQ expectations.Quality
		if viewSet != nil {
			var err error
			if rows, viewQ, err = viewSet.Check(rows); err != nil {
				record(viewQ)
				return err
			}
		}
		kept, q, err := set.Check(rows)
		if viewSet != nil {
			q.DroppedRecords += viewQ.DroppedRecords
			q.Expectations = append(viewQ.Expectations, q.Expectations...)
		}
		record(q)
		if err != nil {
			return err
		}
		if fold != nil && len(kept) == 0 && done == nil {
			return nil // nothing to fold, nor memory to give back
		}
		// The events' keys, sequences and rows are windows of three arrays, not three
		// allocations per event: when they are folded, the arrays of a group folded before;
		// otherwise the events go straight into b.events.
		buf := &eventBuf{}
		if fold != nil {
			select {
			case buf = <-freeBufs:
			default:
			}
		}
		// copyKey, copySeq and copyRow are 1 when the events take copies, 0 for windows.
		copyKey, copySeq, copyRow := 1, 1, 1
		if fold != nil && done != nil {
			copyKey, copySeq, copyRow = copies(keyAt), copies(seqAt), copies(rowAt)
		}
		keyVals, seqVals, projVals := buf.arrays(len(kept), nk*copyKey, ns*copySeq, np*copyRow)
		// Where the events come from, by arrival: a span per run of consecutive rows.
		if carried {
			b.spans.addRows(b.nEvents, kept, nsrc)
		} else if len(kept) > 0 {
			b.spans.addRun(b.nEvents, originOf(kept[0], 0), len(kept))
		}
		evs := b.events
		switch {
		case fold != nil:
			evs = buf.events(len(kept))
		case b.view != nil:
			// A view's row count is known only once read: each group's events go into an
			// array of their own (b.parts), rather than into one array grown by append
			// (which would copy and allocate the events about five times over), nor joined
			// into one (a copy of every event, under write barriers while a collection runs).
			evs = make([]event, 0, len(kept))
		}
		for i, r := range kept {
			var ev event
			if own {
				for _, j := range ownCols {
					r[j] = owned.value(r[j])
				}
			}
			for _, j := range dblKeys {
				r[j], _ = canonicalDouble(r[j])
			}
			if copyKey == 0 {
				ev.key = r[keyAt : keyAt+nk : keyAt+nk]
			} else {
				ev.key = pickInto(keyVals[i*nk:(i+1)*nk:(i+1)*nk], r, keyIdx)
			}
			if copySeq == 0 {
				ev.seq = r[seqAt : seqAt+ns : seqAt+ns]
			} else {
				ev.seq = pickInto(seqVals[i*ns:(i+1)*ns:(i+1)*ns], r, seqIdx)
			}
			ev.arrival = b.nEvents
			b.nEvents++
			isTrunc := false
			if truncProg != nil {
				var err error
				if isTrunc, err = truncProg.Eval(r); err != nil {
					evalErrs.trunc.add(err, originOf(r, i))
				}
			}
			for j := range nk + ns {
				var v any
				if j < nk {
					v = ev.key[j]
				} else {
					v = ev.seq[j-nk]
				}
				if v == nil && (!isTrunc || j >= len(ac.Keys)) {
					if nullCounts[j] == 0 {
						nullAt[j] = originOf(r, i)
						nullEmpty[j] = emptyRow(r, srcSch, srcDS.Source)
					}
					nullCounts[j]++
				}
			}
			if isTrunc {
				if b.truncate == nil || schema.CompareTuple(ev.seq, b.truncate) > 0 {
					// ev.seq and its values are in memory the next groups reuse.
					b.truncate = make([]any, len(ev.seq))
					for j, v := range ev.seq {
						b.truncate[j] = ownValue(v)
					}
				}
				continue
			}
			if copyRow == 0 {
				ev.row = r[rowAt : rowAt+np : rowAt+np]
			} else {
				ev.row = pickInto(projVals[i*np:(i+1)*np:(i+1)*np], r, projIdx)
			}
			if delProg != nil {
				var err error
				if ev.delete, err = delProg.Eval(r); err != nil {
					evalErrs.del.add(err, originOf(r, i))
				}
			}
			evs = append(evs, ev)
		}
		if fold != nil {
			buf.evs, buf.done = evs, done
			folded <- buf
		} else {
			if b.view != nil {
				viewEvents = append(viewEvents, evs)
			} else {
				b.events = evs
			}
			if done != nil {
				done()
			}
		}
		return nil
	}
	// consume is consumeAt for rows that carry their origin after their values.
	consume := func(rows [][]any, done func()) error {
		return consumeAt(rows, func(r []any, _ int) origin { return *r[nsrc].(*origin) }, true, done)
	}
	// Without expectations every row is kept, in place: a group's rows need no origin of their
	// own, the i-th is row first+i of version v's data.
	direct := perGroup && len(set.Rules) == 0
	// A view read by column (viewColumnsFor): each block's rows are checked as consumeAt checks
	// rows (NULL keys and sequences, apply_as_deletes) and go to the fold as they are, no row or
	// event made of them.
	var consumeCols func(c *blockColumns, fi int, done func()) error
	if colSrc := viewColumnsFor(fold, srcDS, set, viewSet, truncProg != nil, keyIdx, seqIdx, projIdx, b); colSrc != nil && perGroup {
		viewColumnBatches.Add(1)
		colChecks := newColumnChecks(srcSch, colSrc, delProg, nullCounts, nullAt, nullEmpty, &evalErrs.del)
		consumeCols = func(c *blockColumns, fi int, done func()) error {
			b.spans.addLines(b.nEvents, int64(fi), c.lines[:c.n])
			buf := colChecks.events(c, freeBufs, b.nEvents, func(i int) origin { return origin{version: int64(fi), row: c.lines[i]} }, done)
			b.nEvents += c.n
			folded <- buf
			return nil
		}
	}

	// Read the new change events, in arrival order, each with its origin appended. When they
	// are consumed group by group, each group's rows are done with once consumed (the events
	// hold copies of their values): the next group reuses their arrays.
	var rows [][]any
	var backing []any
	var origins []origin
	var nRows int64 // the rows the new commits add, by their statistics
	dataAdds := 0   // the data files they add
	start := last + 1
	if b.view != nil {
		latest = last // no table versions to read: the view's files are read below
	} else {
		// A log metadata cleanup shortened starts with the snapshot at its first version.
		var init *delta.Commit
		if init, start, err = firstCommit(p, source, b.srcSnap, ac.Source, d.Name, last); err != nil {
			return nil, err
		}
		if init != nil {
			commits[start] = init
		}
	}
	for v := start; v <= latest; v++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c := commits[v]
		if c == nil {
			if c, err = source.ReadCommit(v); err != nil {
				return nil, err
			}
		}
		commits[v] = c
		for _, r := range c.Removes {
			if r.DataChange {
				return nil, fmt.Errorf("source table %s changed or deleted existing rows in version %d (operation %s); APPLY CHANGES reads an append-only source: run %s", ac.Source, v, c.Info.Operation, RefreshHint(p, d.Name))
			}
		}
		for _, a := range c.Adds {
			if a.DataChange {
				dataAdds++
			}
			if n, ok := a.NumRecords(); ok && a.DataChange {
				nRows += n
			}
		}
	}
	if b.view == nil && dataAdds == 0 && latest-last < recordEmptyVersions {
		// The new versions add no rows (the source table's creation, a change of its schema,
		// an OPTIMIZE): nothing to apply, and nothing to commit; a later batch reads past them.
		// Once they are many, the batch commits its progress over them, so that every update
		// does not read them again.
		m.Idle = true
		return nil, nil
	}
	if fold == nil {
		// The events are appended in place, group after group: room for all of them at once.
		b.events = make([]event, 0, nRows)
	}
	// A batch folded into typed columns copies what it keeps of each event, on the folding
	// goroutine: its row groups are read into the memory of a few (delta.RowGroupPool), each
	// given back once its events are folded, so that reading makes next to no garbage and the
	// collector can wait until the batch is read (cdc-bulk from bronze, 10M events: six
	// collections, each marking the row groups and events in flight, and the write barriers
	// while they ran, were about a fifth of the read's CPU).
	var pool *delta.RowGroupPool
	if perGroup && typed && b.view == nil && pre == nil {
		pool = delta.NewRowGroupPool(3)
		if nRows >= collectBeforeRead {
			// What came before (an ingest flow of the same update) may have left much garbage,
			// which the relaxed collector would keep beside the batch: collected first, while
			// little lives (cdc-bulk from bronze: 650 MB peak, against 820 with it kept; 1M SCD
			// type 2 events from bronze: 270 MB against 345, and 1.16 s against 1.45 where
			// fresh pages were dear).
			runtime.GC()
		}
		defer relaxGC()()
	}
	for v := start; v <= latest && pre == nil; v++ {
		c := commits[v]
		var idx int64
		for _, a := range c.Adds {
			if !a.DataChange {
				continue
			}
			// A row group at a time (partition columns from the log), so that a batch reduced
			// as it is read holds one group's rows, however large the file. done, when not nil,
			// gives the group's memory back to the pool.
			take := func(fr [][]any, done func()) error {
				if direct {
					first := idx
					idx += int64(len(fr))
					b.nSource += len(fr)
					return consumeAt(fr, func(_ []any, i int) origin { return origin{version: v, row: first + int64(i)} }, false, done)
				}
				// One allocation for the rows widened by their origin, and one for the
				// origins (a pointer in the row: boxing it allocates nothing). The events of
				// a pooled group are windows of these rows until the group is folded: theirs
				// are not reused.
				w := nsrc + 1
				if !perGroup || pool != nil || cap(backing) < len(fr)*w {
					backing = make([]any, len(fr)*w)
				}
				if !perGroup || pool != nil || cap(origins) < len(fr) {
					origins = make([]origin, len(fr))
				}
				for i, r := range fr {
					row := backing[i*w : (i+1)*w : (i+1)*w]
					copy(row, r)
					origins[i] = origin{version: v, row: idx}
					row[nsrc] = &origins[i]
					rows = append(rows, row)
					idx++
				}
				b.nSource += len(fr)
				if perGroup {
					if err := consume(rows, done); err != nil {
						return err
					}
					clear(rows)
					rows = rows[:0]
				}
				return nil
			}
			var err error
			if pool != nil {
				err = source.FileRowGroupsPooled(b.srcSnap.Metadata, a, pool, take)
			} else {
				err = source.FileRowGroupsReused(b.srcSnap.Metadata, a, func(fr [][]any) error { return take(fr, nil) })
			}
			if err != nil {
				return nil, vacuumedHint(err, p, d, ac.Source, false)
			}
		}
	}
	if b.view != nil {
		groupRows := 0
		switch {
		case perGroup && fold != nil:
			groupRows = min(viewBatchRows, viewFoldRows)
		case perGroup:
			groupRows = viewBatchRows
		}
		if rows, err = readViewFiles(ctx, env, d, srcDS, b, m, todo, groupRows, consume, consumeCols); err != nil {
			if inc := incomplete(err); inc != nil {
				// A compressed file still being written: the batch, which applied nothing, runs
				// again without it, and a later update reads it once complete.
				// (A view's columns are declared: its schema never evolves, so there is none
				// to undo, and flows over one view run side by side on it.)
				unread.putBack(env, d.Name, srcDS.Name, todo, inc)
				*m = Metrics{Version: -1, Idle: true, more: true, ChangedFiles: m.ChangedFiles, Unsettled: m.Unsettled, Incomplete: m.Incomplete + 1}
				return nil, nil
			}
			return nil, err
		}
	}
	if pre != nil {
		// The batch was folded as the ingest landed it: its events, their origins and checks.
		b.nSource, b.nEvents, b.spans = pre.nEvents, pre.nEvents, pre.spans
		copy(nullCounts, pre.nullCounts[:])
		copy(nullAt, pre.nullAt[:])
		copy(nullEmpty, pre.nullEmpty[:])
		evalErrs.del = pre.delErrs
	}
	if !perGroup || !checked {
		if err := consume(rows, nil); err != nil {
			return nil, err
		}
	}
	if viewEvents != nil {
		b.parts = viewEvents
		viewEvents = nil
	}
	if fold != nil {
		if folded != nil {
			close(folded)
			folded = nil
			foldDone.Wait()
			if foldErr != nil {
				return nil, foldErr
			}
		}
		large := b.nSource >= collectAroundFinish
		if tf, ok := fold.(*typedFold); ok && freshSCD1(b) {
			// Applied from the fold's own records (applySCD1Fresh): nothing is boxed.
			b.typed = tf
			if large {
				// What reading allocated is garbage, and the fold holds no pointers: a quick
				// collection, so that the writes reuse that memory.
				runtime.GC()
			}
			fold = nil
		}
		if fold != nil && large {
			// What reading a large batch allocated is garbage now, and what lives (the fold's
			// table and records) holds no pointers, so a collection is quick: run it, so that
			// the winners' arrays, which finish allocates next, reuse that memory instead of new
			// pages (a million winners: 0.3 s less system time, 60 MB less peak).
			runtime.GC()
		}
	}
	if fold != nil {
		red := fold.finish()
		if b.nSource >= collectAroundFinish {
			// Now the fold's table and records are garbage: the CDC state's growth and the
			// writes reuse their memory (40 MB less peak, 0.05 s less system time).
			runtime.GC()
		}
		if b.hist == nil {
			b.reduced = &red
		}
	}
	// where names the input file and line (or source version and row) of an event's origin.
	where := func(o origin) string {
		if b.view != nil {
			return b.view.locate(o)
		}
		return locate(p, ac.Source, commits[o.version], o)
	}
	if evalErrs.del.n+evalErrs.trunc.n > 0 {
		// Said, not failed: an expression that reads into a nested value errs on a NULL inside
		// it (a struct field, a map key that is not there), which is no delete.
		for _, k := range []struct {
			key, code, as string
			e             *evalError
		}{{"apply_as_deletes", ac.ApplyAsDeletes, "upserts", &evalErrs.del}, {"apply_as_truncates", ac.ApplyAsTruncates, "no truncates", &evalErrs.trunc}} {
			if k.e.n > 0 {
				env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
					fmt.Sprintf("%s `%s` could not be evaluated on %d change event(s) (first at %s: %v); they were taken as %s. If they are not, make the expression hold for every value (e.g. test for nil first)", k.key, k.code, k.e.n, pipelinePath(p, where(k.e.at)), k.e.err, k.as),
					map[string]any{"expression": k.key, "events": k.e.n}, "")
			}
		}
	}
	if slices.ContainsFunc(nullCounts, func(n int64) bool { return n > 0 }) {
		var parts []string
		explained := map[string]bool{} // the places already said to be a line that does not parse
		malformed := false
		var nullKeys, nullSeqs []string
		for j, n := range nullCounts {
			if n == 0 {
				continue
			}
			if j < len(ac.Keys) {
				nullKeys = append(nullKeys, nullCols[j])
			} else {
				nullSeqs = append(nullSeqs, nullCols[j])
			}
			kind := "key column"
			if j >= len(ac.Keys) {
				kind = "sequence_by column"
			}
			place := where(nullAt[j])
			at := pipelinePath(p, place) // the file relative to the pipeline's folder, as WARNs name it
			if nullEmpty[j] {
				if !explained[place] {
					at += emptyRowReason(b.view, place, ac.Source)
				}
				explained[place] = true
				malformed = true
			}
			parts = append(parts, fmt.Sprintf("%d change event(s) have a NULL in the %s %s (first at %s)", n, kind, nullCols[j], at))
		}
		drop := dropNullsExpr(nullKeys, nullSeqs, ac.ApplyAsTruncates)
		dropMalformed := ""
		if malformed && b.view != nil {
			dropMalformed = fmt.Sprintf("; mode: dropmalformed on %s drops the lines that do not parse", ac.Source)
		}
		if b.view != nil {
			return nil, fmt.Errorf("%s; nothing of this batch was applied, and its files count as unread. Drop such events with an expectation on %s or %s (e.g. `%s` with on_violation: drop), or fix the input files, then run again%s",
				strings.Join(parts, "; "), ac.Source, d.Name, drop, dropMalformed)
		}
		return nil, fmt.Errorf("%s; nothing of this batch was applied. Drop such events with an expectation on %s (e.g. `%s` with on_violation: drop), then run again; the events are already in %s, so fixing the input files needs %s%s",
			strings.Join(parts, "; "), d.Name, drop, ac.Source, refreshFromInputs(p, ac.Source), dropMalformed)
	}
	return b, nil
}

// foldFor returns the fold a batch of b is reduced with as it is read, or nil when the batch is
// held whole: an SCD type 1 target's batch is folded (into typed columns, typed, when its key,
// sequence and columns allow: typedFoldFor), unless a fail expectation (failRule) must see the
// whole batch first; an SCD type 2 target without history yet takes its first batch in columns
// (histColumns, set as b.hist too), unless it has apply_as_truncates (truncates). b's target
// snapshot, state and schemas (dataSch, keyIdx, keySch, seqSch) are set.
func foldFor(ac *spec.ApplyChanges, b *changeBatch, failRule, truncates bool) (fold batchFold, typed bool) {
	switch {
	case ac.StoredAsSCDType != 2 && !ac.IgnoreNullUpdates && !failRule:
		if tf := typedFoldFor(b.keySch, b.seqSch, b.dataSch, b.keyIdx[0], b.dataSch.Index(ac.SequenceBy[0])); tf != nil {
			return tf, true
		}
		return newFolder(0), false
	case ac.StoredAsSCDType == 2 && !ac.IgnoreNullUpdates && !failRule && !truncates && b.stateID == "" && len(b.snap.Files) == 0:
		if hc := histColumnsFor(b.keySch, b.seqSch, b.dataSch, b.keyIdx[0], b.dataSch.Index(ac.SequenceBy[0])); hc != nil {
			b.hist = hc
			return hc, true
		}
	}
	return nil, false
}

// settingText writes an apply_changes setting as the spec writes it: a list of columns as
// `[id, name]`, anything else as fmt prints it.
func settingText(v any) string {
	if cols, ok := v.([]string); ok {
		return "[" + strings.Join(cols, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// dropNullsExpr is the expectation that drops the events with a NULL in the key columns keys or
// the sequence_by columns seqs, all of them at once, so that the next run does not fail on the
// next column: `id != nil and seq != nil`. A truncate event (the expression trunc, when set)
// needs no key, so a NULL key passes on it, and the expectation keeps the truncates.
func dropNullsExpr(keys, seqs []string, trunc string) string {
	var parts []string
	if len(keys) > 0 {
		k := strings.Join(keys, " != nil and ") + " != nil"
		if trunc != "" {
			k = "(" + k + " or " + trunc + ")"
		}
		parts = append(parts, k)
	}
	for _, c := range seqs {
		parts = append(parts, c+" != nil")
	}
	return strings.Join(parts, " and ")
}

// recordEmptyVersions is how many source versions that add no rows an APPLY CHANGES flow leaves
// unrecorded (IDLE, no commit) before a batch commits its progress over them (a variable for
// tests).
var recordEmptyVersions int64 = 100

// evalError counts the change events on which an apply_as_deletes or apply_as_truncates
// expression failed (not NULL inputs, which make it false: a conversion of a value it cannot
// convert), with the first one's place and error.
type evalError struct {
	n   int64
	at  origin
	err error
}

// kindErrors are the evalErrors of a batch's apply_as_deletes and apply_as_truncates.
type kindErrors struct{ del, trunc evalError }

// add counts one failed evaluation, at origin at with error err.
func (e *evalError) add(err error, at origin) {
	if e.n == 0 {
		e.at, e.err = at, err
	}
	e.n++
}

// emptyRow says whether source row r (of schema srcSch, read from file source src, nil for
// another kind of source) holds no value but those its file source adds to every row (the
// rescued data and the file metadata): the row that a line that does not parse becomes under
// mode: permissive (semantics.md "Ingestion").
func emptyRow(r []any, srcSch schema.Schema, src *spec.Source) bool {
	if src == nil || !src.ReadsFiles() {
		return false // not read from files: its rows come whole
	}
	for c, f := range srcSch.Fields {
		if c >= len(r) {
			break
		}
		if f.Name == src.RescuedDataColumn || (src.IncludeMetadata && (f.Name == spec.FilePathColumn || f.Name == spec.FileModificationTimeColumn)) {
			continue
		}
		if r[c] != nil {
			return false
		}
	}
	return true
}

// emptyRowReason is what an error about change events with a NULL key or sequence adds to the
// place (at, "file:line") of the first when its row has no value at all: the reason the line
// did not parse, when the batch read it through a view (vb), or that such a line becomes a row
// of NULLs and the WARN events of source name it.
func emptyRowReason(vb *viewBatch, at, source string) string {
	if vb != nil && vb.bad != nil {
		if reason, ok := vb.bad.malformed[at]; ok {
			return ", a line that does not parse, read as a row of NULLs: " + reason
		}
	}
	return fmt.Sprintf(", a row with every column NULL: a line of the input that does not parse becomes one, and a WARN event of %s names it", source)
}

// collectAroundFinish is how many source rows a folded batch reads before readChangeBatch runs a
// garbage collection before boxing its winners, and one after.
const collectAroundFinish = 1 << 20

// collectBeforeRead is how many source rows a batch folded from a table's row groups has for
// readChangeBatch to run a garbage collection before it reads them.
const collectBeforeRead = 1 << 18

// hasFailRule says whether set has an expectation with on_violation: fail, whose error names the
// number of violating rows of the whole batch.
func hasFailRule(set *expectations.Set) bool {
	for _, r := range set.Rules {
		if r.OnViolation == expectations.Fail {
			return true
		}
	}
	return false
}

// settingsOf returns the settings of d that its CDC state depends on.
func settingsOf(d *spec.Dataset) applySettings {
	ac := d.ApplyChanges
	s := applySettings{Keys: ac.Keys, SequenceBy: ac.SequenceBy, StoredAsSCDType: ac.StoredAsSCDType, IgnoreNullUpdates: ac.IgnoreNullUpdates}
	if ac.StoredAsSCDType == 2 {
		data := dataSchema(d)
		s.TrackHistory = []string{}
		for _, i := range trackedColumns(d, data) {
			s.TrackHistory = append(s.TrackHistory, data.Fields[i].Name)
		}
	}
	return s
}

// dataSchema is the target's schema without the SCD type 2 columns __START_AT and __END_AT.
func dataSchema(d *spec.Dataset) schema.Schema {
	if d.ApplyChanges.StoredAsSCDType != 2 {
		return d.Schema
	}
	out := schema.Schema{}
	for _, f := range d.Schema.Fields {
		if f.Name != StartAt && f.Name != EndAt {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

func compileOptional(code string, s schema.Schema, what string) (*expectations.Program, error) {
	if code == "" {
		return nil, nil
	}
	p, err := expectations.Compile(code, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

// tombstoneGC returns pipelines.cdc.tombstoneGCThresholdInSeconds of d in ms.
func tombstoneGC(d *spec.Dataset) int64 {
	gc := int64(defaultTombstoneGCSeconds)
	if s, ok := d.TableProperties["pipelines.cdc.tombstoneGCThresholdInSeconds"]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			gc = n
		}
	}
	return gc * 1000
}

// commitApply makes the batch's one commit: removes, adds, change data, the state manifest and
// the source table's id in commitInfo, and the progress txn. metrics become the commit's
// operationMetrics, with numSourceRows and, unless set, numTargetFilesAdded and
// numTargetFilesRemoved (the commit's adds and removes).
func commitApply(d *spec.Dataset, b *changeBatch, removes []delta.Remove, adds []delta.Add, cdcs []delta.CDC, stateID string, metrics map[string]string) (int64, error) {
	ac := d.ApplyChanges
	tx := b.target.Begin(b.snap)
	tx.Remove(removes...)
	tx.Add(adds...)
	tx.AddCDC(cdcs...)
	if b.view != nil {
		// The batch's files, recorded before the commit that makes them count (offsets).
		if err := writeOffsets(b.view.ckpt, b.view.off); err != nil {
			return -1, fmt.Errorf("writing the offsets of batch %d: %w", b.view.off.Batch, err)
		}
		fault.Point("apply.after-offsets")
	}
	tx.SetAppTxn(b.appID, b.progress)
	metrics["numSourceRows"] = strconv.Itoa(b.nSource)
	// Unless the batch counted them itself (merge-on-read: a file added back with a deletion
	// vector is neither added nor removed), every add and remove counts.
	if _, ok := metrics["numTargetFilesAdded"]; !ok {
		metrics["numTargetFilesAdded"] = strconv.Itoa(len(adds))
	}
	if _, ok := metrics["numTargetFilesRemoved"]; !ok {
		metrics["numTargetFilesRemoved"] = strconv.Itoa(len(removes))
	}
	tx.SetCommitInfo(map[string]any{stateKey: stateID, sourceKey: b.sourceID, settingsKey: settingsOf(d)}, metrics)
	return tx.Commit("MERGE", map[string]any{"predicate": fmt.Sprintf("APPLY CHANGES keys %v sequence_by %v stored_as_scd_type %d", ac.Keys, ac.SequenceBy, ac.StoredAsSCDType)})
}

// fileCount is how many data files an APPLY CHANGES commit writes rows new rows into: enough
// for at most targetFileRows each, and, for at least 2 × parallelFileRows rows, at least
// rewriteWorkers() (of parallelFileRows or more each), written at the same time. 0 for none.
func fileCount(rows int) int {
	n := (rows + targetFileRows - 1) / targetFileRows
	if rows >= 2*parallelFileRows {
		n = max(n, min(rewriteWorkers(), rows/parallelFileRows))
	}
	return n
}

// writeRows writes out in data files of at most targetFileRows rows and calls placed for every
// row with the path of the file that holds it. A batch of at least 2 × parallelFileRows rows is
// cut into at least rewriteWorkers() files, written at the same time (each file's encoding and
// compression is one goroutine's work); placed is called from the calling goroutine, in row order.
func writeRows(t *delta.Table, s schema.Schema, out [][]any, placed func(row []any, path string)) ([]delta.Add, error) {
	n := fileCount(len(out))
	bounds := func(i int) (int, int) { return i * len(out) / n, (i + 1) * len(out) / n }
	adds, err := eachIndex(n, func(i int) (delta.Add, error) {
		start, end := bounds(i)
		return t.WriteFile(s, out[start:end])
	})
	if err != nil {
		return nil, err
	}
	for i, add := range adds {
		start, end := bounds(i)
		for _, r := range out[start:end] {
			placed(r, add.Path)
		}
	}
	return adds, nil
}

// parallelFileRows is the fewest rows of a data file that writeRows writes beside another (a
// variable for tests).
var parallelFileRows = 250_000

// replacement is a data file rewritten by copy-on-write: the remove of the old file, the add of
// the new one (none when no row survived) and the new file's path ("" then).
type replacement struct {
	remove delta.Remove
	adds   []delta.Add
	path   string
}

// writeReplacement is the copy-on-write of one data file: f is removed and out (its rows after
// the batch) written as one new file; the caller records the rename in the state (to "" when out
// is empty). It is safe for concurrent use on distinct files.
func writeReplacement(t *delta.Table, s schema.Schema, f delta.Add, out [][]any, nowMs int64) (replacement, error) {
	r := replacement{remove: t.RemoveFor(f, nowMs)}
	if len(out) > 0 {
		add, err := t.WriteFile(s, out)
		if err != nil {
			return replacement{}, err
		}
		r.adds, r.path = []delta.Add{add}, add.Path
	}
	return r, nil
}

// rewriteWorkers is the most data files a batch rewrites at once: reading and writing a file is
// CPU-bound, and each file in flight holds its rows in memory.
func rewriteWorkers() int { return min(runtime.GOMAXPROCS(0), 2) }

// eachFile calls fn for every file of files on up to rewriteWorkers goroutines and returns the
// results in the order of files; the first error (in file order) stops the files not yet started.
func eachFile[T any](files []delta.Add, fn func(f delta.Add) (T, error)) ([]T, error) {
	return eachIndex(len(files), func(i int) (T, error) { return fn(files[i]) })
}

// eachIndex calls fn for 0..n-1 on up to rewriteWorkers goroutines and returns the results in
// index order; the first error (in index order) stops the calls not yet started.
func eachIndex[T any](n int, fn func(i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	next := make(chan int)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(rewriteWorkers(), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if failed.Load() {
					continue
				}
				if out[i], errs[i] = fn(i); errs[i] != nil {
					failed.Store(true)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batchFiles are the files an APPLY CHANGES batch adds and removes, and its change data rows.
type batchFiles struct {
	cdcRows  [][]any
	cdcTypes []string
	removes  []delta.Remove
	adds     []delta.Add
	// inserted are more change rows, each an insert, after cdcRows: kept apart so that a batch
	// that only inserts them need not make its change rows (see insertsOnly).
	inserted [][][]any
	// freshInserts are more change rows, each an insert, whose rows only the added data files
	// hold (a first batch written from columns: an SCD type 2 target's, histColumns, or an SCD
	// type 1 target's, applySCD1Fresh): a batch with them must be insertsOnly, and changes
	// cannot list them.
	freshInserts int64
	// cdcWritten, when set, returns the change data file of the batch written already (beside
	// its data files), and finishBatch writes none.
	cdcWritten func() ([]delta.CDC, error)
}

// needsCDC says whether the batch needs a change data file whatever files it adds: it has change
// rows, and it removes a file or one of its change rows is not an insert (see insertsOnly).
func (f batchFiles) needsCDC() bool {
	return len(f.cdcRows)+f.nInserted() > 0 &&
		(len(f.removes) > 0 || slices.ContainsFunc(f.cdcTypes, func(t string) bool { return t != delta.ChangeInsert }))
}

// nInserted returns the number of rows of f.inserted.
func (f batchFiles) nInserted() int {
	n := int(f.freshInserts)
	for _, rows := range f.inserted {
		n += len(rows)
	}
	return n
}

// changes returns the batch's change rows and their change types: cdcRows, then the rows of
// inserted.
func (f batchFiles) changes() ([][]any, []string) {
	if f.freshInserts > 0 {
		panic("flows: the change rows of a batch folded in columns are its data files' rows only")
	}
	if len(f.inserted) == 0 {
		return f.cdcRows, f.cdcTypes
	}
	n := f.nInserted()
	rows := slices.Grow(f.cdcRows[:len(f.cdcRows):len(f.cdcRows)], n)
	types := slices.Grow(f.cdcTypes[:len(f.cdcTypes):len(f.cdcTypes)], n)
	for _, r := range f.inserted {
		rows = append(rows, r...)
		for range r {
			types = append(types, delta.ChangeInsert)
		}
	}
	return rows, types
}

// insertsOnly says whether the batch's change data is exactly the rows of the files it adds, each
// an insert: it removes no file, every change row is an insert, and the added files (none with a
// deletion vector) hold as many rows as there are change rows. A reader of the change data feed
// then derives the batch's inserts from its add actions (Delta PROTOCOL.md, "Change Data Files":
// a version without cdc files gives the rows of its added files as inserts), so the commit needs
// no change data file.
func (f batchFiles) insertsOnly() bool {
	if len(f.removes) > 0 {
		return false
	}
	for _, t := range f.cdcTypes {
		if t != delta.ChangeInsert {
			return false
		}
	}
	var n int64
	for _, a := range f.adds {
		c, ok := a.NumRecords()
		if !ok || a.DeletionVector != nil || !a.DataChange {
			return false
		}
		n += c
	}
	return n == int64(len(f.cdcRows)+f.nInserted())
}

// finishBatch writes the change data file (none when the batch only inserts the rows of the
// files it adds: see batchFiles.insertsOnly), saves the CDC state (save), makes the batch's one
// commit and, once it is committed, hands the new state log to remember.
func finishBatch(d *spec.Dataset, b *changeBatch, m *Metrics, f batchFiles,
	save func() (string, []segment, map[string]string, error),
	remember func(string, []segment, map[string]string), metrics map[string]string) error {
	var cdcs []delta.CDC
	if f.cdcWritten != nil {
		var err error
		if cdcs, err = f.cdcWritten(); err != nil {
			return err
		}
	} else if len(f.cdcRows)+f.nInserted() > 0 && !f.insertsOnly() {
		rows, types := f.changes()
		c, err := b.target.WriteCDCFile(d.Schema, rows, types)
		if err != nil {
			return err
		}
		cdcs = append(cdcs, c)
	}
	id, segs, renames, err := save()
	if err != nil {
		return err
	}
	if b.ctx != nil && b.ctx.Err() != nil {
		// Stopped: the files written and the state saved are left uncommitted, as a kill at
		// this point leaves them (the next batch reads from the last commit; VACUUM removes
		// the files).
		return b.ctx.Err()
	}
	fault.Point("apply.after-data-files")
	v, err := commitApply(d, b, f.removes, f.adds, cdcs, id, metrics)
	if err != nil {
		return fmt.Errorf("committing %s: %w", d.Name, err)
	}
	m.Version = v
	remember(id, segs, renames)
	fault.Point("apply.after-commit")
	return nil
}

// eventBuf is the memory of one group's change events: the events, and the arrays their keys,
// sequences and rows are windows of.
type eventBuf struct {
	evs                []event
	keys, seqs, values []any
	done               func() // called once the events are folded: see consumeAt
	// cols, when not nil, holds the group's events by column instead of evs (a view read by
	// column: viewColumnsFor): its rows, deletes where dels says (nil: none), their values
	// where src says.
	cols  *blockColumns
	dels  []bool
	src   *columnSource
	first int // the arrival of cols' first row
}

// arrays returns the buffer's arrays for n events of nk key, ns sequence and np row values
// each, cleared, growing what is too small.
func (b *eventBuf) arrays(n, nk, ns, np int) (keys, seqs, values []any) {
	grow := func(a []any, size int) []any {
		if cap(a) < size {
			return make([]any, size)
		}
		a = a[:size]
		clear(a)
		return a
	}
	b.keys, b.seqs, b.values = grow(b.keys, n*nk), grow(b.seqs, n*ns), grow(b.values, n*np)
	return b.keys, b.seqs, b.values
}

// events returns the buffer's events, empty, with room for n.
func (b *eventBuf) events(n int) []event {
	if cap(b.evs) < n {
		b.evs = make([]event, 0, n)
	}
	return b.evs[:0]
}

// batchFold is what readChangeBatch folds a batch's events with: a folder or a typedFold.
type batchFold interface {
	addAll([]event)
	finish() reduceResult
}

// foldGroups folds the groups of events that come on in, in order, until in is closed: each
// group's done is called once it is folded (its input memory may then be reused), and the
// buffer goes back on free when there is room. A panic of the fold becomes the error returned
// (it would otherwise end the process: the update recovers only on its own goroutine), and the
// groups sent after it are taken and dropped, so that the sender never waits forever.
func foldGroups(dataset string, fold batchFold, in <-chan *eventBuf, free chan<- *eventBuf) (err error) {
	var cur *eventBuf // the group being folded
	release := func(buf *eventBuf) {
		if buf != nil && buf.done != nil {
			buf.done()
			buf.done = nil
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("folding the change events of %s: %v", dataset, r)
			// Their memory is given back too: a reader waiting for it (delta.RowGroupPool)
			// goes on, to learn of the error.
			release(cur)
			for buf := range in {
				release(buf)
			}
		}
	}()
	for buf := range in {
		cur = buf
		if buf.cols != nil {
			fold.(columnFold).addColumns(buf.cols, buf.dels, buf.src, buf.first)
			buf.cols = nil
		} else {
			fold.addAll(buf.evs)
		}
		release(buf)
		cur = nil
		select {
		case free <- buf:
		default:
		}
	}
	return nil
}

// warnLeftOut says, in a WARN event of d's flow, which columns of its source's table (src) the
// target d leaves out though its column lists would keep them: d's columns are known only when
// an update runs (spec.Dataset.SchemaAtRun) and were fixed when its table was created, and the
// source gained them since (an inferred schema that evolved, an edited query). Their values are
// not applied; the next update's set-up fails naming them (Setup), and a continuous update,
// which has no next set-up, says so at each batch.
func warnLeftOut(env *Env, d *spec.Dataset, src schema.Schema) {
	ac := d.ApplyChanges
	var left []string
	for _, f := range src.Fields {
		if ac.Keeps(f.Name) && d.Schema.Index(f.Name) < 0 {
			left = append(left, f.Name)
		}
	}
	if len(left) == 0 {
		return
	}
	env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
		fmt.Sprintf("column(s) %s of %s are not columns of %s, whose columns were fixed when its table was created: their values are left out; run %s to rebuild it with them, or add them to except_column_list",
			strings.Join(left, ", "), ac.Source, d.Name, RefreshWithReaders(env.Pipeline, d.Name)),
		map[string]any{"columns": left}, "")
}

// warnTextSequence says, in a WARN event of d's flow, which sequence_by columns of d are STRING
// because its source is CSV whose schema is inferred with every column STRING (the default,
// infer_column_types false; schema_hints unset for them): the events are then ordered as text,
// "10" before "9", as Spark would order them, which is seldom what a numeric sequence means.
func warnTextSequence(env *Env, d *spec.Dataset) {
	src := env.Pipeline.Dataset(d.ApplyChanges.Source)
	if src == nil || src.Source == nil || !src.Source.InferSchema || src.Source.Format != spec.FormatCSV || src.Source.Options[spec.InferColumnTypes] == "true" {
		return
	}
	var text []string
	for _, c := range d.ApplyChanges.SequenceBy {
		if i := src.Schema.Index(c); i >= 0 && src.Schema.Fields[i].Type.Kind == schema.String && src.Source.SchemaHints.Index(c) < 0 {
			text = append(text, c)
		}
	}
	if len(text) == 0 {
		return
	}
	env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
		fmt.Sprintf("sequence_by %s of %s is STRING, as CSV schema inference types every column by default: events are ordered as text (\"10\" before \"9\"); give it a type with `schema_hints: \"%s BIGINT\"` (or `options: {infer_column_types: true}`) on %s, then run %s",
			strings.Join(text, ", "), d.Name, text[0], src.Name, RefreshWithReaders(env.Pipeline, src.Name)),
		map[string]any{"columns": text}, "")
}

// refreshFromInputs returns the full refresh that reads the input of dataset name again: of name
// and its readers, and, when name is a query dataset, of the datasets its query reads (up to the
// first that is not a query: a file or table source, whose input files a user fixes) and theirs.
func refreshFromInputs(p *spec.Pipeline, name string) string {
	g, err := p.Graph()
	if err != nil {
		return RefreshWithReaders(p, name)
	}
	var roots []string
	seen := map[string]bool{}
	var up func(n string)
	up = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		if d := p.Dataset(n); d == nil || d.Query == nil {
			roots = append(roots, n)
			return
		}
		for _, dep := range g.Deps(n) {
			up(dep)
		}
	}
	up(name)
	var names []string
	for _, n := range g.Order() {
		for _, r := range roots {
			if n == r || slices.Contains(g.Descendants(r), n) {
				names = append(names, n)
				break
			}
		}
	}
	return RefreshHint(p, names...)
}
