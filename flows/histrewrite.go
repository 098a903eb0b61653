package flows

import (
	"bytes"
	"sync/atomic"

	"tributary/schema"
)

// The rewrite of the data files of a target kept as per-key histories (applyHistory): which rows
// of a rewritten file stay, where the changed keys' new rows go, and how the rows of keys without
// a file are cut into new files.

// cutBetweenKeys splits keys with sizes rows each (in order) into runs of at most limit rows,
// cut only between keys: it returns each run's [start, end) in sizes. A key of more than limit
// rows is a run of its own.
func cutBetweenKeys(sizes []int, limit int) [][2]int {
	var out [][2]int
	start, n := 0, 0
	for i, sz := range sizes {
		if n > 0 && n+sz > limit {
			out = append(out, [2]int{start, i})
			start, n = i, 0
		}
		n += sz
	}
	if start < len(sizes) {
		out = append(out, [2]int{start, len(sizes)})
	}
	return out
}

// cutEvenly splits keys with sizes rows each (in order) into n runs of about equal rows, cut
// only between keys: run j ends at the first key boundary at or past j/n of the rows, so that
// there is no short last run of what the runs before left over (as a greedy cut to a limit
// leaves), unless a run would then hold more than limit rows: it ends before that key instead
// (a key of more than limit rows is a run of its own), and a share that ends inside that key
// counts as reached. It returns each run's [start, end) in sizes; a run may hold only keys
// without rows (planKeyRows makes no file of it).
func cutEvenly(sizes []int, n, limit int) [][2]int {
	total := 0
	for _, sz := range sizes {
		total += sz
	}
	var out [][2]int
	start, run, sum, j := 0, 0, 0, 1
	reach := func(rows int) { // j is the next share to reach
		for j < n && rows*n >= j*total {
			j++
		}
	}
	for i, sz := range sizes {
		if run > 0 && run+sz > limit {
			out = append(out, [2]int{start, i})
			start, run = i, 0
			reach(sum + sz)
		}
		sum, run = sum+sz, run+sz
		if run > 0 && j < n && sum*n >= j*total {
			out = append(out, [2]int{start, i + 1})
			start, run = i+1, 0
			reach(sum)
		}
	}
	if start < len(sizes) {
		out = append(out, [2]int{start, len(sizes)})
	}
	return out
}

// rowKeep says which rows of a changed key its file keeps when rewritten: all of them, or those
// whose __START_AT is before before (none when before is nil).
type rowKeep struct {
	all    bool
	before any
}

func (k rowKeep) some() bool { return k.all || k.before != nil }

// keeps says whether row r, whose __START_AT is r[startIdx], stays (a row of an SCD type 1
// target, which has none, only with all).
func (k rowKeep) keeps(r []any, startIdx int) bool {
	return k.all || (k.before != nil && schema.Compare(r[startIdx], k.before) < 0)
}

// keepsLong is keeps for a row whose __START_AT is the BIGINT start.
func (k rowKeep) keepsLong(start int64) bool {
	if k.all {
		return true
	}
	if b, ok := k.before.(int64); ok {
		return start < b
	}
	return k.before != nil && schema.Compare(start, k.before) < 0
}

// allAfter says whether every event of evs has a sequence after seq.
func allAfter(evs []*event, seq []any) bool {
	for _, ev := range evs {
		if compareSeq(ev.seq, seq) <= 0 {
			return false
		}
	}
	return true
}

// rewriteRows appends to out the rows of a rewritten file: the rows of keys (the columns keyIdx,
// encoded by appendPicked) that changeOf reports unchanged (a position of -1); of a changed key,
// the rows its keep keeps (by __START_AT, column startIdx), followed, when its position is in
// place, by its newRows, so that a key's rows stay next to each other; it deletes from place
// the positions it placed. A key's rows are next to each other in the files this flow writes,
// so changeOf is asked once per run of rows of one key (of a key whose rows lie apart, once per
// run; its new rows follow its first run). Each row of a changed key it drops counts one in
// dropped[pos] (dropped may be nil).
func rewriteRows(out, rows [][]any, keyIdx []int, startIdx int, changeOf func(kb []byte) (pos int, keep rowKeep, newRows [][]any), place map[int]bool, dropped []atomic.Int32) [][]any {
	var kb, prev []byte
	pos, pending := -1, [][]any(nil)
	var keep rowKeep
	for i, r := range rows {
		kb = appendPicked(kb[:0], r, keyIdx)
		if i == 0 || !bytes.Equal(kb, prev) {
			out = append(out, pending...) // after the run of the key before
			var fresh [][]any
			pos, keep, fresh = changeOf(kb)
			pending = nil
			if pos >= 0 && place[pos] {
				delete(place, pos)
				pending = fresh
			}
			prev, kb = kb, prev
		}
		if pos < 0 || keep.keeps(r, startIdx) {
			out = append(out, r)
		} else if dropped != nil {
			dropped[pos].Add(1)
		}
	}
	return append(out, pending...)
}
