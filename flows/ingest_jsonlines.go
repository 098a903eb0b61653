package flows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// jsonBlockSize is the size of the blocks eachJSONLine reads its input in, in bytes: a block
// ends at a line end (it grows to hold a longer line) and one worker parses all of its lines.
// A variable for tests.
var jsonBlockSize = 256 << 10

// lineBlock is a run of whole lines of the input and, once done is closed, their rows.
type lineBlock struct {
	text  string // the lines, each ending in "\n" but perhaps the input's last
	first int64  // the line number of text's first line, counting only the lines ended by "\n"
	ends  int64  // the lines of text ended by a bare "\r" (crLines): the lines after come later
	rows  []lineRow
	done  chan struct{}

	// The block's memory, which a blockPool hands out again once the block is released: buf
	// holds text, vals the rows' values (each row a window of it), slab their boxed values.
	buf  []byte
	vals []any
	slab *boxSlab
	// cols holds the rows by column when the lineReader keeps them so (lineReader.columns):
	// rows then lists only the rows that did not settle cleanly (see blockColumns).
	cols *blockColumns
	// releases counts the releases of a shared pool's block (blockPool.share) since it was
	// handed out; guarded by the pool's mu.
	releases int32
}

// blockPool recycles the memory of the blocks eachJSONLine reads and parses: their input text,
// the backing arrays of their rows and the slabs of their boxed values. Without it, every
// block's memory is garbage once its rows are written, and an ingest of 1 GB allocates about
// 4 GB, which the garbage collector then marks and sweeps; with it, an ingest reuses the memory
// of the blocks in flight. A block is emitted once fn has seen all of its rows (eachJSONLine
// calls emitted); the caller takes the blocks emitted so far with seal when it hands their rows
// to a writer, and gives them back with release once it holds no row, value or string of them
// any more: the memory is then overwritten by later blocks. A nil *blockPool recycles nothing
// (every block is memory of its own, as the rows of callers that keep them need). get is
// called from the reading goroutine, emit and the seals from the goroutine that calls fn, and
// release from that one or from a fold's (its done), under mu.
//
// A shared pool (share) serves two users of every block, each taking the blocks emitted with
// its own seal (seal, sealShared) and releasing them on its own: a block is reused once both
// released it.
type blockPool struct {
	mu      sync.Mutex
	free    []*lineBlock
	emitted []*lineBlock // emitted since the last seal; only the fn goroutine touches it
	// shared: every block has two users (share); emittedShared is the second user's emitted.
	shared        bool
	emittedShared []*lineBlock
}

// share makes every block of the pool wait for two releases before it is reused: one of the
// blocks seal took, one of those sealShared took. Called before the pool hands out a block.
func (p *blockPool) share() { p.shared = true }

// sealShared is seal for the second user of a shared pool.
func (p *blockPool) sealShared() []*lineBlock {
	bs := p.emittedShared
	p.emittedShared = nil
	return bs
}

// get returns a block whose buffer holds at least size bytes: a released block when one is
// big enough, else a new one.
func (p *blockPool) get(size int) *lineBlock {
	if p != nil {
		p.mu.Lock()
		for i := len(p.free) - 1; i >= 0; i-- {
			if b := p.free[i]; cap(b.buf) >= size {
				p.free[i] = p.free[len(p.free)-1]
				p.free[len(p.free)-1] = nil
				p.free = p.free[:len(p.free)-1]
				p.mu.Unlock()
				b.buf = b.buf[:size]
				return b
			}
		}
		p.mu.Unlock()
	}
	return &lineBlock{buf: make([]byte, size)}
}

// emit records that fn has seen every row of b.
func (p *blockPool) emit(b *lineBlock) {
	if p != nil {
		p.emitted = append(p.emitted, b)
		if p.shared {
			p.emittedShared = append(p.emittedShared, b)
		}
	}
}

// seal returns the blocks emitted since the last seal: every row of them was given to fn
// before this call.
func (p *blockPool) seal() []*lineBlock {
	if p == nil {
		return nil
	}
	bs := p.emitted
	p.emitted = nil
	return bs
}

// release gives blocks back for reuse: no row, value or string of theirs may be used after.
func (p *blockPool) release(bs []*lineBlock) {
	if p == nil || len(bs) == 0 {
		return
	}
	p.mu.Lock()
	for _, b := range bs {
		if b.releases++; p.shared && b.releases < 2 {
			continue // its other user still holds it
		}
		b.releases = 0
		b.text, b.done = "", nil
		p.free = append(p.free, b)
	}
	p.mu.Unlock()
}

// lineRow is the result of one line that is not blank.
type lineRow struct {
	row    []any
	bad    []badValue
	lineNo int64
	parsed bool
	at     int // the row in the block's columns, when it keeps them (lineBlock.cols)
	// cut says that the line is the input's last, does not end in "\n" and is a JSON value cut
	// short (cutJSON): the file is most likely still being written (eachJSONLine then fails
	// with a *cutLine).
	cut bool
}

// cutLine is the error of JSON-lines input whose last line has no line end and is a JSON value
// cut short: a file still being written, most likely (or truncated). Its rows are not read now
// (eachRow makes it an *incompleteInput), so that it is read whole once complete rather than
// kept as a malformed row and then recorded as read, its rest lost.
type cutLine struct {
	line int64
}

func (e *cutLine) Error() string {
	return fmt.Sprintf("line %d, the last, has no line end and its JSON value ends before it is complete: the file is still being written, or truncated", e.line)
}

// eachJSONLine reads JSON-lines input and calls fn with each line's row, in line order, as
// eachLine and lineReader.parse would one after the other: lines are split at "\n", trailing
// "\r"s removed, blank lines (white space only) skipped but counted. The input is read in blocks
// of about jsonBlockSize bytes, which GOMAXPROCS workers parse while fn runs; at most three
// blocks per worker are in flight, so memory stays bounded. Rows have rowSpare capacity after
// their values, and their values may share the memory of the block they came from (its text
// and its boxSlab). With a pool, that memory is reused once the caller releases the block
// (blockPool); with none, it is the rows' own. When fn returns an error, reading stops and the
// error is returned; a read error is returned after the rows of the lines before it.
func eachJSONLine(lr *lineReader, in io.Reader, pool *blockPool, fn rowFunc) error {
	return eachJSONLineSized(lr, in, pool, jsonBlockSize, fn, nil)
}

// eachJSONLineSized is eachJSONLine with blocks of about blockSize bytes: a file smaller than
// jsonBlockSize is read in one block of its own size (eachRow), so that a batch of many small
// files, whose blocks a pool holds until their rows are written, holds about their size, not
// jsonBlockSize each. With blocks not nil (and lr keeping rows by column, lr.columns), each
// parsed block is given to blocks instead of its rows to fn.
func eachJSONLineSized(lr *lineReader, in io.Reader, pool *blockPool, blockSize int, fn rowFunc, blocks func(*lineBlock) error) error {
	emit := func(b *lineBlock) error { return emitBlock(b, fn) }
	if blocks != nil {
		emit = func(b *lineBlock) error { return emitColumns(b, blocks) }
	}
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		var shift lineShift
		return readBlocks(in, blockSize, pool, func(b *lineBlock) error {
			parseBlock(lr, b)
			shift.apply(b)
			if err := emit(b); err != nil {
				return err
			}
			pool.emit(b)
			return nil
		})
	}
	jobs := make(chan *lineBlock, workers)
	ordered := make(chan *lineBlock, 2*workers)
	stop := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				parseBlock(lr, b)
				close(b.done)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ordered)
		defer close(jobs)
		errStopped := io.ErrClosedPipe
		err := readBlocks(in, blockSize, pool, func(b *lineBlock) error {
			b.done = make(chan struct{})
			select {
			case ordered <- b:
			case <-stop:
				return errStopped
			}
			select {
			case jobs <- b:
			case <-stop:
				close(b.done) // never parsed; the consumer has stopped
				return errStopped
			}
			return nil
		})
		if err != errStopped {
			readErr = err
		}
	}()
	var fnErr error
	var shift lineShift
	for b := range ordered {
		<-b.done
		shift.apply(b)
		if fnErr = emit(b); fnErr != nil {
			break
		}
		pool.emit(b)
	}
	close(stop)
	for range ordered { // let the reader finish its last send
	}
	wg.Wait()
	if fnErr != nil {
		return fnErr
	}
	return readErr
}

// emitBlock calls fn with each row of a parsed block; a cut last line (lineRow.cut) is a
// *cutLine error instead.
func emitBlock(b *lineBlock, fn rowFunc) error {
	for _, r := range b.rows {
		if r.cut {
			return &cutLine{line: r.lineNo}
		}
		if err := fn(r.row, r.parsed, r.bad, r.lineNo); err != nil {
			return err
		}
	}
	return nil
}

// emitColumns calls blocks with b, whose rows are by column (lineBlock.cols); with a cut last
// line (lineRow.cut), as emitBlock does, with the rows before it only, then returns a *cutLine
// error (the cut line is the input's last, so its row is the block's last).
func emitColumns(b *lineBlock, blocks func(*lineBlock) error) error {
	for i, r := range b.rows {
		if r.cut {
			b.rows = b.rows[:i]
			b.cols.truncate(r.at)
			if err := blocks(b); err != nil {
				return err
			}
			return &cutLine{line: r.lineNo}
		}
	}
	return blocks(b)
}

// lineShift numbers the lines of blocks after lines ended by bare "\r"s: readBlocks numbers a
// block's lines by the "\n"s before it, and the blocks are parsed at the same time, so the
// "\r"-ended lines of the blocks before one (lineBlock.ends) are added to its rows' numbers as
// the blocks are emitted, in order.
type lineShift int64

// apply adds the lines ended by bare "\r"s in the blocks before b to the numbers of b's rows
// (and of the rows of its columns), then counts b's.
func (s *lineShift) apply(b *lineBlock) {
	if *s != 0 {
		for i := range b.rows {
			r := &b.rows[i]
			r.lineNo += int64(*s)
			for j := range r.bad {
				r.bad[j].Line += int64(*s)
			}
		}
		if b.cols != nil {
			for i := range b.cols.lines {
				b.cols.lines[i] += int64(*s)
			}
		}
	}
	*s += lineShift(b.ends)
}

// readBlocks reads in to its end and calls fn with its text in blocks of whole lines of about
// size bytes (more when a line is longer), numbering the lines from 1; a UTF-8 byte-order mark
// at the start of the input is left out (as the CSV and multiline JSON readers skip it). Each block's text is
// memory of its own (from pool: see blockPool) that is not written again until the block is
// released. A read error is returned after a last block with the text before it; an error of fn
// stops the reading and is returned.
func readBlocks(in io.Reader, size int, pool *blockPool, fn func(*lineBlock) error) error {
	var carry []byte // the start of a line that did not end in the previous buffer
	line := int64(1)
	first := true
	// text is the block's text, without the UTF-8 byte-order mark the input may start with.
	text := func(b []byte) string {
		t := blockText(b)
		if first {
			t, first = strings.TrimPrefix(t, "\uFEFF"), false
		}
		return t
	}
	for {
		b := pool.get(max(size, 2*len(carry)))
		buf := b.buf
		n := copy(buf, carry)
		var err error
		for empty := 0; n < len(buf) && err == nil; {
			var m int
			m, err = in.Read(buf[n:])
			n += m
			if m > 0 || err != nil {
				empty = 0
			} else if empty++; empty == 100 { // as bufio.Reader gives up on a reader that returns nothing
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			if n > 0 {
				b.text, b.first = text(buf[:n]), line
				if ferr := fn(b); ferr != nil {
					return ferr
				}
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
		end := bytes.LastIndexByte(buf, '\n') + 1
		if end == 0 { // one line longer than buf: read on
			carry = buf
			continue
		}
		b.text, b.first = text(buf[:end]), line
		if ferr := fn(b); ferr != nil {
			return ferr
		}
		line += int64(bytes.Count(buf[:end], []byte{'\n'}))
		carry = buf[end:]
	}
}

// blockText is b as a string without a copy. b must not be written again while the string is
// in use: readBlocks takes a buffer for every block, only reads the rest of it (a line's start)
// afterwards, and reuses it only once the block is released (blockPool).
func blockText(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// parseBlock parses the lines of b into b.rows. The rows of a block share one backing array,
// each with rowSpare spare capacity, and their values share one boxSlab; a released block's
// arrays and slab are reused when they are big enough. When lr keeps rows by column
// (lr.columns), they go to b.cols instead, and b.rows lists those that did not settle cleanly
// (blockColumns).
func parseBlock(lr *lineReader, b *lineBlock) {
	n := strings.Count(b.text, "\n") + 1
	width := lr.width()
	stride := width + rowSpare
	byColumn := lr.columns != nil
	var rows []any
	var values *boxSlab
	reused := false
	if byColumn {
		// A row per line at most (an array of objects on a line may make more: the columns
		// then grow).
		b.cols = b.cols.reset(lr.columns, n, width, lr.wordCols, lr.stringCols)
		b.rows = b.rows[:0]
	} else {
		rows, reused = b.vals, cap(b.vals) >= n*stride
		if reused {
			rows = rows[:n*stride]
		} else {
			rows = make([]any, n*stride)
			b.vals = rows
		}
		values = b.slab
		if values == nil || !values.reset(n*lr.wordCols, n*lr.stringCols) {
			values = newBoxSlab(n*lr.wordCols, n*lr.stringCols)
			b.slab = values
		}
		if cap(b.rows) >= n {
			b.rows = b.rows[:0]
		} else {
			b.rows = make([]lineRow, 0, n)
		}
	}
	// put keeps the row of a line: as it is, or into the columns (listed in rows too when it
	// did not settle cleanly).
	put := func(r lineRow) {
		if !byColumn {
			b.rows = append(b.rows, r)
			return
		}
		b.cols.add(lr.columns, r.row, r.lineNo)
		if len(r.bad) > 0 || !r.parsed || r.cut {
			r.row, r.at = nil, b.cols.n-1
			b.rows = append(b.rows, r)
		}
	}
	lineNo := b.first
	b.ends = 0
	slot := 0 // the rows in the block's memory: one per line at most
	for t := b.text; t != ""; lineNo++ {
		line := t
		ended := true // the line ends in "\n"; only the input's last line may not
		if k := strings.IndexByte(t, '\n'); k >= 0 {
			line, t = t[:k], t[k+1:]
		} else {
			t, ended = "", false
		}
		raw := line // with the "\r"s before its "\n", which may end lines of their own (crLines)
		for line != "" && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if blank(line) {
			if strings.IndexByte(raw, '\r') >= 0 {
				_, ends := crLines(crBodyText(raw, ended))
				lineNo += ends
				b.ends += ends
			}
			continue
		}
		if elems, ok := arrayElements(line); ok {
			// A line holding an array of objects: a row of each, in memory of their own (the
			// block has room for a row per line).
			for _, e := range elems {
				row, parsed, bad := lr.parse(e, lineNo)
				put(lineRow{row: row, bad: bad, lineNo: lineNo, parsed: parsed})
			}
			continue
		}
		var row []any
		var parsed bool
		var bad []badValue
		if byColumn {
			// The common line straight into the columns; any other through a row, as
			// parseInto parses it.
			at := b.cols.open(lr.wordCols, lr.stringCols)
			if bad, done := lr.scanTo(line, lineNo, nil, b.cols, at, b.cols.slab); done {
				b.cols.commit(lineNo)
				if len(bad) > 0 {
					b.rows = append(b.rows, lineRow{bad: bad, lineNo: lineNo, parsed: true, at: at})
				}
				continue
			}
			b.cols.drop()
			row, values = b.cols.row(width, lr.wordCols, lr.stringCols)
			parsed, bad = lr.parseDecoded([]byte(line), lineNo, row)
		} else {
			k := slot * stride
			slot++
			row = rows[k : k+width : k+stride]
			if reused {
				clear(row) // a parse sets only the columns its line has
			}
			parsed, bad = lr.parseInto(line, lineNo, row, values)
		}
		if !parsed && strings.IndexByte(raw, '\r') >= 0 {
			if pieces, ends := crLines(crBodyText(raw, ended)); pieces != nil {
				// Lines ended by bare "\r"s: a row of each (or of each object of an array),
				// in memory of their own, in place of the one malformed row, each with its
				// own line number.
				if !byColumn {
					slot--
					clear(row) // the slot goes to the next line
				}
				for j, p := range pieces {
					elems, ok := arrayElements(p.text)
					if !ok {
						elems = []json.RawMessage{json.RawMessage(p.text)}
					}
					last := j == len(pieces)-1 // of an unended line, it may be cut short
					for _, e := range elems {
						row, parsed, bad := lr.parse(e, lineNo+p.off)
						put(lineRow{row: row, bad: bad, lineNo: lineNo + p.off, parsed: parsed, cut: !parsed && !ended && last && cutJSON(p.text)})
					}
				}
				lineNo += ends
				b.ends += ends
				continue
			}
		}
		put(lineRow{row: row, bad: bad, lineNo: lineNo, parsed: parsed, cut: !parsed && !ended && cutJSON(line)})
	}
}

// crBodyText is crBody of a line of a block, without its "\n": ended says it had one.
func crBodyText(line string, ended bool) string {
	if ended && strings.HasSuffix(line, "\r") {
		return line[:len(line)-1]
	}
	return line
}

// cutJSON reports whether line is the start of a JSON value that ends before the value does
// (`{"id": 1, "na`), as a line being written is; a line wrong in another way (`{bad}`, a
// byte-order mark before the value) is not.
func cutJSON(line string) bool {
	var v json.RawMessage
	err := json.NewDecoder(strings.NewReader(line)).Decode(&v)
	if _, syntax := err.(*json.SyntaxError); syntax && strings.ContainsAny(line, "NI+-") {
		return cutLoose(line) // it may hold a non-numeric number token (NaN, Infinity)
	}
	return err == io.ErrUnexpectedEOF
}

// blank reports whether line is empty or white space only (Unicode's, as bytes.TrimSpace has it).
func blank(line string) bool {
	if line == "" {
		return true
	}
	if c := line[0]; c > ' ' && c < 0x80 {
		return false
	}
	return strings.TrimSpace(line) == ""
}
