package spec

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"tributary/delta"
	"tributary/internal/suggest"
	"tributary/schema"

	"go.yaml.in/yaml/v3"
)

// The ways a dataset gets its data (spec.md §1); a dataset has exactly one.
const (
	kindSource       = "source"
	kindApplyChanges = "apply_changes"
	kindSnapshot     = "apply_changes_from_snapshot"
	kindQuery        = "query"
)

var pipelineKeys = keySet{
	known: []string{"name", "storage", "configuration", "continuous", "trigger_interval", "development", "schedule", "retries", "datasets"},
}

var datasetKeys = keySet{
	known: []string{"name", "type", "comment", kindSource, kindApplyChanges, kindSnapshot, kindQuery, "skip_change_commits", "expectations", "table_properties", "schema", "partition_by"},
}

var expectationKeys = keySet{known: []string{"name", "expect", "on_violation"}}

// datasetInfo keeps what validation needs beyond the Dataset: the nodes to point at.
type datasetInfo struct {
	// declared is the dataset-level `schema:` of an APPLY CHANGES target (nil when absent).
	declared    *schema.Schema
	declaredRef ref
	ds          *Dataset
	node        *yaml.Node // the dataset's entry
	path        string     // "datasets[i]"
	nameNode    *yaml.Node // nil when the name is missing or invalid
	kind        string     // how the dataset gets its data; "" when that is missing or ambiguous
	source      *sourceInfo
	apply       *applyInfo
	snapshot    *snapshotInfo
	expect      []ref // the `expect` node and path of each of ds.Expectations (zero when missing)
	partitionBy *partitionInfo
	query       *queryInfo
	skipChanges *yaml.Node // the `skip_change_commits:` key (query streaming tables only)
}

// pipeline decodes the top level of the spec. It returns nil when the document is not a
// mapping at all.
func (d *decoder) pipeline(doc *yaml.Node, abs string, vars map[string]string) (*Pipeline, []*datasetInfo) {
	entries, ok := d.mapping(doc, "", pipelineKeys)
	if !ok {
		return nil, nil
	}
	p := &Pipeline{File: abs, Dir: d.dir, Storage: filepath.Join(d.dir, ".pipeline"), Configuration: vars}
	var infos []*datasetInfo
	has := map[string]bool{}
	for _, e := range entries {
		has[e.name] = true
		switch e.name {
		case "name":
			p.Name, _ = d.ident(e.val, e.path, "pipeline name")
		case "storage":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				p.Storage = resolvePath(d.dir, s)
			}
		case "configuration":
			// decoded before substitution (see configuration)
		case "continuous":
			p.Continuous, _ = d.boolean(e.val, e.path)
		case "trigger_interval":
			p.TriggerInterval, _ = d.duration(e.val, e.path)
		case "schedule":
			p.Schedule, _ = d.schedule(e.val, e.path)
		case "retries":
			p.Retries = d.retries(e.val, e.path)
		case "development":
			p.Development, _ = d.boolean(e.val, e.path)
		case "datasets":
			infos = d.datasets(e.val, e.path)
		}
	}
	if !has["name"] {
		d.addAt(doc, "name", "add `name: my_pipeline` at the top", "the pipeline has no name")
	}
	if !has["datasets"] {
		d.addAt(doc, "datasets", "add a `datasets:` list", "the pipeline has no datasets")
	}
	for _, in := range infos {
		p.Datasets = append(p.Datasets, in.ds)
	}
	return p, infos
}

// resolvePath makes p absolute against dir, the spec's folder.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// datasets decodes the `datasets:` list.
func (d *decoder) datasets(n *yaml.Node, path string) []*datasetInfo {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.addAt(n, path, "write one `- name: ...` entry per dataset", "expected a list of datasets, found %s", kindName(n))
		return nil
	}
	if len(n.Content) == 0 {
		d.addAt(n, path, "add at least one dataset", "the list of datasets is empty")
	}
	var out []*datasetInfo
	for i, c := range n.Content {
		if in := d.dataset(c, item(path, i)); in != nil {
			out = append(out, in)
		}
	}
	return out
}

// dataset decodes one entry of `datasets:`; nil when it is not a mapping.
func (d *decoder) dataset(n *yaml.Node, path string) *datasetInfo {
	n = resolve(n)
	entries, ok := d.mapping(n, path, datasetKeys)
	if !ok {
		return nil
	}
	in := &datasetInfo{ds: &Dataset{Pos: d.pos(n), TableProperties: map[string]string{}}, node: n, path: path}
	ds := in.ds
	var kinds []entry
	var typeEntry *entry
	for _, e := range entries {
		switch e.name {
		case "name":
			if name, ok := d.ident(e.val, e.path, "dataset name"); ok {
				ds.Name, in.nameNode = name, resolve(e.val)
			}
		case "type":
			typeEntry = &e
		case "comment":
			ds.Comment, _ = d.str(e.val, e.path)
		case kindSource:
			kinds = append(kinds, e)
			ds.Source, in.source = d.source(e.val, e.path)
		case kindApplyChanges:
			kinds = append(kinds, e)
			ds.ApplyChanges, in.apply = d.applyChanges(e.val, e.path)
		case kindSnapshot:
			kinds = append(kinds, e)
			ds.ApplyChangesFromSnapshot, in.snapshot = d.snapshot(e.val, e.path)
		case kindQuery:
			kinds = append(kinds, e)
			ds.Query, in.query = d.query(e.val, e.path)
		case "skip_change_commits":
			ds.SkipChangeCommits, _ = d.boolean(e.val, e.path)
			in.skipChanges = e.key
		case "expectations":
			ds.Expectations, in.expect = d.expectations(e.val, e.path)
		case "table_properties":
			ds.TableProperties = d.tableProperties(e.val, e.path)
		case "partition_by":
			ds.PartitionBy, in.partitionBy = d.partitionBy(e)
		case "schema":
			if s, ok := d.nonEmpty(e.val, e.path); ok {
				declared, problems, complete := parseColumns(s)
				node := resolve(e.val)
				for _, pr := range problems {
					d.add(d.posInBytes(node, pr.Offset), e.path, "write Spark DDL: \"name TYPE, ...\"", "invalid schema: %s", pr.Msg)
				}
				if complete && len(problems) == 0 {
					in.declared, in.declaredRef = &declared, ref{node, e.path}
				}
			}
		}
	}
	if !hasKey(entries, "name") {
		d.addAt(n, child(path, "name"), "add `name: my_table`", "the dataset has no name")
	}
	switch len(kinds) {
	case 0:
		d.addAt(n, path, "add `source:` (file ingestion) or `apply_changes:` (AUTO CDC)",
			"the dataset has no data: give it one of source, apply_changes, apply_changes_from_snapshot or query")
	case 1:
		in.kind = kinds[0].name
	default:
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = k.name
		}
		d.addAt(kinds[1].key, kinds[1].path, "keep one of them",
			"a dataset has exactly one of source, apply_changes, apply_changes_from_snapshot or query; this one has %s",
			strings.Join(names, " and "))
	}
	ds.Type = d.datasetType(typeEntry, in.kind)
	if ds.FileView() && in.kind == kindSource {
		d.fileView(in, typeEntry)
		return in
	}
	d.checkQuarantine(in)
	return in
}

func hasKey(entries []entry, name string) bool {
	for _, e := range entries {
		if e.name == name {
			return true
		}
	}
	return false
}

// requireKeys reports each of reqs (a key and the hint of how to give it) that the mapping n at
// path, decoded into entries, lacks, as "<block> has no <key>": unless a key of n that is not
// among entries (an unknown key, already reported with a did-you-mean) is a misspelling of it,
// which would make one mistake two errors.
func (d *decoder) requireKeys(n *yaml.Node, path, block string, entries []entry, reqs [][2]string) {
	for _, req := range reqs {
		if !hasKey(entries, req[0]) && !misspelt(n, entries, req[0]) {
			d.addAt(n, child(path, req[0]), req[1], "%s has no %s", block, req[0])
		}
	}
}

// misspelt says whether the mapping n has a key, not among entries, that suggest.Closest (or a
// case-blind match) takes for key.
func misspelt(n *yaml.Node, entries []entry, key string) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode || hasKey(entries, k.Value) {
			continue
		}
		if strings.EqualFold(k.Value, key) || len(suggest.Closest(k.Value, []string{key})) > 0 {
			return true
		}
	}
	return false
}

// datasetType decodes `type`, defaulting by how the dataset gets its data. A dataset fed by
// apply_changes or apply_changes_from_snapshot is a streaming table; one fed by `source:` is a
// streaming table or a view over files (fileView).
func (d *decoder) datasetType(e *entry, kind string) DatasetType {
	def := StreamingTable
	if kind == kindQuery {
		def = MaterializedView
	}
	if e == nil {
		return def
	}
	s, ok := d.oneOf(e.val, e.path, string(StreamingTable), string(MaterializedView), string(View))
	if !ok {
		return def
	}
	t := DatasetType(s)
	if t != StreamingTable && (kind == kindApplyChanges || kind == kindSnapshot || (kind == kindSource && t != View)) {
		d.addAt(resolve(e.val), e.path, "remove `type:`; a dataset fed by "+kind+" is a streaming_table",
			"type %s is not supported yet for a dataset fed by %s", t, kind)
	}
	return t
}

// expectations decodes the `expectations:` list; it also returns each entry's `expect` node.
func (d *decoder) expectations(n *yaml.Node, path string) ([]Expectation, []ref) {
	n = resolve(n)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		d.addAt(n, path, "write `- {name: ..., expect: ..., on_violation: warn|drop|fail}` entries",
			"expected a list of expectations, found %s", kindName(n))
		return nil, nil
	}
	var out []Expectation
	var refs []ref
	first := map[string]Pos{}
	for i, c := range n.Content {
		c = resolve(c)
		p := item(path, i)
		entries, ok := d.mapping(c, p, expectationKeys)
		if !ok {
			continue
		}
		x := Expectation{OnViolation: OnViolationWarn, Pos: d.pos(c)}
		var expect ref
		for _, e := range entries {
			switch e.name {
			case "name":
				if s, ok := d.nonEmpty(e.val, e.path); ok {
					x.Name = s
					if at, dup := first[s]; dup {
						d.addAt(resolve(e.val), e.path, "give each expectation of a dataset its own name",
							"expectation %q is declared twice (first at %s)", s, at.short())
					} else {
						first[s] = d.pos(resolve(e.val))
					}
				}
			case "expect":
				if s, ok := d.nonEmpty(e.val, e.path); ok {
					node := resolve(e.val)
					x.Expect, expect = s, ref{node, e.path}
					x.posAt, x.path = func(off int) Pos { return d.posIn(node, off) }, e.path
				}
			case "on_violation":
				if s, ok := d.oneOf(e.val, e.path, OnViolationWarn, OnViolationDrop, OnViolationFail, OnViolationQuarantine); ok {
					x.OnViolation = s
				}
			}
		}
		if !hasKey(entries, "name") {
			d.addAt(c, child(p, "name"), "add `name: ...`; it names the expectation in metrics and errors", "the expectation has no name")
		}
		if !hasKey(entries, "expect") {
			d.addAt(c, child(p, "expect"), "add `expect: <row expression>`, e.g. `id != nil`", "the expectation has no expect")
		}
		out = append(out, x)
		refs = append(refs, expect)
	}
	return out, refs
}

// tableProperties decodes `table_properties:` and checks the ones this package knows: a key
// under delta. or pipelines. must be a property of Delta Lake (deltaTableProperties, or a
// delta.feature.<name> flag) or of Delta Live Tables and this runner (pipelinesTableProperties),
// as Delta refuses an unknown delta. key; a misspelt one is an error with a did-you-mean. Other
// keys (an owner, a team) are the user's own. A boolean property takes true or false in any
// case, stored in lower case.
func (d *decoder) tableProperties(n *yaml.Node, path string) map[string]string {
	m, keys, _ := d.strMap(n, path)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		var known []string
		switch {
		case strings.HasPrefix(k, "delta.feature."):
			continue
		case strings.HasPrefix(k, "delta."):
			known = deltaTableProperties
		case strings.HasPrefix(k, "pipelines."):
			known = pipelinesTableProperties
		default:
			continue
		}
		if !slices.Contains(known, k) {
			hint := "a property under delta. or pipelines. is one of Delta Lake's or Delta Live Tables' (see the README's table_properties); name a property of your own without those prefixes"
			if s := suggest.Closest(k, known); len(s) > 0 {
				hint = "did you mean " + quoteJoin(s, " or ") + "?"
			}
			d.addAt(keys[k], child(path, k), hint, "unknown table property %s", k)
			continue
		}
		if slices.Contains(booleanTableProperties, k) {
			switch v := strings.ToLower(strings.TrimSpace(m[k])); v {
			case "true", "false":
				m[k] = v
			default:
				d.addAt(valueOf(resolve(n), keys[k]), child(path, k), `write true or false`, "%s takes true or false, found %q", k, m[k])
			}
		}
	}
	for _, c := range valueChecks {
		v, ok := m[c.name]
		if !ok {
			continue
		}
		if err := c.check(v); err != nil {
			d.addAt(valueOf(resolve(n), keys[c.name]), child(path, c.name), c.hint, "%v", err)
		}
	}
	if v, ok := m[TombstoneGCProperty]; ok {
		if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || s < 0 {
			val := valueOf(resolve(n), keys[TombstoneGCProperty])
			d.addAt(val, child(path, TombstoneGCProperty), `write whole seconds, e.g. "172800" for two days`,
				"%s must be a non-negative whole number of seconds, found %q", TombstoneGCProperty, v)
		}
	}
	return m
}

// deltaTableProperties are the delta. table properties of Delta Lake (its documentation's
// "Delta table properties reference" and Delta PROTOCOL.md): those this runner reads
// (delta.enableChangeDataFeed, delta.enableDeletionVectors, delta.checkpointInterval,
// delta.deletedFileRetentionDuration, delta.logRetentionDuration, delta.enableExpiredLogCleanup,
// delta.targetFileSize, delta.checkpoint.writeStatsAsJson)
// and the others, kept in the table's configuration for the engines that read them.
var deltaTableProperties = []string{
	"delta.appendOnly", "delta.autoOptimize.autoCompact", "delta.autoOptimize.optimizeWrite",
	"delta.checkpoint.writeStatsAsJson", "delta.checkpoint.writeStatsAsStruct", "delta.checkpointInterval",
	"delta.checkpointPolicy", "delta.checkpointRetentionDuration", "delta.columnMapping.maxColumnId",
	"delta.columnMapping.mode", "delta.compatibility.symlinkFormatManifest.enabled",
	"delta.dataSkippingNumIndexedCols", "delta.dataSkippingStatsColumns", "delta.deletedFileRetentionDuration",
	"delta.enableChangeDataFeed", "delta.enableDeletionVectors", "delta.enableExpiredLogCleanup",
	"delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2", "delta.enableInCommitTimestamps",
	"delta.enableRowTracking", "delta.enableTypeWidening", "delta.isolationLevel", "delta.logRetentionDuration",
	"delta.minReaderVersion", "delta.minWriterVersion", "delta.parquet.compression.codec",
	"delta.randomPrefixLength", "delta.randomizeFilePrefixes", "delta.setTransactionRetentionDuration",
	"delta.targetFileSize", "delta.tuneFileSizesForRewrites", "delta.universalFormat.enabledFormats",
}

// pipelinesTableProperties are the pipelines. table properties of Delta Live Tables and of this
// runner (pipelines.autoOptimize.minNumFiles).
var pipelinesTableProperties = []string{
	"pipelines.autoOptimize.managed", "pipelines.autoOptimize.minNumFiles", "pipelines.autoOptimize.zOrderCols",
	"pipelines.cdc.tombstoneGCFrequencyInSeconds", TombstoneGCProperty, "pipelines.reset.allowed",
	"pipelines.trigger.interval",
}

// valueChecks check the values of the table properties this runner reads whose values are not
// booleans: a value it cannot read would otherwise be written into the table and found only
// later (VACUUM refused, checkpoints not written, a default used instead).
var valueChecks = []struct {
	name  string
	hint  string
	check func(v string) error
}{
	{delta.ConfigDeletedFileRetention, `write an interval, e.g. "interval 7 days", "interval 12 hours" or "168h"`, func(v string) error {
		_, err := delta.ParseInterval(v)
		return err
	}},
	{delta.ConfigLogRetention, `write an interval, e.g. "interval 30 days" or "720h"`, func(v string) error {
		_, err := delta.ParseInterval(v)
		return err
	}},
	{delta.ConfigCheckpointInterval, `write a whole number of commits, e.g. "10"`, func(v string) error {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || n < 1 {
			return fmt.Errorf("%q is not a whole number of commits, 1 or more", v)
		}
		return nil
	}},
	{delta.ConfigTargetFileSize, `write a size in bytes, e.g. "134217728" or "128mb"`, func(v string) error {
		if n, err := delta.ParseSize(v); err != nil || n < 1 {
			return fmt.Errorf("%q is not a size in bytes, 1 or more", v)
		}
		return nil
	}},
	{delta.ConfigAutoOptimizeMinFiles, `write a whole number of files, 2 or more, e.g. "50"`, func(v string) error {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 2 {
			return fmt.Errorf("%q is not a whole number of files, 2 or more", v)
		}
		return nil
	}},
}

// booleanTableProperties take true or false (Delta parses them ignoring case).
var booleanTableProperties = []string{
	"delta.appendOnly", "delta.autoOptimize.autoCompact", "delta.autoOptimize.optimizeWrite",
	"delta.checkpoint.writeStatsAsJson", "delta.checkpoint.writeStatsAsStruct",
	"delta.compatibility.symlinkFormatManifest.enabled", "delta.enableChangeDataFeed", "delta.enableDeletionVectors",
	"delta.enableExpiredLogCleanup", "delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2",
	"delta.enableInCommitTimestamps", "delta.enableRowTracking", "delta.enableTypeWidening",
	"delta.randomizeFilePrefixes", "delta.tuneFileSizesForRewrites", "pipelines.autoOptimize.managed",
	"pipelines.reset.allowed",
}

// valueOf returns the value node of key k in mapping m (k itself when not found).
func valueOf(m, k *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if resolve(m.Content[i]) == k {
			return resolve(m.Content[i+1])
		}
	}
	return k
}
