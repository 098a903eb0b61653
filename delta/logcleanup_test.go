package delta

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// cleanupTable makes a table with one BIGINT column: version 0 creates it with configuration,
// versions 1..n each append the row {v}. Checkpoints are at every multiple of 10.
func cleanupTable(t *testing.T, n int, configuration map[string]string) *Table {
	t.Helper()
	tbl := New(t.TempDir())
	tx := tbl.Begin(nil)
	tx.SetMetadata(Metadata{Schema: mustDDL(t, "id BIGINT"), Configuration: configuration})
	if _, err := tx.Commit("CREATE TABLE", nil); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= n; v++ {
		appendRows(t, tbl, [][]any{{int64(v)}})
	}
	return tbl
}

// ageCommits sets the modification time of the commit files of versions from..to to at.
func ageCommits(t *testing.T, tbl *Table, from, to int64, at time.Time) {
	t.Helper()
	for v := from; v <= to; v++ {
		if err := os.Chtimes(tbl.commitPath(v), at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// logNames lists _delta_log, without _last_checkpoint.
func logNames(t *testing.T, tbl *Table) []string {
	t.Helper()
	es, err := os.ReadDir(tbl.logDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.Name() != LastCheckpointFile {
			names = append(names, e.Name())
		}
	}
	return names
}

// ids reads the table's rows at version (latest when < 0) as their ids, sorted.
func ids(t *testing.T, tbl *Table, version int64) []int64 {
	t.Helper()
	snap, err := tbl.Snapshot(version)
	if err != nil {
		t.Fatalf("snapshot %d: %v", version, err)
	}
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, r := range rows {
		out = append(out, r[0].(int64))
	}
	slices.Sort(out)
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

func commitNames(from, to int64) []string {
	var out []string
	for v := from; v <= to; v++ {
		out = append(out, fmt.Sprintf("%020d.json", v))
	}
	return out
}

// TestCleanupExpiredLogs follows Delta PROTOCOL.md, "Metadata Cleanup": with versions 0-14 older
// than the 30-day default retention and 15-25 recent, the cutoff commit is 14 and the cutoff
// checkpoint 10, so the commits 0-9 go and the rest stays; the latest snapshot and time travel
// from version 10 on read as before, an older version fails naming where the log starts. Later,
// with everything expired, the cutoff checkpoint is 20: the commits 10-19 and checkpoint 10 go.
func TestCleanupExpiredLogs(t *testing.T) {
	t.Parallel()
	tbl := cleanupTable(t, 25, nil)
	now := time.Now()
	ageCommits(t, tbl, 0, 14, now.Add(-40*24*time.Hour))

	res, err := tbl.CleanupExpiredLogs(now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := commitNames(0, 9); res.Checkpoint != 10 || !slices.Equal(res.Files, want) {
		t.Fatalf("cleanup: checkpoint %d, deleted %v; want 10, %v", res.Checkpoint, res.Files, want)
	}
	want := append([]string{fmt.Sprintf("%020d.checkpoint.parquet", 10)}, commitNames(10, 10)...)
	want = append(want, commitNames(11, 19)...)
	want = append(want, fmt.Sprintf("%020d.checkpoint.parquet", 20))
	want = append(want, commitNames(20, 25)...)
	slices.Sort(want)
	if got := logNames(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("_delta_log after cleanup:\n%v\nwant\n%v", got, want)
	}
	for _, r := range []*Table{tbl, New(tbl.Dir)} { // the cleaning table (its cache) and a new reader
		if got := ids(t, r, -1); !slices.Equal(got, seq(1, 25)) {
			t.Fatalf("latest rows %v, want 1..25", got)
		}
		if got := ids(t, r, 12); !slices.Equal(got, seq(1, 12)) {
			t.Fatalf("rows at version 12 %v, want 1..12", got)
		}
	}
	if _, err := New(tbl.Dir).Snapshot(5); err == nil || !strings.Contains(err.Error(), "starts at version 10") {
		t.Fatalf("snapshot of version 5: %v, want an error naming the log's first version 10", err)
	}
	if _, err := tbl.ReadCommit(3); err == nil || !strings.Contains(err.Error(), "version 3 is no longer in the log, which starts at version 10") || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("ReadCommit(3): %v", err)
	}
	if res, err := tbl.CleanupExpiredLogs(now, nil); err != nil || res.Checkpoint != -1 || len(res.Files) != 0 {
		t.Fatalf("second cleanup: %+v, %v; want nothing deleted", res, err)
	}

	// A reader that cached version 12 before the next cleanup still reads the latest version.
	cached := New(tbl.Dir)
	if got := ids(t, cached, 12); !slices.Equal(got, seq(1, 12)) {
		t.Fatalf("rows at version 12 %v", got)
	}
	ageCommits(t, tbl, 15, 25, now.Add(-40*24*time.Hour))
	res, err = tbl.CleanupExpiredLogs(now, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := append([]string{fmt.Sprintf("%020d.checkpoint.parquet", 10)}, commitNames(10, 19)...)
	if res.Checkpoint != 20 || !slices.Equal(res.Files, wantFiles) {
		t.Fatalf("cleanup: checkpoint %d, deleted %v; want 20, %v", res.Checkpoint, res.Files, wantFiles)
	}
	want = append([]string{fmt.Sprintf("%020d.checkpoint.parquet", 20)}, commitNames(20, 25)...)
	slices.Sort(want)
	if got := logNames(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("_delta_log after the second cleanup:\n%v\nwant\n%v", got, want)
	}
	if got := ids(t, cached, -1); !slices.Equal(got, seq(1, 25)) {
		t.Fatalf("latest rows through a reader that cached version 12: %v, want 1..25", got)
	}
	// The table goes on: new commits, and a checkpoint at 30.
	for v := 26; v <= 31; v++ {
		appendRows(t, tbl, [][]any{{int64(v)}})
	}
	if got := ids(t, New(tbl.Dir), -1); !slices.Equal(got, seq(1, 31)) {
		t.Fatalf("rows after more commits %v, want 1..31", got)
	}
	if os.Getenv("DELTACHECK") != "" { // the independent reader, from the log as cleanup left it
		theirs := deltacheck(t, "rows", tbl.Dir)
		slices.Sort(theirs)
		var want []string
		for _, v := range seq(1, 31) {
			want = append(want, fmt.Sprintf(`{"id":%d}`, v))
		}
		slices.Sort(want)
		if !slices.Equal(theirs, want) {
			t.Errorf("deltacheck rows %v, want 1..31", theirs)
		}
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestCleanupExpiredLogsProperties: delta.logRetentionDuration sets the cutoff,
// delta.enableExpiredLogCleanup "false" turns cleanup off, and without a checkpoint at or before
// the cutoff commit nothing goes.
func TestCleanupExpiredLogsProperties(t *testing.T) {
	t.Parallel()
	now := time.Now()

	// Two hours old, beyond an hour's retention: versions 0-12; the checkpoint at 10 is the cutoff.
	short := cleanupTable(t, 15, map[string]string{ConfigLogRetention: "interval 1 hours"})
	ageCommits(t, short, 0, 12, now.Add(-2*time.Hour))
	if res, err := short.CleanupExpiredLogs(now, nil); err != nil || res.Checkpoint != 10 || !slices.Equal(res.Files, commitNames(0, 9)) {
		t.Fatalf("retention of an hour: %+v, %v; want checkpoint 10, commits 0-9 deleted", res, err)
	}
	// The default 30 days keeps commits two hours old.
	def := cleanupTable(t, 15, nil)
	ageCommits(t, def, 0, 12, now.Add(-2*time.Hour))
	if res, err := def.CleanupExpiredLogs(now, nil); err != nil || res.Checkpoint != -1 || len(res.Files) != 0 {
		t.Fatalf("default retention: %+v, %v; want nothing deleted", res, err)
	}
	off := cleanupTable(t, 15, map[string]string{ConfigLogRetention: "interval 1 hours", ConfigExpiredLogCleanup: "false"})
	ageCommits(t, off, 0, 15, now.Add(-2*time.Hour))
	if res, err := off.CleanupExpiredLogs(now, nil); err != nil || len(res.Files) != 0 {
		t.Fatalf("cleanup turned off: %+v, %v; want nothing deleted", res, err)
	}
	// Expired commits 0-8, but the first checkpoint is at 10: nothing to start the log from.
	early := cleanupTable(t, 15, map[string]string{ConfigLogRetention: "1h"})
	ageCommits(t, early, 0, 8, now.Add(-2*time.Hour))
	if res, err := early.CleanupExpiredLogs(now, nil); err != nil || len(res.Files) != 0 {
		t.Fatalf("no checkpoint before the cutoff: %+v, %v; want nothing deleted", res, err)
	}
	// A reader still reads from version 15: the cutoff commit is 15, not 25, so the checkpoint
	// at 10 (not 20) is where the log starts.
	kept := cleanupTable(t, 25, map[string]string{ConfigLogRetention: "1h"})
	ageCommits(t, kept, 0, 25, now.Add(-2*time.Hour))
	if res, err := kept.CleanupExpiredLogs(now, func() (int64, error) { return 15, nil }); err != nil || res.Checkpoint != 10 || !slices.Equal(res.Files, commitNames(0, 9)) {
		t.Fatalf("keepFrom 15: %+v, %v; want checkpoint 10, commits 0-9 deleted", res, err)
	}
	if first, err := kept.FirstCommit(); err != nil || first != 10 {
		t.Fatalf("FirstCommit after cleanup: %d, %v; want 10", first, err)
	}
	bad := cleanupTable(t, 1, map[string]string{ConfigLogRetention: "a while"})
	if _, err := bad.CleanupExpiredLogs(now, nil); err == nil || !strings.Contains(err.Error(), ConfigLogRetention) {
		t.Fatalf("unreadable retention: %v, want an error naming %s", err, ConfigLogRetention)
	}
}

// TestExpiredLogVersion: which _delta_log names a cleanup with its cutoff checkpoint at 10
// deletes (Delta PROTOCOL.md, "Metadata Cleanup", step 3).
func TestExpiredLogVersion(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"00000000000000000009.json":                                      true,
		"00000000000000000010.json":                                      false,
		"00000000000000000009.crc":                                       true,
		"00000000000000000009.checkpoint.parquet":                        true,
		"00000000000000000010.checkpoint.parquet":                        false,
		"00000000000000000005.checkpoint.0000000001.0000000002.parquet":  true,
		"00000000000000000005.checkpoint.80a083e8-7026.json":             true,
		"00000000000000000010.00000000000000000012.compacted.json":       true,
		"00000000000000000011.00000000000000000012.compacted.json":       false,
		"_last_checkpoint":                                               false,
		".00000000000000000001.json.tmp":                                 false,
		"00000000000000000001.txt":                                       false,
		"_sidecars":                                                      false,
		"0000000000000000000x.json":                                      false,
		"00000000000000000003.00000000000000000004.compacted.json.extra": false,
	} {
		if _, got := expiredLogVersion(name, 10); got != want {
			t.Errorf("%s: deleted %v, want %v", name, got, want)
		}
	}
}

// TestFirstCommitAfterInterruptedCleanup: a metadata cleanup stopped part way (a crash after it
// deleted the commits 0-4 of the 0-9 it was deleting before the checkpoint at 10) leaves a log
// whose oldest commit file, 5, cannot be read without the commits before it: the log starts,
// for a reader, at the checkpoint at 10, and the snapshot there has the rows 1-10.
func TestFirstCommitAfterInterruptedCleanup(t *testing.T) {
	t.Parallel()
	tbl := cleanupTable(t, 25, nil)
	for v := int64(0); v <= 4; v++ {
		if err := os.Remove(tbl.commitPath(v)); err != nil {
			t.Fatal(err)
		}
	}
	first, err := tbl.FirstCommit()
	if err != nil || first != 10 {
		t.Fatalf("FirstCommit = %d, %v; want 10", first, err)
	}
	if got := ids(t, tbl, first); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("rows at the first version: %v", got)
	}
	if got := ids(t, tbl, -1); !slices.Equal(got, seq(1, 25)) {
		t.Fatalf("latest rows: %v", got)
	}
}
