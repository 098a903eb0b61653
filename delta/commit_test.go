package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"tributary/schema"
)

// TestCreateTableLog checks the commit file of a new table line by line against Delta
// PROTOCOL.md ("Delta Log Entries", "Change Metadata", "Commit Provenance Information").
func TestCreateTableLog(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, amount DECIMAL(10,2)")
	tbl := createTable(t, s)
	data, err := os.ReadFile(filepath.Join(tbl.Dir, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d action lines, want commitInfo, protocol, metaData:\n%s", len(lines), data)
	}
	var actions []map[string]map[string]any
	for _, ln := range lines {
		var a map[string]map[string]any
		if err := json.Unmarshal([]byte(ln), &a); err != nil {
			t.Fatalf("line %q: %v", ln, err)
		}
		actions = append(actions, a)
	}
	ci := actions[0]["commitInfo"]
	if ci == nil || ci["operation"] != "CREATE TABLE" || ci["engineInfo"] != "tributary" || ci["timestamp"].(float64) <= 0 || ci["isBlindAppend"] != true {
		t.Errorf("commitInfo %v", ci)
	}
	if _, ok := ci["readVersion"]; ok {
		t.Errorf("a new table's commitInfo has a readVersion: %v", ci)
	}
	if p := actions[1]["protocol"]; p == nil || p["minReaderVersion"] != 1.0 || p["minWriterVersion"] != 4.0 {
		t.Errorf("protocol %v, want 1/4", p)
	}
	md := actions[2]["metaData"]
	if md == nil {
		t.Fatalf("third line %v is not metaData", actions[2])
	}
	if id, _ := md["id"].(string); len(id) != 36 {
		t.Errorf("metaData id %q is not a UUID", md["id"])
	}
	if fmt.Sprint(md["format"]) != "map[options:map[] provider:parquet]" {
		t.Errorf("format %v", md["format"])
	}
	if md["schemaString"] != s.SparkJSON() {
		t.Errorf("schemaString %v, want %s", md["schemaString"], s.SparkJSON())
	}
	if fmt.Sprint(md["partitionColumns"]) != "[]" || md["createdTime"].(float64) <= 0 {
		t.Errorf("partitionColumns %v createdTime %v", md["partitionColumns"], md["createdTime"])
	}
	if fmt.Sprint(md["configuration"]) != "map[delta.enableChangeDataFeed:true]" {
		t.Errorf("configuration %v", md["configuration"])
	}
}

func TestCommitActionsRoundTrip(t *testing.T) {
	t.Parallel()
	tbl := createTable(t, mustDDL(t, "id BIGINT, p STRING"), "p")
	snap, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	a := Add{Path: "p=x/f.parquet", PartitionValues: map[string]string{"p": "x"}, Size: 10, ModificationTime: 5, DataChange: true, Stats: `{"numRecords":4}`}
	tx := tbl.Begin(snap)
	tx.Add(a)
	tx.AddCDC(CDC{Path: "_change_data/c.parquet", Size: 3})
	tx.SetAppTxn("app", 7)
	tx.SetCommitInfo(map[string]any{"pipelineUpdate": "u1", "batch": 3, "operation": "ignored"}, map[string]string{"numFiles": "1"})
	v, err := tx.Commit("WRITE", map[string]any{"mode": "Append", "partitionBy": []string{"p"}})
	if err != nil || v != 1 {
		t.Fatalf("commit: %d, %v", v, err)
	}
	c, err := tbl.ReadCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 1 || len(c.Adds) != 1 || c.Adds[0].Path != a.Path || c.Adds[0].Stats != a.Stats || c.Adds[0].PartitionValues["p"] != "x" {
		t.Errorf("adds %+v", c.Adds)
	}
	if len(c.CDCs) != 1 || c.CDCs[0].PartitionValues == nil || c.CDCs[0].DataChange {
		t.Errorf("cdcs %+v: want partitionValues {} and dataChange false", c.CDCs)
	}
	if len(c.Txns) != 1 || c.Txns[0].AppID != "app" || c.Txns[0].Version != 7 || c.Txns[0].LastUpdated == 0 {
		t.Errorf("txns %+v", c.Txns)
	}
	info := c.Info
	if info.Operation != "WRITE" || info.EngineInfo != "tributary" || info.ReadVersion == nil || *info.ReadVersion != 0 ||
		info.IsBlindAppend == nil || *info.IsBlindAppend || info.OperationMetrics["numFiles"] != "1" {
		t.Errorf("commitInfo %+v", info)
	}
	// Spark's convention: operation parameters are strings, JSON text for other values.
	if info.OperationParameters["mode"] != "Append" || info.OperationParameters["partitionBy"] != `["p"]` {
		t.Errorf("operationParameters %v", info.OperationParameters)
	}
	if info.Extra["pipelineUpdate"] != "u1" || info.Extra["batch"] != json.Number("3") {
		t.Errorf("extra %v", info.Extra)
	}
	if _, ok := info.Extra["operation"]; ok {
		t.Errorf("an Extra key shadowed a commitInfo field: %v", info.Extra)
	}
	if c.Timestamp() != info.Timestamp {
		t.Errorf("Timestamp() %d, want commitInfo.timestamp %d", c.Timestamp(), info.Timestamp)
	}
	// The add line has partitionValues written even when empty; check the raw text.
	raw, _ := os.ReadFile(tbl.commitPath(1))
	if !strings.Contains(string(raw), `"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":3,"dataChange":false}`) {
		t.Errorf("cdc line not as Delta PROTOCOL.md's example:\n%s", raw)
	}
	if !strings.HasPrefix(string(raw), `{"commitInfo":`) {
		t.Errorf("the commit does not start with commitInfo:\n%s", raw)
	}
}

func TestSnapshotReplay(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	_, a1 := appendRows(t, tbl, [][]any{{int64(1)}, {int64(2)}})
	_, a2 := appendRows(t, tbl, [][]any{{int64(3)}})
	// Version 3 replaces a1 by a3.
	snap2, err := tbl.Snapshot(-1)
	if err != nil {
		t.Fatal(err)
	}
	a3, err := tbl.WriteFile(s, [][]any{{int64(10)}, {int64(20)}, {int64(30)}})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(snap2)
	tx.Remove(tbl.RemoveFor(a1, 0))
	tx.Add(a3)
	if v, err := tx.Commit("MERGE", nil); err != nil || v != 3 {
		t.Fatalf("commit: %d %v", v, err)
	}
	tests := []struct {
		version   int64
		wantFiles []Add
		wantRows  int64
	}{
		{0, nil, 0},
		{1, []Add{a1}, 2},
		{2, []Add{a1, a2}, 3},
		{3, []Add{a2, a3}, 4},
		{-1, []Add{a2, a3}, 4},
	}
	for _, tc := range tests {
		snap, err := New(tbl.Dir).Snapshot(tc.version) // a fresh Table: full replay
		if err != nil {
			t.Fatal(err)
		}
		cached, err := tbl.Snapshot(tc.version) // the cached Table
		if err != nil {
			t.Fatal(err)
		}
		for _, sn := range []*Snapshot{snap, cached} {
			var paths, want []string
			for _, f := range sn.Files {
				paths = append(paths, f.Path)
			}
			for _, f := range tc.wantFiles {
				want = append(want, f.Path)
			}
			if fmt.Sprint(paths) != fmt.Sprint(want) {
				t.Errorf("version %d: files %v, want %v", tc.version, paths, want)
			}
			if sn.NumRecords() != tc.wantRows {
				t.Errorf("version %d: NumRecords %d, want %d", tc.version, sn.NumRecords(), tc.wantRows)
			}
			if !sn.Metadata.Schema.Equal(s) || sn.Protocol != DefaultProtocol {
				t.Errorf("version %d: metadata %+v protocol %+v", tc.version, sn.Metadata, sn.Protocol)
			}
			c, _ := tbl.ReadCommit(sn.Version)
			if sn.Timestamp != c.Info.Timestamp || sn.Timestamp == 0 {
				t.Errorf("version %d: Timestamp %d, want the commitInfo timestamp %d", sn.Version, sn.Timestamp, c.Info.Timestamp)
			}
		}
	}
	rows, err := tbl.Rows(mustSnapshot(t, tbl, 3))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, rows, [][]any{{int64(3)}, {int64(10)}, {int64(20)}, {int64(30)}})
}

func mustSnapshot(t testing.TB, tbl *Table, v int64) *Snapshot {
	t.Helper()
	s, err := tbl.Snapshot(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSnapshotErrors(t *testing.T) {
	t.Parallel()
	empty := New(filepath.Join(t.TempDir(), "nothing"))
	if v, err := empty.LatestVersion(); v != -1 || err != nil {
		t.Errorf("LatestVersion of no table = %d, %v; want -1, nil", v, err)
	}
	if _, err := empty.Snapshot(-1); !errors.Is(err, ErrNoTable) {
		t.Errorf("Snapshot of no table: %v, want ErrNoTable", err)
	}
	if _, err := empty.ReadCommit(0); !errors.Is(err, ErrNoTable) {
		t.Errorf("ReadCommit of no table: %v, want ErrNoTable", err)
	}
	tbl := createTable(t, mustDDL(t, "id BIGINT"))
	if _, err := tbl.Snapshot(5); err == nil || !strings.Contains(err.Error(), "the latest version is 0") {
		t.Errorf("Snapshot(5): %v", err)
	}
	if err := os.WriteFile(tbl.commitPath(1), []byte("{\"add\": nope}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Snapshot(-1); err == nil || !strings.Contains(err.Error(), "00000000000000000001.json: line 1") {
		t.Errorf("malformed commit: %v", err)
	}
}

func TestAppTxn(t *testing.T) {
	t.Parallel()
	tbl := createTable(t, mustDDL(t, "id BIGINT"))
	for i, step := range []struct {
		app     string
		version int64
	}{{"flow-a", 1}, {"flow-b", 10}, {"flow-a", 2}} {
		snap := mustSnapshot(t, tbl, -1)
		tx := tbl.Begin(snap)
		tx.SetAppTxn(step.app, step.version)
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	snap := mustSnapshot(t, tbl, -1)
	if fmt.Sprint(snap.AppTxns) != "map[flow-a:2 flow-b:10]" {
		t.Errorf("AppTxns %v", snap.AppTxns)
	}
	if v, ok := snap.AppTxn("flow-b"); !ok || v != 10 {
		t.Errorf("AppTxn(flow-b) = %d, %v", v, ok)
	}
	if _, ok := mustSnapshot(t, tbl, 1).AppTxn("flow-b"); ok {
		t.Errorf("version 1 knows flow-b, committed at version 2")
	}
}

// TestCommitConflict commits two transactions read from the same snapshot: the first wins
// version 2, and the second either commits as version 3 or fails with ErrConflict.
func TestCommitConflict(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tests := []struct {
		name     string
		first    func(tbl *Table, tx *Transaction, live Add)
		second   func(tbl *Table, tx *Transaction, live Add)
		conflict string // "" when the second commits as version 3
	}{
		{
			name:   "appends retry",
			first:  func(tbl *Table, tx *Transaction, live Add) { tx.Add(newFile(t, tbl, s)) },
			second: func(tbl *Table, tx *Transaction, live Add) { tx.Add(newFile(t, tbl, s)) },
		},
		{
			name:   "append after a delete retries",
			first:  func(tbl *Table, tx *Transaction, live Add) { tx.Remove(tbl.RemoveFor(live, 0)) },
			second: func(tbl *Table, tx *Transaction, live Add) { tx.Add(newFile(t, tbl, s)) },
		},
		{
			name:  "both remove the same file",
			first: func(tbl *Table, tx *Transaction, live Add) { tx.Remove(tbl.RemoveFor(live, 0)) },
			second: func(tbl *Table, tx *Transaction, live Add) {
				tx.Remove(tbl.RemoveFor(live, 0))
				tx.Add(newFile(t, tbl, s))
			},
			conflict: "removed file " + "%s",
		},
		{
			name:     "same app txn",
			first:    func(tbl *Table, tx *Transaction, live Add) { tx.SetAppTxn("flow", 1) },
			second:   func(tbl *Table, tx *Transaction, live Add) { tx.SetAppTxn("flow", 1); tx.Add(newFile(t, tbl, s)) },
			conflict: `set txn version 1 for appId "flow"`,
		},
		{
			name:   "different app txns",
			first:  func(tbl *Table, tx *Transaction, live Add) { tx.SetAppTxn("flow-a", 1) },
			second: func(tbl *Table, tx *Transaction, live Add) { tx.SetAppTxn("flow-b", 1) },
		},
		{
			name: "metadata changed",
			first: func(tbl *Table, tx *Transaction, live Add) {
				tx.SetMetadata(Metadata{Schema: mustDDL(t, "id BIGINT, x STRING")})
			},
			second:   func(tbl *Table, tx *Transaction, live Add) { tx.Add(newFile(t, tbl, s)) },
			conflict: "changed the table metadata",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tbl := createTable(t, s)
			_, live := appendRows(t, tbl, [][]any{{int64(1)}})
			snap := mustSnapshot(t, tbl, -1)
			tx1, tx2 := tbl.Begin(snap), tbl.Begin(snap)
			tc.first(tbl, tx1, live)
			tc.second(tbl, tx2, live)
			if v, err := tx1.Commit("FIRST", nil); err != nil || v != 2 {
				t.Fatalf("first commit: %d, %v", v, err)
			}
			v, err := tx2.Commit("SECOND", nil)
			if tc.conflict == "" {
				if err != nil || v != 3 {
					t.Fatalf("second commit: %d, %v; want version 3", v, err)
				}
				c, _ := tbl.ReadCommit(3)
				if c.Info.Operation != "SECOND" || *c.Info.ReadVersion != 1 {
					t.Errorf("version 3: %+v", c.Info)
				}
				return
			}
			want := tc.conflict
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, live.Path)
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), want) {
				t.Fatalf("second commit: %d, %v; want ErrConflict naming version 2 and %q", v, err, want)
			}
			if latest, _ := tbl.LatestVersion(); latest != 2 {
				t.Errorf("latest version %d after a conflict, want 2", latest)
			}
		})
	}
}

func newFile(t testing.TB, tbl *Table, s schema.Schema) Add {
	t.Helper()
	a, err := tbl.WriteFile(s, [][]any{{int64(42)}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCreateConflict(t *testing.T) {
	t.Parallel()
	tbl := createTable(t, mustDDL(t, "id BIGINT"))
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: mustDDL(t, "id BIGINT")})
	if _, err := tx.Commit("CREATE TABLE", nil); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "version 0") {
		t.Errorf("second create: %v, want ErrConflict naming version 0", err)
	}
	if _, err := tbl.Begin(nil).Commit("CREATE TABLE", nil); err == nil || !strings.Contains(err.Error(), "needs SetMetadata") {
		t.Errorf("create without metadata: %v", err)
	}
}

// TestConcurrentAppends races goroutines that append from the same snapshot: put-if-absent
// gives each its own version.
func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	snap := mustSnapshot(t, tbl, -1)
	const n = 8
	versions := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := New(tbl.Dir) // as another process would
			a, err := other.WriteFile(s, [][]any{{int64(i)}})
			if err != nil {
				errs[i] = err
				return
			}
			tx := other.Begin(snap)
			tx.Add(a)
			<-start
			versions[i], errs[i] = tx.Commit("WRITE", nil)
		}()
	}
	close(start)
	wg.Wait()
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if seen[versions[i]] || versions[i] < 1 || versions[i] > n {
			t.Errorf("writer %d got version %d (versions %v)", i, versions[i], versions)
		}
		seen[versions[i]] = true
	}
	final := mustSnapshot(t, tbl, -1)
	if final.Version != n || len(final.Files) != n || final.NumRecords() != n {
		t.Errorf("final snapshot: version %d, %d files, %d rows; want %d each", final.Version, len(final.Files), final.NumRecords(), n)
	}
	entries, _ := os.ReadDir(tbl.logDir())
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file %s left in _delta_log", e.Name())
		}
	}
}

// TestConcurrentDeletes races goroutines that all remove the same file: exactly one wins.
func TestConcurrentDeletes(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	_, live := appendRows(t, tbl, [][]any{{int64(1)}})
	snap := mustSnapshot(t, tbl, -1)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx := New(tbl.Dir).Begin(snap)
			tx.Remove(tbl.RemoveFor(live, 0))
			<-start
			_, errs[i] = tx.Commit("DELETE", nil)
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrConflict):
			t.Errorf("loser error %v does not wrap ErrConflict", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d winners, want 1", wins)
	}
	if v, _ := tbl.LatestVersion(); v != 2 {
		t.Errorf("latest version %d, want 2", v)
	}
}

func TestCommitRules(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	t.Run("append-only table refuses removes", func(t *testing.T) {
		t.Parallel()
		tbl := New(t.TempDir())
		tx := tbl.Begin(nil)
		tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigAppendOnly: "true"}})
		if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
			t.Fatal(err)
		}
		snap := mustSnapshot(t, tbl, -1)
		if snap.Metadata.Configuration[ConfigEnableChangeDataFeed] != "true" {
			t.Errorf("configuration %v lacks the CDF default", snap.Metadata.Configuration)
		}
		_, live := appendRows(t, tbl, [][]any{{int64(1)}})
		tx = tbl.Begin(mustSnapshot(t, tbl, -1))
		tx.Remove(tbl.RemoveFor(live, 0))
		if _, err := tx.Commit("DELETE", nil); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("remove from append-only table: %v", err)
		}
	})
	t.Run("partition column must exist", func(t *testing.T) {
		t.Parallel()
		tx := New(t.TempDir()).Begin(nil)
		tx.SetMetadata(Metadata{Schema: s, PartitionColumns: []string{"nope"}})
		if _, err := tx.Commit("CREATE TABLE", nil); err == nil || !strings.Contains(err.Error(), `partition column "nope"`) {
			t.Errorf("bad partition column: %v", err)
		}
	})
	t.Run("CDF setting kept when given", func(t *testing.T) {
		t.Parallel()
		tbl := New(t.TempDir())
		tx := tbl.Begin(nil)
		tx.SetMetadata(Metadata{Schema: s, Configuration: map[string]string{ConfigEnableChangeDataFeed: "false"}})
		tx.SetProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 2})
		if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
			t.Fatal(err)
		}
		snap := mustSnapshot(t, tbl, -1)
		if snap.Metadata.ChangeDataFeed() || snap.Protocol.MinWriterVersion != 2 {
			t.Errorf("metadata %+v protocol %+v", snap.Metadata, snap.Protocol)
		}
	})
	t.Run("unsupported writer version", func(t *testing.T) {
		t.Parallel()
		tbl := createTable(t, s)
		tx := tbl.Begin(mustSnapshot(t, tbl, -1))
		tx.SetProtocol(Protocol{MinReaderVersion: 2, MinWriterVersion: 5})
		if _, err := tx.Commit("SET TBLPROPERTIES", nil); err == nil || !strings.Contains(err.Error(), "writer version 5") {
			t.Errorf("writer version 5: %v", err)
		}
	})
	t.Run("commit twice", func(t *testing.T) {
		t.Parallel()
		tbl := createTable(t, s)
		tx := tbl.Begin(mustSnapshot(t, tbl, -1))
		if _, err := tx.Commit("WRITE", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit("WRITE", nil); err == nil {
			t.Errorf("a second Commit of the same transaction succeeded")
		}
	})
}
