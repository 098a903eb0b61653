package delta

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	concurrentWriters = 4
	commitsPerWriter  = 25
)

// TestConcurrentWriterProcess is the body of one writer process of TestConcurrentWriters; it
// does nothing unless TRIBUTARY_CONCURRENT_TABLE is set. Role "writer N" appends
// commitsPerWriter one-row files (id N*1000+i), retrying a commit that conflicts, and prints
// "committed ID VERSION" once each commit stands; role "optimizer" compacts the table over and
// over while the writers append.
func TestConcurrentWriterProcess(t *testing.T) {
	dir := os.Getenv("TRIBUTARY_CONCURRENT_TABLE")
	if dir == "" {
		t.Skip("run by TestConcurrentWriters")
	}
	tbl := New(dir)
	role := os.Getenv("TRIBUTARY_CONCURRENT_ROLE")
	if role == "optimizer" {
		// Until every writer's row is in, then once more.
		for done := false; !done; {
			snap, err := tbl.Snapshot(-1)
			if err != nil {
				t.Fatal(err)
			}
			done = snap.NumRecords() == concurrentWriters*commitsPerWriter
			res, err := tbl.Optimize(OptimizeOptions{})
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Fatal(err)
			}
			fmt.Printf("optimized %d %d %v\n", res.Version, res.FilesRemoved, err)
		}
		return
	}
	w, err := strconv.Atoi(role)
	if err != nil {
		t.Fatalf("role %q", role)
	}
	for i := 0; i < commitsPerWriter; i++ {
		id := int64(w*1000 + i)
		var add *Add
		for attempt := 0; ; attempt++ {
			snap, err := tbl.Snapshot(-1)
			if err != nil {
				t.Fatal(err)
			}
			if add == nil {
				a, err := tbl.WriteFile(snap.Metadata.Schema, [][]any{{id}})
				if err != nil {
					t.Fatal(err)
				}
				add = &a
			}
			tx := tbl.Begin(snap)
			tx.Add(*add)
			tx.SetAppTxn(fmt.Sprintf("writer-%d", w), int64(i))
			v, err := tx.Commit("WRITE", nil)
			if errors.Is(err, ErrConflict) && attempt < 20 {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("committed %d %d\n", id, v)
			break
		}
	}
}

// TestConcurrentWriters runs four writer processes and one OPTIMIZE process against one table
// at once (commits race for the same version files; checkpoints are written by whichever process
// commits a multiple of 10) and checks that no commit was lost or duplicated: every row a writer
// reported committed is in the table exactly once and no other row is; the log has every version
// from 0 to the latest once, each parseable, and no two writers were told the same version; each
// writer's txn holds its last batch; a reader starting from the checkpoints and one replaying
// every JSON commit agree, and so does deltacheck.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT")
	tbl := createTable(t, s)
	type proc struct {
		role string
		out  bytes.Buffer
		err  error
	}
	procs := []*proc{{role: "optimizer"}}
	for w := 0; w < concurrentWriters; w++ {
		procs = append(procs, &proc{role: strconv.Itoa(w)})
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentWriterProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TRIBUTARY_CONCURRENT_TABLE="+tbl.Dir, "TRIBUTARY_CONCURRENT_ROLE="+p.role)
			cmd.Stdout, cmd.Stderr = &p.out, &p.out
			p.err = cmd.Run()
		}()
	}
	wg.Wait()
	reported := map[int64]bool{}
	versions := map[int64]int64{} // version -> id
	for _, p := range procs {
		if p.err != nil {
			t.Fatalf("process %s: %v\n%s", p.role, p.err, p.out.String())
		}
		sc := bufio.NewScanner(&p.out)
		for sc.Scan() {
			var id, v int64
			if n, _ := fmt.Sscanf(sc.Text(), "committed %d %d", &id, &v); n != 2 {
				continue
			}
			if reported[id] {
				t.Errorf("id %d reported twice", id)
			}
			reported[id] = true
			if other, dup := versions[v]; dup {
				t.Errorf("version %d reported for ids %d and %d", v, other, id)
			}
			versions[v] = id
		}
	}
	if len(reported) != concurrentWriters*commitsPerWriter {
		t.Fatalf("%d commits reported, want %d", len(reported), concurrentWriters*commitsPerWriter)
	}

	vs, err := tbl.versions()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v != int64(i) {
			t.Fatalf("the log has versions %v: a gap or a repeat at %d", vs, i)
		}
		if _, err := tbl.ReadCommit(v); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	snap := mustSnapshot(t, New(tbl.Dir), -1)
	rows, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, r := range rows {
		seen[r[0].(int64)]++
	}
	for id := range reported {
		if seen[id] != 1 {
			t.Errorf("id %d is in the table %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(reported) || len(rows) != len(reported) {
		t.Errorf("the table has %d rows (%d ids), want the %d reported", len(rows), len(seen), len(reported))
	}
	for w := 0; w < concurrentWriters; w++ {
		if v, ok := snap.AppTxns[fmt.Sprintf("writer-%d", w)]; !ok || v != commitsPerWriter-1 {
			t.Errorf("txn of writer %d: %d, %v", w, v, ok)
		}
	}

	// The checkpoints written during the race describe the same table as the JSON commits.
	l, err := tbl.listLog()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.checkpoints) == 0 {
		t.Fatalf("no checkpoint after %d versions", len(vs))
	}
	jsonOnly := t.TempDir()
	if err := os.MkdirAll(filepath.Join(jsonOnly, LogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		name := fmt.Sprintf("%020d.json", v)
		b, err := os.ReadFile(filepath.Join(tbl.Dir, LogDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jsonOnly, LogDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	replayed := mustSnapshot(t, New(jsonOnly), -1)
	if g, w := paths(snap.Files), paths(replayed.Files); !slices.Equal(g, w) {
		t.Errorf("from checkpoint %d: files %v\nJSON replay: %v", l.checkpoints[len(l.checkpoints)-1].version, g, w)
	}
	if os.Getenv("DELTACHECK") != "" {
		theirs := deltacheck(t, "rows", tbl.Dir)
		if len(theirs) != len(reported) || !strings.Contains(strings.Join(theirs, ","), `{"id":3024}`) {
			t.Errorf("deltacheck reads %d rows, want %d", len(theirs), len(reported))
		}
	}
}
