package delta

import (
	"errors"
	"fmt"
	"io/fs"

	"tributary/schema"
)

// The extra columns of the change data feed (Delta PROTOCOL.md, "Reader Requirements for
// AddCDCFile").
const (
	CommitVersionColumn   = "_commit_version"
	CommitTimestampColumn = "_commit_timestamp"
)

// FeedColumns returns the columns a change data feed adds after the table's own, in order
// (Delta PROTOCOL.md, "Change Data Files"; Spark's table_changes): _change_type STRING,
// _commit_version BIGINT, _commit_timestamp TIMESTAMP. Each call returns a new slice.
func FeedColumns() []schema.Field {
	return []schema.Field{
		{Name: ChangeTypeColumn, Type: schema.Type{Kind: schema.String}, Nullable: true},
		{Name: CommitVersionColumn, Type: schema.Type{Kind: schema.Long}, Nullable: true},
		{Name: CommitTimestampColumn, Type: schema.Type{Kind: schema.TimestampKind}, Nullable: true},
	}
}

// Changes returns the change data feed of versions from..to (inclusive; to < 0 means the
// latest), as Spark's table_changes does (Delta PROTOCOL.md, "Change Data Files" and "Reader
// Requirements for AddCDCFile"). The schema is the table's columns at version to followed by
// _change_type STRING, _commit_version BIGINT and _commit_timestamp TIMESTAMP (the commit's
// time, see Commit.Timestamp, in µs). For a version with cdc actions only those files are read;
// otherwise each add with dataChange true gives its live rows (those its deletion vector keeps)
// as "insert" and each remove with dataChange true gives the live rows of the removed logical
// file as "delete", except that a remove and an add of the same data file in one commit (a
// deletion vector replaced, as Delta's DELETE, UPDATE and MERGE with deletion vectors commit it)
// give only the difference: the rows the new DV deletes and the old one did not as "delete",
// the rows the old DV deleted and the new one does not as "insert". Rows are ordered by version,
// then by file: cdc files in log order, or the removed files then the added files, each in log
// order. from < 0, from > to, or a version past the latest is an error that names the latest
// version; a version whose commit file was cleaned up is an error naming the first one left; a
// range holding a version that changed the columns so that the rows before it do not read with
// them is an error wrapping ErrFeedSchemaChange that names the last such version, and one holding
// a version without delta.enableChangeDataFeed an error wrapping ErrNoChangeDataFeed.
func (t *Table) Changes(from, to int64) (schema.Schema, [][]any, error) {
	vs, err := t.versions()
	if err != nil {
		return schema.Schema{}, nil, err
	}
	if len(vs) == 0 {
		return schema.Schema{}, nil, fmt.Errorf("delta: changes of %s: %w", t.Dir, ErrNoTable)
	}
	latest := vs[len(vs)-1]
	if from >= 0 && from < vs[0] {
		return schema.Schema{}, nil, fmt.Errorf("delta: changes from version %d: the log of %s starts at version %d (older commits were cleaned up)", from, t.Dir, vs[0])
	}
	if to < 0 {
		to = latest
	}
	switch {
	case from < 0:
		return schema.Schema{}, nil, fmt.Errorf("delta: changes from version %d: versions start at 0", from)
	case from > latest:
		return schema.Schema{}, nil, fmt.Errorf("delta: changes from version %d: the latest version of %s is %d", from, t.Dir, latest)
	case to > latest:
		return schema.Schema{}, nil, fmt.Errorf("delta: changes up to version %d: the latest version of %s is %d", to, t.Dir, latest)
	case from > to:
		return schema.Schema{}, nil, fmt.Errorf("delta: changes from version %d to %d: the start is after the end", from, to)
	}
	snap, err := t.Snapshot(to)
	if err != nil {
		return schema.Schema{}, nil, err
	}
	if err := CheckReadable(snap); err != nil {
		return schema.Schema{}, nil, err
	}
	meta := snap.Metadata
	// The columns before the range (of the rows its first versions may remove), for the check
	// that every version of it reads with the columns before it.
	var prev schema.Schema
	hasPrev := false
	if from > 0 {
		if ps, err := t.Snapshot(from - 1); err == nil {
			prev, hasPrev = ps.Metadata.Schema, true
		}
	}
	// The range's commits, read first: a version that changed the columns so that the rows
	// before it do not read with them makes the range unreadable (the last such is named).
	commits := make([]*Commit, 0, to-from+1)
	for v := from; v <= to; v++ {
		c, err := t.ReadCommit(v)
		if err != nil {
			return schema.Schema{}, nil, err
		}
		commits = append(commits, c)
	}
	// Change data is recorded only while delta.enableChangeDataFeed is true: a range holding a
	// version without it is refused, as Delta's readers refuse it (rows made up from its files
	// would show rows that an UPDATE left alone as deleted and inserted again).
	first, err := t.Snapshot(from)
	if err != nil {
		return schema.Schema{}, nil, err
	}
	enabled := first.Metadata.ChangeDataFeed()
	for i, c := range commits {
		if i > 0 && c.Metadata != nil {
			enabled = c.Metadata.ChangeDataFeed()
		}
		if !enabled {
			return schema.Schema{}, nil, fmt.Errorf("delta: changes from version %d to %d of %s: %w at version %d (%s was not true then); read the versions where it was (`pipeline history` shows the commits that set it)", from, to, t.Dir, ErrNoChangeDataFeed, from+int64(i), ConfigEnableChangeDataFeed)
		}
	}
	breakAt := int64(-1)
	var breakOld, breakNew schema.Schema
	for i, c := range commits {
		if c.Metadata == nil {
			continue
		}
		if hasPrev && !readableAs(prev, c.Metadata.Schema) {
			breakAt, breakOld, breakNew = from+int64(i), prev, c.Metadata.Schema
		}
		prev, hasPrev = c.Metadata.Schema, true
	}
	if breakAt >= 0 {
		return schema.Schema{}, nil, t.feedBreakError(from, to, breakAt, breakOld, breakNew)
	}
	out := schema.Schema{Fields: append(append([]schema.Field(nil), meta.Schema.Fields...), FeedColumns()...)}
	width := len(out.Fields)
	changeType := []schema.Field{out.Fields[len(meta.Schema.Fields)]}
	var rows [][]any
	for i, c := range commits {
		v := from + int64(i)
		ver, ts := v, schema.Timestamp(c.Timestamp()*1000)
		// emit appends the rows of one file; with a fixed change type the file has no
		// _change_type column to read.
		emit := func(path string, pv map[string]string, fixed string, pick func([][]any) ([][]any, error)) error {
			var extra []schema.Field
			if fixed == "" {
				extra = changeType
			}
			fr, err := t.readTableFile(meta, path, pv, extra)
			if err == nil && pick != nil {
				fr, err = pick(fr)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delta: changes of version %d: its file %s is gone (VACUUM deletes the files that only versions older than the retention need, %s); read the changes from a later version: %w", v, path, ConfigDeletedFileRetention, err)
			}
			if err != nil {
				return fmt.Errorf("delta: changes of version %d: %w", v, err)
			}
			backing := make([]any, len(fr)*width)
			for i, r := range fr {
				row := backing[i*width : (i+1)*width : (i+1)*width]
				copy(row, r)
				if fixed != "" {
					row[len(r)] = fixed
				}
				row[width-2], row[width-1] = ver, ts
				rows = append(rows, row)
			}
			return nil
		}
		if len(c.CDCs) > 0 {
			for _, d := range c.CDCs {
				if err := emit(d.Path, d.PartitionValues, "", nil); err != nil {
					return schema.Schema{}, nil, err
				}
			}
			continue
		}
		if err := t.fileChanges(c, meta, emit); err != nil {
			return schema.Schema{}, nil, err
		}
	}
	return out, rows, nil
}

// ErrNoChangeDataFeed is wrapped by the error of Changes over a range holding a version at which
// the table had no change data feed (delta.enableChangeDataFeed not true), whose changes were
// not recorded.
var ErrNoChangeDataFeed = errors.New("change data was not recorded")

// ErrFeedSchemaChange is wrapped by the error of Changes over a range that holds a version whose
// columns cannot be read with those before it (a column dropped, renamed or retyped: a
// materialized view whose query changed); Delta's readers refuse such a range likewise.
var ErrFeedSchemaChange = errors.New("the change data feed cannot be read across a change of columns")

// readableAs says whether rows of schema old read as rows of schema cur: every column of old is
// in cur with its type (cur may add columns, which the old rows read as NULL: an additive change,
// as schema evolution makes).
func readableAs(old, cur schema.Schema) bool {
	for _, f := range old.Fields {
		if i := cur.Index(f.Name); i < 0 || !cur.Fields[i].Type.Equal(f.Type) {
			return false
		}
	}
	return true
}

// FeedSchemaChangeError is the error of Changes over a range holding Version, the last version
// that changed the columns so that the rows before it do not read with them; it wraps
// ErrFeedSchemaChange.
type FeedSchemaChangeError struct {
	Version int64
	msg     string
}

// Error names the range, the version, its columns before and after, and where the readable
// changes start.
func (e *FeedSchemaChangeError) Error() string { return e.msg }

// Unwrap returns ErrFeedSchemaChange.
func (e *FeedSchemaChangeError) Unwrap() error { return ErrFeedSchemaChange }

// feedBreakError is Changes's error for the range from..to, in which version at replaced the
// columns old with cur.
func (t *Table) feedBreakError(from, to, at int64, old, cur schema.Schema) error {
	after := fmt.Sprintf("read the changes from version %d on", at+1)
	if at == to {
		after = fmt.Sprintf("the changes after it start at version %d", at+1)
	}
	return &FeedSchemaChangeError{Version: at, msg: fmt.Sprintf("delta: changes from version %d to %d of %s: version %d changed the columns from (%s) to (%s): %v; %s", from, to, t.Dir, at, old.DDL(), cur.DDL(), ErrFeedSchemaChange, after)}
}

// fileChanges emits the change rows of a commit without cdc files (see Changes): per remove with
// dataChange, the rows of its logical file or, when the commit adds the same data file again,
// the rows the new deletion vector deletes; per add with dataChange that is not such a re-add,
// its live rows, and for a re-add the rows its DV no longer deletes.
func (t *Table) fileChanges(c *Commit, meta Metadata, emit func(path string, pv map[string]string, fixed string, pick func([][]any) ([][]any, error)) error) error {
	readded := map[string]Add{}
	for _, a := range c.Adds {
		if a.DataChange {
			readded[a.Path] = a
		}
	}
	paired := map[string]bool{}
	for _, r := range c.Removes {
		if !r.DataChange {
			continue
		}
		pv := r.PartitionValues
		if len(pv) < len(meta.PartitionColumns) {
			// A remove without extendedFileMetadata: take the values from the add.
			prev, err := t.Snapshot(c.Version - 1)
			if err != nil {
				return err
			}
			for _, a := range prev.Files {
				if a.Path == r.Path {
					pv = a.PartitionValues
				}
			}
		}
		old, err := t.ReadDeletionVector(r.DeletionVector)
		if err != nil {
			return fmt.Errorf("delta: changes of version %d: %w (removed file %s)", c.Version, err, r.Path)
		}
		pick := func(rows [][]any) ([][]any, error) { return keepRows(rows, old, nil, r.Path) }
		if a, ok := readded[r.Path]; ok {
			paired[r.Path] = true
			cur, err := t.ReadDeletionVector(a.DeletionVector)
			if err != nil {
				return fmt.Errorf("delta: changes of version %d: %w (data file %s)", c.Version, err, a.Path)
			}
			deleted := DVDifference(old, cur)
			if len(deleted) == 0 {
				continue
			}
			pick = func(rows [][]any) ([][]any, error) { return keepRows(rows, nil, deleted, r.Path) }
		}
		if err := emit(r.Path, pv, ChangeDelete, pick); err != nil {
			return err
		}
	}
	for _, a := range c.Adds {
		if !a.DataChange {
			continue
		}
		cur, err := t.ReadDeletionVector(a.DeletionVector)
		if err != nil {
			return fmt.Errorf("delta: changes of version %d: %w (data file %s)", c.Version, err, a.Path)
		}
		pick := func(rows [][]any) ([][]any, error) { return keepRows(rows, cur, nil, a.Path) }
		if paired[a.Path] {
			var old []uint64
			for _, r := range c.Removes {
				if r.Path == a.Path {
					if old, err = t.ReadDeletionVector(r.DeletionVector); err != nil {
						return fmt.Errorf("delta: changes of version %d: %w (removed file %s)", c.Version, err, r.Path)
					}
				}
			}
			restored := DVDifference(cur, old)
			if len(restored) == 0 {
				continue
			}
			pick = func(rows [][]any) ([][]any, error) { return keepRows(rows, nil, restored, a.Path) }
		}
		if err := emit(a.Path, a.PartitionValues, ChangeInsert, pick); err != nil {
			return err
		}
	}
	return nil
}

// keepRows selects rows of a data file by physical position: those not in drop, or, when only is
// not nil, those in only (both ascending). A position past the end of the file is an error.
func keepRows(rows [][]any, drop, only []uint64, path string) ([][]any, error) {
	set := drop
	if only != nil {
		set = only
	}
	if len(set) > 0 && set[len(set)-1] >= uint64(len(rows)) {
		return nil, fmt.Errorf("delta: a deletion vector of %s names row %d, but the file has %d rows", path, set[len(set)-1], len(rows))
	}
	if only != nil {
		out := make([][]any, len(only))
		for i, p := range only {
			out[i] = rows[p]
		}
		return out, nil
	}
	if len(drop) == 0 {
		return rows, nil
	}
	out := make([][]any, 0, len(rows)-len(drop))
	d := 0
	for i, r := range rows {
		if d < len(drop) && drop[d] == uint64(i) {
			d++
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
