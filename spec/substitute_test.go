package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"a": "A", "dir": "/data", "empty": ""}
	look := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	cases := []struct {
		name  string
		in    string
		out   string
		unset []varUse
		bad   []varUse
	}{
		{"no reference", "plain $ text", "plain $ text", nil, nil},
		{"one", "${dir}/in", "/data/in", nil, nil},
		{"several", "${a}-${a}${dir}", "A-A/data", nil, nil},
		{"empty value", "x${empty}y", "xy", nil, nil},
		{"escaped", "$${a} and ${a}", "${a} and A", nil, nil},
		{"unset", "${dir}/${nope}/${nope2}", "/data//", []varUse{{"nope", 7}, {"nope2", 15}}, nil},
		{"unclosed", "x${a", "x${a", nil, []varUse{{"${ has no closing }", 1}}},
		{"empty name", "${}", "", nil, []varUse{{"${} names nothing", 0}}},
	}
	for _, c := range cases {
		out, unset, bad := expand(c.in, look)
		if out != c.out || !slices.Equal(unset, c.unset) || !slices.Equal(bad, c.bad) {
			t.Errorf("%s: expand(%q) = %q, %v, %v; want %q, %v, %v", c.name, c.in, out, unset, bad, c.out, c.unset, c.bad)
		}
	}
}

// TestSubstitutionOrder: configuration, overridden by conf (--conf), then the environment for
// names in neither; configuration values may use the environment.
func TestSubstitutionOrder(t *testing.T) {
	t.Parallel()
	const spec = `name: ${name}
configuration:
  name: from_config
  region: eu
  landing: ${LANDING_ROOT}/landing
  only_config: c
datasets:
  - name: a
    comment: "${region}|${only_config}|${only_conf}|${HOME}|$${region}"
    source: {path: '${landing}', format: json, schema: "id BIGINT"}
`
	env := map[string]string{"HOME": "/home/u", "region": "env-region", "LANDING_ROOT": "/mnt", "name": "from_env"}
	lookEnv := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	cases := []struct {
		name     string
		conf     map[string]string
		pipeline string
		comment  string
		path     string
	}{
		{"configuration beats the environment", map[string]string{"only_conf": "x"},
			"from_config", "eu|c|x|/home/u|${region}", "/mnt/landing"},
		{"conf beats configuration", map[string]string{"only_conf": "x", "region": "us", "name": "from_conf", "landing": "/in"},
			"from_conf", "us|c|x|/home/u|${region}", "/in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("/specs/p.yaml", []byte(spec), c.conf, lookEnv)
			if err != nil {
				t.Fatal(err)
			}
			ds := p.Datasets[0]
			if p.Name != c.pipeline || ds.Comment != c.comment || ds.Source.Path != c.path {
				t.Errorf("name %q, comment %q, path %q; want %q, %q, %q", p.Name, ds.Comment, ds.Source.Path, c.pipeline, c.comment, c.path)
			}
			if p.Configuration["region"] != c.conf["region"] && c.conf["region"] != "" {
				t.Errorf("configuration = %v", p.Configuration)
			}
		})
	}
}

// TestSubstitutionEverywhere: schemas, expressions, booleans, numbers and keys lists all take
// ${} before they are interpreted.
func TestSubstitutionEverywhere(t *testing.T) {
	t.Parallel()
	const spec = `name: p
development: ${dev}
datasets:
  - name: ${bronze}
    source: {path: in, format: '${fmt}', schema: "${key} BIGINT, op STRING, seq ${seq_type}"}
  - name: silver
    apply_changes:
      source: ${bronze}
      keys: ${key}
      sequence_by: [seq]
      apply_as_deletes: op == "${delete_op}"
      stored_as_scd_type: ${scd}
    expectations:
      - {name: e, expect: '${key} != nil', on_violation: '${action}'}
    table_properties:
      pipelines.cdc.tombstoneGCThresholdInSeconds: ${gc}
`
	conf := map[string]string{"dev": "true", "bronze": "raw", "fmt": "json", "key": "id", "seq_type": "BIGINT",
		"delete_op": "D", "scd": "1", "action": "drop", "gc": "60"}
	p, err := Parse("p.yaml", []byte(spec), conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	silver := p.Dataset("silver")
	switch {
	case !p.Development, p.Dataset("raw") == nil:
		t.Errorf("development %v, datasets %v", p.Development, p.Datasets)
	case p.Dataset("raw").Schema.DDL() != "id BIGINT, op STRING, seq BIGINT":
		t.Errorf("schema %s", p.Dataset("raw").Schema.DDL())
	case silver.ApplyChanges.Source != "raw" || !slices.Equal(silver.ApplyChanges.Keys, []string{"id"}) ||
		silver.ApplyChanges.ApplyAsDeletes != `op == "D"`:
		t.Errorf("apply_changes %+v", silver.ApplyChanges)
	case silver.Expectations[0].Expect != "id != nil" || silver.Expectations[0].OnViolation != "drop":
		t.Errorf("expectations %+v", silver.Expectations)
	case silver.TombstoneGCSeconds() != 60:
		t.Errorf("tombstone GC %d", silver.TombstoneGCSeconds())
	}
}

// TestUnsetListedAtOnce: every unset name is reported in one run, at its first use, with the
// other places it is used, and nothing else follows from the half-substituted values.
func TestUnsetListedAtOnce(t *testing.T) {
	t.Parallel()
	const spec = `name: p
configuration:
  root: ${ROOT}
datasets:
  - name: a
    source: {path: '${root}/${x}', format: json, schema: "id BIGINT, ${y} STRING"}
    comment: ${x} and ${y} and ${x}
`
	_, err := Parse("p.yaml", []byte(spec), nil, nil)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		"p.yaml:3:9: configuration.root: ${ROOT} is not set",
		"p.yaml:6:29: datasets[0].source.path: ${x} is not set; also used at 7:14, 7:32",
		"p.yaml:6:70: datasets[0].source.schema: ${y} is not set; also used at 7:23",
	}
	if len(es) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, es[i], w)
		}
	}
	if got, _ := Parse("p.yaml", []byte(spec), map[string]string{"root": "/r", "x": "x", "y": "y"}, nil); got == nil {
		t.Error("with every name set by conf the spec should load")
	}
}

// TestUnusedConf: a --conf key the spec neither defines under `configuration:` nor uses as ${}
// is an error (a misspelt key would leave the spec's own value, say its storage, in force), with
// the closest key as a hint; keys defined or used are accepted, a defined one even if unused.
func TestUnusedConf(t *testing.T) {
	t.Parallel()
	const spec = `name: t
storage: ${storage}
configuration:
  storage: ./st
  spare: x
datasets:
  - name: a
    source: {path: '${landing}', format: json, schema: "id BIGINT"}
`
	if _, err := Parse("p.yaml", []byte(spec), map[string]string{"storage": "/s", "landing": "/l", "spare": "y"}, nil); err != nil {
		t.Fatalf("defined and used keys: %v", err)
	}
	_, err := Parse("p.yaml", []byte(spec), map[string]string{"landing": "/l", "storag": "/s", "zzz": "1"}, nil)
	want := []string{
		"p.yaml: --conf storag: the spec neither defines storag under `configuration:` nor uses ${storag}, so --conf storag=/s would change nothing (hint: did you mean `storage`?)",
		"p.yaml: --conf zzz: the spec neither defines zzz under `configuration:` nor uses ${zzz}, so --conf zzz=1 would change nothing (hint: the keys it defines or uses: landing, spare, storage)",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("unused keys: %v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	// A name used only inside configuration values, which take the environment only.
	const inConfig = `name: t
configuration:
  landing: ${base}/landing
datasets:
  - name: a
    source: {path: '${landing}', format: json, schema: "id BIGINT"}
`
	_, err = Parse("p.yaml", []byte(inConfig), map[string]string{"base": "/data"}, func(string) (string, bool) { return "/env", true })
	if w := "p.yaml: --conf base: the spec uses ${base} only in `configuration:` values, which take the environment only, so --conf base=/data would change nothing (hint: set the environment variable base, or pass --conf for the configuration key whose value uses it)"; err == nil || err.Error() != w {
		t.Fatalf("a name used in configuration values: %v\nwant: %s", err, w)
	}
}

// TestUnsetSuggestsDefined: a ${name} that is not set, close to a key `configuration:` defines,
// gets that key as a did-you-mean before the usual ways to set it; a name close to none gets
// those alone.
func TestUnsetSuggestsDefined(t *testing.T) {
	t.Parallel()
	const spec = `name: p
configuration:
  land: ./l
datasets:
  - name: a
    source: {path: '${lnd}', format: json, schema: "id BIGINT"}
    comment: ${zzzzzz}
`
	_, err := Parse("p.yaml", []byte(spec), nil, func(string) (string, bool) { return "", false })
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("err = %v, want two problems", err)
	}
	want := []string{
		"p.yaml:6:21: datasets[0].source.path: ${lnd} is not set (hint: did you mean ${land}, which `configuration:` defines? Otherwise define it under `configuration:`, pass --conf lnd=VALUE, or set the environment variable lnd)",
		"p.yaml:7:14: datasets[0].comment: ${zzzzzz} is not set (hint: define it under `configuration:`, pass --conf zzzzzz=VALUE, or set the environment variable zzzzzz)",
	}
	for i, w := range want {
		if es[i].Error() != w {
			t.Errorf("problem %d:\n got %s\nwant %s", i, es[i], w)
		}
	}
}
