package delta

import (
	"fmt"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"tributary/schema"
)

// rawKind says how a flat column's values are taken straight from the decoded page buffers of
// its PLAIN-encoded pages (Page.Data: the page's non-NULL values, densely, with its definition
// levels beside them), without a parquet.Value per value nor a call per value: the conversion
// of the column is the identity on the physical value, or a range check.
type rawKind uint8

const (
	rawNone    rawKind = iota // values go through convertFunc.batch
	rawInt64                  // INT64 read as BIGINT, a TIMESTAMP in µs: the value as it is
	rawDouble                 // DOUBLE read as DOUBLE
	rawInt32                  // INT32 read as INT or DATE
	rawDecimal                // INT32 or INT64 DECIMAL of the column's scale: range-checked (limit)
	rawString                 // BYTE_ARRAY read as STRING
)

// plainPages turns the fast path of rawKind on (tests turn it off to compare both paths).
var plainPages = true

// plainPage is the page a columnCursor reads by rawKind: its definition levels (nil: every value
// is there) and its values, and where the cursor is in both.
type plainPage struct {
	defs   []byte
	i64    []int64
	f64    []float64
	i32    []int32
	bytes  []byte
	offs   []uint32 // the byte array values' offsets in bytes: value i is bytes[offs[i]:offs[i+1]]
	rows   int      // the page's rows (values, NULLs included)
	at, vi int      // the next row, and the next non-NULL value
}

// openPlain sets c.plain to page when the page can be read by c.conv.raw: a page of the flat
// column without a dictionary (an indexed page's data are dictionary indexes) whose decoded
// values are of the kind the conversion takes. It reports whether it did.
func (c *columnCursor) openPlain(page parquet.Page) bool {
	if !plainPages || c.conv.raw == rawNone || page.Dictionary() != nil || len(page.RepetitionLevels()) > 0 {
		return false
	}
	data := page.Data()
	p := plainPage{defs: page.DefinitionLevels()}
	n := 0
	switch kind := data.Kind(); {
	case c.conv.raw == rawInt64 && kind == encoding.Int64, c.conv.raw == rawDecimal && kind == encoding.Int64:
		p.i64 = data.Int64()
		n = len(p.i64)
	case c.conv.raw == rawInt32 && kind == encoding.Int32, c.conv.raw == rawDecimal && kind == encoding.Int32:
		p.i32 = data.Int32()
		n = len(p.i32)
	case c.conv.raw == rawDouble && kind == encoding.Double:
		p.f64 = data.Double()
		n = len(p.f64)
	case c.conv.raw == rawString && kind == encoding.ByteArray:
		p.bytes, p.offs = data.ByteArray()
		if len(p.offs) == 0 {
			return false
		}
		n = len(p.offs) - 1
	default:
		return false
	}
	p.rows = n
	if p.defs != nil {
		p.rows = len(p.defs)
		present := 0
		for _, d := range p.defs {
			if int(d) == c.maxDef {
				present++
			}
		}
		if present != n {
			return false // not the page layout this path knows: the value reader decides
		}
	}
	c.plain = &p
	return true
}

// fillPlain fills column c.j of rows from the plain page, as many rows as the page has left (at
// most len(rows)), and returns how many it filled. base is the file row of rows[0], for errors.
// The values are copied into one slab for the call (the page's buffers are reused once it is
// released), NULLs left nil.
func (c *columnCursor) fillPlain(rows [][]any, base int) (int, error) {
	p := c.plain
	m := min(len(rows), p.rows-p.at)
	defs := p.defs
	if defs != nil {
		defs = defs[p.at : p.at+m]
	}
	var err error
	switch c.conv.raw {
	case rawInt64:
		p.vi = boxPlain(plainSlab[int64](c.arena, m), p.i64, p.vi, defs, c.maxDef, rows[:m], c.j, c.conv.typ)
	case rawDouble:
		p.vi = boxPlain(plainSlab[float64](c.arena, m), p.f64, p.vi, defs, c.maxDef, rows[:m], c.j, c.conv.typ)
	case rawInt32:
		p.vi = boxPlain(plainSlab[int32](c.arena, m), p.i32, p.vi, defs, c.maxDef, rows[:m], c.j, c.conv.typ)
	case rawDecimal:
		p.vi, err = c.decimalPlain(defs, rows[:m], base)
	case rawString:
		p.vi = c.stringPlain(defs, rows[:m])
	}
	if err != nil {
		return 0, err
	}
	p.at += m
	return m, nil
}

// boxPlain copies the values of vals from position vi on into slab (room for len(rows)
// values) and column j of rows (one per row whose definition level in defs is maxDef, or every
// row when defs is nil), boxed with type word typ, and returns the position after the last value
// taken.
func boxPlain[T any](slab, vals []T, vi int, defs []byte, maxDef int, rows [][]any, j int, typ unsafe.Pointer) int {
	if defs == nil {
		copy(slab, vals[vi:vi+len(rows)])
		for i := range rows {
			box(&rows[i][j], typ, unsafe.Pointer(&slab[i]))
		}
		return vi + len(rows)
	}
	n := 0
	for i, d := range defs {
		if int(d) == maxDef {
			slab[n] = vals[vi+n]
			box(&rows[i][j], typ, unsafe.Pointer(&slab[n]))
			n++
		}
	}
	return vi + n
}

// decimalPlain is fillPlain for an INT32 or INT64 DECIMAL of the column's scale: each value is
// checked against the column's precision (c.conv.limit), as decimalConverter checks it.
func (c *columnCursor) decimalPlain(defs []byte, rows [][]any, base int) (int, error) {
	p := c.plain
	slab := plainSlab[int64](c.arena, len(rows))
	n := 0
	limit := c.conv.limit
	for i := range rows {
		if defs != nil && int(defs[i]) != c.maxDef {
			continue
		}
		var u int64
		if p.i64 != nil {
			u = p.i64[p.vi+n]
		} else {
			u = int64(p.i32[p.vi+n])
		}
		if u >= limit || u <= -limit {
			return 0, fmt.Errorf("row %d: decimal %s does not fit %s", base+i, schema.FormatDecimal(schema.Decimal(u), c.conv.scale), c.conv.ddl)
		}
		slab[n] = u
		box(&rows[i][c.j], c.conv.typ, unsafe.Pointer(&slab[n]))
		n++
	}
	return p.vi + n, nil
}

// stringPlain is fillPlain for a BYTE_ARRAY column read as STRING: the bytes of the rows' values
// are copied into one string, each value a slice of it.
func (c *columnCursor) stringPlain(defs []byte, rows [][]any) int {
	p := c.plain
	nn := len(rows)
	if defs != nil {
		nn = 0
		for _, d := range defs {
			if int(d) == c.maxDef {
				nn++
			}
		}
	}
	if nn == 0 {
		return p.vi
	}
	lo, hi := p.offs[p.vi], p.offs[p.vi+nn]
	var all string
	var slab []string
	if a := c.arena; a != nil {
		b := a.bytes.take(int(hi - lo))
		copy(b, p.bytes[lo:hi])
		all, slab = unsafe.String(unsafe.SliceData(b), len(b)), a.strs.take(nn)
	} else {
		all, slab = string(p.bytes[lo:hi]), make([]string, nn)
	}
	n := 0
	for i := range rows {
		if defs != nil && int(defs[i]) != c.maxDef {
			continue
		}
		s, e := p.offs[p.vi+n]-lo, p.offs[p.vi+n+1]-lo
		slab[n] = all[s:e]
		box(&rows[i][c.j], c.conv.typ, unsafe.Pointer(&slab[n]))
		n++
	}
	return p.vi + n
}

// valueArena is the memory the flat PLAIN columns of a row group read through a RowGroupPool
// box their values in (fillPlain): chunks of 8-byte words (the numbers), string headers and
// string bytes, carved in order and carved again from the start once the group's rows are
// released (reset), so that reading many row groups allocates no memory for them after the
// first few. Values read other ways (dictionary pages, conversions, nested columns) are
// allocated as before.
type valueArena struct {
	words chunks[uint64]
	strs  chunks[string]
	bytes chunks[byte]
}

// reset makes the arena's memory free to carve again: no value boxed in it before may be in use.
func (a *valueArena) reset() {
	a.words.reset()
	a.strs.reset()
	a.bytes.reset()
}

// arenaChunk is the fewest elements a chunk of a valueArena holds.
const arenaChunk = 64 << 10

// chunks is a list of arrays that take carves slices from, in order, adding an array when the
// ones it has have no room left.
type chunks[T any] struct {
	list   [][]T
	i, off int // the array being carved, and its next free element
}

// take returns n elements (not cleared) that no other take since the last reset returned.
func (c *chunks[T]) take(n int) []T {
	if n == 0 {
		return nil
	}
	for ; c.i < len(c.list); c.i, c.off = c.i+1, 0 {
		if cur := c.list[c.i]; len(cur)-c.off >= n {
			c.off += n
			return cur[c.off-n : c.off : c.off]
		}
	}
	c.list = append(c.list, make([]T, max(n, arenaChunk)))
	c.i, c.off = len(c.list)-1, n
	return c.list[c.i][:n:n]
}

// reset makes every array free to carve again, from the first.
func (c *chunks[T]) reset() { c.i, c.off = 0, 0 }

// plainSlab returns room for n values of T: carved from the words of a (a nil a: allocated).
func plainSlab[T int64 | float64 | int32](a *valueArena, n int) []T {
	if a == nil || n == 0 {
		return make([]T, n)
	}
	var z T
	w := a.words.take((n*int(unsafe.Sizeof(z)) + 7) / 8)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(w))), n)
}
