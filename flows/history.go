package flows

import (
	"slices"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// The SCD type 2 columns (spec.StartAt, spec.EndAt): the version's validity interval, of the type
// of sequence_by, a struct when it has several columns; __END_AT is NULL while current.
const (
	StartAt = spec.StartAt
	EndAt   = spec.EndAt
)

// histEvent is one event of a key's history (SCD type 2): at most one per sequence value.
type histEvent struct {
	seq    []any
	delete bool
	row    []any // the target's data columns; nil for a delete
}

// version is one row of an SCD type 2 target: the data columns valid from start to end (end nil
// for the current version).
type version struct {
	start, end []any
	row        []any
}

// foldHistory turns a key's events, in sequence order, into its versions: a new version opens
// when a tracked column changes (or after a delete); a change to untracked columns only rewrites
// the open version in place; a delete closes the open version at the delete's sequence. With
// ignoreNulls, a NULL in an upsert keeps the open version's value, and so does a NULL field of a
// struct column (types are the data columns' types; see keepNull).
func foldHistory(events []histEvent, tracked []int, ignoreNulls bool, types []schema.Type) []version {
	if len(events) == 0 {
		return nil
	}
	return foldOnto(make([]version, 0, len(events)), false, events, tracked, ignoreNulls, types)
}

// keepNull is the value a column of type t (nil: unknown) takes under ignore_null_updates when an
// upsert brings v and the stored value is old: a NULL keeps old, and in a struct so does each NULL
// field, at any depth (Databricks: "This also applies to nested columns with a value of null").
// Arrays and maps are replaced whole.
func keepNull(old, v any, t *schema.Type) any {
	if v == nil {
		return old
	}
	if old == nil || t == nil || t.Kind != schema.StructKind || t.Struct == nil {
		return v
	}
	o, ok := old.([]any)
	n, ok2 := v.([]any)
	if !ok || !ok2 || len(o) != len(n) || len(n) != len(t.Struct.Fields) {
		return v
	}
	out := make([]any, len(n))
	for i := range n {
		out[i] = keepNull(o[i], n[i], &t.Struct.Fields[i].Type)
	}
	return out
}

// columnType is the type of data column i, or nil when types does not say.
func columnType(types []schema.Type, i int) *schema.Type {
	if i < len(types) {
		return &types[i]
	}
	return nil
}

// foldOnto continues foldHistory: out are the versions of the events before events (open says
// whether the last of them is still open, that is whether the last of those events was an
// upsert); it appends the versions the events open, and may close or rewrite the open one. A
// fold of a history split in two anywhere, the second part folded onto the versions of the
// first, equals the fold of the whole history.
func foldOnto(out []version, open bool, events []histEvent, tracked []int, ignoreNulls bool, types []schema.Type) []version {
	cur := -1
	if open && len(out) > 0 {
		cur = len(out) - 1
	}
	for _, e := range events {
		if e.delete {
			if cur >= 0 {
				out[cur].end = e.seq
				cur = -1
			}
			continue
		}
		row := e.row
		if ignoreNulls && cur >= 0 {
			row = append([]any(nil), e.row...)
			for i, v := range row {
				row[i] = keepNull(out[cur].row[i], v, columnType(types, i))
			}
		}
		if cur < 0 {
			out = append(out, version{start: e.seq, row: row})
			cur = len(out) - 1
			continue
		}
		if sameColumns(out[cur].row, row, tracked) {
			out[cur].row = row
			continue
		}
		out[cur].end = e.seq
		out = append(out, version{start: e.seq, row: row})
		cur = len(out) - 1
	}
	return out
}

// cheapFirst returns the tracked columns (positions in data) reordered so that sameColumns
// compares the columns of fixed width before the strings and nested values: the set is the same,
// so is the result, but a version that changes a number is told apart without reading a string.
func cheapFirst(tracked []int, data schema.Schema) []int {
	out := make([]int, 0, len(tracked))
	for pass := range 2 {
		for _, i := range tracked {
			k := data.Fields[i].Type
			cheap := !k.Nested() && k.Kind != schema.String
			if cheap == (pass == 0) {
				out = append(out, i)
			}
		}
	}
	return out
}

// sameColumns says whether rows a and b hold equal values (schema.Equal) in the columns cols.
func sameColumns(a, b []any, cols []int) bool {
	for _, i := range cols {
		switch x := a[i].(type) {
		case int64:
			if y, ok := b[i].(int64); ok {
				if x != y {
					return false
				}
				continue
			}
		case string:
			if y, ok := b[i].(string); ok {
				if x != y {
					return false
				}
				continue
			}
		case schema.Decimal:
			if y, ok := b[i].(schema.Decimal); ok {
				if x != y {
					return false
				}
				continue
			}
		}
		if !schema.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameRow(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !schema.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameSeq(a, b []any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return compareSeq(a, b) == 0
}

// mergeHistory merges a key's batch events (in arrival order) into its stored history (in
// sequence order) and reports whether the history changed and how many ties were met; the
// stored history is left as it was (the result is a new slice when it changed). Ties follow
// semantics.md: within the batch a delete beats an upsert and, between upserts, the later
// arrival wins; against the stored history a delete beats a stored upsert at the same sequence
// and an upsert at a stored sequence is a no-op. Identical events are not ties.
func mergeHistory(hist []histEvent, batch []*event) ([]histEvent, bool, int64) {
	out, first, ties := mergeHistoryAt(hist, batch)
	return out, first >= 0, ties
}

// mergeHistoryAt is mergeHistory that reports, instead of whether the history changed, where:
// first is the position of the first event of the result that differs from the stored history
// (the two hold the same events before it), or -1 when the history did not change.
func mergeHistoryAt(hist []histEvent, batch []*event) (_ []histEvent, first int, ties int64) {
	var c tieCount
	out, first := mergeHistoryInto(nil, hist, batch, &c)
	return out, first, c.n
}

// mergeHistoryInto is mergeHistoryAt that builds a changed history in the memory of buf when it
// is large enough (buf must not share memory with hist), and adds the ties it meets to ties.
func mergeHistoryInto(buf, hist []histEvent, batch []*event, ties *tieCount) (_ []histEvent, first int) {
	sorted := batch
	if !slices.IsSortedFunc(batch, compareEvents) {
		sorted = append([]*event(nil), batch...)
		slices.SortStableFunc(sorted, compareEvents)
	}
	// Reduce the batch to one event per sequence.
	reduced := make([]*event, 0, len(sorted))
	for _, ev := range sorted {
		n := len(reduced)
		if n > 0 && compareSeq(reduced[n-1].seq, ev.seq) == 0 {
			cur := reduced[n-1]
			if !sameEvent(ev, cur) {
				ties.add(tie{key: ev.key, seq: ev.seq, arrival: ev.arrival, other: cur.arrival, rule: inBatchRule(ev.delete, cur.delete)})
			}
			if winsTie(ev.delete, ev.arrival, cur.delete, cur.arrival) {
				reduced[n-1] = ev
			}
			continue
		}
		reduced = append(reduced, ev)
	}
	// Merge the two sequences in order.
	out := buf[:0]
	if n := len(hist) + len(reduced); cap(out) < n {
		out = make([]histEvent, 0, n)
	}
	first = -1
	i := 0
	for _, ev := range reduced {
		for i < len(hist) && compareSeq(hist[i].seq, ev.seq) < 0 {
			out = append(out, hist[i])
			i++
		}
		if i < len(hist) && compareSeq(hist[i].seq, ev.seq) == 0 {
			old := hist[i]
			i++
			if old.delete != ev.delete {
				ties.add(tie{key: ev.key, seq: ev.seq, arrival: ev.arrival, other: -1, rule: deleteBeatUpsert})
			} else if !ev.delete && !sameRow(old.row, ev.row) {
				ties.add(tie{key: ev.key, seq: ev.seq, arrival: ev.arrival, other: -1, rule: storedSeqKept})
			}
			if ev.delete && !old.delete {
				if first < 0 {
					first = len(out)
				}
				out = append(out, histEvent{seq: ev.seq, delete: true})
				continue
			}
			out = append(out, old)
			continue
		}
		he := histEvent{seq: ev.seq, delete: ev.delete}
		if !ev.delete {
			he.row = ev.row
		}
		if first < 0 {
			first = len(out)
		}
		out = append(out, he)
	}
	if first < 0 {
		return hist, -1
	}
	return append(out, hist[i:]...), first
}

// compareEvents orders events by sequence.
func compareEvents(a, b *event) int { return compareSeq(a.seq, b.seq) }

// versionDiff compares a key's versions before and after a batch, matching rows by __START_AT:
// it appends the change data feed rows (pre/post images for changed versions, inserts, deletes)
// and their change types to rows and types. curRows are the rows of cur (toRow of each), used as
// they are for inserts and post-images; toRow makes the rows of old versions.
func versionDiff(rows [][]any, types []string, old, cur []version, toRow func(version) []any, curRows [][]any) (_ [][]any, _ []string, upserts, deletes int64) {
	var matched []bool
	if len(old) > 0 {
		matched = make([]bool, len(old))
	}
	for i, nv := range cur {
		j := -1
		for k, ov := range old {
			if !matched[k] && sameSeq(ov.start, nv.start) {
				j = k
				break
			}
		}
		if j < 0 {
			rows = append(rows, curRows[i])
			types = append(types, delta.ChangeInsert)
			upserts++
			continue
		}
		matched[j] = true
		ov := old[j]
		if sameSeq(ov.end, nv.end) && sameRow(ov.row, nv.row) {
			continue
		}
		rows = append(rows, toRow(ov), curRows[i])
		types = append(types, delta.ChangeUpdatePreimage, delta.ChangeUpdatePostimage)
		upserts++
	}
	for k, ov := range old {
		if !matched[k] {
			rows = append(rows, toRow(ov))
			types = append(types, delta.ChangeDelete)
			deletes++
		}
	}
	return rows, types, upserts, deletes
}

// fieldTypes lists the types of s's columns, in order.
func fieldTypes(s schema.Schema) []schema.Type {
	out := make([]schema.Type, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Type
	}
	return out
}
