package flows

import (
	"io"
	"runtime"
	"sync"
)

// jsonLineBatch is how many lines a worker of eachJSONLine parses at once.
const jsonLineBatch = 512

// lineBatch is a run of consecutive JSON lines and, once done is closed, their parsed rows.
type lineBatch struct {
	lines   [][]byte
	lineNos []int64
	rows    [][]any
	parsed  []bool
	bad     [][]badValue
	done    chan struct{}
}

// eachJSONLine reads JSON-lines input and calls fn with each line's row, in line order, as
// eachLine and lineReader.parse would one after the other. Lines are parsed by
// GOMAXPROCS workers in batches of jsonLineBatch while fn runs; at most a few batches per
// worker are in flight, so memory stays bounded. When fn returns an error, reading stops and
// the error is returned.
func eachJSONLine(lr *lineReader, in io.Reader, fn rowFunc) error {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		return eachLine(in, func(line []byte, lineNo int64) error {
			row, parsed, bad := lr.parse(line, lineNo)
			return fn(row, parsed, bad, lineNo)
		})
	}
	jobs := make(chan *lineBatch, workers)
	ordered := make(chan *lineBatch, 2*workers)
	stop := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				b.rows = make([][]any, len(b.lines))
				b.parsed = make([]bool, len(b.lines))
				b.bad = make([][]badValue, len(b.lines))
				for i, line := range b.lines {
					b.rows[i], b.parsed[i], b.bad[i] = lr.parse(line, b.lineNos[i])
				}
				close(b.done)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ordered)
		defer close(jobs)
		cur := &lineBatch{done: make(chan struct{})}
		send := func() bool {
			select {
			case ordered <- cur:
			case <-stop:
				return false
			}
			select {
			case jobs <- cur:
			case <-stop:
				close(cur.done) // never parsed; the consumer has stopped
				return false
			}
			cur = &lineBatch{done: make(chan struct{})}
			return true
		}
		errStopped := io.ErrClosedPipe
		// eachLine hands over a fresh slice for every line (bufio.Reader.ReadBytes), so lines are kept.
		err := eachLine(in, func(line []byte, lineNo int64) error {
			cur.lines = append(cur.lines, line)
			cur.lineNos = append(cur.lineNos, lineNo)
			if len(cur.lines) == jsonLineBatch && !send() {
				return errStopped
			}
			return nil
		})
		if err != errStopped && len(cur.lines) > 0 { // the lines before a read error, too
			send()
		}
		if err != errStopped {
			readErr = err
		}
	}()
	var fnErr error
	for b := range ordered {
		<-b.done
		for i := range b.lines {
			if fnErr = fn(b.rows[i], b.parsed[i], b.bad[i], b.lineNos[i]); fnErr != nil {
				break
			}
		}
		if fnErr != nil {
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
