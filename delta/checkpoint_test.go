package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// copyDir copies a folder tree (tests only).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if de.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkpointFileRows reads every row of a checkpoint file with the checkpoint schema.
func checkpointFileRows(t testing.TB, name string) []cpReadRow {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewGenericReader[cpReadRow](pf)
	out := make([]cpReadRow, pf.NumRows())
	if n, err := r.Read(out); n != len(out) || (err != nil && err != io.EOF) {
		t.Fatalf("read %d of %d checkpoint rows: %v", n, len(out), err)
	}
	return out
}

func paths(files []Add) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	slices.Sort(out)
	return out
}

// TestCheckpointEveryInterval commits 25 versions to a table with the default
// delta.checkpointInterval (10) and checks that checkpoints 10 and 20 exist with the content
// Delta PROTOCOL.md "Checkpoints" requires (protocol, metaData, txn, the live adds, the
// unexpired removes; no commitInfo, no cdc), that _last_checkpoint names version 20 with its
// size and number of adds, that the Parquet schema is the protocol's "Checkpoint Schema", and
// that a reader starting from the checkpoints (and, after the JSON commits before version 20 are
// deleted, from checkpoint 20 alone) sees the same files, txns and rows.
func TestCheckpointEveryInterval(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING")
	tbl := createTable(t, s)
	var live []string
	var removed string
	for i := 1; i <= 25; i++ {
		snap := mustSnapshot(t, tbl, -1)
		a, err := tbl.WriteFile(s, [][]any{{int64(i), fmt.Sprintf("row %d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		tx.Add(a)
		tx.SetAppTxn("app", int64(i))
		if i == 15 { // remove the first file: a tombstone in checkpoint 20
			tx.Remove(tbl.RemoveFor(snap.Files[0], 0))
			removed = snap.Files[0].Path
			live = live[1:]
		}
		if v, err := tx.Commit("WRITE", nil); err != nil || v != int64(i) {
			t.Fatalf("commit %d: version %d, %v", i, v, err)
		}
		live = append(live, a.Path)
	}
	slices.Sort(live)
	for v := int64(1); v <= 25; v++ {
		_, err := os.Stat(filepath.Join(tbl.Dir, LogDir, fmt.Sprintf("%020d.checkpoint.parquet", v)))
		if (v == 10 || v == 20) != (err == nil) {
			t.Errorf("version %d: checkpoint file: %v", v, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(tbl.Dir, LogDir, LastCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var lc map[string]any
	if err := json.Unmarshal(b, &lc); err != nil {
		t.Fatal(err)
	}
	// Checkpoint 20: protocol, metaData, txn "app", 19 live adds, 1 remove.
	if lc["version"] != 20.0 || lc["size"] != 23.0 || lc["numOfAddFiles"] != 19.0 || lc["sizeInBytes"] == nil {
		t.Errorf("_last_checkpoint %s", b)
	}

	rows := checkpointFileRows(t, filepath.Join(tbl.Dir, LogDir, "00000000000000000020.checkpoint.parquet"))
	var nProto, nMeta, nTxn, nAdd, nRemove int
	for _, r := range rows {
		switch {
		case r.Protocol != nil:
			nProto++
			if *r.Protocol.MinReaderVersion != 1 || *r.Protocol.MinWriterVersion != 4 || r.Protocol.ReaderFeatures != nil {
				t.Errorf("protocol row %+v", r.Protocol)
			}
		case r.MetaData != nil:
			nMeta++
			if *r.MetaData.SchemaString != s.SparkJSON() || str(r.MetaData.Configuration[ConfigEnableChangeDataFeed]) != "true" || *r.MetaData.Format.Provider != "parquet" {
				t.Errorf("metaData row %+v", r.MetaData)
			}
		case r.Txn != nil:
			nTxn++
			if *r.Txn.AppID != "app" || *r.Txn.Version != 20 {
				t.Errorf("txn row %+v", r.Txn)
			}
		case r.Add != nil:
			nAdd++
			st, err := ParseStats(str(r.Add.Stats), s)
			if err != nil || st.NumRecords != 1 || *r.Add.DataChange {
				t.Errorf("add row %s: stats %+v %v, dataChange %v", *r.Add.Path, st, err, *r.Add.DataChange)
			}
		case r.Remove != nil:
			nRemove++
			if *r.Remove.Path != removed || *r.Remove.DeletionTimestamp == 0 || !*r.Remove.ExtendedFileMetadata {
				t.Errorf("remove row %+v", r.Remove)
			}
		default:
			t.Errorf("a checkpoint row with no action: %+v", r)
		}
	}
	if nProto != 1 || nMeta != 1 || nTxn != 1 || nAdd != 19 || nRemove != 1 {
		t.Errorf("checkpoint 20 has %d protocol, %d metaData, %d txn, %d add, %d remove rows; want 1, 1, 1, 19, 1", nProto, nMeta, nTxn, nAdd, nRemove)
	}
	checkCheckpointSchema(t, filepath.Join(tbl.Dir, LogDir, "00000000000000000020.checkpoint.parquet"))

	// A fresh reader of version 25 starts from checkpoint 20; of version 15 from checkpoint 10;
	// of version 5 from version 0.
	for _, v := range []int64{25, 15, 5} {
		snap := mustSnapshot(t, New(tbl.Dir), v)
		want := v - map[bool]int64{true: 1, false: 0}[v >= 15]
		if int64(len(snap.Files)) != want || snap.AppTxns["app"] != v {
			t.Errorf("version %d: %d files, txn %d; want %d files, txn %d", v, len(snap.Files), snap.AppTxns["app"], want, v)
		}
	}

	// Clean up the log before checkpoint 20 (as Delta's metadata cleanup would): the table
	// still reads, from the checkpoint, by us and by deltacheck.
	for v := 0; v < 20; v++ {
		if err := os.Remove(filepath.Join(tbl.Dir, LogDir, fmt.Sprintf("%020d.json", v))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(tbl.Dir, LogDir, "00000000000000000010.checkpoint.parquet")); err != nil {
		t.Fatal(err)
	}
	fresh := New(tbl.Dir)
	snap := mustSnapshot(t, fresh, -1)
	if got := paths(snap.Files); !slices.Equal(got, live) {
		t.Errorf("files after cleanup %v, want %v", got, live)
	}
	if len(snap.Tombstones) != 1 || snap.Tombstones[0].Path != removed {
		t.Errorf("tombstones %+v, want %s", snap.Tombstones, removed)
	}
	got, err := fresh.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	for i := 2; i <= 25; i++ {
		want = append(want, []any{int64(i), fmt.Sprintf("row %d", i)})
	}
	if g, w := canonical(s, got), canonical(s, want); !slices.Equal(g, w) {
		t.Errorf("rows %v, want %v", g, w)
	}
	if _, err := fresh.Snapshot(15); err == nil || !strings.Contains(err.Error(), "no longer available") || !strings.Contains(err.Error(), "starts at version 20") {
		t.Errorf("Snapshot(15) after cleanup: %v", err)
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
		if g, w := canonical(s, theirs), canonical(s, want); !slices.Equal(g, w) {
			t.Errorf("deltacheck rows %v, want %v", g, w)
		}
	}
}

// checkCheckpointSchema checks the Parquet schema of a checkpoint against Delta PROTOCOL.md
// "Checkpoint Schema": struct columns txn, add, remove, metaData, protocol with the listed fields
// and types (maps as MAP, partitionColumns as LIST), and no commitInfo or cdc column.
func checkCheckpointSchema(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"txn.appId": "BYTE_ARRAY STRING", "txn.version": "INT64",
		"add.path": "BYTE_ARRAY STRING", "add.partitionValues": "MAP", "add.size": "INT64", "add.modificationTime": "INT64",
		"add.dataChange": "BOOLEAN", "add.stats": "BYTE_ARRAY STRING", "add.tags": "MAP",
		"remove.path": "BYTE_ARRAY STRING", "remove.deletionTimestamp": "INT64", "remove.dataChange": "BOOLEAN",
		"remove.extendedFileMetadata": "BOOLEAN", "remove.partitionValues": "MAP", "remove.size": "INT64",
		"metaData.id": "BYTE_ARRAY STRING", "metaData.format.provider": "BYTE_ARRAY STRING", "metaData.format.options": "MAP",
		"metaData.schemaString": "BYTE_ARRAY STRING", "metaData.partitionColumns": "LIST", "metaData.configuration": "MAP",
		"metaData.createdTime":      "INT64",
		"protocol.minReaderVersion": "INT32", "protocol.minWriterVersion": "INT32",
	}
	root := pf.Root()
	for _, top := range []string{"commitInfo", "cdc"} {
		if root.Column(top) != nil {
			t.Errorf("checkpoint has a %s column", top)
		}
	}
	for p, w := range want {
		c := root
		for _, part := range strings.Split(p, ".") {
			if c = c.Column(part); c == nil {
				break
			}
		}
		if c == nil {
			t.Errorf("checkpoint has no column %s", p)
			continue
		}
		got := ""
		lt := ""
		if l := c.Type().LogicalType(); l != nil && l.Value != nil {
			lt = strings.ToUpper(l.String())
		}
		switch {
		case !c.Leaf():
			got = lt // MAP, LIST, or "" for a struct
		case strings.HasPrefix(lt, "STRING"):
			got = c.Type().Kind().String() + " STRING"
		default:
			got = c.Type().Kind().String()
		}
		if !strings.HasPrefix(got, w) {
			t.Errorf("checkpoint column %s is %q, want %s", p, got, w)
		}
	}
}

// TestCheckpointOfDeltaRsLog writes our checkpoints for the log of delta-rs's "checkpoints"
// table (Databricks, 13 commits, partitioned by date, nested stats; its data files are not part
// of the test data) and checks that a reader starting from them gets the snapshot that replaying
// the JSON commits gives: the same files with the same partition values, sizes and stats, the
// same metadata and protocol.
func TestCheckpointOfDeltaRsLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "testdata/checkpoints", dir)
	jsonReplay := mustSnapshot(t, New(dir), -1)
	if jsonReplay.Version != 12 || len(jsonReplay.Files) != 12 || jsonReplay.Metadata.PartitionColumns[0] != "date" {
		t.Fatalf("JSON replay: version %d, %d files, partition columns %v", jsonReplay.Version, len(jsonReplay.Files), jsonReplay.Metadata.PartitionColumns)
	}
	if err := New(dir).WriteCheckpoint(jsonReplay); err != nil {
		t.Fatal(err)
	}
	for v := 0; v < 12; v++ {
		os.Remove(filepath.Join(dir, LogDir, fmt.Sprintf("%020d.json", v)))
	}
	fromCp := mustSnapshot(t, New(dir), -1)
	if fromCp.Version != 12 || fromCp.Timestamp != jsonReplay.Timestamp || fromCp.Protocol != jsonReplay.Protocol ||
		fromCp.Metadata.ID != jsonReplay.Metadata.ID || !fromCp.Metadata.Schema.Equal(jsonReplay.Metadata.Schema) ||
		fromCp.Metadata.CreatedTime != jsonReplay.Metadata.CreatedTime || !slices.Equal(fromCp.Metadata.PartitionColumns, []string{"date"}) {
		t.Errorf("snapshot from checkpoint %+v\nwant %+v", fromCp, jsonReplay)
	}
	byPath := map[string]Add{}
	for _, a := range jsonReplay.Files {
		byPath[a.Path] = a
	}
	for _, a := range fromCp.Files {
		w, ok := byPath[a.Path]
		a.DataChange = w.DataChange // checkpoints write dataChange false
		if !ok || a.Size != w.Size || a.ModificationTime != w.ModificationTime || a.Stats != w.Stats || a.PartitionValues["date"] != w.PartitionValues["date"] {
			t.Errorf("file %+v, want %+v", a, w)
		}
	}
	if len(fromCp.Files) != len(jsonReplay.Files) {
		t.Errorf("%d files, want %d", len(fromCp.Files), len(jsonReplay.Files))
	}
}

// TestCheckpointMultiPartAndFallback splits a checkpoint into the two parts of a multi-part
// checkpoint (Delta PROTOCOL.md "Multi-part checkpoint") and checks that it is read, and that a
// multi-part checkpoint with a part missing is ignored (the reader replays the JSON commits).
func TestCheckpointMultiPartAndFallback(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	for i := 0; i < 10; i++ {
		appendRows(t, tbl, [][]any{{int64(i)}})
	}
	classic := filepath.Join(tbl.Dir, LogDir, "00000000000000000010.checkpoint.parquet")
	rows := checkpointFileRows(t, classic)
	write := func(name string, rows []cpReadRow) {
		f, err := os.Create(filepath.Join(tbl.Dir, LogDir, name))
		if err != nil {
			t.Fatal(err)
		}
		w := parquet.NewGenericWriter[cpRow](f)
		for _, r := range rows {
			if _, err := w.Write([]cpRow{{Txn: r.Txn, Add: r.Add, Remove: r.Remove, MetaData: r.MetaData, Protocol: r.Protocol}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := os.Remove(classic); err != nil {
		t.Fatal(err)
	}
	write("00000000000000000010.checkpoint.0000000001.0000000002.parquet", rows[:5])
	write("00000000000000000010.checkpoint.0000000002.0000000002.parquet", rows[5:])
	for v := 0; v < 10; v++ {
		os.Rename(filepath.Join(tbl.Dir, LogDir, fmt.Sprintf("%020d.json", v)), filepath.Join(tbl.Dir, fmt.Sprintf("saved-%d.json", v)))
	}
	snap := mustSnapshot(t, New(tbl.Dir), -1)
	if len(snap.Files) != 10 {
		t.Errorf("from the multi-part checkpoint: %d files, want 10", len(snap.Files))
	}
	// Part 2 missing, the JSON commits back: the reader ignores the incomplete checkpoint.
	os.Remove(filepath.Join(tbl.Dir, LogDir, "00000000000000000010.checkpoint.0000000002.0000000002.parquet"))
	if _, err := New(tbl.Dir).Snapshot(-1); err == nil || !strings.Contains(err.Error(), "starts at version 10") {
		t.Errorf("incomplete checkpoint and no log: %v", err)
	}
	for v := 0; v < 10; v++ {
		os.Rename(filepath.Join(tbl.Dir, fmt.Sprintf("saved-%d.json", v)), filepath.Join(tbl.Dir, LogDir, fmt.Sprintf("%020d.json", v)))
	}
	snap = mustSnapshot(t, New(tbl.Dir), -1)
	if len(snap.Files) != 10 {
		t.Errorf("from the JSON commits: %d files, want 10", len(snap.Files))
	}
}

// TestCheckpointDropsExpiredTombstones: a remove older than delta.deletedFileRetentionDuration
// is left out of the checkpoint; a recent one is kept (Delta PROTOCOL.md, "Checkpoints").
func TestCheckpointDropsExpiredTombstones(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigDeletedFileRetention: "interval 1 hours", ConfigCheckpointInterval: "3"}})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	_, old := appendRows(t, tbl, [][]any{{int64(1)}})
	_, recent := appendRows(t, tbl, [][]any{{int64(2)}})
	snap := mustSnapshot(t, tbl, -1)
	tx = tbl.Begin(snap)
	tx.Remove(tbl.RemoveFor(old, time.Now().Add(-2*time.Hour).UnixMilli()), tbl.RemoveFor(recent, 0))
	if v, err := tx.Commit("DELETE", nil); err != nil || v != 3 {
		t.Fatalf("commit: %d %v", v, err)
	}
	var removes []string
	for _, r := range checkpointFileRows(t, filepath.Join(tbl.Dir, LogDir, "00000000000000000003.checkpoint.parquet")) {
		if r.Remove != nil {
			removes = append(removes, *r.Remove.Path)
		}
	}
	if !slices.Equal(removes, []string{recent.Path}) {
		t.Errorf("checkpoint removes %v, want only %s", removes, recent.Path)
	}
}

// TestCheckpointCache: a second Table on the same folder gets the files of a checkpoint this
// process parsed before, replays commits after it without changing what later readers get, and
// a table re-created in the folder (a new checkpoint at the same version) is read anew.
func TestCheckpointCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustDDL(t, "id BIGINT")
	build := func(first int64) {
		tbl := New(dir)
		tx := tbl.Begin(nil)
		tx.SetMetadata(Metadata{Schema: s})
		if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
			t.Fatal(err)
		}
		for i := range int64(3) {
			appendRows(t, tbl, [][]any{{first + i}})
		}
		if err := tbl.WriteCheckpoint(mustSnapshot(t, tbl, 3)); err != nil {
			t.Fatal(err)
		}
	}
	build(10)
	if got := ids(t, New(dir), 3); !slices.Equal(got, []int64{10, 11, 12}) {
		t.Fatalf("version 3: %v", got)
	}
	appendRows(t, New(dir), [][]any{{int64(13)}}) // version 4, replayed on a clone of the cached state
	if got := ids(t, New(dir), 4); !slices.Equal(got, []int64{10, 11, 12, 13}) {
		t.Fatalf("version 4: %v", got)
	}
	if got := ids(t, New(dir), 3); !slices.Equal(got, []int64{10, 11, 12}) {
		t.Fatalf("version 3 after version 4 was read: %v", got)
	}
	// The table is re-created in the same folder: its checkpoint at version 3 holds other files.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	build(20)
	if got := ids(t, New(dir), 3); !slices.Equal(got, []int64{20, 21, 22}) {
		t.Fatalf("re-created table, version 3: %v", got)
	}
}

// TestReadCommitCleanedUp: reading a commit older than the log (cleaned up after a checkpoint,
// as in delta-rs's checkpoint-cdf-table, whose log starts at version 3) is an error that names
// the first version left, as the change data feed's is, and still wraps fs.ErrNotExist; a
// version past the latest names the latest.
func TestReadCommitCleanedUp(t *testing.T) {
	t.Parallel()
	tab := New("testdata/checkpoint-cdf-table")
	_, err := tab.ReadCommit(0)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "version 0 is no longer in the log, which starts at version 3") {
		t.Errorf("ReadCommit(0): %v", err)
	}
	_, err = tab.ReadCommit(9)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "version 9 does not exist (latest is 5)") {
		t.Errorf("ReadCommit(9): %v", err)
	}
}
