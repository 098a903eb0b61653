package spec

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// summary is what a test expects of a dataset, in comparable form.
type summary struct {
	name, typ, comment   string
	path, format, schema string // Source; path relative to the spec's folder
	mode, rescued        string
	acSource             string // ApplyChanges
	keys, seq            []string
	deletes              string
	cols, except         []string
	scd                  int
	props                map[string]string
	out                  string // output schema as DDL
}

func summarize(t *testing.T, p *Pipeline, ds *Dataset) summary {
	t.Helper()
	s := summary{name: ds.Name, typ: string(ds.Type), comment: ds.Comment, props: ds.TableProperties, out: ds.Schema.DDL()}
	if src := ds.Source; src != nil {
		rel, err := filepath.Rel(p.Dir, src.Path)
		if err != nil {
			t.Fatal(err)
		}
		s.path, s.format, s.schema, s.mode, s.rescued = rel, src.Format, src.Schema.DDL(), src.Mode, src.RescuedDataColumn
	}
	if ac := ds.ApplyChanges; ac != nil {
		s.acSource, s.keys, s.seq, s.deletes = ac.Source, ac.Keys, ac.SequenceBy, ac.ApplyAsDeletes
		s.cols, s.except, s.scd = ac.ColumnList, ac.ExceptColumnList, ac.StoredAsSCDType
	}
	return s
}

func equalSummary(a, b summary) bool {
	return a.name == b.name && a.typ == b.typ && a.comment == b.comment && a.path == b.path &&
		a.format == b.format && a.schema == b.schema && a.mode == b.mode && a.rescued == b.rescued &&
		a.acSource == b.acSource && slices.Equal(a.keys, b.keys) && slices.Equal(a.seq, b.seq) &&
		a.deletes == b.deletes && slices.Equal(a.cols, b.cols) && slices.Equal(a.except, b.except) &&
		a.scd == b.scd && len(a.props) == len(b.props) && mapsEqual(a.props, b.props) && a.out == b.out
}

func mapsEqual(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return len(a) == len(b)
}

// TestLoadSharedCases loads the valid specs of the shared acceptance cases (copied under
// testdata/cases) and checks every field.
func TestLoadSharedCases(t *testing.T) {
	t.Parallel()
	bronze := func(name, ddl, comment string) summary {
		return summary{name: name, typ: "streaming_table", comment: comment, path: "landing/changes", format: "json",
			schema: ddl, mode: "permissive", props: map[string]string{}, out: ddl}
	}
	cases := []struct {
		name     string
		file     string
		pipeline string
		datasets []summary
		order    []string
	}{
		{
			name: "00 seed orders", file: "00-seed-orders-cdc/pipeline.yaml", pipeline: "case00_shop_orders",
			datasets: []summary{
				bronze("orders_changes", "op STRING, order_id BIGINT, status STRING, amount DECIMAL(10,2), seq BIGINT",
					"The shop database's change log, as delivered"),
				{name: "orders", typ: "streaming_table", acSource: "orders_changes", keys: []string{"order_id"},
					seq: []string{"seq"}, deletes: `op == "D"`, except: []string{"op"}, scd: 1, props: map[string]string{},
					out: "order_id BIGINT, status STRING, amount DECIMAL(10,2), seq BIGINT"},
			},
			order: []string{"orders_changes", "orders"},
		},
		{
			name: "01 users", file: "01-users-scd1-docs-example/pipeline.yaml", pipeline: "case01_users",
			datasets: []summary{
				bronze("users_changes", "userId BIGINT, name STRING, city STRING, operation STRING, sequenceNum BIGINT", ""),
				{name: "users", typ: "streaming_table", acSource: "users_changes", keys: []string{"userId"},
					seq: []string{"sequenceNum"}, deletes: `operation == "DELETE"`, except: []string{"operation", "sequenceNum"},
					scd: 1, props: map[string]string{}, out: "userId BIGINT, name STRING, city STRING"},
			},
			order: []string{"users_changes", "users"},
		},
		{
			name: "07 duplicates scd1", file: "07-exact-duplicates-and-replays/pipeline.scd1.yaml", pipeline: "case07_duplicates",
			datasets: []summary{
				bronze("item_changes", "op STRING, id BIGINT, v STRING, seq BIGINT", ""),
				{name: "items", typ: "streaming_table", acSource: "item_changes", keys: []string{"id"},
					seq: []string{"seq"}, deletes: `op == "D"`, except: []string{"op", "seq"}, scd: 1,
					props: map[string]string{}, out: "id BIGINT, v STRING"},
			},
			order: []string{"item_changes", "items"},
		},
		{
			name: "13 tombstones", file: "13-scd1-tombstones-and-unknown-keys/pipeline.yaml", pipeline: "case13_tombstones",
			datasets: []summary{
				bronze("item_changes", "op STRING, id BIGINT, name STRING, seq BIGINT", ""),
				{name: "items", typ: "streaming_table", acSource: "item_changes", keys: []string{"id"},
					seq: []string{"seq"}, deletes: `op == "D"`, except: []string{"op", "seq"}, scd: 1,
					props: map[string]string{TombstoneGCProperty: "172800"}, out: "id BIGINT, name STRING"},
			},
			order: []string{"item_changes", "items"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join("testdata", "cases", c.file)
			p, err := Load(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(file)
			if p.Name != c.pipeline || p.File != abs || p.Dir != filepath.Dir(abs) {
				t.Errorf("name, file, dir = %q, %q, %q", p.Name, p.File, p.Dir)
			}
			if want := filepath.Join(filepath.Dir(abs), "_storage"); p.Storage != want {
				t.Errorf("storage = %q, want %q", p.Storage, want)
			}
			if p.Continuous || p.Development || len(p.Configuration) != 0 {
				t.Errorf("continuous %v, development %v, configuration %v", p.Continuous, p.Development, p.Configuration)
			}
			if len(p.Datasets) != len(c.datasets) {
				t.Fatalf("%d datasets, want %d", len(p.Datasets), len(c.datasets))
			}
			for i, want := range c.datasets {
				if got := summarize(t, p, p.Datasets[i]); !equalSummary(got, want) {
					t.Errorf("dataset %d:\n got %+v\nwant %+v", i, got, want)
				}
				if p.Dataset(want.name) != p.Datasets[i] {
					t.Errorf("Dataset(%q) is not datasets[%d]", want.name, i)
				}
			}
			if p.Dataset("nope") != nil {
				t.Error("Dataset(nope) is not nil")
			}
			g, err := p.Graph()
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Order(); !slices.Equal(got, c.order) {
				t.Errorf("graph order = %v, want %v", got, c.order)
			}
			if got := p.Datasets[1].TombstoneGCSeconds(); got != DefaultTombstoneGCSeconds {
				t.Errorf("tombstone GC = %d", got)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join("testdata", "no-such.yaml"), nil)
	want := "testdata/no-such.yaml: cannot read the spec: no such file or directory"
	if err == nil || err.Error() != filepath.FromSlash(want) {
		t.Fatalf("err = %v, want %s", err, want)
	}
	if _, ok := err.(Errors); !ok {
		t.Fatalf("err is %T, want Errors", err)
	}
}

// TestRelativePaths checks that storage and source paths resolve against the spec's folder,
// whatever the working directory, and that absolute paths and globs are kept.
func TestRelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "sub", "pipeline.yaml")
	cases := []struct {
		name        string
		storage     string // "" leaves `storage:` out
		path        string
		wantStorage string
		wantPath    string
	}{
		{"defaults", "", "landing", filepath.Join(dir, "sub", ".pipeline"), filepath.Join(dir, "sub", "landing")},
		{"dot relative", "./_storage", "./landing/changes", filepath.Join(dir, "sub", "_storage"), filepath.Join(dir, "sub", "landing", "changes")},
		{"parent relative", "../store", "../in/*.json", filepath.Join(dir, "store"), filepath.Join(dir, "in", "*.json")},
		{"absolute", "/var/tmp/store", "/data/in", "/var/tmp/store", "/data/in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := "name: p\n"
			if c.storage != "" {
				src += "storage: " + c.storage + "\n"
			}
			src += "datasets:\n  - name: a\n    source: {path: '" + c.path + "', format: json, schema: 'id BIGINT'}\n"
			p, err := Parse(file, []byte(src), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Storage != c.wantStorage || p.Datasets[0].Source.Path != c.wantPath {
				t.Errorf("storage %q, path %q; want %q, %q", p.Storage, p.Datasets[0].Source.Path, c.wantStorage, c.wantPath)
			}
			if !strings.HasPrefix(p.Dir, dir) {
				t.Errorf("dir %q is not under %q", p.Dir, dir)
			}
		})
	}
}
