package flows

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync/atomic"

	"tributary/delta"
	"tributary/spec"
)

// freshSCD1 says whether batch b of an SCD type 1 target can be applied straight from the
// typedFold it was folded into (applySCD1Fresh): the target holds no rows and no CDC state yet
// (its first batch, or the first after a full refresh), the batch truncates nothing, and the
// target is copy-on-write (a merge-on-read state also keeps each row's image and position,
// which applyMergeOnRead records).
func freshSCD1(b *changeBatch) bool {
	return !scd1FreshOff.Load() && b.stateID == "" && len(b.snap.Files) == 0 && b.truncate == nil && !mergeOnRead(b.snap)
}

// scd1FreshOff turns applySCD1Fresh off, so that tests can compare it with the general path;
// scd1FreshBatches counts the batches it applied.
var (
	scd1FreshOff     atomic.Bool
	scd1FreshBatches atomic.Int64
)

// applySCD1Fresh is applySCD1 for a batch that freshSCD1 accepts, folded into b.typed: every
// winner is new to the target, so each upsert is an insert and each delete a tombstone only
// (decide). It writes what applySCD1 writes of the same batch (the same rows in the same files,
// in order of each key's first event, the same CDC state, commit and metrics) without boxing a
// winner: the data files are written from the fold's records (delta.Table.WriteFileFromColumns)
// while the state is built from them and saved, the file names chosen first so that both can go
// at once. The state's keys are recorded in the order of the fold's table, read from start to
// end rather than at random, which only changes the order of its slots.
func applySCD1Fresh(env *Env, d *spec.Dataset, b *changeBatch, m Metrics) (Metrics, error) {
	tf := b.typed
	b.typed = nil
	scd1FreshBatches.Add(1)
	nowMs := env.now().UnixMilli()
	state, err := loadState(StateDir(env.Pipeline.Storage, d.Name), b.target, b.snap, b.stateID, b.keySch, b.seqSch, nowMs, tombstoneGC(d), nil)
	if err != nil {
		return m, err
	}
	state.mor = false
	ties := tf.tieCount()
	m.Ties = ties.n
	reportTies(env, d, b, ties)

	// The rows to write: the upserts' records in order of first arrival, as writeRows gets
	// them from decide (so that a batch landing in key order makes files of key ranges).
	ins := make([]int32, 0, tf.n)
	for _, rec := range tf.order {
		if !deleted(tf.tab[int(rec)*tf.stride+recMeta]) {
			ins = append(ins, rec)
		}
	}
	// The files as writeRows cuts the rows, named first, and each upsert's file by record.
	nf := fileCount(len(ins))
	names := make([]string, nf)
	for i := range names {
		names[i] = delta.NewDataFileName()
	}
	bounds := func(i int) (int, int) { return i * len(ins) / nf, (i + 1) * len(ins) / nf }
	var fileOfRec []int32 // per record of the table: its file among names (upserts only)
	if nf > 1 {
		fileOfRec = make([]int32, len(tf.tab)/tf.stride)
		for i := range nf {
			start, end := bounds(i)
			for _, rec := range ins[start:end] {
				fileOfRec[rec] = int32(i)
			}
		}
	}

	type saved struct {
		id      string
		segs    []segment
		renames map[string]string
		err     error
	}
	done := make(chan saved, 1)
	go func() {
		var sv saved
		var indexed chan struct{} // closed once index is done; nil until it starts
		var indexErr error
		defer func() {
			if r := recover(); r != nil {
				sv.err = fmt.Errorf("recording the CDC state of %s: %v", d.Name, r)
			}
			if indexed != nil {
				<-indexed
				sv.err = cmp.Or(sv.err, indexErr)
			}
			done <- sv
		}()
		ids := make([]int32, nf)
		for i, name := range names {
			ids[i] = state.fileID(delta.EscapePath(name))
		}
		first := len(state.slots)
		changed := state.recordFresh(tf, nowMs, func(rec int32) int32 {
			if fileOfRec == nil {
				return ids[0]
			}
			return ids[fileOfRec[rec]]
		})
		// The keys go in the hash table (for the state this process keeps for its next batch)
		// while the state is saved, which reads only the slots, the arena and the file paths:
		// a fresh state's arena holds only live keys, so save does not compact it (the one
		// thing that would move the slots; were it to, the table would be filled first).
		if state.needsCompact() {
			state.index(first)
			sv.id, sv.segs, sv.renames, sv.err = state.save(changed)
			return
		}
		indexed = make(chan struct{})
		go func() {
			defer close(indexed)
			defer func() {
				if r := recover(); r != nil {
					indexErr = fmt.Errorf("indexing the CDC state of %s: %v", d.Name, r)
				}
			}()
			state.index(first)
		}()
		sv.id, sv.segs, sv.renames, sv.err = state.save(changed)
	}()
	adds, werr := eachIndex(nf, func(i int) (delta.Add, error) {
		start, end := bounds(i)
		return b.target.WriteFileFromColumns(names[i], b.dataSch, foldColumnParts(tf, ins[start:end]))
	})
	sv := <-done
	if werr != nil {
		return m, werr
	}
	if sv.err != nil {
		return m, sv.err
	}
	m.NumUpsertedRows = int64(len(ins))
	m.NumOutputRows = m.NumUpsertedRows
	err = finishBatch(d, b, &m, batchFiles{adds: adds, freshInserts: int64(len(ins))},
		func() (string, []segment, map[string]string, error) { return sv.id, sv.segs, sv.renames, nil },
		state.remember,
		map[string]string{
			"numTargetRowsInserted": strconv.Itoa(len(ins)),
			"numTargetRowsUpdated":  "0",
			"numTargetRowsDeleted":  "0",
		})
	return m, err
}

// recordFresh records the winners of tf, a batch of keys the state does not hold (freshSCD1), as
// recordChanges records their changes (insertRow, tombstoneOnly), in the order of tf's table: an
// upsert's key with its sequence and data file (fileOf of its record), a delete's as a tombstone
// of commit time nowMs. It returns the slots it filled. The keys are not put in the hash table:
// index does that, and until it has, only what reads the slots (save) may use the state.
func (s *cdcState) recordFresh(tf *typedFold, nowMs int64, fileOf func(rec int32) int32) []int {
	changed := make([]int, 0, tf.n)
	s.grow(len(s.slots) + tf.n) // room in the table for index
	// About 3 bytes of key and 4 of sequence each: the arena and the slots grown once.
	s.arena = append(make([]byte, 0, len(s.arena)+12*tf.n), s.arena...)
	s.slots = append(make([]cdcSlot, 0, len(s.slots)+tf.n), s.slots...)
	for r := 0; r < len(tf.tab); r += tf.stride {
		rec := tf.tab[r:][:recHead]
		if rec[recMeta] == 0 {
			continue
		}
		off := uint64(len(s.arena))
		s.arena = appendLong(s.arena, rec[recKey])
		kl := uint64(len(s.arena)) - off
		s.arena = appendLong(s.arena, rec[recSeq])
		sl := cdcSlot{off: off, keyLen: uint32(kl), seqLen: uint32(uint64(len(s.arena)) - off - kl)}
		if deleted(rec[recMeta]) {
			sl.deleted, sl.deletedAt = true, nowMs
		} else {
			sl.file = fileOf(int32(r / tf.stride))
		}
		changed = append(changed, len(s.slots))
		s.slots = append(s.slots, sl)
	}
	return changed
}

// index puts the keys of the slots from first on, none of them in the table yet
// (recordFresh's, which made room for them), in the hash table. As recordChanges does, a group's
// buckets are loaded first, so that their cache misses overlap.
func (s *cdcState) index(first int) {
	const group = 32
	var hashes [group]uint64
	mask := uint64(len(s.table) - 1)
	for start := first; start < len(s.slots); start += group {
		end := min(start+group, len(s.slots))
		var sink uint64
		for i := start; i < end; i++ {
			hashes[i-start] = maphash.Bytes(s.seed, s.keyBytes(i))
			sink += s.table[hashes[i-start]&mask]
		}
		s.sink += sink
		for i := start; i < end; i++ {
			h := hashes[i-start]
			b := h & mask
			for s.table[b] != 0 {
				b = (b + 1) & mask
			}
			s.table[b] = h>>32<<32 | uint64(i+1)
		}
	}
}

// tieCount counts the ties the fold met, as reduceResult.tieCount does of finish's result.
func (tf *typedFold) tieCount() tieCount {
	var c tieCount
	for _, t := range tf.tieList {
		c.add(t)
	}
	return c
}

// foldColumnParts hands the winners of tf in its records recs (in that order) to
// delta.Table.WriteFileFromColumns as rows of the target, in parts of at most keyRowsPart.
func foldColumnParts(tf *typedFold, recs []int32) func() (delta.ColumnPart, error) {
	part := &foldColumns{tf: tf}
	return func() (delta.ColumnPart, error) {
		n := min(len(recs), keyRowsPart)
		part.recs, recs = recs[:n], recs[n:]
		return part, nil
	}
}

// foldColumns is rows of an SCD type 1 target, the winners of a typedFold in its records recs,
// given column by column (delta.ColumnPart): a column's word is the one the fold keeps
// (typedFold.setRow), which is the word delta.ColumnPart takes; the key's and the sequence's
// are the record's.
type foldColumns struct {
	tf   *typedFold
	recs []int32
}

// Len is the number of rows.
func (p *foldColumns) Len() int { return len(p.recs) }

// Column fills column j of rows [from, to) (delta.ColumnPart).
func (p *foldColumns) Column(j, from, to int, nulls []bool, words []int64, strs []string) {
	tf, recs := p.tf, p.recs[from:to]
	wi := tf.wordAt[j]
	at := func(i int) int { return int(recs[i]) * tf.stride }
	switch {
	case wi == aliasKey:
		for i := range recs {
			words[i] = tf.tab[at(i)+recKey]
		}
	case wi == aliasSeq:
		for i := range recs {
			words[i] = tf.tab[at(i)+recSeq]
		}
	default:
		bit, isStr := int64(1)<<j, tf.strAt[j] >= 0
		for i := range recs {
			r := at(i)
			switch {
			case tf.tab[r+recNulls]&bit != 0:
				nulls[i] = true
			case isStr:
				strs[i] = tf.str(r, j)
			default:
				words[i] = tf.tab[r+wi]
			}
		}
	}
}
