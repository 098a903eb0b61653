package flows

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"tributary/spec"
)

// openInput opens an input file, decompressing it by extension, in any case (.gz, .GZ): .gz
// (gzip) and .zst (Zstandard). A compressed file whose stream ends early, or that is empty
// (still being written, most likely), fails with an *incompleteInput error. One that cannot be
// decompressed to its end otherwise (not compressed at all, damaged) reads as far as it can be
// decompressed, then fails with a *damagedInput error that says where and
// why (the callers make it one malformed record of the file, as a Parquet file that cannot be
// read is: readFiles). With lines, the text of a compressed file is passed on a whole line at a
// time (up to an LF or a CR), so that the start of a line cut short by the damage is never read
// as a line of its own (for a CSV record, silently as values cut short); without (multiline
// JSON, whose values span lines), as it comes.
func openInput(path string, lines bool) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	ext := filepath.Ext(path)
	c := &compressedInput{path: path, ext: ext, lines: lines, file: &fileTap{r: f}}
	switch strings.ToLower(ext) {
	case ".gz":
		c.kind = "gzip"
		br := bufio.NewReader(c.file)
		zr, err := gzip.NewReader(br)
		switch {
		case err == io.EOF && c.file.read == 0:
			// An empty file: gzip never writes one, so it is being created.
			c.err = io.ErrUnexpectedEOF
		case err != nil:
			c.err, c.badStart = err, true
		default:
			zr.Multistream(false)
			c.z, c.zclose = &gzipMembers{zr: zr, br: br}, func() { zr.Close() }
		}
	case ".zst":
		c.kind = "Zstandard"
		zr, err := zstd.NewReader(c.file)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		c.z, c.zclose = zr, zr.Close
	default:
		return f, nil
	}
	c.close = f.Close
	return c, nil
}

// gzipMembers is the text of a gzip file of one or more members (RFC 1952 2.2: a gzip file is a
// series of members, which decompress to their texts one after another), read one member at a
// time so that zero bytes after the last member, with which tape and block devices and some
// writers pad a file to a block size, end the text as GNU gzip ("trailing zero bytes ignored")
// and Spark's reader (java.util.zip.GZIPInputStream) end it, instead of failing as a member
// header that is not gzip. Any other byte after a member starts the next member, whose header
// must be gzip's (gzip.ErrHeader otherwise).
type gzipMembers struct {
	zr *gzip.Reader // in Multistream(false) mode, reading br
	br *bufio.Reader
}

// Read implements io.Reader.
func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		n, err := g.zr.Read(p)
		switch {
		case err != io.EOF:
			return n, err
		case n > 0:
			return n, nil // the member's end is looked past on the next call
		}
		// The end of a member: what follows is the end of the file, zero padding, or the next
		// member.
		b, err := g.br.ReadByte()
		for err == nil && b == 0 {
			b, err = g.br.ReadByte()
		}
		switch {
		case err == io.EOF:
			return 0, io.EOF
		case err != nil:
			return 0, err
		}
		if err := g.br.UnreadByte(); err != nil {
			return 0, err
		}
		// Bytes that cannot start a member are not gzip, however few (Reset reads a whole
		// header before it looks at its magic, and calls a short one cut short).
		if magic, _ := g.br.Peek(2); magic[0] != 0x1f || len(magic) == 2 && magic[1] != 0x8b {
			return 0, gzip.ErrHeader
		}
		if err := g.zr.Reset(g.br); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // a member's header cut short
			}
			return 0, err
		}
		g.zr.Multistream(false)
	}
}

// readLines says whether openInput passes a compressed file of src on whole lines at a time:
// for every format but multiline JSON.
func readLines(src *spec.Source) bool {
	return !(src.Format == "json" && src.Options[spec.JSONMultiline] == "true")
}

// compressedInput is the decompressed text of a compressed input file (openInput).
type compressedInput struct {
	path, ext string
	kind      string   // "gzip" or "Zstandard"
	file      *fileTap // the file as read by the decompressor
	z         io.Reader
	zclose    func()
	close     func() error
	lines     bool
	badStart  bool  // the file does not start as its kind of compressed file does
	got       int64 // the bytes decompressed

	// With lines: buf[out:end] is text of whole lines not passed on yet, buf[end:] the start
	// of a line whose end was not decompressed yet.
	buf      []byte
	out, end int
	err      error // the decompressor's error (io.EOF at the end), once it returned one

	ends      int64 // the line ends passed on (LF, CRLF, or a CR alone)
	pendingCR bool  // the text passed on ends in a CR, which an LF may follow
}

// Read implements io.Reader.
func (c *compressedInput) Read(p []byte) (int, error) {
	if !c.lines {
		if c.err != nil {
			return 0, c.fail()
		}
		n, err := c.z.Read(p)
		c.got += int64(n)
		c.count(p[:n])
		if err != nil {
			c.err = err
			if n == 0 {
				return 0, c.fail()
			}
		}
		return n, nil
	}
	for c.out == c.end {
		if c.err != nil {
			if c.err == io.EOF && c.end < len(c.buf) {
				c.end = len(c.buf) // the last line, with no line end
				continue
			}
			return 0, c.fail()
		}
		c.fill()
	}
	n := copy(p, c.buf[c.out:c.end])
	c.out += n
	return n, nil
}

// fill decompresses more text into buf, and moves end past its last line end.
func (c *compressedInput) fill() {
	rest := copy(c.buf, c.buf[c.end:])
	c.buf, c.out, c.end = c.buf[:rest], 0, 0
	if cap(c.buf)-len(c.buf) < 16<<10 {
		c.buf = append(make([]byte, 0, max(64<<10, 2*cap(c.buf))), c.buf...)
	}
	n, err := c.z.Read(c.buf[len(c.buf):cap(c.buf)])
	c.buf = c.buf[:len(c.buf)+n]
	c.got += int64(n)
	if err != nil {
		c.err = err
	}
	// The last line end: an LF, or a CR after the last LF (CR-only text is rare: the search for
	// a CR covers only what follows the last LF).
	lf := bytes.LastIndexByte(c.buf, '\n')
	c.end = max(lf, lf+1+bytes.LastIndexByte(c.buf[lf+1:], '\r')) + 1
	c.count(c.buf[:c.end])
}

// count counts the line ends of text passed on.
func (c *compressedInput) count(b []byte) {
	if !c.pendingCR && bytes.IndexByte(b, '\r') < 0 {
		c.ends += int64(bytes.Count(b, []byte{'\n'})) // the common case, at memory speed
		return
	}
	for _, ch := range b {
		if c.pendingCR {
			c.pendingCR = false
			if ch == '\n' {
				continue // the LF of a CRLF
			}
		}
		switch ch {
		case '\n':
			c.ends++
		case '\r':
			c.ends++
			c.pendingCR = true
		}
	}
}

// fail returns the error that ended the decompression: io.EOF at the end of the text, the
// file's own read error as it is, and for anything else a *damagedInput at the line where the
// text stops.
func (c *compressedInput) fail() error {
	err := c.err
	switch {
	case err == io.EOF && c.file.read == 0:
		return &incompleteInput{path: c.path, reason: fmt.Sprintf("the file is empty, which a %s file never is: it is being written", c.kind)}
	case err == io.EOF:
		return io.EOF
	case c.file.err != nil && c.file.err != io.EOF:
		return c.file.err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &incompleteInput{path: c.path, reason: c.reason(err)}
	}
	return &damagedInput{path: c.path, line: c.ends + 1, reason: c.reason(err)}
}

// reason says in the user's terms why the file cannot be decompressed.
func (c *compressedInput) reason(err error) string {
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && c.file.read == 0:
		return fmt.Sprintf("the file is empty, which a %s file never is: it is being written", c.kind)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("the file ends before its %s stream does: it is still being written, or truncated", c.kind)
	case errors.Is(err, gzip.ErrHeader) && c.badStart, errors.Is(err, zstd.ErrMagicMismatch) && c.got == 0:
		return fmt.Sprintf("the file is not %s-compressed, though its name ends in %s", c.kind, c.ext)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, zstd.ErrMagicMismatch):
		return fmt.Sprintf("the file holds data that is not %s after its %s stream ends", c.kind, c.kind)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, zstd.ErrCRCMismatch):
		return fmt.Sprintf("the file's %s stream is damaged (its checksum does not match the text)", c.kind)
	case errors.As(err, &corrupt):
		return fmt.Sprintf("the file's %s stream is damaged (corrupt data at byte %d)", c.kind, int64(corrupt))
	}
	return fmt.Sprintf("the file cannot be decompressed as %s (%v)", c.kind, err)
}

// Close implements io.Closer.
func (c *compressedInput) Close() error {
	if c.zclose != nil {
		c.zclose()
	}
	return c.close()
}

// fileTap is a file as a decompressor reads it: how many bytes it gave, and its own error.
type fileTap struct {
	r    io.Reader
	read int64
	err  error
}

func (t *fileTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.read += int64(n)
	if err != nil {
		t.err = err
	}
	return n, err
}

// damagedInput is the error of a compressed input file that cannot be decompressed to its end:
// the file, the line its text stops in (1-based), and why.
type damagedInput struct {
	path   string
	line   int64
	reason string
}

func (e *damagedInput) Error() string {
	return fmt.Sprintf("%s:%d: %s; replace it with the complete file (write files elsewhere and move them in once complete)", e.path, e.line, e.reason)
}

// incompleteInput is the error of a compressed input file whose stream ends before its end (or
// that is empty): most likely still being written. Such a file is not read at all: a batch that
// meets it is read again without it (readFiles' callers: errIncomplete), so that it is read
// whole once complete, not cut short and recorded as read.
type incompleteInput struct {
	path   string
	reason string
}

func (e *incompleteInput) Error() string {
	return fmt.Sprintf("%s: %s", e.path, e.reason)
}

// damaged says whether err is (or wraps) a *damagedInput or an *incompleteInput. Schema
// inference reads such a file as far as it goes: the reading of its rows reports the damage (or
// leaves an incomplete file for later).
func damaged(err error) bool {
	var d *damagedInput
	return errors.As(err, &d) || incomplete(err) != nil
}

// byteOrderMarks are the byte-order marks of the encodings of Unicode text other than UTF-8,
// longest first (UTF-32LE's starts with UTF-16LE's).
var byteOrderMarks = []struct {
	mark []byte
	name string
}{
	{[]byte{0xFF, 0xFE, 0x00, 0x00}, "UTF-32LE"},
	{[]byte{0x00, 0x00, 0xFE, 0xFF}, "UTF-32BE"},
	{[]byte{0xFF, 0xFE}, "UTF-16LE"},
	{[]byte{0xFE, 0xFF}, "UTF-16BE"},
}

// compressedMagic are the first bytes of compressed files (each format's specification), with
// the extension that has such a file decompressed ("" for formats that are not read).
var compressedMagic = []struct {
	magic     []byte
	name, ext string
}{
	{[]byte{0x1F, 0x8B}, "gzip", ".gz"},
	{[]byte{0x28, 0xB5, 0x2F, 0xFD}, "Zstandard", ".zst"},
	{[]byte{0xFD, '7', 'z', 'X', 'Z', 0x00}, "xz", ""},
	{[]byte{'P', 'K', 0x03, 0x04}, "zip", ""},
}

// bzip2Magic is how a bzip2 file starts after its "BZh" and block size digit: the magic number
// of its first block (or of its end, when it is empty), which no text starts with.
var bzip2Magic = [][]byte{{0x31, 0x41, 0x59, 0x26, 0x53, 0x59}, {0x17, 0x72, 0x45, 0x38, 0x50, 0x90}}

// sniffText reads the start of in, the text of an input file of format, and returns a reader of
// all of it and, when its start shows that it is no UTF-8 text, why, with what to do: text that
// starts with the byte-order mark of UTF-16 or UTF-32 (as spreadsheet programs export "Unicode
// text"), or a compressed file whose name does not say so; read as UTF-8, its every line would be
// garbage. The reason is "" otherwise.
func sniffText(in io.Reader, format string) (io.Reader, string) {
	head := make([]byte, 10)
	n, err := io.ReadFull(in, head)
	head = head[:n]
	var r io.Reader = bytes.NewReader(head)
	switch err {
	case nil:
		r = io.MultiReader(r, in)
	case io.EOF, io.ErrUnexpectedEOF:
	default:
		r = io.MultiReader(r, readFailure{err})
	}
	for _, b := range byteOrderMarks {
		if bytes.HasPrefix(head, b.mark) {
			return r, fmt.Sprintf("the file is %s text (it starts with a %s byte-order mark), which the %s reader does not read; convert it to UTF-8", b.name, b.name, format)
		}
	}
	name, ext := "", ""
	for _, c := range compressedMagic {
		if bytes.HasPrefix(head, c.magic) {
			name, ext = c.name, c.ext
		}
	}
	if len(head) == 10 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9' &&
		(bytes.Equal(head[4:], bzip2Magic[0]) || bytes.Equal(head[4:], bzip2Magic[1])) {
		name = "bzip2"
	}
	switch {
	case name == "":
		return r, ""
	case ext == "":
		return r, fmt.Sprintf("the file is %s-compressed, which is not read (only .gz and .zst files are decompressed); decompress it, or compress it with gzip or zstd", name)
	}
	return r, fmt.Sprintf("the file is %s-compressed, though its name does not end in %s (files are decompressed by extension); rename it so that it does, or land it decompressed", name, ext)
}

// readFailure returns its error on every read: the error that ended a read of a file's start
// (sniffText), handed on when the rest is read.
type readFailure struct{ err error }

func (e readFailure) Read([]byte) (int, error) { return 0, e.err }
