package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// deltaTestdata is where the delta-rs test tables and their expected change rows are
// (delta/testdata/README.md).
const deltaTestdata = "../../delta/testdata"

var (
	numberCell    = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	timestampCell = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$`)
)

// expectedFeed reads testdata/delta-rs-cdf/<table>.txt (delta-rs's expected change rows,
// transcribed) as rows in the jsonl form of spec.md §2: numbers as numbers, booleans, the UTC
// _commit_timestamp as RFC 3339 with microseconds.
func expectedFeed(t *testing.T, table string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(deltaTestdata, "delta-rs-cdf", table+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var header []string
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ln := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(ln, "|") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(ln, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if header == nil {
			header = cells
			continue
		}
		row := map[string]any{}
		for i, c := range cells {
			switch {
			case numberCell.MatchString(c):
				row[header[i]] = json.Number(c)
			case c == "true" || c == "false":
				row[header[i]] = c == "true"
			case timestampCell.MatchString(c):
				row[header[i]] = c + "000Z"
			default:
				row[header[i]] = c
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// feedSpec writes a spec with one dataset, feed, reading the Delta table with the given source
// keys, and returns its path and the --conf arguments.
func feedSpec(t *testing.T, table, keys string) (string, []string) {
	t.Helper()
	tmp := t.TempDir()
	abs, err := filepath.Abs(filepath.Join(deltaTestdata, table))
	if err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf("name: cdf\nstorage: ${storage}\ndatasets:\n  - name: feed\n    source: {format: delta, path: %q%s}\n", abs, keys)
	file := filepath.Join(tmp, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, []string{"--conf", "storage=" + filepath.Join(tmp, "storage")}
}

// TestChangesOfDeltaTables: for the four delta-rs test tables written by Spark and Databricks,
// `pipeline changes` over a dataset whose source is the table's change data feed prints exactly
// the rows delta-rs's tests expect, _commit_version and _commit_timestamp included; running the
// pipeline stores the same rows in the dataset's table (`pipeline show`), and a second run reads
// nothing new.
func TestChangesOfDeltaTables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		table string
		from  int // delta-rs reads checkpoint-cdf-table from 2024-01-06T15:44:59.570, version 3
	}{
		{"cdf-table", 0}, {"cdf-table-non-partitioned", 0}, {"checkpoint-cdf-table", 3}, {"simple_table_with_cdc", 0},
	} {
		t.Run(tc.table, func(t *testing.T) {
			t.Parallel()
			want := expectedFeed(t, tc.table)
			spec, conf := feedSpec(t, tc.table, fmt.Sprintf(", read: change_feed, starting_version: %d", tc.from))
			got := readJSONL(t, mustRun(t, append([]string{"changes", spec, "feed", "--from-version", fmt.Sprint(tc.from), "--format", "jsonl"}, conf...)...))
			assertRows(t, "pipeline changes", got, want)

			out := mustRun(t, append([]string{"run", spec}, conf...)...)
			if !strings.Contains(out, fmt.Sprintf("%d rows", len(want))) {
				t.Errorf("run: %s", out)
			}
			assertRows(t, "pipeline show", readJSONL(t, mustRun(t, append([]string{"show", spec, "feed", "--format", "jsonl"}, conf...)...)), want)
			if out := mustRun(t, append([]string{"run", spec}, conf...)...); !strings.Contains(out, "IDLE") {
				t.Errorf("second run: %s", out)
			}
		})
	}
}

// TestDeltaSourceAppendAndSnapshot reads cdf-table (version 0 inserts 10 rows, versions 1 and 2
// update rows, version 3 deletes one) with `read: append`: from version 0 the update is refused
// naming version 1, with skip_change_commits only the inserts of version 0 are read; and with
// `read: change_feed` and no starting_version the first update reads the latest snapshot as
// inserts of version 3. The expected rows come from delta-rs's expected change rows.
func TestDeltaSourceAppendAndSnapshot(t *testing.T) {
	t.Parallel()
	feed := expectedFeed(t, "cdf-table")
	strip := func(r map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range r {
			if !strings.HasPrefix(k, "_") {
				out[k] = v
			}
		}
		return out
	}
	var inserts0 []map[string]any
	for _, r := range feed {
		if r["_change_type"] == "insert" && r["_commit_version"] == json.Number("0") {
			inserts0 = append(inserts0, strip(r))
		}
	}

	spec, conf := feedSpec(t, "cdf-table", ", read: append, starting_version: 0")
	r := pipeline(t, nil, append([]string{"run", spec}, conf...)...)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "updated or deleted rows in version 1 (operation UPDATE)") {
		t.Errorf("append over an update: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	spec, conf = feedSpec(t, "cdf-table", ", read: append, starting_version: 0, skip_change_commits: true")
	mustRun(t, append([]string{"run", spec}, conf...)...)
	assertRows(t, "append, skipping change commits", readJSONL(t, mustRun(t, append([]string{"show", spec, "feed", "--format", "jsonl"}, conf...)...)), inserts0)

	// The table at its latest version: the feed replayed in version order (inserts and
	// post-images in, pre-images and deletes out).
	sort.SliceStable(feed, func(i, j int) bool {
		return string(feed[i]["_commit_version"].(json.Number)) < string(feed[j]["_commit_version"].(json.Number))
	})
	live := map[string]map[string]any{}
	for _, r := range feed {
		key := fmt.Sprint(strip(r))
		switch r["_change_type"] {
		case "insert", "update_postimage":
			live[key] = strip(r)
		default:
			delete(live, key)
		}
	}
	var latest []map[string]any
	for _, r := range live {
		r["_change_type"], r["_commit_version"], r["_commit_timestamp"] = "insert", json.Number("3"), "2024-01-06T16:44:59.570000Z"
		latest = append(latest, r)
	}
	spec, conf = feedSpec(t, "cdf-table", ", read: change_feed")
	mustRun(t, append([]string{"run", spec}, conf...)...)
	assertRows(t, "change feed from the latest snapshot", readJSONL(t, mustRun(t, append([]string{"show", spec, "feed", "--format", "jsonl"}, conf...)...)), latest)
	if len(latest) != 9 {
		t.Errorf("%d live rows, want 9 (10 inserted, 1 deleted)", len(latest))
	}
}

// TestDeltaSourceColumnMapping reads table_with_column_mapping, which Databricks wrote with
// column mapping by name (its files, partition values and statistics name the columns col-<uuid>;
// the table names them "Company Very Short", its partition column, and "Super Name"), as a
// streaming table, and a query groups it by the partition column: the rows are the five
// delta-rs's tests expect, by their logical names.
func TestDeltaSourceColumnMapping(t *testing.T) {
	t.Parallel()
	spec, conf := feedSpec(t, "table_with_column_mapping", "")
	body, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, "  - name: by_company\n    query: SELECT \"Company Very Short\" AS company, count(*) AS n FROM feed GROUP BY 1\n"...)
	if err := os.WriteFile(spec, body, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"run", spec}, conf...)...)
	row := func(company, name string) map[string]any {
		return map[string]any{"Company Very Short": company, "Super Name": name}
	}
	assertRows(t, "feed", readJSONL(t, mustRun(t, append([]string{"show", spec, "feed", "--format", "jsonl"}, conf...)...)), []map[string]any{
		row("BMS", "Anthony Johnson"), row("BMS", "Mr. Daniel Ferguson MD"), row("BMS", "Nathan Bennett"),
		row("BMS", "Stephanie Mcgrath"), row("BME", "Timothy Lamb"),
	})
	assertRows(t, "by_company", readJSONL(t, mustRun(t, append([]string{"show", spec, "by_company", "--format", "jsonl"}, conf...)...)), []map[string]any{
		{"company": "BMS", "n": json.Number("4")}, {"company": "BME", "n": json.Number("1")},
	})
}

// TestDeltaSourceTableSchemaChanged: when the Delta table a `format: delta` source reads gains a
// column (its writer's schema evolution), the source's table no longer matches, and the error
// says that the source table changed (naming it and its columns), not the spec, with the full
// refresh to run.
func TestDeltaSourceTableSchemaChanged(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "in"), "1.json", `{"id": 1}`+"\n")
	writeFile(t, tmp, "up.yaml", "name: up\nstorage: ./up\ndatasets:\n  - name: up\n    source: {path: ./in, format: json}\n")
	upTable := filepath.Join(tmp, "up", "tables", "up")
	writeFile(t, tmp, "down.yaml", fmt.Sprintf("name: down\nstorage: ./down\ndatasets:\n  - name: feed\n    source: {format: delta, path: %q}\n", upTable))
	time.Sleep(1100 * time.Millisecond) // files older than a second are read
	mustRun(t, "run", filepath.Join(tmp, "up.yaml"))
	mustRun(t, "run", filepath.Join(tmp, "down.yaml"))
	writeFile(t, filepath.Join(tmp, "in"), "2.json", `{"id": 2, "name": "b"}`+"\n")
	time.Sleep(1100 * time.Millisecond)
	mustRun(t, "run", filepath.Join(tmp, "up.yaml")) // inferred schema: name is added
	r := pipeline(t, nil, "run", filepath.Join(tmp, "down.yaml"))
	want := "the table has (id BIGINT, _rescued_data STRING) but its source table " + upTable + " now has (id BIGINT, name STRING, _rescued_data STRING)"
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, want) || strings.Contains(r.stdout+r.stderr, "the spec now gives") {
		t.Errorf("exit %d\n%s%s\nwant an error saying %q", r.code, r.stdout, r.stderr, want)
	}
}
