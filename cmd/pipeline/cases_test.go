package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// caseFile is a shared acceptance case's case.json (see testdata/cases/*/README.md).
type caseFile struct {
	Input string `json:"input"`
	// InputFormat is "json" (default: each batch lands as one JSON-lines file) or "raw" (the
	// input file lands byte for byte, as one batch).
	InputFormat string `json:"input_format"`
	LandTo      string `json:"land_to"`
	Runs        []struct {
		Name        string `json:"name"`
		Spec        string `json:"spec"`
		FailAtBatch *int   `json:"fail_at_batch"`
		Checks      []struct {
			Dataset  string `json:"dataset"`
			Expected string `json:"expected"`
		} `json:"checks"`
	} `json:"runs"`
}

// TestAcceptanceCases runs every run of the shared acceptance cases copied into testdata/cases
// (SCD type 1 and 2, truncates, expectations): each batch of change events lands as one JSON-lines file, `pipeline run` runs
// after each, and the target must equal expected*.ndjson as an unordered set of rows, read both by
// `pipeline show` and, when DELTACHECK names the independent reader, by it.
func TestAcceptanceCases(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/cases/*")
	if len(dirs) == 0 {
		t.Fatal("no cases under testdata/cases")
	}
	for _, dir := range dirs {
		var cf caseFile
		b, err := os.ReadFile(filepath.Join(dir, "case.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &cf); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var batches map[int][]string
		if cf.InputFormat != "raw" {
			batches = readBatches(t, filepath.Join(dir, cf.Input))
		} else {
			batches = map[int][]string{1: nil}
		}
		for _, run := range cf.Runs {
			var checked []string
			for _, c := range run.Checks {
				checked = append(checked, c.Dataset)
			}
			text := readString(t, filepath.Join(dir, run.Spec))
			variants := []struct{ name, spec string }{{"", text}}
			if v, ok := asViews(t, text, checked); ok {
				variants = append(variants, struct{ name, spec string }{"/view", v})
			}
			for _, variant := range variants {
				dir, run, variant := dir, run, variant
				t.Run(filepath.Base(dir)+"/"+run.Name+variant.name, func(t *testing.T) {
					t.Parallel()
					tmp := t.TempDir()
					spec := filepath.Join(tmp, "pipeline.yaml")
					if err := os.WriteFile(spec, []byte(variant.spec), 0o644); err != nil {
						t.Fatal(err)
					}
					land := filepath.Join(tmp, cf.LandTo)
					if err := os.MkdirAll(land, 0o755); err != nil {
						t.Fatal(err)
					}
					nums := make([]int, 0, len(batches))
					for n := range batches {
						nums = append(nums, n)
					}
					sort.Ints(nums)
					for _, n := range nums {
						if cf.InputFormat == "raw" {
							copyFile(t, filepath.Join(dir, cf.Input), filepath.Join(land, filepath.Base(cf.Input)))
						} else {
							name := filepath.Join(land, "batch-"+pad4(n)+".json")
							if err := os.WriteFile(name, []byte(strings.Join(batches[n], "\n")+"\n"), 0o644); err != nil {
								t.Fatal(err)
							}
						}
						r := pipeline(t, nil, "run", spec)
						want := 0
						if run.FailAtBatch != nil && *run.FailAtBatch == n {
							want = 1
						}
						if r.code != want {
							t.Fatalf("batch %d: exit %d, want %d\n%s%s", n, r.code, want, r.stdout, r.stderr)
						}
					}
					for _, chk := range run.Checks {
						wantRows := readJSONL(t, readString(t, filepath.Join(dir, chk.Expected)))
						got := readJSONL(t, mustRun(t, "show", spec, chk.Dataset, "--format", "jsonl"))
						assertRows(t, "show "+chk.Dataset, caseRows(got), caseRows(wantRows))
						if dc := os.Getenv("DELTACHECK"); dc != "" {
							out, err := exec.Command(dc, "rows", filepath.Join(tmp, "_storage", "tables", chk.Dataset)).Output()
							if err != nil {
								t.Fatalf("deltacheck rows: %v", err)
							}
							assertRows(t, "independent read of "+chk.Dataset, caseRows(readJSONL(t, string(out))), caseRows(wantRows))
						}
					}
				})
			}
		}
	}
}

// asViews returns the spec text with every bronze dataset that only APPLY CHANGES reads (a file
// `source:`, not among checked, with no table-only setting) made a view over files (README "Views
// over files"), and whether there was one: the case's expected tables must come out the same.
func asViews(t *testing.T, text string, checked []string) (string, bool) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	get := func(m *yaml.Node, key string) *yaml.Node {
		for i := 0; m != nil && m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	datasets := get(doc.Content[0], "datasets")
	readers := map[string]int{}   // dataset -> how many apply_changes read it
	otherUse := map[string]bool{} // read otherwise (a query, a table source, a snapshot)
	for _, d := range datasets.Content {
		if ac := get(d, "apply_changes"); ac != nil {
			readers[get(ac, "source").Value]++
		}
		if q := get(d, "query"); q != nil {
			for _, other := range datasets.Content {
				if n := get(other, "name").Value; strings.Contains(q.Value, n) {
					otherUse[n] = true
				}
			}
		}
		if s := get(d, "apply_changes_from_snapshot"); s != nil && get(s, "source") != nil && get(s, "source").Kind == yaml.ScalarNode {
			otherUse[get(s, "source").Value] = true
		}
	}
	changed := false
	for _, d := range datasets.Content {
		name, src := get(d, "name").Value, get(d, "source")
		if src == nil || readers[name] == 0 || otherUse[name] || strings.Contains(strings.Join(checked, ","), name) ||
			get(src, "schema") == nil || get(src, "table") != nil || get(d, "partition_by") != nil || get(d, "table_properties") != nil ||
			strings.Contains(text, "quarantine") {
			continue
		}
		if f := get(src, "format"); f == nil || (f.Value != "json" && f.Value != "csv" && f.Value != "parquet" && f.Value != "debezium") {
			continue
		}
		if ty := get(d, "type"); ty != nil {
			ty.Value = "view"
		} else {
			d.Content = append(d.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "type"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "view"})
		}
		changed = true
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), changed
}

// readBatches groups the lines of an input.ndjson by "_batch" (default 1), dropping that key
// and keeping every other value's text exactly as written.
func readBatches(t *testing.T, path string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, line := range strings.Split(readString(t, path), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var probe struct {
			Batch *int `json:"_batch"`
		}
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		n := 1
		if probe.Batch != nil {
			n = *probe.Batch
		}
		out[n] = append(out[n], dropBatchKey(line))
	}
	return out
}

// dropBatchKey removes the `"_batch": N` member from a one-line JSON object, textually, so that
// numbers such as 25.50 land exactly as written.
func dropBatchKey(line string) string {
	i := strings.Index(line, `"_batch"`)
	if i < 0 {
		return line
	}
	j := i + len(`"_batch"`)
	for j < len(line) && line[j] != ',' && line[j] != '}' {
		j++
	}
	start := i
	if j < len(line) && line[j] == ',' {
		j++
	} else {
		// last member: remove the comma before it
		k := strings.LastIndex(line[:i], ",")
		if k >= 0 {
			start = k
		}
	}
	return strings.TrimSpace(line[:start]) + strings.TrimLeft(line[j:], " ")
}

func pad4(n int) string {
	s := "0000" + itoa(n)
	return s[len(s)-4:]
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// caseRows normalises rows as run_cases.py compares them: a string that reads as a timestamp
// (`2024-01-31T10:00:00.000000Z`, `2024-01-31 10:00:00+00`, no offset meaning UTC) becomes its UTC
// instant, and a `_rescued_data` JSON object loses its `_file_path` key (the landing folder differs
// from run to run) and is written with its keys sorted.
func caseRows(rows []map[string]any) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		n := make(map[string]any, len(r))
		for c, v := range r {
			s, ok := v.(string)
			if !ok {
				n[c] = v
				continue
			}
			if c == "_rescued_data" {
				dec := json.NewDecoder(strings.NewReader(s))
				dec.UseNumber()
				var obj map[string]any
				if dec.Decode(&obj) == nil && obj != nil {
					delete(obj, "_file_path")
					b, _ := json.Marshal(obj)
					n[c] = string(b)
					continue
				}
			}
			n[c] = caseTimestamp(s)
		}
		out[i] = n
	}
	return out
}

// caseTimestamp returns s as an RFC 3339 UTC instant with microseconds when it reads as a
// timestamp the way run_cases.py reads one, and s unchanged otherwise.
func caseTimestamp(s string) string {
	t := strings.TrimSpace(s)
	if len(t) < 19 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != ' ') {
		return s
	}
	t = strings.Replace(t, " ", "T", 1)
	if len(t) > 19 && (t[len(t)-3] == '+' || t[len(t)-3] == '-') {
		t += ":00" // "+00" as PostgreSQL and DuckDB print it
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if ts, err := time.Parse(layout, t); err == nil {
			return ts.UTC().Format("2006-01-02T15:04:05.000000Z")
		}
	}
	return s
}
