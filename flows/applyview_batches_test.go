package flows

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestViewOverFilesFailInLaterBatch: with max_files_per_trigger, batches follow one another in an
// update; a later batch that fails (a fail expectation of the view, or mode failfast) fails the
// flow with the expectation's error, leaves the earlier batches committed and its own files
// unread (README "Views over files"), and does not crash the runner.
func TestViewOverFilesFailInLaterBatch(t *testing.T) {
	for _, c := range []struct{ name, extra, bad, want string }{
		{"fail expectation", "", `{"op": "I", "id": 3, "name": "c", "seq": 500}`, `expectation "small_seq" on dataset "changes" failed`},
		{"failfast", "      mode: failfast\n", `{"op": "I", "id": 3, "name": "c", "seq": "x"}`, "mode: failfast"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			text := viewSpec("view", "      max_files_per_trigger: 1\n"+c.extra, "")
			text = strings.Replace(text, "    expectations:\n", "    expectations:\n      - {name: small_seq, expect: 'seq < 100', on_violation: fail}\n", 1)
			p := loadPipeline(t, dir, text)
			landing := filepath.Join(dir, "landing")
			for name, body := range map[string]string{
				"a.json": `{"op": "I", "id": 1, "name": "a", "seq": 1}`,
				"b.json": `{"op": "I", "id": 2, "name": "b", "seq": 2}`,
				"c.json": c.bad,
			} {
				if err := os.WriteFile(filepath.Join(landing, name), []byte(body+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := &Env{Pipeline: p, Events: nopEvents{}}
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("the failing third batch panicked: %v", r)
					}
				}()
				_, err = ApplyChanges(context.Background(), env, p.Dataset("target"))
			}()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the third batch gave %v, want an error with %q", err, c.want)
			}
			snap, rows := readTable(t, p, "target")
			if got := rowsText(dataSchema(p.Dataset("target")), rows); !slices.Equal(got, []string{"1 a NULL 1", "2 b NULL 2"}) || snap.AppTxns[AppID(p, "target")] != 2 {
				t.Errorf("after the failed third batch the target holds %q at progress %v, want the first two batches", got, snap.AppTxns)
			}
			if err := os.WriteFile(filepath.Join(landing, "c.json"), []byte(`{"op": "I", "id": 3, "name": "c", "seq": 3}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := ApplyChanges(context.Background(), env, p.Dataset("target"))
			if err != nil || m.Files != 1 || m.NumUpsertedRows != 1 {
				t.Fatalf("after fixing c.json: %v, %d files, %d upserted; want c.json alone read", err, m.Files, m.NumUpsertedRows)
			}
		})
	}
}
