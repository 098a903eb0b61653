package delta

import (
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// Nested columns in Parquet data files: the definition and repetition levels of STRUCT, ARRAY
// and MAP values at any depth (the Dremel encoding of Parquet's format, with the LIST and MAP
// layouts of Parquet LogicalTypes.md, "Nested Types").

// stepKind says how a leaf's path goes one level down.
type stepKind uint8

const (
	stepField stepKind = iota // into field idx of a STRUCT of width fields (an optional group)
	stepElem                  // into each element of an ARRAY (repeated group list, optional element)
	stepKey                   // into each key of a MAP (repeated group key_value, required key)
	stepValue                 // into each value of a MAP (optional value)
)

// step is one level of a leaf's path below its top-level column.
type step struct {
	kind       stepKind
	idx, width int    // stepField only
	name       string // stepField only: the field's name
}

// rowError is an error of the value of row Row of a batch (0-based within the batch).
type rowError struct {
	Row int
	Err error
}

func (e *rowError) Error() string { return fmt.Sprintf("row %d: %v", e.Row, e.Err) }
func (e *rowError) Unwrap() error { return e.Err }

// appendRepeated appends to slots the values of leaf l, a leaf under an ARRAY or a MAP, in rows:
// each row gives as many values as it has leaf slots, every one with its repetition level (0 for
// a row's first value, else the depth of the list or map that got a new entry) and definition
// level (how many of the optional and repeated levels above the value are present;
// LogicalTypes.md, "Lists": a NULL list, an empty list and a NULL element each have their own).
// st.nulls counts the rows whose outermost ARRAY or MAP (or a struct around it) is NULL, the
// nullCount Delta keeps for that column. A value of the wrong shape is a *rowError.
func appendRepeated(slots []slot, l leaf, rows [][]any, st *colStats) ([]slot, error) {
	first := 0 // the step of the outermost ARRAY or MAP
	for first < len(l.steps) && l.steps[first].kind == stepField {
		first++
	}
	var row int32
	add := func(v any, rep, def int) {
		slots = append(slots, slot{v: v, rep: int32(rep), def: int32(def), row: row})
	}
	var emit func(v any, i, rep, def, depth int) error
	emit = func(v any, i, rep, def, depth int) error {
		if i == len(l.steps) {
			add(v, rep, def)
			return nil
		}
		s := l.steps[i]
		switch s.kind {
		case stepField:
			sv, ok := v.([]any)
			if !ok || len(sv) != s.width {
				return fmt.Errorf("a %T is not a STRUCT value of %d fields ([]any)", v, s.width)
			}
			if sv[s.idx] == nil {
				if i < first {
					st.nulls++
				}
				add(nil, rep, def)
				return nil
			}
			return emit(sv[s.idx], i+1, rep, def+1, depth)
		case stepElem:
			arr, ok := v.([]any)
			if !ok {
				return fmt.Errorf("a %T is not an ARRAY value ([]any)", v)
			}
			if len(arr) == 0 {
				add(nil, rep, def)
				return nil
			}
			for k, e := range arr {
				r := rep
				if k > 0 {
					r = depth + 1
				}
				if e == nil {
					add(nil, r, def+1)
					continue
				}
				if err := emit(e, i+1, r, def+2, depth+1); err != nil {
					return fmt.Errorf("element %d: %w", k, err)
				}
			}
			return nil
		default: // stepKey, stepValue
			m, ok := v.(schema.Map)
			if !ok {
				return fmt.Errorf("a %T is not a MAP value (schema.Map)", v)
			}
			if len(m) == 0 {
				add(nil, rep, def)
				return nil
			}
			for k, e := range m {
				r := rep
				if k > 0 {
					r = depth + 1
				}
				if e.Key == nil {
					return fmt.Errorf("entry %d has a NULL key", k)
				}
				if s.kind == stepKey {
					if err := emit(e.Key, i+1, r, def+1, depth+1); err != nil {
						return fmt.Errorf("key %d: %w", k, err)
					}
					continue
				}
				if e.Value == nil {
					add(nil, r, def+1)
					continue
				}
				if err := emit(e.Value, i+1, r, def+2, depth+1); err != nil {
					return fmt.Errorf("value %d: %w", k, err)
				}
			}
			return nil
		}
	}
	for n, r := range rows {
		row = int32(n)
		v := r[l.path[0]]
		if v == nil {
			st.nulls++
			add(nil, 0, 0)
			continue
		}
		if err := emit(v, 0, 0, 1, 0); err != nil {
			return slots, &rowError{Row: n, Err: err}
		}
	}
	return slots, nil
}

// rstep is a step of a leaf resolved against the columns of a file being read, with the
// definition levels the file gives them (other writers may make levels REQUIRED, or use the
// legacy 2-level lists).
type rstep struct {
	step
	entry   int // stepElem, stepKey, stepValue: the level from which the list or map has an entry
	depth   int // stepElem, stepKey, stepValue: the repetition level of a new entry
	present int // the level from which the node stepped into is not NULL
}

// nodePresent is the definition level from which the file node c is not NULL. A repeated node
// (a legacy list without its optional wrapper) is never NULL: its parent's level.
func nodePresent(c *parquet.Column) int {
	if c.Repeated() {
		return c.MaxDefinitionLevel() - 1
	}
	return c.MaxDefinitionLevel()
}

// logicalIs reports whether the file column c is a group annotated with the logical type T
// (*format.ListType or *format.MapType; the legacy LIST and MAP converted types read the same).
func logicalIs[T any](c *parquet.Column) bool {
	if c.Leaf() {
		return false
	}
	lt := c.Type().LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(T)
	return ok
}

// listParts finds the repeated node and the element node of the file column c read as an ARRAY,
// following LogicalTypes.md, "Lists" and its backward-compatibility rules: a repeated field
// itself is a list of required elements (no LIST group around it); in a group, the single
// repeated child is the element when it is a primitive, a group of several fields, or a group
// named "array" or "<list>_tuple"; otherwise the child of the repeated group is the element.
func listParts(c *parquet.Column) (rep, elem *parquet.Column, err error) {
	if c.Repeated() {
		return c, c, nil
	}
	if c.Leaf() || len(c.Columns()) != 1 || !c.Columns()[0].Repeated() {
		return nil, nil, fmt.Errorf("is not a LIST in the file (want a group with one repeated field)")
	}
	rep = c.Columns()[0]
	if rep.Leaf() || len(rep.Columns()) > 1 || rep.Name() == "array" || rep.Name() == c.Name()+"_tuple" {
		return rep, rep, nil
	}
	return rep, rep.Columns()[0], nil
}

// mapParts finds the repeated key_value node and the key and value nodes of the file column c read
// as a MAP (LogicalTypes.md, "Maps": any names; the legacy MAP_KEY_VALUE layout is the same).
func mapParts(c *parquet.Column) (kv, key, value *parquet.Column, err error) {
	if c.Leaf() || len(c.Columns()) != 1 || !c.Columns()[0].Repeated() || c.Columns()[0].Leaf() || len(c.Columns()[0].Columns()) != 2 {
		return nil, nil, nil, fmt.Errorf("is not a MAP in the file (want a group with one repeated group of key and value)")
	}
	kv = c.Columns()[0]
	key, value = kv.Column("key"), kv.Column("value")
	if key == nil || value == nil {
		key, value = kv.Columns()[0], kv.Columns()[1]
	}
	return kv, key, value, nil
}

// resolve finds the file column of leaf l under the top-level file column col and the levels of
// each of its steps. A struct field missing from the file gives a nil column (the leaf reads
// NULL); a node of another shape is an error.
func resolve(col *parquet.Column, l leaf) (*parquet.Column, []rstep, error) {
	c := col
	out := make([]rstep, len(l.steps))
	for i, s := range l.steps {
		r := rstep{step: s}
		switch s.kind {
		case stepField:
			if c.Leaf() || logicalIs[*format.ListType](c) || logicalIs[*format.MapType](c) {
				return nil, nil, fmt.Errorf("is not a STRUCT in the file")
			}
			if c = c.Column(s.name); c == nil {
				return nil, nil, nil
			}
			r.present = nodePresent(c)
		case stepElem:
			rep, elem, err := listParts(c)
			if err != nil {
				return nil, nil, err
			}
			r.entry, r.depth = rep.MaxDefinitionLevel(), rep.MaxRepetitionLevel()
			c = elem
			r.present = c.MaxDefinitionLevel()
		case stepKey, stepValue:
			kv, key, value, err := mapParts(c)
			if err != nil {
				return nil, nil, err
			}
			r.entry, r.depth = kv.MaxDefinitionLevel(), kv.MaxRepetitionLevel()
			if c = key; s.kind == stepValue {
				c = value
			}
			r.present = c.MaxDefinitionLevel()
		}
		out[i] = r
	}
	if !c.Leaf() {
		return nil, nil, fmt.Errorf("is nested in the file, not %s", l.typ.DDL())
	}
	return c, out, nil
}

// readNested reads the column fd (file column col; chunks are the column chunks of the row group
// rows belong to), whose type holds an ARRAY or a MAP, into column j of rows: each leaf's values
// are put in place by their levels, the leaves of one value filling the same structs, lists and
// maps. A struct field missing from the file reads NULL.
func readNested(col *parquet.Column, chunks []parquet.ColumnChunk, fd schema.Field, j int, rows [][]any, buf []parquet.Value) error {
	for _, l := range leaves(schema.Schema{Fields: []schema.Field{fd}}) {
		c, steps, err := resolve(col, l)
		if err != nil {
			return fmt.Errorf("column %q %w", l.name, err)
		}
		if c == nil {
			continue
		}
		conv, err := converter(c.Type(), l.typ)
		if err != nil {
			return fmt.Errorf("column %q: %w", l.name, err)
		}
		if err := assembleLeaf(chunks[c.Index()].Pages(), nodePresent(col), c.MaxDefinitionLevel(), steps, j, rows, conv, buf); err != nil {
			return fmt.Errorf("column %q: %w", l.name, err)
		}
	}
	return nil
}

// assembleLeaf reads the values of one leaf column chunk and puts each in place in column j of
// rows (Dremel record assembly): a repetition level of 0 starts a row; at each list or map of
// depth d, a level below d stays in the current entry, d adds an entry, above d starts at the
// first entry; the definition level says down to which node the value is present (top: the
// level from which the top-level value is not NULL; maxDef: the level of a leaf value). Nodes
// already made by an earlier leaf of the same column are reused by position.
func assembleLeaf(pages parquet.Pages, top, maxDef int, steps []rstep, j int, rows [][]any, conv convertFunc, buf []parquet.Value) error {
	r := -1
	idx := make([]int, len(steps)+2) // current entry at each repetition depth
	err := eachValues(pages, buf, func(vals []parquet.Value) error {
		for _, v := range vals {
			rep, def := v.RepetitionLevel(), v.DefinitionLevel()
			if rep == 0 {
				r++
				if r >= len(rows) {
					return fmt.Errorf("the file has more values than its %d rows", len(rows))
				}
			} else if r < 0 {
				return fmt.Errorf("the first value has repetition level %d, not 0", rep)
			}
			if def < top {
				continue
			}
			if err := place(&rows[r][j], v, rep, def, maxDef, steps, idx, conv); err != nil {
				return fmt.Errorf("row %d: %w", r, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if r+1 != len(rows) {
		return fmt.Errorf("the column has %d rows of values, the file %d rows", r+1, len(rows))
	}
	return nil
}

// place puts one leaf value into the value at slot (see assembleLeaf).
func place(slot *any, v parquet.Value, rep, def, maxDef int, steps []rstep, idx []int, conv convertFunc) error {
	for _, s := range steps {
		switch s.kind {
		case stepField:
			if *slot == nil {
				*slot = make([]any, s.width)
			}
			sv, ok := (*slot).([]any)
			if !ok || len(sv) != s.width {
				return errors.New("the levels of the leaves disagree")
			}
			if def < s.present {
				return nil
			}
			slot = &sv[s.idx]
		case stepElem:
			if *slot == nil {
				*slot = []any{}
			}
			arr, ok := (*slot).([]any)
			if !ok {
				return errors.New("the levels of the leaves disagree")
			}
			if def < s.entry {
				return nil
			}
			i := entryIndex(idx, s.depth, rep)
			switch {
			case i == len(arr):
				arr = append(arr, nil)
				*slot = arr
			case i > len(arr):
				return errors.New("the repetition levels skip a list element")
			}
			if def < s.present {
				return nil
			}
			slot = &arr[i]
		default: // stepKey, stepValue
			if *slot == nil {
				*slot = schema.Map{}
			}
			m, ok := (*slot).(schema.Map)
			if !ok {
				return errors.New("the levels of the leaves disagree")
			}
			if def < s.entry {
				return nil
			}
			i := entryIndex(idx, s.depth, rep)
			switch {
			case i == len(m):
				m = append(m, schema.MapEntry{})
				*slot = m
			case i > len(m):
				return errors.New("the repetition levels skip a map entry")
			}
			if def < s.present {
				if s.kind == stepKey {
					return errors.New("a map key is NULL")
				}
				return nil
			}
			if s.kind == stepKey {
				slot = &m[i].Key
			} else {
				slot = &m[i].Value
			}
		}
	}
	if def < maxDef {
		return nil
	}
	x, err := conv.one(v)
	if err != nil {
		return err
	}
	*slot = x
	return nil
}

// entryIndex returns the entry of the list or map of repetition depth d that a value of
// repetition level rep goes to, and records it.
func entryIndex(idx []int, d, rep int) int {
	switch {
	case rep == d:
		idx[d]++
	case rep < d:
		idx[d] = 0
	}
	return idx[d]
}

// hasRepeated reports whether t holds an ARRAY or a MAP at any depth.
func hasRepeated(t schema.Type) bool {
	switch t.Kind {
	case schema.ArrayKind, schema.MapKind:
		return true
	case schema.StructKind:
		if t.Struct != nil {
			for _, f := range t.Struct.Fields {
				if hasRepeated(f.Type) {
					return true
				}
			}
		}
	}
	return false
}
