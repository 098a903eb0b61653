package flows

import (
	"bytes"
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
	first int64  // the line number of text's first line
	rows  []lineRow
	done  chan struct{}
}

// lineRow is the result of one line that is not blank.
type lineRow struct {
	row    []any
	bad    []badValue
	lineNo int64
	parsed bool
}

// eachJSONLine reads JSON-lines input and calls fn with each line's row, in line order, as
// eachLine and lineReader.parse would one after the other: lines are split at "\n", trailing
// "\r"s removed, blank lines (white space only) skipped but counted. The input is read in blocks
// of about jsonBlockSize bytes, which GOMAXPROCS workers parse while fn runs; at most three
// blocks per worker are in flight, so memory stays bounded. Rows have rowSpare capacity after
// their values, and their values may share the memory of the block they came from (its text
// and its boxSlab). When fn returns an error, reading stops and the error is returned; a read
// error is returned after the rows of the lines before it.
func eachJSONLine(lr *lineReader, in io.Reader, fn rowFunc) error {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		return readBlocks(in, jsonBlockSize, func(b *lineBlock) error {
			parseBlock(lr, b)
			return emitBlock(b, fn)
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
		err := readBlocks(in, jsonBlockSize, func(b *lineBlock) error {
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
	for b := range ordered {
		<-b.done
		if fnErr = emitBlock(b, fn); fnErr != nil {
			break
		}
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

// emitBlock calls fn with each row of a parsed block.
func emitBlock(b *lineBlock, fn rowFunc) error {
	for _, r := range b.rows {
		if err := fn(r.row, r.parsed, r.bad, r.lineNo); err != nil {
			return err
		}
	}
	return nil
}

// readBlocks reads in to its end and calls fn with its text in blocks of whole lines of about
// size bytes (more when a line is longer), numbering the lines from 1. Each block's text is
// memory of its own that is never written again. A read error is returned after a last block
// with the text before it; an error of fn stops the reading and is returned.
func readBlocks(in io.Reader, size int, fn func(*lineBlock) error) error {
	var carry []byte // the start of a line that did not end in the previous buffer
	line := int64(1)
	for {
		buf := make([]byte, max(size, 2*len(carry)))
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
				if ferr := fn(&lineBlock{text: blockText(buf[:n]), first: line}); ferr != nil {
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
		text := buf[:end]
		if ferr := fn(&lineBlock{text: blockText(text), first: line}); ferr != nil {
			return ferr
		}
		line += int64(bytes.Count(text, []byte{'\n'}))
		carry = buf[end:]
	}
}

// blockText is b as a string without a copy. b must never be written again: readBlocks
// allocates a buffer for every block and only reads the rest of it (a line's start) afterwards.
func blockText(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// parseBlock parses the lines of b into b.rows. The rows of a block share one backing array,
// each with rowSpare spare capacity, and their values share one boxSlab.
func parseBlock(lr *lineReader, b *lineBlock) {
	n := strings.Count(b.text, "\n") + 1
	width := lr.width()
	stride := width + rowSpare
	rows := make([]any, n*stride)
	values := newBoxSlab(n*lr.wordCols, n*lr.stringCols)
	b.rows = make([]lineRow, 0, n)
	lineNo := b.first
	for t := b.text; t != ""; lineNo++ {
		line := t
		if k := strings.IndexByte(t, '\n'); k >= 0 {
			line, t = t[:k], t[k+1:]
		} else {
			t = ""
		}
		for line != "" && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if blank(line) {
			continue
		}
		k := len(b.rows) * stride
		row := rows[k : k+width : k+stride]
		parsed, bad := lr.parseInto(line, lineNo, row, values)
		b.rows = append(b.rows, lineRow{row: row, bad: bad, lineNo: lineNo, parsed: parsed})
	}
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
