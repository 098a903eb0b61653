package flows

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// historyDeletes is the merge-on-read end of applyHistory (the target has
// delta.enableDeletionVectors, mergeOnRead): of each key the batch changed, the rows its keep
// does not keep (kvs[i].gone of them: the versions from the first one the batch changed on) are
// marked deleted where they lie (Delta PROTOCOL.md, "Deletion Vectors"), and its new rows
// (kvs[i].rows) go to new files, with the rows of the keys that have no file yet. No data file
// is rewritten, and the versions before the first changed one stay where they are, so a batch
// writes about as many rows as it changes versions, whatever the size of the table (it may read
// the key columns of many files, below).
//
// A key's rows may then lie in several files: its state names the one written last, which holds
// its last version (the open one, which a batch of later events closes). The rows' positions
// come from reading the key columns and __START_AT of the files the state names for the changed
// keys; when those do not hold all of the rows to delete (a late event changed versions that an
// earlier batch wrote, or OPTIMIZE moved rows), the other files of the snapshot are read too
// (rowLocator).
//
// It returns the deletion vectors' removes and adds and the keys whose rows go to new files
// (positions in kvs, in key order). When the table does not hold exactly the rows to delete of
// each key, the state and the table disagree: an error names the dataset and how to rebuild.
func historyDeletes(env *Env, d *spec.Dataset, b *changeBatch, state *histState, kvs []changedKey, g *keyGroups, keyIdx []int, startIdx int, scd2 bool, nowMs int64) (dvChange, []int, error) {
	var fresh []int
	first := map[string]bool{} // the files the state names for keys with rows to delete
	need := 0                  // rows to delete, over all keys
	for i, kv := range kvs {
		if kv.hk == nil || (!kv.diff && kv.hk.file != "") {
			continue // unchanged: its rows stay as they are
		}
		fresh = append(fresh, i)
		if kv.diff && kv.gone > 0 {
			need += kv.gone
			if f := state.resolve(kv.hk.file); f != "" {
				first[f] = true
			}
		}
	}
	if need == 0 {
		return dvChange{}, fresh, nil
	}
	loc := newRowLocator(b.target, d.Schema, kvs, g, keyIdx, startIdx, scd2, func(i int) bool {
		kv := &kvs[i]
		return kv.hk != nil && kv.diff && kv.gone > 0
	})
	var files, rest []delta.Add
	for _, f := range b.snap.Files {
		if first[f.Path] {
			files = append(files, f)
		} else {
			rest = append(rest, f)
		}
	}
	positions, err := loc.scan(files)
	if err != nil {
		return dvChange{}, nil, err
	}
	if loc.total.Load() < int64(need) && len(rest) > 0 {
		rest = loc.after(rest, func(i int) bool { return int(loc.found[i].Load()) < kvs[i].gone })
		more, err := loc.scan(rest)
		if err != nil {
			return dvChange{}, nil, err
		}
		files, positions = append(files, rest...), append(positions, more...)
	}
	if bad := loc.mismatched(); bad > 0 {
		return dvChange{}, nil, fmt.Errorf("the CDC state of %s does not match its table: %d of the keys being changed do not have the rows their state names; run %s", d.Name, bad, RefreshHint(env.Pipeline, d.Name))
	}
	// Only the files with rows to delete change.
	var touched []delta.Add
	var sets [][]uint64
	for k, f := range files {
		if len(positions[k]) > 0 {
			touched, sets = append(touched, f), append(sets, positions[k])
		}
	}
	dv, err := markDeleted(env, d, b.target, touched, sets, nowMs)
	return dv, fresh, err
}

// rowLocator finds where the rows that a batch drops of the keys it changed lie: of a key
// kvs[i] for which want(i) holds, the rows its keep does not keep (kvs[i].gone of them), found
// by reading the key columns and __START_AT of data files. Merge-on-read marks them deleted
// (historyDeletes); copy-on-write rewrites the files that hold them (rewriteHistoryFiles), once
// merge-on-read batches have spread a key's rows over several files (OPTIMIZE, which only joins
// files, may leave them spread). scan is safe for concurrent use.
type rowLocator struct {
	t       *delta.Table
	kvs     []changedKey
	g       *keyGroups
	want    func(i int) bool
	readSch schema.Schema // the key columns, then __START_AT (SCD type 2)
	idx     []int         // the key columns in readSch
	at      int           // __START_AT in readSch, or -1
	// longNames are readSch's names when every column is a BIGINT (read typed, without boxing).
	longNames []string
	longKeys  func() map[int64]longKey
	found     []atomic.Int32 // rows found, per key
	total     atomic.Int64   // rows found, over all keys
}

// longKey is a key of one BIGINT column a rowLocator looks for: its position in kvs and which of
// its rows stay.
type longKey struct {
	i      int
	before int64 // rows whose __START_AT is before stay, when keep is set
	keep   bool
}

// newRowLocator returns the locator of the rows the keys of kvs for which want holds drop, in
// the files of the target of schema tgtSch (keys at keyIdx, __START_AT at startIdx when scd2).
func newRowLocator(t *delta.Table, tgtSch schema.Schema, kvs []changedKey, g *keyGroups, keyIdx []int, startIdx int, scd2 bool, want func(i int) bool) *rowLocator {
	l := &rowLocator{t: t, kvs: kvs, g: g, want: want, idx: make([]int, len(keyIdx)), at: -1, found: make([]atomic.Int32, len(kvs))}
	for j, k := range keyIdx {
		l.readSch.Fields = append(l.readSch.Fields, tgtSch.Fields[k])
		l.idx[j] = j
	}
	if scd2 {
		l.at = len(l.readSch.Fields)
		l.readSch.Fields = append(l.readSch.Fields, tgtSch.Fields[startIdx])
	}
	for _, fd := range l.readSch.Fields {
		if fd.Type.Kind != schema.Long {
			l.longNames = nil
			break
		}
		l.longNames = append(l.longNames, fd.Name)
	}
	// For a key of one BIGINT column, the keys looked for by value: an int64 map finds them
	// faster than their encodings in g.index, and holding the keep spares a visit to kvs per
	// row. nil when a keep's __START_AT is not a BIGINT.
	l.longKeys = sync.OnceValue(func() map[int64]longKey {
		out := map[int64]longKey{}
		for k, i := range g.index {
			if !want(i) {
				continue
			}
			kv := &kvs[i]
			key, err := decodeValues([]byte(k))
			if err != nil || len(key) != 1 {
				return nil
			}
			x, ok := key[0].(int64)
			if !ok || kv.keep.all {
				return nil
			}
			lk := longKey{i: i}
			if kv.keep.before != nil {
				if lk.before, lk.keep = kv.keep.before.(int64); !lk.keep {
					return nil
				}
			}
			out[x] = lk
		}
		return out
	})
	return l
}

// scan returns, for each of files, the 0-based physical positions of the rows looked for that
// it holds (rows its deletion vector deletes are not read), counting them in found and total.
func (l *rowLocator) scan(files []delta.Add) ([][]uint64, error) {
	return eachFile(files, func(f delta.Add) ([]uint64, error) {
		var pos []uint64
		if l.longNames != nil {
			cols, rowPos, ok, err := l.t.ReadLongColumns(f, l.longNames)
			if err != nil {
				return nil, err
			}
			if ok {
				pos = l.scanLongs(cols, rowPos)
				l.total.Add(int64(len(pos)))
				return pos, nil
			}
		}
		rows, rowPos, err := l.t.ReadLiveFile(f, l.readSch) // without the rows already deleted
		if err != nil {
			return nil, err
		}
		var c keyCursor
		for r, row := range rows {
			c.kb = appendPicked(c.kb[:0], row, l.idx)
			if i, ok := l.find(&c, r == 0); ok && !l.kvs[i].keep.keeps(row, l.at) {
				pos = append(pos, uint64(rowPos[r]))
				l.found[i].Add(1)
			}
		}
		l.total.Add(int64(len(pos)))
		return pos, nil
	})
}

// scanLongs is scan over BIGINT columns read typed: cols[j][r] is column j of readSch of the row
// at position rowPos[r].
func (l *rowLocator) scanLongs(cols [][]int64, rowPos []int64) []uint64 {
	var pos []uint64
	if byLong := l.longKeys(); len(l.idx) == 1 && l.at >= 0 && byLong != nil {
		for r, p := range rowPos {
			if lk, ok := byLong[cols[0][r]]; ok && !(lk.keep && cols[l.at][r] < lk.before) {
				pos = append(pos, uint64(p))
				l.found[lk.i].Add(1)
			}
		}
		return pos
	}
	var c keyCursor
	for r, p := range rowPos {
		c.kb = c.kb[:0]
		for j := range l.idx {
			c.kb = appendLong(c.kb, cols[j][r])
		}
		i, ok := l.find(&c, r == 0)
		if ok && !(l.at < 0 && l.kvs[i].keep.all || l.at >= 0 && l.kvs[i].keep.keepsLong(cols[l.at][r])) {
			pos = append(pos, uint64(p))
			l.found[i].Add(1)
		}
	}
	return pos
}

// keyCursor is a scan's last key lookup: a key's rows lie next to each other in a file, so it
// is looked up once per run of them.
type keyCursor struct {
	kb, last []byte // the key being looked up, and the last one looked up
	i        int
	ok       bool
}

// find returns the position in kvs of the key c.kb (encoded as appendPicked does) when its rows
// are looked for (which ones: its keep says).
func (l *rowLocator) find(c *keyCursor, first bool) (int, bool) {
	if first || !bytes.Equal(c.kb, c.last) {
		c.i, c.ok = l.g.index[string(c.kb)]
		c.last = append(c.last[:0], c.kb...)
		c.ok = c.ok && l.want(c.i)
	}
	return c.i, c.ok
}

// after returns the files of files that may hold rows looked for of the keys for which missing
// holds: for SCD type 2 with a BIGINT sequence, a key's rows looked for start at or after its
// keep's before, so a file whose statistics bound its __START_AT below the least of those holds
// none of them (a file with a deletion vector keeps its bounds, loose). A file without the
// statistic stays.
func (l *rowLocator) after(files []delta.Add, missing func(i int) bool) []delta.Add {
	if l.at < 0 || l.readSch.Fields[l.at].Type.Kind != schema.Long {
		return files
	}
	least, some := int64(0), false
	for i := range l.kvs {
		if !l.want(i) || !missing(i) {
			continue
		}
		b, ok := l.kvs[i].keep.before.(int64)
		if !ok {
			return files // all of the key's rows: any file may hold them
		}
		if !some || b < least {
			least, some = b, true
		}
	}
	if !some {
		return nil
	}
	start := schema.Schema{Fields: []schema.Field{l.readSch.Fields[l.at]}}
	var out []delta.Add
	for _, f := range files {
		st, err := delta.ParseStats(f.Stats, start)
		if max, ok := st.Max[start.Fields[0].Name].(int64); err == nil && ok && max < least {
			continue
		}
		out = append(out, f)
	}
	return out
}

// mismatched returns how many of the keys looked for have not exactly their kvs[i].gone rows
// found.
func (l *rowLocator) mismatched() int {
	bad := 0
	for i := range l.kvs {
		if l.want(i) && int(l.found[i].Load()) != l.kvs[i].gone {
			bad++
		}
	}
	return bad
}
