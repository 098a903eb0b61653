package delta

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"tributary/schema"
)

// pageBufferSize is the size in bytes of the page buffer of the files written here (a variable
// for tests): parquet-go's default, parquet.DefaultPageBufferSize (256 KiB).
var pageBufferSize = parquet.DefaultPageBufferSize

// flatPageBytes is the size of a flat column's open page (flatColumn.size) at which flatFile
// closes it, checked after each batch of values, as parquet-go closes a page once its buffer
// reaches 98% of the page buffer size.
func flatPageBytes() int { return int(int32(float64(pageBufferSize) * 0.98)) }

// flatFile writes the row groups, page index and footer of a Parquet file whose columns are all
// top-level and primitive (ColumnsWritable), from rows given column by column (ColumnPart),
// without a parquet.Value per value: each column's values go straight into the PLAIN encoding
// of its open page, whose bounds are kept as the values go in.
//
// The file is the one parquet-go writes of the same rows with the options of createParquet, in
// layout and metadata (Parquet format spec, "File Format"; the footer's schema, column orders and
// created_by are taken from a file parquet-go writes of the schema): OPTIONAL columns, v1 data
// pages (Snappy-compressed definition levels then PLAIN values, a CRC-32 of the compressed
// bytes, no statistics in the page header), closed at flatPageBytes; each row group's column
// chunks one after the other, with Statistics (min_value, max_value, null_count), encoding
// statistics and size statistics; after the last row group the column index (min and max of
// each page, byte arrays truncated to 16 bytes, with the null pages, null counts, boundary
// order and definition level histograms, built by parquet-go's ColumnIndexer) and the offset
// index of every column chunk; then the FileMetaData. Given the rows in the same parts (so that
// pages close at the same batches), the file is byte for byte parquet-go's
// (TestFlatFileMatchesRowPath): the levels are encoded by parquet-go's RLE encoder, and the
// bounds follow parquet-go's (NaN left out of a page's bounds unless the page has only NaN; a
// chunk's bounds those of its first page with any, widened by later pages unless they were NaN).
//
// Rows are added to the open row group with add, which endGroup closes; close writes the
// footer. Not safe for concurrent use.
type flatFile struct {
	out    *bufio.Writer        // in front of the file's counting writer, as parquet-go's (write)
	off    int64                // bytes written to out
	meta   *format.FileMetaData // the template's: schema, column orders, created_by, version
	cols   []flatColumn
	groups []format.RowGroup
	colIdx [][]format.ColumnIndex
	offIdx [][]format.OffsetIndex
	open   int64 // rows in the open row group
	cb     columnBatch

	page, comp []byte // a page's uncompressed and compressed bytes
	lv         []byte // a page's encoded definition levels
	ones       []byte // definition levels of pages without a NULL
	hdr        bytes.Buffer
	enc        *thrift.Encoder
}

// flatColumn is the state of one column of a flatFile: its open page and the pages of the open
// row group's chunk.
type flatColumn struct {
	typ  *schema.Type
	phys format.Type
	path string
	st   *colStats // the column's Delta statistics, over the whole file
	ix   parquet.ColumnIndexer

	// The open page.
	vals   []byte // PLAIN values
	levels []byte // definition levels (0 NULL, 1 a value), kept once the page has a NULL
	n      int    // values, NULLs included
	nulls  int
	nbits  int // BOOLEAN: values packed into vals
	pb     flatBounds
	bytes  int64 // BYTE_ARRAY: the values' bytes (size statistics)

	// The open row group's chunk.
	chunk      []byte // page headers and compressed pages
	locs       []format.PageLocation
	first      int64 // the open page's first row in the row group
	cb         flatBounds
	numValues  int64
	nullCount  int64
	uncomp     int64
	pages      int32
	arrayBytes int64
	defHist    []int64 // per page: NULLs, then values
}

// flatBounds is the min and max of the non-NULL values of a page or chunk so far, as parquet-go
// bounds them: with has, i for INT32, INT64 and BOOLEAN (0 or 1), f for FLOAT and DOUBLE (NaN
// left out), s (owned) for BYTE_ARRAY; without has but with nan (FLOAT and DOUBLE), the values
// were all NaN, and the bounds are the first of them, nanV.
type flatBounds struct {
	has        bool
	minI, maxI int64
	minF, maxF float64
	minS, maxS []byte
	nan        bool
	nanV       float64
}

// flatTemplates caches, per Parquet schema, the footer of an empty file parquet-go writes of it.
var flatTemplates sync.Map // string (the schema's text) → *format.FileMetaData

// flatTemplate returns the footer of an empty file parquet-go writes of ps with the options of
// createParquet: its schema elements, column orders, created_by and version are those of every
// file written here of ps.
func flatTemplate(ps *parquet.Schema) (*format.FileMetaData, error) {
	key := ps.String()
	if m, ok := flatTemplates.Load(key); ok {
		return m.(*format.FileMetaData), nil
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, ps, parquet.Compression(dataFileCodec), parquet.DataPageVersion(1),
		parquet.DataPageStatistics(false), parquet.CreatedBy("tributary", "", ""))
	if err := w.Close(); err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return nil, err
	}
	m := f.Metadata()
	flatTemplates.Store(key, m)
	return m, nil
}

// newFlatFile returns a flatFile writing (through a buffer: write) to out the columns lvs
// (ColumnsWritable) of ps, folding the values into stats (one per leaf).
func newFlatFile(out *countingWriter, ps *parquet.Schema, lvs []leaf, stats []colStats) (*flatFile, error) {
	meta, err := flatTemplate(ps)
	if err != nil {
		return nil, err
	}
	if len(meta.Schema) != len(lvs)+1 {
		return nil, fmt.Errorf("the Parquet schema has %d elements, not %d columns", len(meta.Schema)-1, len(lvs))
	}
	ff := &flatFile{out: bufio.NewWriterSize(out, parquetWriteBuffer), meta: meta, cols: make([]flatColumn, len(lvs))}
	ff.enc = thrift.NewEncoder(new(thrift.CompactProtocol).NewWriter(&ff.hdr))
	for j := range lvs {
		el := &meta.Schema[j+1]
		lc, ok := ps.Lookup(el.Name)
		if !ok {
			return nil, fmt.Errorf("the Parquet schema has no column %s", el.Name)
		}
		ff.cols[j] = flatColumn{
			typ: &lvs[j].typ, phys: el.Type.V, path: el.Name, st: &stats[j],
			ix: lc.Node.Type().NewColumnIndexer(parquet.DefaultColumnIndexSizeLimit),
		}
	}
	return ff, nil
}

// write writes b to the file as parquet-go's writer does, so that what reaches the counting
// writer (parquetFile.size) is what parquet-go hands on at each point: through a buffer of
// parquetWriteBuffer bytes, emptied when full, and in the same calls (the magic, then each
// column chunk in pieces of chunkPiece bytes, as parquet-go copies a chunk from its page
// buffer).
func (ff *flatFile) write(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), chunkPiece)
		if _, err := ff.out.Write(b[:n]); err != nil {
			return err
		}
		ff.off += int64(n)
		b = b[n:]
	}
	return nil
}

// chunkPiece is the size of the pieces parquet-go copies a column chunk in (the chunks of its
// page buffers, 32 KiB).
const chunkPiece = 32 << 10

// add appends rows [from, to) of part to the open row group, column after column; base is the
// position of row from in what the caller writes (for errors). A value out of its column's
// range is a *columnError naming its row: the first in column order, then row order.
func (ff *flatFile) add(part ColumnPart, from, to, base int) error {
	pageBytes := flatPageBytes()
	for j := range ff.cols {
		c := &ff.cols[j]
		for start := from; start < to; start += writeBatch {
			end := min(start+writeBatch, to)
			// The batch in as many pieces as the part holds it in (columnBatch.column); the
			// page may close only at the batch's end.
			for at := start; at < end; {
				nulls, words, strs := ff.cb.column(part, j, at, end)
				if err := c.addBatch(nulls, words, strs); err != nil {
					if ve, ok := err.(*flatValueError); ok {
						return &columnError{col: j, row: base + at - from + ve.i, err: ve.err}
					}
					return &columnError{col: j, row: -1, err: err}
				}
				at += len(nulls)
			}
			if c.size() >= pageBytes {
				if err := ff.flushPage(c); err != nil {
					return &columnError{col: j, row: -1, err: err}
				}
			}
		}
	}
	ff.open += int64(to - from)
	return nil
}

// size is the open page's size as parquet-go measures the buffer of a page of an OPTIONAL
// column (4 bytes of row index and 1 of level per value, plus the values; a BYTE_ARRAY value's
// 4 bytes of offset stand for its PLAIN length prefix), so that pages close about where they do
// in files written from rows.
func (c *flatColumn) size() int { return len(c.vals) + 5*c.n }

// flatValueError is a value of a batch that does not fit its column: the i-th of the batch.
type flatValueError struct {
	i   int
	err error
}

func (e *flatValueError) Error() string { return e.err.Error() }

// addBatch appends a batch of values, as ColumnPart.Column gives them, to the open page.
func (c *flatColumn) addBatch(nulls []bool, words []int64, strs []string) error {
	n := len(nulls)
	batchNulls := 0
	for _, null := range nulls {
		if null {
			batchNulls++
		}
	}
	if batchNulls > 0 && c.nulls == 0 {
		// The page's first NULL: its levels are kept from now on, those before all 1.
		c.levels = c.levels[:0]
		for range c.n {
			c.levels = append(c.levels, 1)
		}
	}
	if c.nulls+batchNulls > 0 {
		for _, null := range nulls {
			if null {
				c.levels = append(c.levels, 0)
			} else {
				c.levels = append(c.levels, 1)
			}
		}
	}
	c.st.nulls += int64(batchNulls)
	c.nulls += batchNulls
	t := c.typ
	switch t.Kind {
	case schema.Long, schema.TimestampKind:
		c.addInt64(nulls, words, batchNulls)
	case schema.Integer:
		lo, hi := t.IntRange()
		for i, x := range words {
			if !nulls[i] && (x < lo || x > hi) {
				return &flatValueError{i, fmt.Errorf("%d does not fit %s", x, t.DDL())}
			}
		}
		c.addInt32(nulls, words)
	case schema.DateKind:
		for i, x := range words {
			if !nulls[i] && (x < math.MinInt32 || x > math.MaxInt32) {
				return &flatValueError{i, fmt.Errorf("%d days does not fit DATE", x)}
			}
		}
		c.addInt32(nulls, words)
	case schema.DecimalKind:
		limit := pow10[t.Precision]
		for i, x := range words {
			if d := schema.Decimal(x); !nulls[i] && (d >= limit || d <= -limit) {
				return &flatValueError{i, fmt.Errorf("%s does not fit %s", schema.FormatDecimal(d, t.Scale), t.DDL())}
			}
		}
		if t.Precision <= 9 {
			c.addInt32(nulls, words)
		} else {
			c.addInt64(nulls, words, batchNulls)
		}
	case schema.Double:
		c.addFloat(nulls, words, t.Storage == schema.StorageFloat)
	case schema.Boolean:
		c.addBool(nulls, words)
	case schema.String:
		c.addStrings(nulls, strs, t.Storage != schema.StorageBinary)
	default:
		return fmt.Errorf("type %s cannot be written from columns", t.DDL())
	}
	c.n += n
	return nil
}

// grow returns c.vals with room for k more bytes, and its length before.
func (c *flatColumn) grow(k int) int {
	at := len(c.vals)
	c.vals = slices.Grow(c.vals, k)[:at+k]
	return at
}

func (c *flatColumn) addInt64(nulls []bool, words []int64, batchNulls int) {
	at := c.grow(8 * (len(words) - batchNulls))
	out := c.vals[at:]
	b := &c.pb
	lo, hi, has := b.minI, b.maxI, b.has
	k := 0
	for i, x := range words {
		if nulls[i] {
			continue
		}
		binary.LittleEndian.PutUint64(out[k:], uint64(x))
		k += 8
		if !has {
			lo, hi, has = x, x, true
		} else if x < lo {
			lo = x
		} else if x > hi {
			hi = x
		}
	}
	b.minI, b.maxI, b.has = lo, hi, has
}

func (c *flatColumn) addInt32(nulls []bool, words []int64) {
	b := &c.pb
	lo, hi, has := b.minI, b.maxI, b.has
	for i, x := range words {
		if nulls[i] {
			continue
		}
		c.vals = binary.LittleEndian.AppendUint32(c.vals, uint32(int32(x)))
		if !has {
			lo, hi, has = x, x, true
		} else if x < lo {
			lo = x
		} else if x > hi {
			hi = x
		}
	}
	b.minI, b.maxI, b.has = lo, hi, has
}

func (c *flatColumn) addFloat(nulls []bool, words []int64, float bool) {
	b := &c.pb
	for i, x := range words {
		if nulls[i] {
			continue
		}
		f := math.Float64frombits(uint64(x))
		c.st.float(f)
		if float {
			f32 := float32(f)
			c.vals = binary.LittleEndian.AppendUint32(c.vals, math.Float32bits(f32))
			f = float64(f32)
		} else {
			c.vals = binary.LittleEndian.AppendUint64(c.vals, uint64(x))
		}
		switch {
		case math.IsNaN(f):
			if !b.has && !b.nan {
				b.nan, b.nanV = true, f
			}
		case !b.has:
			b.minF, b.maxF, b.has, b.nan = f, f, true, false
		case f < b.minF:
			b.minF = f
		case f > b.maxF:
			b.maxF = f
		}
	}
}

func (c *flatColumn) addBool(nulls []bool, words []int64) {
	b := &c.pb
	for i, x := range words {
		if nulls[i] {
			continue
		}
		if c.nbits%8 == 0 {
			c.vals = append(c.vals, 0)
		}
		v := int64(0)
		if x != 0 {
			v = 1
			c.vals[len(c.vals)-1] |= 1 << (c.nbits % 8)
		}
		c.nbits++
		if !b.has {
			b.minI, b.maxI, b.has = v, v, true
		} else {
			b.minI, b.maxI = min(b.minI, v), max(b.maxI, v)
		}
	}
}

func (c *flatColumn) addStrings(nulls []bool, strs []string, stats bool) {
	var lo, hi string
	has := false
	for i, s := range strs {
		if nulls[i] {
			continue
		}
		c.vals = binary.LittleEndian.AppendUint32(c.vals, uint32(len(s)))
		c.vals = append(c.vals, s...)
		c.bytes += int64(len(s))
		if !has {
			lo, hi, has = s, s, true
		} else if s < lo {
			lo = s
		} else if s > hi {
			hi = s
		}
	}
	if !has {
		return
	}
	if stats {
		c.st.str(lo)
		c.st.str(hi)
	}
	b := &c.pb
	if !b.has {
		b.minS, b.maxS, b.has = append(b.minS[:0], lo...), append(b.maxS[:0], hi...), true
		return
	}
	if lo < string(b.minS) {
		b.minS = append(b.minS[:0], lo...)
	}
	if hi > string(b.maxS) {
		b.maxS = append(b.maxS[:0], hi...)
	}
}

// value returns the bound (the max when max is set) as a Parquet value of the column's
// physical type: the null value when there is none.
func (b *flatBounds) value(phys format.Type, max bool) parquet.Value {
	if !b.has && !b.nan {
		return parquet.Value{}
	}
	i, f, s := b.minI, b.minF, b.minS
	if max {
		i, f, s = b.maxI, b.maxF, b.maxS
	}
	if !b.has {
		f = b.nanV
	}
	switch phys {
	case format.Int64:
		return parquet.Int64Value(i)
	case format.Int32:
		return parquet.Int32Value(int32(i))
	case format.Double:
		return parquet.DoubleValue(f)
	case format.Float:
		return parquet.FloatValue(float32(f))
	case format.Boolean:
		return parquet.BooleanValue(i != 0)
	default:
		return parquet.ByteArrayValue(s)
	}
}

// merge folds the bounds p of a page into b, its chunk's, as parquet-go does: the chunk takes
// the bounds of its first page that has any, and widens them with those of later pages, except
// that NaN bounds compare equal to everything (a chunk whose first bounds were NaN keeps them; a
// later all-NaN page changes nothing).
func (b *flatBounds) merge(p *flatBounds) {
	switch {
	case b.has || b.nan:
		if b.nan || !p.has {
			return
		}
		b.minI, b.maxI = min(b.minI, p.minI), max(b.maxI, p.maxI)
		if p.minF < b.minF {
			b.minF = p.minF
		}
		if p.maxF > b.maxF {
			b.maxF = p.maxF
		}
		if string(p.minS) < string(b.minS) {
			b.minS = append(b.minS[:0], p.minS...)
		}
		if string(p.maxS) > string(b.maxS) {
			b.maxS = append(b.maxS[:0], p.maxS...)
		}
	case p.has:
		b.has = true
		b.minI, b.maxI, b.minF, b.maxF = p.minI, p.maxI, p.minF, p.maxF
		b.minS, b.maxS = append(b.minS[:0], p.minS...), append(b.maxS[:0], p.maxS...)
	case p.nan:
		b.nan, b.nanV = true, p.nanV
	}
}

// flushPage closes the open page of c, if it holds values: it encodes the page (v1: the
// definition levels' length and RLE/bit-packed hybrid encoding, then the PLAIN values),
// compresses it and appends it with its header to the chunk, and indexes it.
func (ff *flatFile) flushPage(c *flatColumn) error {
	if c.n == 0 {
		return nil
	}
	page := append(ff.page[:0], 0, 0, 0, 0)
	levels := c.levels
	if c.nulls == 0 {
		// No NULL in the page: every level 1.
		for len(ff.ones) < c.n {
			ff.ones = append(ff.ones, 1)
		}
		levels = ff.ones[:c.n]
	}
	lv, err := (&rle.Encoding{BitWidth: 1}).EncodeLevels(ff.lv[:0], levels)
	if err != nil {
		return err
	}
	ff.lv = lv
	page = append(page, lv...)
	binary.LittleEndian.PutUint32(page, uint32(len(page)-4))
	page = append(page, c.vals...)
	ff.page = page
	if len(page) > math.MaxInt32 {
		// (As parquet-go refuses it: a page's size is an i32 of its header.)
		return fmt.Errorf("page size limit exceeded: %d>%d", len(page), math.MaxInt32)
	}
	comp, err := dataFileCodec.Encode(ff.comp[:0], page)
	if err != nil {
		return err
	}
	ff.comp = comp
	var h format.PageHeader
	h.Type = format.DataPage
	h.UncompressedPageSize = int32(len(page))
	h.CompressedPageSize = int32(len(comp))
	h.CRC = int32(crc32.ChecksumIEEE(comp))
	h.DataPageHeader.Valid = true
	h.DataPageHeader.V = format.DataPageHeader{
		NumValues: int32(c.n), Encoding: format.Plain,
		DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE,
	}
	ff.hdr.Reset()
	if err := ff.enc.Encode(&h); err != nil {
		return err
	}
	c.locs = append(c.locs, format.PageLocation{
		Offset: int64(len(c.chunk)), CompressedPageSize: int32(ff.hdr.Len() + len(comp)), FirstRowIndex: c.first,
	})
	c.chunk = append(c.chunk, ff.hdr.Bytes()...)
	c.chunk = append(c.chunk, comp...)
	c.uncomp += int64(ff.hdr.Len() + len(page))
	c.ix.IndexPage(int64(c.n), int64(c.nulls), c.pb.value(c.phys, false), c.pb.value(c.phys, true))
	c.defHist = append(c.defHist, int64(c.nulls), int64(c.n-c.nulls))
	if c.pb.has && (c.typ.Kind == schema.Long || c.typ.Kind == schema.Integer || c.typ.Kind == schema.DecimalKind ||
		c.typ.Kind == schema.DateKind || c.typ.Kind == schema.TimestampKind) {
		c.st.int(c.pb.minI)
		c.st.int(c.pb.maxI)
	}
	c.cb.merge(&c.pb)
	c.numValues += int64(c.n)
	c.nullCount += int64(c.nulls)
	c.arrayBytes += c.bytes
	c.pages++
	c.first += int64(c.n)
	c.vals, c.levels = c.vals[:0], c.levels[:0]
	c.n, c.nulls, c.nbits, c.bytes = 0, 0, 0, 0
	c.pb.has, c.pb.nan = false, false
	return nil
}

// parquetMagic is the first and last 4 bytes of a Parquet file.
const parquetMagic = "PAR1"

// endGroup closes the open row group, if it holds rows: each column's last page, then the
// column chunks written one after the other, and the row group's metadata, column index and
// offset index kept for close.
func (ff *flatFile) endGroup() error {
	if ff.open == 0 {
		return nil
	}
	if ff.off == 0 {
		if err := ff.write([]byte(parquetMagic)); err != nil {
			return err
		}
	}
	rg := format.RowGroup{
		Columns: make([]format.ColumnChunk, len(ff.cols)), NumRows: ff.open, SortingColumns: []format.SortingColumn{},
		FileOffset: ff.off, Ordinal: int16(len(ff.groups)),
	}
	cis := make([]format.ColumnIndex, len(ff.cols))
	ois := make([]format.OffsetIndex, len(ff.cols))
	for j := range ff.cols {
		c := &ff.cols[j]
		if err := ff.flushPage(c); err != nil {
			return &columnError{col: j, row: -1, err: err}
		}
		at := ff.off
		if err := ff.write(c.chunk); err != nil {
			return err
		}
		for k := range c.locs {
			c.locs[k].Offset += at
		}
		md := format.ColumnMetaData{
			Type: c.phys, Encoding: []format.Encoding{format.Plain, format.RLE},
			PathInSchema: []string{c.path}, Codec: dataFileCodec.CompressionCodec(),
			NumValues: c.numValues, TotalUncompressedSize: c.uncomp, TotalCompressedSize: int64(len(c.chunk)),
			DataPageOffset: at,
			EncodingStats:  []format.PageEncodingStats{{PageType: format.DataPage, Encoding: format.Plain, Count: c.pages}},
			SizeStatistics: format.SizeStatistics{
				UnencodedByteArrayDataBytes: c.arrayBytes,
				DefinitionLevelHistogram:    []int64{c.nullCount, c.numValues - c.nullCount},
			},
		}
		md.Statistics.NullCount = c.nullCount
		if c.cb.has || c.cb.nan {
			// (An empty BYTE_ARRAY bound is written, as an empty value: not nil.)
			md.Statistics.MinValue = c.cb.value(c.phys, false).AppendBytes([]byte{})
			md.Statistics.MaxValue = c.cb.value(c.phys, true).AppendBytes([]byte{})
		}
		rg.Columns[j] = format.ColumnChunk{MetaData: md}
		rg.TotalByteSize += c.uncomp
		rg.TotalCompressedSize += int64(len(c.chunk))
		cis[j] = c.ix.ColumnIndex()
		cis[j].DefinitionLevelHistogram = c.defHist
		ois[j] = format.OffsetIndex{PageLocations: c.locs}
		c.ix.Reset()
		c.chunk, c.locs, c.defHist = c.chunk[:0], nil, nil
		c.first, c.numValues, c.nullCount, c.uncomp, c.pages, c.arrayBytes = 0, 0, 0, 0, 0, 0
		c.cb.has, c.cb.nan = false, false
	}
	ff.groups = append(ff.groups, rg)
	ff.colIdx = append(ff.colIdx, cis)
	ff.offIdx = append(ff.offIdx, ois)
	ff.open = 0
	return nil
}

// close closes the open row group and writes the page index and the footer.
func (ff *flatFile) close() error {
	if err := ff.endGroup(); err != nil {
		return err
	}
	if ff.off == 0 {
		if err := ff.write([]byte(parquetMagic)); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	enc := thrift.NewEncoder(new(thrift.CompactProtocol).NewWriter(&buf))
	put := func(v any) (int64, int32, error) {
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return 0, 0, err
		}
		at := ff.off
		return at, int32(buf.Len()), ff.write(buf.Bytes())
	}
	var err error
	for i := range ff.groups {
		for j := range ff.groups[i].Columns {
			c := &ff.groups[i].Columns[j]
			if c.ColumnIndexOffset, c.ColumnIndexLength, err = put(&ff.colIdx[i][j]); err != nil {
				return err
			}
		}
	}
	for i := range ff.groups {
		for j := range ff.groups[i].Columns {
			c := &ff.groups[i].Columns[j]
			if c.OffsetIndexOffset, c.OffsetIndexLength, err = put(&ff.offIdx[i][j]); err != nil {
				return err
			}
		}
	}
	var rows int64
	for _, g := range ff.groups {
		rows += g.NumRows
	}
	md := format.FileMetaData{
		Version: ff.meta.Version, Schema: ff.meta.Schema, NumRows: rows, RowGroups: ff.groups,
		CreatedBy: ff.meta.CreatedBy, ColumnOrders: ff.meta.ColumnOrders, KeyValueMetadata: ff.meta.KeyValueMetadata,
	}
	buf.Reset()
	if err := enc.Encode(&md); err != nil {
		return err
	}
	footer := binary.LittleEndian.AppendUint32(buf.Bytes(), uint32(buf.Len()))
	footer = append(footer, parquetMagic...)
	if err := ff.write(footer); err != nil {
		return err
	}
	return ff.out.Flush()
}
