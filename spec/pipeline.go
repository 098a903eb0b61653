package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"tributary/dag"
	"tributary/schema"
)

// Pipeline is a validated pipeline spec (spec.md §1).
type Pipeline struct {
	Name string
	File string // absolute path of the spec file
	Dir  string // absolute path of the folder holding the spec; relative paths resolve against it
	// Storage is the absolute storage folder: `storage:` resolved against Dir, by default
	// <Dir>/.pipeline.
	Storage string
	// Configuration is the effective `configuration:` map: the spec's values with their ${NAME}
	// from the environment substituted, overridden and extended by the conf argument of Load.
	Configuration map[string]string
	// Overrides is the conf argument of Load (`--conf key=value` on the command line), kept so
	// that a command suggested to the user repeats it; nil when there was none.
	Overrides   map[string]string
	Continuous  bool // `continuous: true`: `pipeline run` keeps running, picking up new input
	Development bool // `development: true`: no retries, fail fast
	// TriggerInterval is how often continuous mode polls for new input (`trigger_interval`;
	// 0 when unset: DefaultTriggerInterval).
	TriggerInterval time.Duration
	// Schedule is the cron expression of `schedule:` (checked with CronParser), used by
	// `pipeline schedule`; "" when unset.
	Schedule string
	// Retries is the `retries:` policy of production mode; nil when unset (no retries).
	Retries  *Retries
	Datasets []*Dataset
}

// DatasetType is the kind of table a dataset is (spec.md §1 `type`).
type DatasetType string

// The dataset types of spec.md §1. This release accepts only StreamingTable, the default for
// datasets fed by `source` or `apply_changes`.
const (
	StreamingTable   DatasetType = "streaming_table"
	MaterializedView DatasetType = "materialized_view"
	View             DatasetType = "view"
)

// Dataset is one entry of `datasets:`. Exactly one of Source, ApplyChanges and
// ApplyChangesFromSnapshot is set.
type Dataset struct {
	Name    string
	Type    DatasetType
	Comment string
	Pos     Pos // the dataset's entry in the spec
	Source  *Source
	// ApplyChanges makes the dataset an AUTO CDC / APPLY CHANGES target (semantics.md).
	ApplyChanges *ApplyChanges
	// ApplyChangesFromSnapshot makes the dataset an AUTO CDC FROM SNAPSHOT target (semantics.md
	// "APPLY CHANGES FROM SNAPSHOT").
	ApplyChangesFromSnapshot *ApplyChangesFromSnapshot
	// Query makes the dataset the result of a SQL query (DuckDB SQL) over other datasets: a
	// materialized view, a streaming table over STREAM(x), or a view. Its Schema is empty in the
	// spec: it is the query result's, known when the query runs.
	Query *Query
	// SkipChangeCommits, for a query streaming table: versions of a STREAM source that update or
	// delete rows are skipped rather than failing the flow.
	SkipChangeCommits bool
	// Expectations are checked, in order, on the rows the dataset reads: the rows of its files
	// for a Source dataset, the change events of its source for an ApplyChanges dataset, the rows
	// of each snapshot for an ApplyChangesFromSnapshot dataset.
	Expectations    []Expectation
	TableProperties map[string]string // Delta table properties, values as written
	// PartitionBy lists the columns the dataset's table is partitioned by (Delta partition
	// columns, in order); only a dataset fed by `source` takes it.
	PartitionBy []string
	// Schema is the dataset's output schema: for a Source, the declared schema plus
	// RescuedDataColumn (STRING) at the end when set; for ApplyChanges (SCD type 1), the
	// source's output schema reduced by ColumnList or ExceptColumnList, in the source's column
	// order, keys always kept; for ApplyChangesFromSnapshot, the snapshot's columns. SCD type 2
	// targets add __START_AT and __END_AT (StartAt, EndAt). An APPLY CHANGES target whose
	// source infers its schema or is a query streaming table has none until ResolveSchema
	// fills it (SchemaAtRun).
	Schema schema.Schema

	// resolve, for an APPLY CHANGES target whose source's columns are known only when an update
	// runs, checks the flow against them once they are and fills Schema (ResolveSchema);
	// resolveFrom is that source.
	resolve     func() error
	resolveFrom *Dataset
}

// SchemaAtRun reports whether the dataset's columns are known only when an update runs: it is
// an APPLY CHANGES target whose source infers its schema (Source.InferSchema) or is a query
// streaming table (whose columns are its query's), so that its checks against the source's
// columns wait for them. Its Schema is empty until ResolveSchema fills it.
func (ds *Dataset) SchemaAtRun() bool { return ds.resolve != nil }

// ResolveSchema, for a dataset whose columns are known only when an update runs (SchemaAtRun),
// checks its APPLY CHANGES flow against its source's columns as Load checks a flow whose source
// declares them (keys, sequence_by, column lists, apply_as_deletes, expectations, a declared
// target `schema:`) and fills Schema. The source's Schema must be filled first (flows.Setup
// does so: an inferred source's set-up, in dependency order, or a query source's table). The
// error is Errors, at the positions of the spec the problems are at, when the flow does not
// fit those columns; it does nothing for other datasets.
func (ds *Dataset) ResolveSchema() error {
	if ds.resolve == nil {
		return nil
	}
	return ds.resolve()
}

// CheckSchemaWith makes ResolveSchema's checks of ds as if its source's columns were source (a
// query streaming table's, as its query binds before any update has run it) and returns their
// problems, leaving the Schema of both datasets as it was; nil for a dataset whose columns are
// not known only when an update runs. Not safe to call while an update runs ResolveSchema.
func (ds *Dataset) CheckSchemaWith(source schema.Schema) Errors {
	if ds.resolve == nil || ds.resolveFrom == nil {
		return nil
	}
	was, own := ds.resolveFrom.Schema, ds.Schema
	defer func() { ds.resolveFrom.Schema, ds.Schema = was, own }()
	ds.resolveFrom.Schema = source
	err := ds.resolve()
	var es Errors
	switch {
	case err == nil:
	case errors.As(err, &es):
	default:
		es = Errors{{Pos: ds.ApplyChanges.Pos, Msg: err.Error()}}
	}
	return es
}

// Source is file ingestion in the style of Auto Loader (semantics.md "Ingestion").
type Source struct {
	Path      string            // absolute; a folder (every file below it) or a glob
	Format    string            // "json": one JSON object a line; FormatCSV; FormatParquet; FormatDebezium; FormatDelta; FormatPostgres
	Schema    schema.Schema     // the declared schema, parsed from SchemaDDL
	SchemaDDL string            // the declared schema as written (after ${} substitution)
	Options   map[string]string // reader options, checked and normalised: the CSV* names for csv; none for json
	// RescuedDataColumn, when set, names a STRING column added after the declared ones that
	// receives, as JSON, what did not fit the schema.
	RescuedDataColumn string
	Mode              string // "permissive" (default), "dropmalformed" or "failfast"
	// InferSchema: no schema was declared (json, csv); the first run infers Schema from the
	// files present and stores it as the table's schema, and later runs reuse the table's.
	// Schema (and the dataset's) is empty until then (flows.Setup fills it).
	InferSchema bool
	// SchemaEvolutionMode is one of the Evolution* values (always set after decoding).
	SchemaEvolutionMode string
	// SchemaHints pins the type of some columns of an inferred schema (and adds those absent).
	SchemaHints    schema.Schema
	SchemaHintsDDL string
	// IncludeMetadata adds FilePathColumn and FileModificationTimeColumn after the other
	// columns (file sources).
	IncludeMetadata bool
	// MaxFilesPerTrigger, when > 0, bounds the files of one ingest batch; a triggered update
	// then runs batches until every available file is read (file sources).
	MaxFilesPerTrigger int
	// Read, for format delta, is how the Delta table at Path is read: ReadAppend (the rows its
	// versions add) or ReadChangeFeed (its change data feed). Schema is then the table's schema,
	// plus _change_type, _commit_version and _commit_timestamp for ReadChangeFeed.
	Read string
	// StartingVersion, for format delta, is the first table version read; -1 (the default) reads
	// the latest snapshot's rows first (as inserts for ReadChangeFeed), then every later version,
	// as a Spark streaming read does.
	StartingVersion int64
	// SkipChangeCommits, for ReadAppend: versions that update or delete rows are skipped rather
	// than failing the flow.
	SkipChangeCommits bool
	// Table, when set, names the dataset of this pipeline whose table the source reads
	// (`source: {table: x}`); Format is then FormatDelta and Path that table's folder. A change
	// feed read this way leaves out update pre-images.
	Table string
	// Postgres, for FormatPostgres, is the server and table whose changes the source streams;
	// Schema is then the declared columns plus PostgresColumns.
	Postgres *PostgresSource
	Pos      Pos
}

// FormatDelta reads a Delta table by path (Source.Read says how).
const FormatDelta = "delta"

// FormatParquet reads Parquet files by column name, with a declared schema.
const FormatParquet = "parquet"

// FormatCSV reads CSV files (RFC 4180 quoting; the CSV* option names say how).
const FormatCSV = "csv"

// The values of Source.Read.
const (
	ReadAppend     = "append"
	ReadChangeFeed = "change_feed"
)

// The reader modes of Source.Mode, as Spark's JSON reader names them.
const (
	ModePermissive    = "permissive"
	ModeDropMalformed = "dropmalformed"
	ModeFailFast      = "failfast"
)

// ApplyChanges is an AUTO CDC / APPLY CHANGES flow into the dataset (semantics.md
// "APPLY CHANGES"). Column names refer to the output schema of the Source dataset.
type ApplyChanges struct {
	Source     string   // the dataset of this pipeline that delivers the change events
	Keys       []string // one or more columns identifying a row
	SequenceBy []string // the ordering columns, compared left to right
	// ApplyAsDeletes is a row expression (expectations.Compile) over the source's columns;
	// events for which it is true are deletes. Empty means no event is a delete.
	ApplyAsDeletes   string
	ColumnList       []string // columns to keep (keys are always kept); at most one of ColumnList and ExceptColumnList is set
	ExceptColumnList []string // columns to leave out; never a key
	// ApplyAsTruncates is a row expression over the source's columns; events for which it is
	// true truncate the target (SCD type 1 only). Empty means no event is a truncate.
	ApplyAsTruncates string
	StoredAsSCDType  int // 1 (default) or 2
	// IgnoreNullUpdates: a NULL in an update keeps the stored value of that column.
	IgnoreNullUpdates bool
	// TrackHistoryColumnList / TrackHistoryExceptColumnList choose the columns whose changes open
	// a new SCD type 2 version (at most one is set; SCD type 2 only). Neither: every non-key column.
	TrackHistoryColumnList       []string
	TrackHistoryExceptColumnList []string
	Pos                          Pos
}

// Keeps reports whether the target keeps the source column named col: a key always, else a
// column of ColumnList when it is set, else one not in ExceptColumnList (Delta Live Tables'
// COLUMNS / COLUMNS * EXCEPT of APPLY CHANGES).
func (ac *ApplyChanges) Keeps(col string) bool {
	switch {
	case slices.Contains(ac.Keys, col):
		return true
	case ac.ColumnList != nil:
		return slices.Contains(ac.ColumnList, col)
	default:
		return !slices.Contains(ac.ExceptColumnList, col)
	}
}

// The SCD type 2 columns of an APPLY CHANGES target (semantics.md "APPLY CHANGES"): the version's
// validity, of the type of sequence_by (a struct of its columns when it has several).
const (
	StartAt = "__START_AT"
	EndAt   = "__END_AT"
)

// Expectation is a data quality rule (semantics.md "Expectations").
type Expectation struct {
	Name        string
	Expect      string // a row expression (expectations.Compile); a row passes only when it is true
	OnViolation string // "warn" (default), "drop", "fail" or "quarantine"
	Pos         Pos
	// posAt is the position in the spec's file of a rune offset of Expect (as its problems are
	// placed), nil for an Expectation not decoded from a spec or without an expression.
	posAt func(off int) Pos
	path  string // the key path of its expression, "datasets[i].expectations[j].expect"
}

// The actions of Expectation.OnViolation.
const (
	OnViolationWarn = "warn"
	OnViolationDrop = "drop"
	OnViolationFail = "fail"
	// OnViolationQuarantine writes the violating rows to the <dataset>_quarantine table
	// (QuarantineSuffix) and keeps them out of the dataset.
	OnViolationQuarantine = "quarantine"
)

// TombstoneGCProperty is the table property that sets, in seconds, how long APPLY CHANGES keeps
// the tombstone of a deleted key (semantics.md "APPLY CHANGES"). Its value must be a
// non-negative integer; without it the runner uses DefaultTombstoneGCSeconds.
const TombstoneGCProperty = "pipelines.cdc.tombstoneGCThresholdInSeconds"

// DefaultTombstoneGCSeconds is the tombstone lifetime when TombstoneGCProperty is not set:
// two days (semantics.md, Decision).
const DefaultTombstoneGCSeconds = 172800

// TombstoneGCSeconds returns the dataset's tombstone lifetime in seconds: TombstoneGCProperty
// when set (validation guarantees it is a non-negative integer), else DefaultTombstoneGCSeconds.
func (ds *Dataset) TombstoneGCSeconds() int64 {
	if v, ok := ds.TableProperties[TombstoneGCProperty]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return DefaultTombstoneGCSeconds
}

// Load reads the spec at path and returns the validated pipeline. conf holds the `--conf k=v`
// pairs, which override `configuration:`; ${NAME} not set by either comes from the process
// environment. Positions in errors name the file as path was given. On any problem Load returns
// nil and an Errors with every problem found.
func Load(path string, conf map[string]string) (*Pipeline, error) {
	d := LoadDraft(path, conf)
	if len(d.Errors) > 0 {
		return nil, d.Errors
	}
	return d.Pipeline, nil
}

// LoadDraft is Load that also returns what it decoded of a spec with problems (Draft), for the
// checks that go on past them.
func LoadDraft(path string, conf map[string]string) *Draft {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Draft{Errors: Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("cannot read the spec: %v", err)}}}
	}
	return ParseDraft(path, data, conf, os.LookupEnv)
}

// Parse is Load for a spec already read: file names it (for positions and, made absolute
// against the working directory, for File, Dir and relative paths), env looks up environment
// variables (nil means none is set).
func Parse(file string, data []byte, conf map[string]string, env func(string) (string, bool)) (*Pipeline, error) {
	d := ParseDraft(file, data, conf, env)
	if len(d.Errors) > 0 {
		return nil, d.Errors
	}
	return d.Pipeline, nil
}

// ParseDraft is Parse that also returns what it decoded of a spec with problems (Draft), for
// the checks that go on past them.
func ParseDraft(file string, data []byte, conf map[string]string, env func(string) (string, bool)) *Draft {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return &Draft{Errors: Errors{{Pos: Pos{File: file}, Msg: fmt.Sprintf("cannot locate the spec: %v", err)}}}
	}
	d := newDecoder(file, filepath.Dir(abs), data)
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		d.errs = append(d.errs, syntaxError(file, data, err))
		return &Draft{Errors: d.errs}
	}
	if len(root.Content) == 0 {
		d.add(Pos{File: file, Line: 1, Column: 1}, "", "write at least `name:` and `datasets:`", "the spec is empty")
		return &Draft{Errors: d.errs}
	}
	expandMerges(&root, map[*yaml.Node]bool{})
	doc := resolve(root.Content[0])
	dropExtensions(doc)
	inConfig := configNames(doc)
	vars, look, cfgNode, brokenVars := d.configuration(doc, conf, env)
	used := map[string]bool{} // the names ${} looks up outside the configuration
	d.substituteAll(doc, func(name string) (string, bool) {
		used[name] = true
		return look(name)
	}, cfgNode, brokenVars, slices.Sorted(maps.Keys(vars)))
	d.unusedConf(file, conf, cfgNode, used, inConfig)
	p, info := d.pipeline(doc, abs, vars)
	var v *validation
	if p != nil {
		v = d.validate(p, info)
		d.validatePartitions(info)
	}
	if len(d.errs) > 0 {
		draft := &Draft{Pipeline: p, Errors: sortErrors(d.errs)}
		if p != nil {
			draft.judge(d, v, info)
		}
		return draft
	}
	if len(conf) > 0 {
		p.Overrides = maps.Clone(conf)
	}
	return &Draft{Pipeline: p}
}

// Dataset returns the dataset named name, or nil.
func (p *Pipeline) Dataset(name string) *Dataset {
	for _, ds := range p.Datasets {
		if ds.Name == name {
			return ds
		}
	}
	return nil
}

// Graph returns the dependency graph of the datasets, in spec order: an ApplyChanges dataset
// depends on its Source dataset, a Query dataset on the datasets its SQL reads. For a pipeline returned by Load it never fails.
func (p *Pipeline) Graph() (*dag.Graph, error) {
	g, err := dag.New(p.nodes())
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return g, nil
}

// nodes returns one dag.Node per dataset, in spec order.
func (p *Pipeline) nodes() []dag.Node {
	out := make([]dag.Node, len(p.Datasets))
	for i, ds := range p.Datasets {
		out[i] = dag.Node{Name: ds.Name, Deps: ds.deps()}
		if ds.Type == View {
			out[i].Kind = "view" // not stored: computed by the flows that read it
		}
	}
	return out
}

// deps returns the names of the datasets ds reads from.
func (ds *Dataset) deps() []string {
	if ds.ApplyChanges != nil && ds.ApplyChanges.Source != "" {
		return []string{ds.ApplyChanges.Source}
	}
	if s := ds.ApplyChangesFromSnapshot; s != nil && s.Source != "" {
		return []string{s.Source}
	}
	if ds.Source != nil && ds.Source.Table != "" {
		return []string{ds.Source.Table}
	}
	if ds.Query != nil {
		var out []string
		for _, r := range ds.Query.Refs {
			if !contains(out, r.Dataset()) {
				out = append(out, r.Dataset())
			}
		}
		return out
	}
	return nil
}
