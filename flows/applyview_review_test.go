package flows

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestViewOverFilesFailRuleMemory: with an on_violation: fail expectation the batch is read whole
// before it is checked; the memory that takes grows with the rows read, as for a streaming
// table, not by a fixed amount per row: 20,000 small change events (about 1 MiB of JSON) must not
// take gigabytes.
func TestViewOverFilesFailRuleMemory(t *testing.T) {
	dir := t.TempDir()
	text := strings.Replace(viewSpec("view", "", ""), "on_violation: warn", "on_violation: fail", 1)
	p := loadPipeline(t, dir, text)
	var b strings.Builder
	const n = 20_000
	for i := range n {
		fmt.Fprintf(&b, `{"op": "U", "id": %d, "name": "n%d", "amount": 1.00, "seq": %d}`+"\n", i%500, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "a.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := ApplyChanges(context.Background(), &Env{Pipeline: p, Events: nopEvents{}}, p.Dataset("target"))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
		t.Errorf("applying %d events (%d bytes of JSON) through a view with a fail expectation allocated %d MiB", n, b.Len(), got>>20)
	}
	if m.NumUpsertedRows != 500 {
		t.Errorf("upserted %d rows, want 500", m.NumUpsertedRows)
	}
	_, rows := readTable(t, p, "target")
	if len(rows) != 500 {
		t.Errorf("the target holds %d rows, want 500", len(rows))
	}
}
