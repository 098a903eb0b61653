package delta

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// ReadFile reads the Parquet file at path (relative to the table folder and URL-encoded, as in
// an add or cdc action; or absolute) into rows typed by s: row i holds len(s.Fields) values in
// the order of s, each nil or the Go value of its column (schema package invariant). Columns are
// matched by name; a column of s missing from the file reads NULL, and file columns not in s are
// skipped (as Delta PROTOCOL.md asks of a data file's extra _change_type column). A STRUCT
// column reads as a []any of its fields (matched by name, recursively) or nil; an ARRAY column
// as a []any of its elements and a MAP column as a schema.Map, from the LIST and MAP layouts of
// Parquet LogicalTypes.md ("Nested Types"), the legacy 2-level lists of its backward-compatibility
// rules included (a repeated field with no LIST group, a repeated group named array or
// <name>_tuple, a repeated group of several fields), at any depth.
//
// Besides the types WriteFile writes it reads what other engines write for these types (Delta
// PROTOCOL.md, "Delta Data Type to Parquet Type Mappings"): INT96 timestamps, INT64 timestamps
// in MILLIS, MICROS or NANOS (NANOS rounded down to µs), DECIMAL as INT32, INT64,
// FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY (rescaled exactly to the column's scale), INT32 into
// BIGINT, FLOAT into DOUBLE, dictionary-encoded and v1/v2 data pages, any codec parquet-go
// reads. A file column of another type or shape, or a value that does not
// fit (a DECIMAL beyond the column's precision, a fraction the scale cannot hold) is an error naming the file
// and the column.
func (t *Table) ReadFile(path string, s schema.Schema) ([][]any, error) {
	name, err := localPath(t.Dir, path)
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	rows, err := readParquet(name, s)
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	return rows, nil
}

// ReadFileGroups reads the Parquet file at path (as ReadFile names it) one row group at a time:
// fn gets the rows of each row group in file order, typed and matched by name as ReadFile does,
// and may keep them. The reader holds at most two row groups' rows at once (fn's, and the next
// one, decoded meanwhile), so a file larger than memory can be read. An error of fn stops the
// read and is returned as it is.
func (t *Table) ReadFileGroups(path string, s schema.Schema, fn func(rows [][]any) error) error {
	return t.readFileGroups(path, s, false, fn)
}

// readFileGroups is ReadFileGroups; with reuse, each group's rows are in the memory of the
// group two before (fn may not keep them).
func (t *Table) readFileGroups(path string, s schema.Schema, reuse bool, fn func(rows [][]any) error) error {
	return t.readFileGroupsIn(path, s, groupMemory{reuse: reuse}, func(rows [][]any, _ func()) error { return fn(rows) })
}

// readFileGroupsIn is readFileGroups with the groups' memory taken as mem says; fn gets each
// group's release (a no-op unless mem has a pool).
func (t *Table) readFileGroupsIn(path string, s schema.Schema, mem groupMemory, fn func(rows [][]any, release func()) error) error {
	name, err := localPath(t.Dir, path)
	if err != nil {
		return fmt.Errorf("delta: read %s: %w", path, err)
	}
	var fnErr error
	err = readParquetGroups(name, s, mem, func(rows [][]any, release func()) error {
		fnErr = fn(rows, release)
		return fnErr
	})
	if err != nil && err == fnErr {
		return err
	}
	if err != nil {
		return fmt.Errorf("delta: read %s: %w", path, err)
	}
	return nil
}

// groupMemory is where readParquetGroups decodes row groups: new memory for each (the zero
// value), the memory of the group two before (reuse: the caller keeps no rows past its call), or
// the groups of a pool, each taken again once released (see RowGroupPool).
type groupMemory struct {
	reuse bool
	pool  *RowGroupPool
}

// RowGroupPool is the memory of the row groups that Table.FileRowGroupsPooled reads: a few
// groups' rows and their values (the values of flat columns of PLAIN pages, in a valueArena),
// each decoded into again once the caller has released it. A batch that reads many row groups
// and copies what it keeps of them then reads them in the memory of the first few, making
// next to no garbage. A pool may serve one read at a time.
type RowGroupPool struct {
	free chan *decodedGroup
}

// NewRowGroupPool returns a pool of n row groups' memory (at least 2: one decoded while the
// caller takes another).
func NewRowGroupPool(n int) *RowGroupPool {
	n = max(n, 2)
	p := &RowGroupPool{free: make(chan *decodedGroup, n)}
	for range n {
		p.free <- &decodedGroup{pooled: true}
	}
	return p
}

// releaser returns the function that hands g back to the pool, once however often it is called
// and from any goroutine.
func (p *RowGroupPool) releaser(g *decodedGroup) func() {
	var once sync.Once
	return func() { once.Do(func() { p.free <- g }) }
}

func readParquet(name string, s schema.Schema) ([][]any, error) {
	var all [][]any
	err := readParquetGroups(name, s, groupMemory{}, func(rows [][]any, _ func()) error {
		if all == nil {
			all = rows
		} else {
			all = append(all, rows...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if all == nil {
		all = [][]any{}
	}
	return all, nil
}

// readParquetGroups reads the file one row group at a time and hands each group's rows to fn,
// in file order, from the calling goroutine; the group after is decoded meanwhile. With
// mem.reuse, two groups' memory takes turns (fn may not keep the rows); with mem.pool, the
// groups are the pool's, each decoded into once fn's release of it was called (before or after
// fn returns; its rows and values stay valid until then). An error of fn ends the read and is
// returned as it is; a group not released then stays out of the pool.
func readParquetGroups(name string, s schema.Schema, mem groupMemory, fn func(rows [][]any, release func()) error) error {
	f, pf, err := openParquet(name)
	if err != nil {
		return err
	}
	defer f.Close()
	root := pf.Root()
	w := len(s.Fields)
	// Check the columns and find their converters once, before any row is read.
	type plan struct {
		col  *parquet.Column
		conv convertFunc
	}
	plans := make([]plan, w)
	for j, fd := range s.Fields {
		col := root.Column(fd.Name)
		if col == nil {
			continue // missing column: NULL
		}
		plans[j].col = col
		if hasRepeated(fd.Type) {
			for _, l := range leaves(schema.Schema{Fields: []schema.Field{fd}}) {
				c, _, err := resolve(col, l)
				if err != nil {
					return fmt.Errorf("column %q %w", l.name, err)
				}
				if c != nil {
					if _, err := converter(c.Type(), l.typ); err != nil {
						return fmt.Errorf("column %q: %w", l.name, err)
					}
				}
			}
			continue
		}
		if fd.Type.Kind == schema.StructKind {
			if col.Leaf() || col.Repeated() || logicalIs[*format.ListType](col) || logicalIs[*format.MapType](col) {
				return fmt.Errorf("column %q is not a STRUCT in the file", fd.Name)
			}
			continue
		}
		if !col.Leaf() || col.Repeated() || col.MaxRepetitionLevel() > 0 {
			return fmt.Errorf("column %q is nested or repeated in the file, not %s", fd.Name, fd.Type.DDL())
		}
		conv, err := converter(col.Type(), fd.Type)
		if err != nil {
			return fmt.Errorf("column %q: %w", fd.Name, err)
		}
		plans[j].conv = conv
	}
	buf := make([]parquet.Value, 1024)
	// decode reads row group rg into g (its rows carved from g.backing, which it reuses when
	// it is large enough and reuse is set).
	decode := func(rg parquet.RowGroup, g *decodedGroup) error {
		n := rg.NumRows()
		chunks := rg.ColumnChunks()
		if g.pooled {
			g.arena.reset()
		}
		if !(mem.reuse || g.pooled) || cap(g.backing) < int(n)*w {
			g.backing, g.rows = make([]any, int(n)*w), make([][]any, n)
		} else {
			g.backing, g.rows = g.backing[:int(n)*w], g.rows[:n]
			clear(g.backing) // a NULL is not written: nothing of the group before may stay
		}
		rows := g.rows
		for i := range rows {
			rows[i] = g.backing[i*w : (i+1)*w : (i+1)*w]
		}
		// The flat columns are read together, a tile of rows at a time, so that a tile's rows
		// stay in the cache while each column fills its values in (a column at a time over the
		// group would pass over all of its rows once per column).
		var flat []*columnCursor
		for j, fd := range s.Fields {
			if col := plans[j].col; col != nil && !hasRepeated(fd.Type) && fd.Type.Kind != schema.StructKind {
				c := &columnCursor{name: fd.Name, pages: chunks[col.Index()].Pages(), maxDef: col.MaxDefinitionLevel(), j: j, conv: plans[j].conv}
				if g.pooled {
					c.arena = &g.arena
				}
				flat = append(flat, c)
			}
		}
		if err := readTiles(flat, rows); err != nil {
			return err
		}
		for j, fd := range s.Fields {
			col := plans[j].col
			if col == nil || (!hasRepeated(fd.Type) && fd.Type.Kind != schema.StructKind) {
				continue // missing (NULL), or read with the flat columns
			}
			if hasRepeated(fd.Type) {
				if err := readNested(col, chunks, fd, j, rows, buf); err != nil {
					return err
				}
				continue
			}
			if fd.Type.Kind == schema.StructKind {
				if err := readStruct(col, chunks, fd, j, rows, buf); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("column %q: not a flat column, a STRUCT, an ARRAY or a MAP", fd.Name)
		}
		return nil
	}
	var groups []parquet.RowGroup
	for _, rg := range pf.RowGroups() {
		if rg.NumRows() > 0 {
			groups = append(groups, rg)
		}
	}
	noRelease := func() {}
	if len(groups) == 1 && mem.pool == nil {
		var g decodedGroup
		if err := decode(groups[0], &g); err != nil {
			return err
		}
		return fn(g.rows, noRelease)
	}
	// The next row group is decoded on a goroutine of its own while fn takes the one before:
	// two buffers take turns (with reuse, a group's memory is that of the group two before,
	// which fn is done with), or the pool's groups as they are released.
	var free chan *decodedGroup
	if mem.pool != nil {
		free = mem.pool.free
	} else {
		free = make(chan *decodedGroup, 2)
		free <- &decodedGroup{}
		free <- &decodedGroup{}
	}
	ready := make(chan *decodedGroup, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ready)
		for _, rg := range groups {
			var g *decodedGroup
			select {
			case g = <-free:
			case <-stop:
				return
			}
			g.err = decodeSafely(decode, rg, g)
			select {
			case ready <- g:
			case <-stop:
				if mem.pool != nil {
					free <- g // never handed to fn
				}
				return
			}
			if g.err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		for g := range ready { // decoded, never handed to fn
			if mem.pool != nil {
				free <- g
			}
		}
	}()
	for g := range ready {
		release := noRelease
		if mem.pool != nil {
			release = mem.pool.releaser(g)
		}
		if g.err != nil {
			release()
			return g.err
		}
		if err := fn(g.rows, release); err != nil {
			return err
		}
		if mem.pool == nil {
			free <- g
		}
	}
	return nil
}

// decodeSafely calls decode, turning a panic (a malformed file can make the Parquet reader
// panic) into an error: on a goroutine of its own, a panic would end the process.
func decodeSafely(decode func(parquet.RowGroup, *decodedGroup) error, rg parquet.RowGroup, g *decodedGroup) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoding a row group: %v", r)
		}
	}()
	return decode(rg, g)
}

// decodedGroup is one row group's rows as readParquetGroups decodes them: rows carved from
// backing, or the error that ended the decoding.
type decodedGroup struct {
	backing []any
	rows    [][]any
	err     error
	pooled  bool       // a RowGroupPool's: the flat columns' values go in arena
	arena   valueArena // the values of the group's flat columns, when pooled
}

// openParquet opens the Parquet file at name for reading, its footer read (page indexes and
// bloom filters skipped: no reader here uses them). The caller closes f; on error nothing is
// left open. Errors are the file system's or parquet-go's, unwrapped.
func openParquet(name string) (f *os.File, pf *parquet.File, err error) {
	if f, err = os.Open(name); err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil {
		pf, err = parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, pf, nil
}

// tileRows is how many rows readTiles fills at a time: with a few columns, the tile's rows and
// their values stay in the cache (a variable for tests).
var tileRows = 1024

// columnCursor reads one flat column chunk's values in order, page after page, for readTiles:
// column j of the rows, of maximum definition level maxDef, converted by conv.
type columnCursor struct {
	name   string
	pages  parquet.Pages
	page   parquet.Page // the page being read, or nil
	values parquet.ValueReader
	maxDef int
	j      int
	conv   convertFunc
	buf    []parquet.Value
	strs   []byte
	plain  *plainPage  // the page being read, when read from its buffers (openPlain)
	arena  *valueArena // where fillPlain boxes the values; nil: in memory of their own
}

// fill reads the column's next len(rows) values into column c.j of rows, page after page, each
// page from its buffers when it can be (openPlain), else through its value reader; it returns
// how many rows it filled (fewer only at the end of the chunk). base is the file row of rows[0].
func (c *columnCursor) fill(rows [][]any, base int) (int, error) {
	n := 0
	for n < len(rows) {
		if c.page == nil {
			page, err := c.pages.ReadPage()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			c.page = page
			if !c.openPlain(page) {
				c.values = page.Values()
			}
		}
		if c.plain != nil {
			m, err := c.fillPlain(rows[n:], base+n)
			if err != nil {
				return n, err
			}
			n += m
			if c.plain.at == c.plain.rows {
				c.release()
			}
			continue
		}
		k := min(len(rows)-n, tileRows)
		if cap(c.buf) < k {
			c.buf = make([]parquet.Value, k)
		}
		m, err := c.values.ReadValues(c.buf[:k])
		if m > 0 {
			if cerr := c.conv.batch(c.buf[:m], c.maxDef, rows[n:n+m], c.j, base+n, &c.strs); cerr != nil {
				return n, cerr
			}
			n += m
		}
		if errors.Is(err, io.EOF) {
			c.release()
			continue
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// release releases the page being read.
func (c *columnCursor) release() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	c.page, c.values, c.plain = nil, nil, nil
}

// close releases the page being read and closes the pages.
func (c *columnCursor) close() {
	c.release()
	c.pages.Close()
}

// readTiles reads the flat columns cols into rows, the rows of their row group, tileRows rows
// at a time: each column's values of a tile, then the next tile. A column with fewer or more
// values than rows is an error naming it.
func readTiles(cols []*columnCursor, rows [][]any) error {
	defer func() {
		for _, c := range cols {
			c.close()
		}
	}()
	for r := 0; r < len(rows) && len(cols) > 0; r += tileRows {
		k := min(tileRows, len(rows)-r)
		for _, c := range cols {
			got, err := c.fill(rows[r:r+k], r)
			if err != nil {
				return fmt.Errorf("column %q: %w", c.name, err)
			}
			if got < k {
				return fmt.Errorf("column %q: the column has %d values, the file %d rows", c.name, r+got, len(rows))
			}
		}
	}
	for _, c := range cols {
		extra := [][]any{make([]any, c.j+1)}
		if got, err := c.fill(extra, len(rows)); err != nil || got > 0 {
			if err == nil {
				err = fmt.Errorf("the file has more values than its %d rows", len(rows))
			}
			return fmt.Errorf("column %q: %w", c.name, err)
		}
	}
	return nil
}

// eachValues calls fn with the values of every page of a column chunk, a batch of at most
// len(buf) at a time (buf is reused: fn must not keep it), releasing each page after its
// values and closing pages at the end. The first error, of the pages or of fn, ends it.
func eachValues(pages parquet.Pages, buf []parquet.Value, fn func(vals []parquet.Value) error) error {
	defer pages.Close()
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		vr := page.Values()
		for {
			k, err := vr.ReadValues(buf)
			if k > 0 {
				if ferr := fn(buf[:k]); ferr != nil {
					parquet.Release(page)
					return ferr
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(page)
				return err
			}
		}
		parquet.Release(page)
	}
}

// readStruct reads the STRUCT column fd (file column col; chunks are the column chunks of the
// row group rows belong to) into column j of rows: each row gets a []any of the struct's
// fields, or nil when the struct is NULL. Fields are matched by name; a field missing from the
// file reads NULL.
func readStruct(col *parquet.Column, chunks []parquet.ColumnChunk, fd schema.Field, j int, rows [][]any, buf []parquet.Value) error {
	if col.Leaf() || col.Repeated() {
		return fmt.Errorf("column %q is not a STRUCT in the file", fd.Name)
	}
	for _, l := range leaves(schema.Schema{Fields: []schema.Field{fd}}) {
		// Find the file column of the leaf and the definition level at which each enclosing
		// struct is present.
		c := col
		present := []int{col.MaxDefinitionLevel()}
		f := fd
		for _, idx := range l.path[1:] {
			f = f.Type.Struct.Fields[idx]
			if c = c.Column(f.Name); c == nil {
				break
			}
			if f.Type.Kind == schema.StructKind {
				if c.Leaf() {
					return fmt.Errorf("column %q is not a STRUCT in the file", l.name)
				}
				present = append(present, c.MaxDefinitionLevel())
			}
		}
		if c == nil {
			continue // a missing field: NULL
		}
		if !c.Leaf() || c.MaxRepetitionLevel() > 0 {
			return fmt.Errorf("column %q is nested or repeated in the file, not %s", l.name, l.typ.DDL())
		}
		conv, err := converter(c.Type(), l.typ)
		if err != nil {
			return fmt.Errorf("column %q: %w", l.name, err)
		}
		if err := readStructLeaf(chunks[c.Index()].Pages(), c.MaxDefinitionLevel(), l, present, j, rows, conv, buf); err != nil {
			return fmt.Errorf("column %q: %w", l.name, err)
		}
	}
	return nil
}

// readStructLeaf reads one leaf inside STRUCT column j from the pages of its column chunk (of
// maximum definition level maxDef): present[d] is the definition level from
// which the struct at depth d is not NULL.
func readStructLeaf(pages parquet.Pages, maxDef int, l leaf, present []int, j int, rows [][]any, conv convertFunc, buf []parquet.Value) error {
	r := 0
	err := eachValues(pages, buf, func(vals []parquet.Value) error {
		if r+len(vals) > len(rows) {
			return fmt.Errorf("the file has more values than its %d rows", len(rows))
		}
		for _, v := range vals {
			dl := v.DefinitionLevel()
			cur := &rows[r][j]
			for d, lvl := range present {
				if dl < lvl {
					break // this struct is NULL
				}
				if *cur == nil {
					*cur = make([]any, l.widths[d])
				}
				sv := (*cur).([]any)
				if d < len(present)-1 {
					cur = &sv[l.path[d+1]]
					continue
				}
				if dl == maxDef {
					x, err := conv.one(v)
					if err != nil {
						return fmt.Errorf("row %d: %w", r, err)
					}
					sv[l.path[d+1]] = x
				}
			}
			r++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if r != len(rows) {
		return fmt.Errorf("the column has %d values, the file %d rows", r, len(rows))
	}
	return nil
}
