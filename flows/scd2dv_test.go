package flows

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// TestHistoryMergeOnReadMatchesCopyOnWrite: for the targets kept as per-key histories (SCD type
// 2, and SCD type 1 with ignore_null_updates), the same batches (updates, deletes, late and
// duplicate events, NULLs) into a copy-on-write target, a merge-on-read one
// (delta.enableDeletionVectors) and one that gets the property after two batches give, after
// every batch, the same rows, change data feed and metrics. The merge-on-read commits rewrite
// no data file: each file they remove comes back with a deletion vector holding its old
// positions and more (or is gone when every row of it is deleted), and their new files hold
// exactly the rows of the keys in the commit's change data feed, every version of each. An
// OPTIMIZE of the merge-on-read target midway is followed by batches that still agree.
func TestHistoryMergeOnReadMatchesCopyOnWrite(t *testing.T) {
	t.Parallel()
	for _, v := range []struct {
		name, extra string
		scd2        bool
	}{
		{"scd2", "      stored_as_scd_type: 2\n", true},
		{"scd1-ignore-null-updates", "      ignore_null_updates: true\n", false},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			text := benchSpec + v.extra
			dvProp := "    table_properties:\n      delta.enableDeletionVectors: \"true\"\n"
			laterDir := t.TempDir()
			cow, mor, later := loadPipeline(t, t.TempDir(), text), loadPipeline(t, t.TempDir(), text+dvProp), loadPipeline(t, laterDir, text)
			morTable := delta.New(TableDir(mor.Storage, "target"))
			r := rand.New(rand.NewPCG(31, 32))
			var seq int64
			dvsSeen := 0
			var morFiles map[string]delta.Add // the merge-on-read target's files after the last batch
			var morRows int64                 // and its rows
			for batch := range 8 {
				evs := changeEvents(r, 2000, 1500, &seq)
				for i := range evs {
					if !v.scd2 && r.IntN(5) == 0 {
						evs[i][2] = nil // a partial update: the stored name stays
					}
				}
				if batch%3 == 2 {
					for i := range evs[:200] { // late events, up to three batches back
						evs[i][4] = evs[i][4].(int64) - int64(2000*(1+r.IntN(3))) - 500
					}
					evs = append(evs, evs[500:600]...) // duplicates
				}
				if batch == 2 {
					later = loadPipeline(t, laterDir, text+dvProp) // the property set on the existing table
				}
				if batch == 5 {
					if _, err := morTable.Optimize(delta.OptimizeOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				pipes := []*spec.Pipeline{cow, mor, later}
				var ms [3]Metrics
				for k, p := range pipes {
					appendEvents(t, p, evs)
					ms[k] = applyTarget(t, p, batch%2 == 1)
				}
				var snaps [3]*delta.Snapshot
				var rows, changes [3][]string
				var morChanges [][]any
				for k, p := range pipes {
					var rs [][]any
					snaps[k], rs = readTable(t, p, "target")
					rows[k] = rowTexts(rs, nil)
					cs, crs, err := delta.New(TableDir(p.Storage, "target")).Changes(snaps[k].Version, snaps[k].Version)
					if err != nil {
						t.Fatal(err)
					}
					changes[k] = rowTexts(crs, map[int]bool{cs.Index("_commit_version"): true, cs.Index("_commit_timestamp"): true})
					if k == 1 {
						morChanges = crs
					}
				}
				for k := 1; k < 3; k++ {
					if ms[0].NumUpsertedRows != ms[k].NumUpsertedRows || ms[0].NumDeletedRows != ms[k].NumDeletedRows {
						t.Fatalf("batch %d: metrics copy-on-write %+v, target %d %+v", batch, ms[0], k, ms[k])
					}
					if strings.Join(rows[0], "\n") != strings.Join(rows[k], "\n") {
						t.Fatalf("batch %d: %d rows copy-on-write, %d in target %d; they differ", batch, len(rows[0]), len(rows[k]), k)
					}
					if strings.Join(changes[0], "\n") != strings.Join(changes[k], "\n") {
						t.Fatalf("batch %d: change data feed: %d rows copy-on-write, %d in target %d; they differ", batch, len(changes[0]), len(changes[k]), k)
					}
					if want := int64(len(rows[k])); snaps[k].NumRecords() != want {
						t.Errorf("batch %d: target %d: NumRecords() %d, want %d live rows", batch, k, snaps[k].NumRecords(), want)
					}
				}
				prevFiles, prevRows := morFiles, morRows
				morFiles, morRows = map[string]delta.Add{}, int64(len(rows[1]))
				for _, f := range snaps[1].Files {
					morFiles[f.Path] = f
				}
				if batch == 0 || batch == 5 { // the first batch, or after OPTIMIZE
					continue
				}
				// The merge-on-read commit: no file rewritten, rows conserved, and, for a batch of
				// events after their keys' stored ones, exactly the change data feed's new images
				// written and its old images deleted.
				newRows, deleted, readded, removed := morCommit(t, morTable, snaps[1].Version, mor.Dataset("target").Schema)
				dvsSeen += readded
				for path := range removed { // removed for good: every live row of it deleted
					a, ok := prevFiles[path]
					n, known := a.NumRecords()
					if !ok || !known {
						t.Fatalf("batch %d: removed file %s was not live before, or has no row count", batch, path)
					}
					deleted += n
					if a.DeletionVector != nil {
						deleted -= a.DeletionVector.Cardinality
					}
				}
				if prevRows-deleted+newRows != int64(len(rows[1])) {
					t.Fatalf("batch %d: %d rows before, %d deleted, %d written, but %d after", batch, prevRows, deleted, newRows, len(rows[1]))
				}
				var images, preimages int64
				for _, cr := range morChanges {
					switch cr[len(cr)-3] {
					case delta.ChangeInsert, delta.ChangeUpdatePostimage:
						images++
					default:
						preimages++
					}
				}
				if late := batch%3 == 2; (!late && (newRows != images || deleted != preimages)) || newRows < images {
					t.Fatalf("batch %d (late events %v): %d rows written and %d deleted; the change data feed has %d new and %d old images", batch, late, newRows, deleted, images, preimages)
				}
			}
			if dvsSeen == 0 {
				t.Fatal("no merge-on-read commit added a file back with a deletion vector")
			}
		})
	}
}

// morCommit checks that merge-on-read commit v of tb rewrote no data file: every file it
// removes and adds back has a deletion vector holding the old one's positions and more (schema
// s); and that its operationMetrics count the new files as added, the files removed for good as
// removed, and the files added back as deletion vectors added or updated. It returns the rows of its new files, the positions its new deletion vectors add, the
// number of files added back, and the files it removes for good.
func morCommit(t *testing.T, tb *delta.Table, v int64, s schema.Schema) (newRows, deleted int64, readded int, gone map[string]delta.Remove) {
	t.Helper()
	c, err := tb.ReadCommit(v)
	if err != nil {
		t.Fatal(err)
	}
	gone = map[string]delta.Remove{}
	for _, rm := range c.Removes {
		gone[rm.Path] = rm
	}
	for _, a := range c.Adds {
		rm, ok := gone[a.Path]
		if !ok {
			st, err := delta.ParseStats(a.Stats, s)
			if err != nil || a.DeletionVector != nil {
				t.Fatalf("version %d: new file %s: stats %v, deletion vector %+v", v, a.Path, err, a.DeletionVector)
			}
			newRows += st.NumRecords
			continue
		}
		delete(gone, a.Path)
		if a.DeletionVector == nil {
			t.Fatalf("version %d: file %s removed and added back without a deletion vector", v, a.Path)
		}
		readded++
		before, err := tb.ReadDeletionVector(rm.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		after, err := tb.ReadDeletionVector(a.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) <= len(before) || int64(len(after)) != a.DeletionVector.Cardinality || len(intersect(before, after)) != len(before) {
			t.Fatalf("version %d: file %s: deletion vector of %d rows (cardinality %d) after %d, not a superset", v, a.Path, len(after), a.DeletionVector.Cardinality, len(before))
		}
		if !strings.Contains(a.Stats, `"tightBounds":false`) {
			t.Errorf("version %d: file %s has a deletion vector but stats %s", v, a.Path, a.Stats)
		}
		deleted += int64(len(after) - len(before))
	}
	om := c.Info.OperationMetrics
	if got, want := om["numTargetFilesAdded"], strconv.Itoa(len(c.Adds)-readded); got != want {
		t.Errorf("version %d: numTargetFilesAdded %s, want %s (new data files)", v, got, want)
	}
	if got, want := om["numTargetFilesRemoved"], strconv.Itoa(len(gone)); got != want {
		t.Errorf("version %d: numTargetFilesRemoved %s, want %s (files removed for good)", v, got, want)
	}
	dvAdded, _ := strconv.Atoi(om["numTargetDeletionVectorsAdded"])
	dvUpdated, _ := strconv.Atoi(om["numTargetDeletionVectorsUpdated"])
	if dvAdded+dvUpdated != readded {
		t.Errorf("version %d: deletion vectors added %d + updated %d, want the %d files added back", v, dvAdded, dvUpdated, readded)
	}
	return newRows, deleted, readded, gone
}

// intersect returns the positions of a that are in b (both ascending).
func intersect(a, b []uint64) []uint64 {
	var out []uint64
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			out = append(out, x)
		}
	}
	return out
}

// TestRowLocatorAfter: the files a second scan reads for rows of SCD type 2 keys are those whose
// __START_AT statistics do not end before the least start looked for; a key whose rows all go,
// or a file without statistics, keeps every file.
func TestRowLocatorAfter(t *testing.T) {
	tgt := schema.Schema{Fields: []schema.Field{
		{Name: "id", Type: schema.Type{Kind: schema.Long}},
		{Name: "__START_AT", Type: schema.Type{Kind: schema.Long}, Nullable: true},
	}}
	file := func(path string, maxStart int64) delta.Add {
		return delta.Add{Path: path, Stats: fmt.Sprintf(`{"numRecords":2,"minValues":{"id":1,"__START_AT":0},"maxValues":{"id":9,"__START_AT":%d}}`, maxStart)}
	}
	files := []delta.Add{file("a", 5), file("b", 19), file("c", 20), file("d", 40), {Path: "e"}}
	kvs := []changedKey{{keep: rowKeep{before: int64(30)}, gone: 1}, {keep: rowKeep{before: int64(20)}, gone: 2}, {keep: rowKeep{before: int64(1)}, gone: 1}}
	paths := func(fs []delta.Add) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		name    string
		kvs     []changedKey
		missing func(i int) bool
		want    string
	}{
		{"keys 0 and 1 missing: from 20 on", kvs, func(i int) bool { return i < 2 }, "c,d,e"},
		{"key 0 missing: from 30 on", kvs, func(i int) bool { return i == 0 }, "d,e"},
		{"key 2 missing: from 1 on", kvs, func(i int) bool { return i == 2 }, "a,b,c,d,e"},
		{"none missing", kvs, func(int) bool { return false }, ""},
		{"a key whose rows all go", []changedKey{{keep: rowKeep{}, gone: 3}}, func(int) bool { return true }, "a,b,c,d,e"},
	} {
		l := newRowLocator(nil, tgt, c.kvs, &keyGroups{index: map[string]int{}}, []int{0}, 1, true, func(i int) bool { return c.kvs[i].gone > 0 })
		if got := paths(l.after(files, c.missing)); got != c.want {
			t.Errorf("%s: files %q, want %q", c.name, got, c.want)
		}
	}
}
