package delta

import (
	"strings"
	"testing"
	"time"
)

// TestHistoryDeltaRs reads the history of delta-rs's delta-0.8.0-partitioned table (its log
// only: testdata/delta-0.8.0-partitioned) and compares it with what delta-rs's
// test_history_partitioned_table_metadata (python/tests/test_table_read.py) expects.
func TestHistoryDeltaRs(t *testing.T) {
	t.Parallel()
	h, err := New("testdata/delta-0.8.0-partitioned").History(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 {
		t.Fatalf("%d history entries, want 1", len(h))
	}
	e := h[0]
	ci := e.Info
	if e.Version != 0 || e.Timestamp != 1615555646188 || ci.Operation != "WRITE" ||
		ci.OperationParameters["mode"] != "ErrorIfExists" || ci.OperationParameters["partitionBy"] != `["year","month","day"]` ||
		ci.IsBlindAppend == nil || !*ci.IsBlindAppend ||
		ci.OperationMetrics["numFiles"] != "6" || ci.OperationMetrics["numOutputBytes"] != "2477" || ci.OperationMetrics["numOutputRows"] != "7" ||
		len(ci.OperationMetrics) != 3 || len(ci.OperationParameters) != 2 {
		t.Errorf("history %+v", e)
	}
}

// TestTimeTravelByTimestamp resolves timestamps on simple_table_with_cdc (Databricks), whose
// commits carry commitInfo.timestamp 1671962429524 (v0), 1671962472835 (v1) and 1671962475765
// (v2): TIMESTAMP AS OF picks the newest version committed at or before the time, and a time
// outside the log's range is an error naming it.
func TestTimeTravelByTimestamp(t *testing.T) {
	t.Parallel()
	tbl := New("testdata/simple_table_with_cdc")
	for _, c := range []struct {
		ts   int64
		want int64
	}{
		{1671962429524, 0}, {1671962472834, 0}, {1671962472835, 1}, {1671962475764, 1}, {1671962475765, 2},
	} {
		v, err := tbl.VersionAsOf(c.ts)
		if err != nil || v != c.want {
			t.Errorf("VersionAsOf(%d) = %d, %v; want %d", c.ts, v, err, c.want)
		}
	}
	if _, err := tbl.VersionAsOf(1671962429523); err == nil || !strings.Contains(err.Error(), "before the oldest version") || !strings.Contains(err.Error(), "2022-12-25T10:00:29.524Z") {
		t.Errorf("before the first commit: %v", err)
	}
	if _, err := tbl.VersionAsOf(1671962475766); err == nil || !strings.Contains(err.Error(), "after the latest version") {
		t.Errorf("after the last commit: %v", err)
	}
	for _, c := range []struct {
		ts   int64
		want int64
	}{{0, 0}, {1671962429525, 1}, {1671962475765, 2}} {
		v, err := tbl.VersionAtOrAfter(c.ts)
		if err != nil || v != c.want {
			t.Errorf("VersionAtOrAfter(%d) = %d, %v; want %d", c.ts, v, err, c.want)
		}
	}
}

// TestHistoryOfOurCommits: History lists our commits newest first with their operation,
// parameters and metrics, and time travel by the listed timestamps reads each version.
func TestHistoryOfOurCommits(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	for i := 1; i <= 3; i++ {
		time.Sleep(3 * time.Millisecond) // distinct commit times
		snap := mustSnapshot(t, tbl, -1)
		a, err := tbl.WriteFile(s, [][]any{{int64(i)}})
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		tx.Add(a)
		tx.SetCommitInfo(nil, map[string]string{"numOutputRows": "1"})
		if _, err := tx.Commit("STREAMING UPDATE", map[string]any{"outputMode": "Append", "epochId": i}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := tbl.History(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 4 || h[0].Version != 3 || h[3].Version != 0 || h[3].Info.Operation != "CREATE TABLE" {
		t.Fatalf("history %+v", h)
	}
	if p := h[0].Info.OperationParameters; h[0].Info.Operation != "STREAMING UPDATE" || p["outputMode"] != "Append" || p["epochId"] != "3" ||
		h[0].Info.OperationMetrics["numOutputRows"] != "1" || *h[0].Info.ReadVersion != 2 || h[0].Info.EngineInfo != EngineInfo {
		t.Errorf("newest entry %+v", h[0])
	}
	if lim, _ := tbl.History(2); len(lim) != 2 || lim[1].Version != 2 {
		t.Errorf("History(2) = %+v", lim)
	}
	for _, e := range h {
		v, err := tbl.VersionAsOf(e.Timestamp)
		if err != nil || v != e.Version {
			t.Errorf("VersionAsOf(%d) = %d, %v; want %d", e.Timestamp, v, err, e.Version)
		}
		rows, err := tbl.Rows(mustSnapshot(t, tbl, v))
		if err != nil || len(rows) != int(e.Version) {
			t.Errorf("version %d: %d rows, %v", v, len(rows), err)
		}
	}
}
