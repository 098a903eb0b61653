package delta

import (
	"testing"
	"time"
)

// TestHistoryDuringCleanup: `pipeline history` while a metadata cleanup deletes the oldest
// commits lists the versions still there, never failing on one deleted between its listing and
// its read.
func TestHistoryDuringCleanup(t *testing.T) {
	t.Parallel()
	for round := 0; round < 5; round++ {
		tbl := cleanupTable(t, 45, nil)
		ageCommits(t, tbl, 0, 45, time.Now().Add(-40*24*time.Hour))
		done := make(chan error, 1)
		go func() {
			_, err := New(tbl.Dir).CleanupExpiredLogs(time.Now(), nil)
			done <- err
		}()
		for i := 0; i < 50; i++ {
			if _, err := New(tbl.Dir).History(0); err != nil {
				t.Fatalf("round %d: history during a cleanup: %v", round, err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
