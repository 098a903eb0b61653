package flows

import (
	"encoding/json"
	"errors"
	"fmt"

	"tributary/delta"
	"tributary/expectations"
	"tributary/schema"
	"tributary/spec"
)

// quarantineSchema is the schema of a dataset's quarantine table: the dataset's columns and
// spec.FailedExpectationsColumn.
func quarantineSchema(d *spec.Dataset) schema.Schema {
	fields := append(append([]schema.Field(nil), d.Schema.Fields...), schema.Field{Name: spec.FailedExpectationsColumn, Type: schema.Type{Kind: schema.String}, Nullable: true})
	return schema.Schema{Fields: fields}
}

// setupQuarantine creates the quarantine table of a dataset with quarantine expectations (as
// Setup creates a dataset's table) and checks the schema of an existing one.
func setupQuarantine(p *spec.Pipeline, d *spec.Dataset) error {
	if !d.Quarantines() {
		return nil
	}
	name := d.Name + spec.QuarantineSuffix
	want := quarantineSchema(d)
	t := delta.New(TableDir(p.Storage, name))
	snap, err := t.Snapshot(-1)
	if err == nil {
		if !snap.Metadata.Schema.Equal(want) && (d.Source == nil || !d.Source.InferSchema) { // an inferred schema evolves: the ingest flow brings it along
			return fmt.Errorf("dataset %s: %w: its quarantine table %s has (%s) but the spec now gives (%s)",
				d.Name, ErrSchemaChanged, name, snap.Metadata.Schema.DDL(), want.DDL())
		}
		return nil
	}
	if !errors.Is(err, delta.ErrNoTable) {
		return err
	}
	tx := t.Begin(nil)
	tx.SetMetadata(delta.Metadata{Name: name, Description: "rows of " + d.Name + " that violated a quarantine expectation", Schema: want,
		Configuration: map[string]string{"delta.enableChangeDataFeed": "true"}})
	if _, err := tx.Commit("CREATE TABLE", map[string]any{"isManaged": "true"}); err != nil && !errors.Is(err, delta.ErrConflict) {
		return err
	}
	return nil
}

// quarantine collects the quarantined rows of one ingest batch, chunk by chunk, in data files of
// the quarantine table's target size (one delta.DataWriter for the batch), and commits them to
// the dataset's quarantine table before the batch's own commit, with the same txn (app id, batch):
// a batch whose quarantine commit is in and whose own commit is not (a crash between the two) is
// replayed from its offsets file, the same files, and its quarantine rows are not written again.
type quarantine struct {
	table   *delta.Table
	snap    *delta.Snapshot
	meta    delta.Metadata    // the table's metadata, with the schema the rows are written with
	evolved bool              // meta's schema is new: the commit carries it
	dw      *delta.DataWriter // the batch's data files, from the first quarantined row on
	adds    []delta.Add       // dw's files, once finished
	rows    int64
}

// openQuarantine returns the quarantine of d, or nil when d has no quarantine expectation.
func openQuarantine(storage string, d *spec.Dataset) (*quarantine, error) {
	if !d.Quarantines() {
		return nil, nil
	}
	t := delta.New(TableDir(storage, d.Name+spec.QuarantineSuffix))
	snap, err := t.Snapshot(-1)
	if err != nil {
		return nil, err
	}
	return &quarantine{table: t, snap: snap, meta: snap.Metadata}, nil
}

// committed reports whether the quarantine table holds batch of appID.
func (q *quarantine) committed(appID string, batch int64) bool {
	return q != nil && q.snap.AppTxns[appID] >= batch
}

// write writes the quarantined rows (their first width values) with the names of the
// expectations each failed as a JSON array to the batch's quarantine data files. When d's schema
// evolved, the quarantine table's does too (d's schema is the same for every chunk of a batch).
// After an error, abort.
func (q *quarantine) write(rows []expectations.Quarantined, width int, d *spec.Dataset) error {
	if len(rows) == 0 {
		return nil
	}
	if q.dw == nil {
		if want := quarantineSchema(d); !q.meta.Schema.Equal(want) {
			q.meta.Schema, q.evolved = want, true
		}
		dw, err := q.table.NewDataWriter(q.meta)
		if err != nil {
			return err
		}
		q.dw = dw
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		names, _ := json.Marshal(r.Failed)
		out[i] = append(append(make([]any, 0, width+1), r.Row[:width]...), string(names))
	}
	if err := q.dw.Write(out); err != nil {
		return err
	}
	q.rows += int64(len(rows))
	return nil
}

// finish finishes the batch's quarantine data files, for commit; q may be nil. On error they are
// removed.
func (q *quarantine) finish() error {
	if q == nil || q.dw == nil {
		return nil
	}
	var err error
	q.adds, err = q.dw.Close()
	return err
}

// abort removes the quarantine data files of the batch, unless finish handed them over for
// commit; q may be nil.
func (q *quarantine) abort() {
	if q != nil && q.dw != nil {
		q.dw.Abort()
	}
}

// commit commits the written rows (their files finished by finish) with the batch's txn, unless
// the table already holds it.
func (q *quarantine) commit(appID string, batch int64) error {
	if q == nil || q.rows == 0 || q.committed(appID, batch) {
		return nil
	}
	tx := q.table.Begin(q.snap)
	if q.evolved {
		tx.SetMetadata(q.meta)
	}
	tx.Add(q.adds...)
	tx.SetAppTxn(appID, batch)
	tx.SetCommitInfo(nil, map[string]string{"numFiles": fmt.Sprint(len(q.adds)), "numOutputRows": fmt.Sprint(q.rows)})
	_, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "queryId": appID, "epochId": batch})
	return err
}

// replayFiles returns the files of the pending batch as its offsets file lists them, from the
// current listing; a file that is gone or changed cannot be replayed.
func replayFiles(ckpt string, batch int64, files []inputFile) ([]inputFile, error) {
	o, err := readOffsets(ckpt, batch)
	if err != nil {
		return nil, fmt.Errorf("batch %d is in the quarantine table but not in the dataset's table, and its offsets cannot be read to replay it: %w", batch, err)
	}
	byRel := make(map[string]inputFile, len(files))
	for _, f := range files {
		byRel[f.rel] = f
	}
	var out []inputFile
	for _, of := range o.Files {
		f, ok := byRel[of.Path]
		if !ok || f.size != of.Size || f.modTime != of.ModTime {
			return nil, fmt.Errorf("batch %d must be replayed (its quarantine rows are committed, its rows are not) but its file %s is gone or changed; run with --full-refresh of this dataset", batch, of.Path)
		}
		out = append(out, f)
	}
	return out, nil
}

// addBatch adds the metrics of one more ingest batch of an update to m (first: m is empty).
func (m *Metrics) addBatch(b Metrics, first bool) {
	if first {
		*m = b
		return
	}
	m.NumOutputRows += b.NumOutputRows
	m.NumUpsertedRows += b.NumUpsertedRows
	m.NumDeletedRows += b.NumDeletedRows
	m.Ties += b.Ties
	m.BadRecords += b.BadRecords
	m.ChangedFiles += b.ChangedFiles
	m.Unsettled += b.Unsettled
	m.Incomplete += b.Incomplete
	m.Files += b.Files
	m.Idle = m.Idle && b.Idle
	m.Quality.Add(b.Quality)
	if b.Version >= 0 {
		m.Version = b.Version
	}
	m.more = b.more
}
