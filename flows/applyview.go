package flows

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// viewBatchRows is how many rows of a view's files an APPLY CHANGES batch checks and turns into
// change events at a time, when it need not hold the whole batch (see readViewFiles). A variable
// for tests.
var viewBatchRows = 1 << 16

// viewFoldRows is viewBatchRows for a batch whose events are folded as they are read (SCD type
// 1): the fold reads a group's rows soon after they were parsed, while they are still in the
// cache, and hands their memory back sooner (cdc-bulk through a view: 4.7 -> 4.0 s of CPU against
// groups of 65,536 rows). Held events gain nothing from small groups (scd2 through a view: 0.2 s
// more CPU).
const viewFoldRows = 1 << 13

// viewBatch is one batch of an APPLY CHANGES flow that reads a view over files: the files it
// reads (off, written to ckpt/offsets/<batch>.json before the commit that counts them), and
// whether files are left for the next batch (max_files_per_trigger).
type viewBatch struct {
	ckpt  string
	off   *offsets
	files []inputFile // the files read, in the order of off.Files
	more  bool
	bad   *badRecords     // what the view's mode did with the lines that do not fit its schema
	said  map[string]bool // the WARNs said in this update (unreadFiles.saidWarnings)
}

// viewSourceIDPrefix starts the source identity (commitInfo sourceKey) of a target fed by a view
// over files: the prefix, then the view's name. A table's identity is its metadata id.
const viewSourceIDPrefix = "view:"

func viewSourceID(view *spec.Dataset) string { return viewSourceIDPrefix + view.Name }

func isViewSourceID(id string) bool { return strings.HasPrefix(id, viewSourceIDPrefix) }

// sourceKind names what a source identity identifies, for errors.
func sourceKind(id string) string {
	if isViewSourceID(id) {
		return "the view over files " + strings.TrimPrefix(id, viewSourceIDPrefix)
	}
	return "a table"
}

// planViewBatch takes the next files of view that the target d has not read in a committed
// batch (its batches 1..committed, recorded in d's checkpoint folder), at most
// max_files_per_trigger of them in name order, from the update's listing (unread; made now when
// there is none yet), and returns the next batch; nil when no file is new. Files read before and
// changed since are reported (warn) and counted in m.ChangedFiles, as Ingest does.
func planViewBatch(env *Env, d, view *spec.Dataset, committed int64, warn bool, unread *unreadFiles, m *Metrics) (*viewBatch, []inputFile, error) {
	ckpt := CheckpointDir(env.Pipeline.Storage, d.Name)
	if !unread.listed {
		changed, err := unread.list(env, ckpt, committed, view.Source.Path, d.Name, view.Name, warn)
		if err != nil {
			return nil, nil, fmt.Errorf("view %s: %w", view.Name, err)
		}
		m.ChangedFiles, m.Unsettled, m.Incomplete = m.ChangedFiles+changed, unread.unsettled, unread.incomplete
	}
	vb := &viewBatch{ckpt: ckpt, off: &offsets{Batch: committed + 1, Base: unread.base}, said: unread.saidWarnings()}
	todo, more := unread.take(view.Source.MaxFilesPerTrigger)
	unread.reportVanished(env, d.Name, view.Name)
	if len(todo) == 0 {
		return nil, nil, nil
	}
	vb.more = more
	if _, err := evolveSchema(view, todo, &delta.Metadata{Schema: view.Schema}, RefreshHint(env.Pipeline, d.Name)); err != nil {
		return nil, nil, err // failOnNewColumns: a file has a column the schema lacks
	}
	for _, f := range todo {
		vb.off.Files = append(vb.off.Files, offsetFile{Path: f.rel, Size: f.size, ModTime: f.modTime})
	}
	vb.files = todo
	return vb, todo, nil
}

// locate names the file and line of a row read by the batch: o.version is the file's index in
// the batch, o.row its line number.
func (vb *viewBatch) locate(o origin) string {
	if o.version < 0 || int(o.version) >= len(vb.files) {
		return fmt.Sprintf("batch %d", vb.off.Batch)
	}
	return vb.files[o.version].abs + ":" + strconv.FormatInt(o.row, 10)
}

// readViewFiles reads the batch's files of view, in order, with the view's `mode` for values that
// do not fit its schema, and hands the rows to consume, each with its origin (file index, line
// number) after its values: groupRows at a time, whose memory is reused for later rows once
// consume calls done (consume keeps copies of what it keeps), or, when groupRows is 0, all at
// once. It returns the rows not yet consumed: none in groups, else the whole batch. With
// consumeCols not nil (viewColumnsFor said yes: JSON lines of primitive columns), the files are
// read by column instead: consumeCols gets each parsed block's rows (blockColumns, those the
// mode drops taken out) with the file's index, and done, to call once it holds nothing of the
// blocks before this one (their memory is then reused); consume is not called.
func readViewFiles(ctx context.Context, env *Env, d, view *spec.Dataset, b *changeBatch, m *Metrics, todo []inputFile, groupRows int, consume func(rows [][]any, done func()) error, consumeCols func(c *blockColumns, fi int, done func()) error) ([][]any, error) {
	perGroup := groupRows > 0
	src := view.Source
	bad := &badRecords{env: env, flow: d.Name, dataset: view.Name, src: src, said: b.view.said}
	b.view.bad = bad
	defer func() { m.BadRecords = bad.count }()
	var pool *blockPool
	if perGroup || consumeCols != nil {
		pool = &blockPool{}
	}
	var cols func(c *blockColumns, fi int) error
	if consumeCols != nil {
		cols = func(c *blockColumns, fi int) error {
			b.nSource += c.n
			// The blocks emitted so far are the ones before c (a block is emitted once its
			// rows were handed on): consumeCols holds nothing of them once done is called.
			before := pool.seal()
			return consumeCols(c, fi, func() { pool.release(before) })
		}
	}
	var rows [][]any
	var origins []origin
	flush := func() error {
		// Every block emitted so far has its rows among these or consumed before: their memory
		// is free again once consume is done with these (it may hand them to a fold).
		blocks := pool.seal()
		if err := consume(rows, func() { pool.release(blocks) }); err != nil {
			return err
		}
		clear(rows)
		rows, origins = rows[:0], origins[:0]
		return nil
	}
	files, err := readFiles(ctx, src, todo, pool, bad, func(row []any, fi int, lineNo int64) error {
		if len(origins) == cap(origins) {
			// The rows point into it: never grown. A full one stays with its rows when the
			// batch is held whole; a group's is reused once the group is consumed.
			origins = make([]origin, 0, cmp.Or(groupRows, viewBatchRows))
		}
		origins = append(origins, origin{version: int64(fi), row: lineNo})
		rows = append(rows, append(row, &origins[len(origins)-1]))
		b.nSource++
		if perGroup && len(origins) == groupRows {
			return flush()
		}
		return nil
	}, cols)
	m.Files += files
	if err != nil {
		return nil, fmt.Errorf("view %s: %w", view.Name, err)
	}
	bad.finish()
	if perGroup && len(rows) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// ownSlab copies values into memory of its own, as ownValue does, but into the shared arrays of
// a valueSlab (a few allocations for many values, which live as long as any of them); strings
// longer than a valueSlab copies, and nested values, are copied by ownValue. A nil *ownSlab is
// ownValue.
type ownSlab struct{ slab *valueSlab }

func newOwnSlab() *ownSlab { return &ownSlab{slab: newValueSlab()} }

// value returns a copy of v, as ownValue does.
func (o *ownSlab) value(v any) any {
	if o == nil {
		return ownValue(v)
	}
	switch x := v.(type) {
	case nil, bool:
		return v
	case string:
		if len(x) > maxSlabString {
			return strings.Clone(x)
		}
	case int64, int32, float64, schema.Decimal, schema.Date, schema.Timestamp:
	default:
		return ownValue(v)
	}
	return o.slab.rebox(v)
}

// ownValue returns v with no memory shared with the input it was parsed from: the readers'
// strings may be windows of their input text, and their numbers boxed in a slab (boxSlab), both
// reused for later input once released (blockPool). Each case boxes its value anew.
func ownValue(v any) any {
	switch x := v.(type) {
	case nil, bool:
		return v
	case string:
		return strings.Clone(x)
	case int64:
		return x
	case int32:
		return x
	case float64:
		return x
	case float32:
		return x
	case schema.Decimal:
		return x
	case schema.Decimal128:
		return x
	case schema.Date:
		return x
	case schema.Timestamp:
		return x
	case []byte:
		return bytes.Clone(x)
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = ownValue(e)
		}
		return c
	case schema.Map:
		c := make(schema.Map, len(x))
		for i, e := range x {
			c[i] = schema.MapEntry{Key: ownValue(e.Key), Value: ownValue(e.Value)}
		}
		return c
	}
	return v
}
