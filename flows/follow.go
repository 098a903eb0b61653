package flows

import (
	"slices"
	"sync/atomic"

	"tributary/delta"
	"tributary/spec"
)

// An APPLY CHANGES target that reads a bronze streaming table, and runs after its ingest flow in
// the same update, can have its batch folded while the ingest lands it (a follower): the ingest
// reads the files by column (ingestByColumns), and each block it writes to the bronze table also
// goes to the target's fold, on a goroutine of its own, in the order the rows are written. When
// the target's flow runs next, its batch is the commits the ingest just made: it takes the fold
// instead of reading those rows back from the bronze table's data files. The events, their
// arrival order and their origins (version and row of the bronze table) are those reading them
// back gives, and so is every check (NULL keys and sequences, apply_as_deletes), so the target
// commits the same table, change data and state (TestFollowEquivalence); only the wall time
// differs. The target's flow checks that the fold is of exactly the versions it would read: the
// versions after its last one read are the ingest's commits and versions that add no rows (the
// table's creation, an OPTIMIZE), and neither its own table nor the source was replaced or
// written since the ingest started. Else, and when the ingest did not commit every batch it fed,
// the fold is dropped and the batch read back as usual.
//
// The blocks the ingest reads come from a pool whose blocks are reused once both the write and
// the fold gave them back (blockPool.share). add hands a block over on an unbuffered channel,
// which the fold takes only once it has folded the block before, so the write never gives back
// a block the fold still reads as things stand; the shared pool keeps that true should the
// hand-off ever be buffered.
//
// Only what can be folded by column is followed: a target without expectations,
// apply_as_truncates or ignore_null_updates, with one key and one sequence column, whose batch
// is folded into typed columns (foldFor: an SCD type 1 target, or an SCD type 2 target's first
// batch), from a bronze table that the ingest writes by column and whose schema the batch does
// not evolve. One target per ingest flow is followed (the first such in the spec).

// followOff turns following off, so that tests compare with batches read back from the source.
var followOff atomic.Bool

// followedBatches counts the APPLY CHANGES batches that took a follower's fold (whatever became
// of the batch after), for tests.
var followedBatches atomic.Int64

// maxFollowGap bounds the versions of the source a target may be behind the ingest's start and
// still be followed: they are read (each must add no rows) when the ingest starts.
const maxFollowGap = 16

// follower is the fold of an APPLY CHANGES target's next batch, made as an ingest flow of its
// source lands the rows. Its methods are called from the ingest's goroutine until it is put
// (Env.putFollower), then from the target's.
type follower struct {
	target        *spec.Dataset
	targetVersion int64  // the target table's version when the ingest started
	targetID      string // the target table's id (Delta metaData id) then
	sourceID      string // the source table's id then
	fold          batchFold
	hist          *histColumns  // fold, when it is the first batch of an SCD type 2 target
	delCode       string        // apply_as_deletes, as the fold evaluated it
	checks        *columnChecks // the NULL and delete checks, and the columns the fold takes
	nullCounts    [2]int64
	nullAt        [2]origin
	nullEmpty     [2]bool
	delErrs       evalError

	folded chan *eventBuf // to the folding goroutine; closed by finish
	free   chan *eventBuf
	done   chan struct{} // closed once the folding goroutine ended; err is then set
	err    error

	spans    arrivalSpans
	nEvents  int
	versions []int64 // the ingest's commits folded, in order
	// version and row: the version the batch being landed is to commit, and its rows so far.
	version, row int64
	broken       bool // a batch was fed and not committed (or not at version): never taken
	closed       bool
}

// following is what one run of an ingest flow keeps of its follower: nil when none.
type following struct {
	env     *Env
	source  *spec.Dataset
	planned bool
	fw      *follower
	pool    *blockPool // the pool of the batch being landed, shared with the fold
	open    bool       // a batch was begun and neither committed nor aborted
}

// newFollowing returns the following of an ingest flow of source in env, or nil when the update
// does not say which flows it runs (Env.Runs) or following is off.
func newFollowing(env *Env, source *spec.Dataset) *following {
	if followOff.Load() || env.Runs == nil {
		return nil
	}
	return &following{env: env, source: source}
}

// begin starts a batch of the ingest, whose table's snapshot is snap and whose blocks come from
// pool; byColumns says whether the batch is written by column with the table's schema (no
// evolution). When the batch feeds a follower, the pool is shared.
func (f *following) begin(snap *delta.Snapshot, byColumns bool, pool *blockPool) {
	if f == nil {
		return
	}
	if !f.planned {
		f.planned = true
		if byColumns {
			f.fw = planFollower(f.env, f.source, snap)
		}
	}
	if f.fw == nil || f.fw.broken {
		return
	}
	if !byColumns {
		f.fw.broken = true
		return
	}
	f.fw.version, f.fw.row = snap.Version+1, 0
	pool.share()
	f.pool, f.open = pool, true
}

// add hands the rows of c, the next block the batch writes, to the fold.
func (f *following) add(c *blockColumns) {
	if f == nil || !f.open {
		return
	}
	fw := f.fw
	pool := f.pool
	// The blocks emitted so far are the ones before c: the fold holds nothing of them once it
	// has c.
	before := pool.sealShared()
	version, row := fw.version, fw.row
	fw.spans.addRun(fw.nEvents, origin{version: version, row: row}, c.n)
	buf := fw.checks.events(c, fw.free, fw.nEvents, func(i int) origin { return origin{version: version, row: row + int64(i)} }, func() { pool.release(before) })
	fw.nEvents += c.n
	fw.row += int64(c.n)
	fw.folded <- buf
}

// committed records that the batch begun committed version v of the source table.
func (f *following) committed(v int64) {
	if f == nil || !f.open {
		return
	}
	f.open = false
	if v != f.fw.version {
		f.fw.broken = true
		return
	}
	f.fw.versions = append(f.fw.versions, v)
}

// abort ends a batch that did not commit: its rows were fed to the fold, which no longer
// matches the table. Nothing once the batch committed.
func (f *following) abort() {
	if f == nil || !f.open {
		return
	}
	f.open = false
	f.fw.broken = true
}

// finish ends the ingest's run (err: its error): the fold ends once it has taken the last
// block, and is left for the target (Env.putFollower) when every batch fed was committed.
func (f *following) finish(err error) {
	if f == nil || f.fw == nil {
		return
	}
	f.abort()
	fw := f.fw
	fw.close()
	if err == nil && !fw.broken && len(fw.versions) > 0 {
		f.env.putFollower(fw)
	}
}

// close ends the folding goroutine once it has taken the blocks sent (it then ends on its own).
func (fw *follower) close() {
	if !fw.closed {
		fw.closed = true
		close(fw.folded)
	}
}

// planFollower returns the follower of an ingest flow of source, whose table's snapshot before
// its first batch is srcSnap: the fold of the first APPLY CHANGES target of the spec that reads
// source, runs in this batch of the update (Env.Runs) after it, has read every version of source
// that adds rows, and can be folded by column (see above); nil when there is none.
func planFollower(env *Env, source *spec.Dataset, srcSnap *delta.Snapshot) *follower {
	for _, d := range env.Pipeline.Datasets {
		if d.ApplyChanges == nil || d.ApplyChanges.Source != source.Name || !env.Runs(d.Name) {
			continue
		}
		if fw := followerOf(env, source, d, srcSnap); fw != nil {
			return fw
		}
	}
	return nil
}

// followerOf returns the follower of target d of source (planFollower), or nil when d's next
// batch cannot be folded while source's is landed.
func followerOf(env *Env, source, d *spec.Dataset, srcSnap *delta.Snapshot) *follower {
	ac := d.ApplyChanges
	p := env.Pipeline
	if d.SchemaAtRun() || ac.IgnoreNullUpdates || ac.ApplyAsTruncates != "" || len(ac.Keys) != 1 || len(ac.SequenceBy) != 1 {
		return nil
	}
	b := &changeBatch{target: delta.New(TableDir(p.Storage, d.Name))}
	b.dataSch = dataSchema(d)
	var err error
	if b.snap, err = b.target.Snapshot(-1); err != nil {
		return nil
	}
	last, ok := b.snap.AppTxns[AppID(p, d.Name)]
	if !ok {
		last = -1
	}
	stateID, sourceID, _, err := lastApply(b.target, b.snap)
	if err != nil || (sourceID != "" && sourceID != srcSnap.Metadata.ID) {
		return nil
	}
	b.stateID = stateID
	// The target has read every version that adds rows: its batch is the ingest's.
	if srcSnap.Version-last > maxFollowGap {
		return nil
	}
	srcTable := delta.New(TableDir(p.Storage, source.Name))
	for v := last + 1; v <= srcSnap.Version; v++ {
		c, err := srcTable.ReadCommit(v)
		if err != nil || slices.ContainsFunc(c.Adds, func(a delta.Add) bool { return a.DataChange }) {
			return nil
		}
	}
	srcSch := source.Schema
	set, err := expectationSet(d, srcSch)
	if err != nil {
		return nil
	}
	keyIdx, seqIdx, projIdx := indexes(srcSch, ac.Keys), indexes(srcSch, ac.SequenceBy), indexes(srcSch, b.dataSch.Names())
	if keyIdx[0] < 0 || seqIdx[0] < 0 {
		return nil
	}
	b.keyIdx = indexes(b.dataSch, ac.Keys)
	b.keySch, _, _ = srcSch.Select(ac.Keys)
	b.seqSch, _, _ = srcSch.Select(ac.SequenceBy)
	delProg, err := compileOptional(ac.ApplyAsDeletes, srcSch, "apply_as_deletes")
	if err != nil {
		return nil
	}
	fold, typed := foldFor(ac, b, false, false)
	if !typed {
		return nil
	}
	colSrc := columnSourceFor(fold, srcSch, set, false, keyIdx, seqIdx, projIdx, b.dataSch)
	if colSrc == nil {
		return nil
	}
	fw := &follower{target: d, targetVersion: b.snap.Version, targetID: b.snap.Metadata.ID, sourceID: srcSnap.Metadata.ID, fold: fold, hist: b.hist,
		delCode: ac.ApplyAsDeletes, folded: make(chan *eventBuf), free: make(chan *eventBuf, 2), done: make(chan struct{})}
	fw.checks = newColumnChecks(srcSch, colSrc, delProg, fw.nullCounts[:], fw.nullAt[:], fw.nullEmpty[:], &fw.delErrs)
	go func() {
		defer close(fw.done)
		fw.err = foldGroups(d.Name, fold, fw.folded, fw.free)
	}()
	return fw
}

// fits reports whether the follower's fold is the batch b of its target reads: b's target is
// the table the fold was planned on (the same id, at the same version) and b's source too (the
// same id), the fold is of the kind b would make (fold) taking the same columns (src) and
// deletes, and of the source versions b reads (after last, up to latest; commits holds those
// read so far, read from source as needed) every one that adds rows, and only those. It waits
// for the fold to end; false when it failed.
func (fw *follower) fits(b *changeBatch, ac *spec.ApplyChanges, fold batchFold, src *columnSource, source *delta.Table, last, latest int64, commits map[int64]*delta.Commit) bool {
	<-fw.done
	if fw.err != nil || b.snap.Version != fw.targetVersion || b.snap.Metadata.ID != fw.targetID || b.srcSnap == nil ||
		b.srcSnap.Metadata.ID != fw.sourceID || fw.delCode != ac.ApplyAsDeletes || src == nil ||
		src.key != fw.checks.src.key || src.seq != fw.checks.src.seq || !slices.Equal(src.data, fw.checks.src.data) {
		return false
	}
	switch fold.(type) {
	case *typedFold:
		if _, ok := fw.fold.(*typedFold); !ok {
			return false
		}
	case *histColumns:
		if fw.hist == nil {
			return false
		}
	default:
		return false
	}
	if fw.versions[0] <= last || fw.versions[len(fw.versions)-1] > latest {
		return false
	}
	for v := last + 1; v <= latest; v++ {
		if slices.Contains(fw.versions, v) {
			continue
		}
		c := commits[v]
		if c == nil {
			var err error
			if c, err = source.ReadCommit(v); err != nil {
				return false
			}
			commits[v] = c
		}
		if slices.ContainsFunc(c.Adds, func(a delta.Add) bool { return a.DataChange }) {
			return false
		}
	}
	return true
}

// putFollower leaves fw for its target's flow (takeFollower), in place of any left before.
func (e *Env) putFollower(fw *follower) {
	e.followMu.Lock()
	defer e.followMu.Unlock()
	if e.followers == nil {
		e.followers = map[string]*follower{}
	}
	e.followers[fw.target.Name] = fw
}

// takeFollower returns the follower left for target, if any, and forgets it.
func (e *Env) takeFollower(target string) *follower {
	e.followMu.Lock()
	defer e.followMu.Unlock()
	fw := e.followers[target]
	delete(e.followers, target)
	return fw
}

// DropFollowers forgets the folds that ingest flows made ahead for APPLY CHANGES targets that
// did not take them (a target that was skipped, or failed before it read its batch), so that
// their memory is freed: the update calls it once a batch of flows has run.
func (e *Env) DropFollowers() {
	e.followMu.Lock()
	defer e.followMu.Unlock()
	e.followers = nil
}

// FollowedBatches returns how many APPLY CHANGES batches this process took from a fold made while
// their source's ingest flow landed them (see follower), for tests and diagnostics.
func FollowedBatches() int64 { return followedBatches.Load() }
