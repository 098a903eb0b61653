package spec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr/file"

	"tributary/dag"
	"tributary/delta"
	"tributary/expectations"
	"tributary/schema"
)

// validation checks what involves more than one dataset: names, references, cycles, output
// schemas, columns and expressions. Each dataset's output schema is computed once, after its
// source's (memoized, so the order of the spec does not matter).
type validation struct {
	d      *decoder
	byName map[string]*datasetInfo
	names  []string // unique dataset names in spec order
	// byLower holds the datasets by lower-case name, which are unique too (uniqueNames).
	byLower map[string]*datasetInfo
	state   map[*datasetInfo]int
	ok      map[*datasetInfo]bool // the output schema is known
}

const (
	visiting = 1
	visited  = 2
)

// validate runs every cross-dataset check on the decoded pipeline and fills Dataset.Schema. It
// returns the validation, which knows the datasets by name (byName).
func (d *decoder) validate(p *Pipeline, infos []*datasetInfo) *validation {
	v := &validation{d: d, byName: map[string]*datasetInfo{}, byLower: map[string]*datasetInfo{}, state: map[*datasetInfo]int{}, ok: map[*datasetInfo]bool{}}
	v.uniqueNames(infos)
	v.postgresSlots(p, infos)
	v.sqlNames(infos)
	v.quarantineNames(infos)
	v.inferredReads(infos)
	v.references(infos)
	v.queryChecks(infos)
	v.querySyntax(infos)
	v.fileViewReads(infos)
	v.tableSources(p, infos)
	v.cycles()
	for _, in := range infos {
		v.output(in)
	}
	return v
}

// uniqueNames reports every repeated dataset name at the repeat, naming the first use. Names
// that differ only in case are repeats too: SQL (DuckDB, Spark) resolves table names without
// regard to case, and their table folders would be one folder on a case-insensitive file system.
func (v *validation) uniqueNames(infos []*datasetInfo) {
	lower := v.byLower
	for _, in := range infos {
		if in.nameNode == nil {
			continue
		}
		name := in.ds.Name
		if first, dup := v.byName[name]; dup {
			v.d.addAt(in.nameNode, child(in.path, "name"), "give each dataset its own name",
				"dataset %s is declared twice: here and at %s", name, v.d.pos(first.nameNode))
			continue
		}
		if first, dup := lower[strings.ToLower(name)]; dup {
			v.d.addAt(in.nameNode, child(in.path, "name"), "give each dataset a name of its own, not only in case (a streaming dataset renamed reads its input again: --full-refresh it)",
				"dataset %s differs only in case from dataset %s at %s: SQL names tables without regard to case, and their table folders are one on a case-insensitive file system", name, first.ds.Name, v.d.pos(first.nameNode))
			continue
		}
		v.byName[name] = in
		lower[strings.ToLower(name)] = in
		v.names = append(v.names, name)
	}
}

// sqlNames gives each dataset a query reads the name the spec gives it, when the query spells it
// in another case, and marks a reference to a quarantine table (QueryRef.Quarantine): SQL names tables without regard to case (as Spark, Delta Live Tables and
// DuckDB do), and dataset names are unique without regard to case (uniqueNames).
func (v *validation) sqlNames(infos []*datasetInfo) {
	for _, in := range infos {
		q := in.ds.Query
		if q == nil {
			continue
		}
		for i, r := range q.Refs {
			if _, ok := v.byName[r.Name]; ok {
				continue
			}
			if target, ok := v.byLower[strings.ToLower(r.Name)]; ok {
				q.Refs[i].Name = target.ds.Name
				continue
			}
			// The quarantine table of a dataset that quarantines (in any case too): a table the
			// dataset's flow writes, read after it.
			if base, isQ := strings.CutSuffix(strings.ToLower(r.Name), QuarantineSuffix); isQ {
				if of, ok := v.byLower[base]; ok && of.ds.Quarantines() {
					q.Refs[i].Name, q.Refs[i].Quarantine = of.ds.Name+QuarantineSuffix, of.ds.Name
				}
			}
		}
	}
}

// references checks that every dataset read by another exists.
func (v *validation) references(infos []*datasetInfo) {
	for _, in := range infos {
		if in.kind == kindSnapshot {
			v.snapshotReference(in)
			continue
		}
		if in.kind != kindApplyChanges || in.apply.source.node == nil {
			continue
		}
		src := in.ds.ApplyChanges.Source
		if _, ok := v.byName[src]; !ok {
			v.d.addAt(in.apply.source.node, in.apply.source.path, didYouMean(src, v.namesBut(in.ds.Name), "datasets"),
				"unknown dataset %s: apply_changes reads a dataset of this pipeline", src)
		}
	}
}

// namesBut returns the dataset names other than self, for the suggestions of an unknown
// dataset that self reads: self reading itself would be a cycle, never the name meant.
func (v *validation) namesBut(self string) []string {
	return slices.DeleteFunc(slices.Clone(v.names), func(n string) bool { return strings.EqualFold(n, self) })
}

// cycles reports each cycle among the datasets at every member, with the whole cycle.
func (v *validation) cycles() {
	nodes := make([]dag.Node, 0, len(v.names))
	for _, name := range v.names {
		n := dag.Node{Name: name}
		for _, dep := range v.byName[name].ds.deps() {
			if _, ok := v.byName[dep]; ok {
				n.Deps = append(n.Deps, dep)
			}
		}
		nodes = append(nodes, n)
	}
	_, err := dag.New(nodes)
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *dag.CycleError
		if !errors.As(e, &ce) {
			continue
		}
		chain := strings.Join(append(slices.Clone(ce.Members), ce.Members[0]), " -> ")
		hint := "a dataset cannot read from itself, directly or through others; " + v.cycleFix(ce.Members)
		for _, m := range ce.Members {
			in := v.byName[m]
			v.d.add(in.ds.Pos, in.path, hint, "dataset %s is part of a cycle: %s", m, chain)
		}
	}
}

// cycleFix says what to change to break a cycle of members: the key by which each member reads
// the next (its query, apply_changes.source, apply_changes_from_snapshot.source or
// source.table), naming the members that read by it.
func (v *validation) cycleFix(members []string) string {
	var keys []string
	by := map[string][]string{}
	for _, m := range members {
		ds := v.byName[m].ds
		key := "query"
		switch {
		case ds.ApplyChanges != nil:
			key = "apply_changes.source"
		case ds.ApplyChangesFromSnapshot != nil:
			key = "apply_changes_from_snapshot.source"
		case ds.Source != nil:
			key = "source.table"
		}
		if _, seen := by[key]; !seen {
			keys = append(keys, key)
		}
		by[key] = append(by[key], m)
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "the " + k + " of " + orList(by[k])
	}
	if len(members) == 1 {
		return "change what it reads: " + parts[0]
	}
	return "change what one of them reads: " + strings.Join(parts, ", or ")
}

// orList joins items as "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// output computes in's output schema (Dataset.Schema), checking on the way its columns and
// expressions against its input. It reports whether the schema is known: false when the
// dataset's own declaration or something it reads from is broken, or on a cycle.
func (v *validation) output(in *datasetInfo) bool {
	switch v.state[in] {
	case visiting:
		return false
	case visited:
		return v.ok[in]
	}
	v.state[in] = visiting
	ok := false
	switch in.kind {
	case kindSource:
		ok = v.sourceOutput(in)
	case kindApplyChanges:
		ok = v.applyOutput(in)
	case kindSnapshot:
		ok = v.snapshotOutput(in)
	case kindQuery:
		v.expectationSyntax(in)
	}
	switch {
	case in.declared == nil:
	case in.kind == kindQuery:
		// A query dataset's columns are its query's: a schema beside it would be ignored.
		r := in.declaredRef
		v.d.addAt(r.node, r.path, "remove it: a query dataset's columns are its query's result (CAST in the SELECT list to give a column a type)",
			"a dataset-level schema is for APPLY CHANGES targets")
	case ok || (in.kind != kindApplyChanges && in.kind != kindSnapshot):
		v.declaredSchema(in)
	}
	v.state[in], v.ok[in] = visited, ok
	return ok
}

// declaredSchema checks a dataset-level `schema:` against the columns the dataset's flow
// produces: it is allowed on APPLY CHANGES targets, must name exactly those columns with their
// types (in any order; the table keeps the flow's order), and under SCD type 2 must contain
// __START_AT and __END_AT of the sequence's type.
func (v *validation) declaredSchema(in *datasetInfo) {
	r := in.declaredRef
	if in.kind != kindApplyChanges && in.kind != kindSnapshot {
		v.d.addAt(r.node, r.path, "declare the schema inside `source:`", "a dataset-level schema is for APPLY CHANGES targets")
		return
	}
	out, decl := in.ds.Schema, *in.declared
	scd2 := out.Index(StartAt) >= 0
	for _, c := range []string{StartAt, EndAt} {
		if scd2 && decl.Index(c) < 0 {
			i := out.Index(c)
			if out.Fields[i].Type.Kind == schema.StructKind {
				v.d.addAt(r.node, r.path, "leave `schema:` out: a STRUCT column cannot be declared in Spark DDL here yet",
					"an SCD type 2 target whose sequence_by is a list has STRUCT columns %s and %s", StartAt, EndAt)
				return
			}
			v.d.addAt(r.node, r.path, fmt.Sprintf("add `%s %s` to the schema", c, out.Fields[i].Type.DDL()),
				"an SCD type 2 target's schema must contain %s (the type of sequence_by, %s)", c, out.Fields[i].Type.DDL())
		}
	}
	for _, f := range decl.Fields {
		i := out.Index(f.Name)
		switch {
		case i < 0 && (f.Name == StartAt || f.Name == EndAt):
			v.d.addAt(r.node, r.path, "remove it, or use `stored_as_scd_type: 2`", "%s belongs to SCD type 2 targets", f.Name)
		case i < 0:
			v.d.addAt(r.node, r.path, didYouMean(f.Name, out.Names(), "columns"), "the schema declares %s, which the flow does not produce (it produces %s)", f.Name, strings.Join(out.Names(), ", "))
		case !out.Fields[i].Type.Equal(f.Type):
			v.d.addAt(r.node, r.path, fmt.Sprintf("declare it as %s", out.Fields[i].Type.DDL()), "column %s is declared %s but the flow produces %s", f.Name, f.Type.DDL(), out.Fields[i].Type.DDL())
		}
	}
	for _, f := range out.Fields {
		if decl.Index(f.Name) < 0 && f.Name != StartAt && f.Name != EndAt {
			v.d.addAt(r.node, r.path, fmt.Sprintf("add `%s %s`", f.Name, f.Type.DDL()), "the schema does not declare %s, which the flow produces", f.Name)
		}
	}
}

// sourceOutput: the declared schema plus the rescued-data column; expectations see the declared
// schema.
func (v *validation) sourceOutput(in *datasetInfo) bool {
	src := in.ds.Source
	if src.Table != "" {
		return v.tableSourceOutput(in)
	}
	if !in.source.schemaOK {
		if src.InferSchema {
			v.expectationSyntax(in)
		}
		return false
	}
	v.expectations(in, src.Schema)
	out := schema.Schema{Fields: slices.Clone(src.Schema.Fields)}
	if src.RescuedDataColumn != "" && src.Schema.Index(src.RescuedDataColumn) < 0 { // a clash is reported by source
		out.Fields = append(out.Fields, schema.Field{Name: src.RescuedDataColumn, Type: schema.Type{Kind: schema.String}, Nullable: true})
	}
	if src.IncludeMetadata {
		out.Fields = append(out.Fields, MetadataColumns()...)
	}
	in.ds.Schema = out
	return true
}

// applyOutput checks an apply_changes against its source's output schema and computes the SCD
// type 1 target schema: the source's columns in their order, reduced by column_list or
// except_column_list, keys always kept.
func (v *validation) applyOutput(in *datasetInfo) bool {
	ac := in.ds.ApplyChanges
	src, known := v.byName[ac.Source]
	if !known {
		return false
	}
	if !v.output(src) {
		if atRunSource(src) {
			v.deferApply(in, src)
		}
		return false
	}
	input := src.ds.Schema
	if src.kind == kindApplyChanges || src.kind == kindSnapshot {
		v.d.addAt(in.apply.source.node, in.apply.source.path,
			fmt.Sprintf("to follow the versions of %s, use `apply_changes_from_snapshot: {source: %s, keys: [...]}`", ac.Source, ac.Source),
			"apply_changes reads an append-only change log, but %s is an APPLY CHANGES target whose commits update and delete rows", ac.Source)
	}
	for _, r := range in.apply.track {
		if slices.Contains(ac.Keys, r.node.Value) {
			v.d.addAt(r.node, r.path, "remove it: a key never changes within its own history", "key %s cannot be a tracked column", r.node.Value)
		}
	}
	for _, r := range in.apply.trackExcept {
		if slices.Contains(ac.Keys, r.node.Value) {
			v.d.addAt(r.node, r.path, "remove it: the list names the non-key columns whose changes open no new version", "key %s is never a tracked column, so excepting it says nothing", r.node.Value)
		}
	}
	v.columnsIn(in.apply.keys, input, ac.Source)
	v.columnsIn(in.apply.seq, input, ac.Source)
	v.noMapColumns(in.apply.keys, input, "a key")
	v.noMapColumns(in.apply.seq, input, "a sequence_by column")
	// Only an unknown name in column_list leaves the output in doubt (it may be a typo for a
	// column meant to be kept); then datasets reading this one are not checked against a guess.
	// An unknown name in except_column_list removes nothing: the output is known.
	good := v.columnsIn(in.apply.cols, input, ac.Source)
	v.columnsIn(in.apply.except, input, ac.Source)
	for _, r := range in.apply.except {
		if slices.Contains(ac.Keys, r.node.Value) {
			v.d.addAt(r.node, r.path, "remove it from except_column_list; keys are always kept",
				"key %s cannot be excluded", r.node.Value)
		}
	}
	if ac.ApplyAsDeletes != "" {
		v.compile(ac.ApplyAsDeletes, in.apply.deletes, input, "apply_as_deletes")
	}
	if ac.ApplyAsTruncates != "" {
		if ac.StoredAsSCDType == 2 {
			v.d.addAt(in.apply.truncates.node, in.apply.truncates.path, "remove it, or use `stored_as_scd_type: 1`",
				"apply_as_truncates applies to SCD type 1 only; an SCD type 2 target keeps its history")
		} else {
			v.compile(ac.ApplyAsTruncates, in.apply.truncates, input, "apply_as_truncates")
		}
	}
	for _, list := range [][]ref{in.apply.track, in.apply.trackExcept} {
		if len(list) > 0 && ac.StoredAsSCDType != 2 {
			v.d.addAt(list[0].node, parentPath(list[0].path), "remove it, or use `stored_as_scd_type: 2`",
				"%s applies to SCD type 2 only", lastKey(list[0].path))
		}
	}
	if len(in.apply.track) > 0 && len(in.apply.trackExcept) > 0 {
		v.d.addAt(in.apply.trackExcept[0].node, parentPath(in.apply.trackExcept[0].path), "keep one of them",
			"track_history_column_list and track_history_except_column_list cannot be used together")
	}
	v.expectations(in, input)
	out := schema.Schema{}
	for _, f := range input.Fields {
		if ac.Keeps(f.Name) {
			out.Fields = append(out.Fields, f)
		}
	}
	for _, list := range [][]ref{in.apply.track, in.apply.trackExcept} {
		var unknown []ref
		for _, r := range list {
			switch {
			case out.Index(r.node.Value) >= 0:
			case input.Index(r.node.Value) >= 0: // a source column the target leaves out
				lists, keep := "except_column_list", "remove it from except_column_list"
				if ac.ColumnList != nil {
					lists, keep = "column_list", "add it to column_list"
				}
				v.d.addAt(r.node, r.path, fmt.Sprintf("remove it from %s, or %s", lastKey(r.path), keep),
					"column %s of dataset %s is not a column of the target: %s leaves it out", r.node.Value, ac.Source, lists)
			default:
				unknown = append(unknown, r)
			}
		}
		v.columnsIn(unknown, out, in.ds.Name)
	}
	if names := feedColumnsIn(out); len(names) > 0 {
		hint := "exclude them: `except_column_list: [" + strings.Join(slices.Concat(ac.ExceptColumnList, names), ", ") + "]`"
		if ac.ColumnList != nil {
			hint = "remove them from column_list"
		}
		v.d.addAt(in.apply.source.node, in.apply.source.path, hint,
			"the target would get the column(s) %s of dataset %s, which its own change data feed adds (Delta reserves the names)", strings.Join(names, ", "), ac.Source)
		return false
	}
	if ac.StoredAsSCDType == 2 {
		for _, f := range out.Fields {
			if f.Name == StartAt || f.Name == EndAt {
				v.d.addAt(in.apply.source.node, in.apply.source.path, "rename or exclude that column (except_column_list)",
					"the source has a column %s, which an SCD type 2 target adds itself", f.Name)
				return false
			}
		}
		var seqType schema.Type
		if len(ac.SequenceBy) == 1 {
			if i := input.Index(ac.SequenceBy[0]); i >= 0 {
				seqType = input.Fields[i].Type
			}
		} else {
			st := schema.Schema{}
			for _, c := range ac.SequenceBy {
				if i := input.Index(c); i >= 0 {
					st.Fields = append(st.Fields, input.Fields[i])
				}
			}
			seqType = schema.Type{Kind: schema.StructKind, Struct: &st}
		}
		if seqType.Kind == 0 {
			return false
		}
		out.Fields = append(out.Fields,
			schema.Field{Name: StartAt, Type: seqType, Nullable: true},
			schema.Field{Name: EndAt, Type: seqType, Nullable: true})
	}
	in.ds.Schema = out
	return good
}

// feedColumnsIn returns the columns of s that a change data feed adds to a table's own
// (_change_type, _commit_version, _commit_timestamp; Delta PROTOCOL.md "Change Data Files"): a
// table with a change data feed, as an APPLY CHANGES target is, cannot have them, as in Delta.
func feedColumnsIn(s schema.Schema) []string {
	var out []string
	for _, c := range []string{delta.ChangeTypeColumn, delta.CommitVersionColumn, delta.CommitTimestampColumn} {
		if s.Index(c) >= 0 {
			out = append(out, c)
		}
	}
	return out
}

// parentPath drops the last [i] of a key path: "a.keys[2]" -> "a.keys".
func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '['); i > 0 && strings.HasSuffix(p, "]") {
		return p[:i]
	}
	return p
}

// lastKey is the last key of a path: "datasets[1].apply_changes.keys[0]" -> "keys".
func lastKey(p string) string {
	p = parentPath(p)
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// columnsIn reports every name of refs that is not a column of s (the output of dataset from).
func (v *validation) columnsIn(refs []ref, s schema.Schema, from string) bool {
	ok := true
	for _, r := range refs {
		name := r.node.Value
		if s.Index(name) >= 0 {
			continue
		}
		ok = false
		hint := dltFormHint(name)
		if hint == "" {
			hint = didYouMean(name, s.Names(), "columns")
		}
		v.d.addAt(r.node, r.path, hint, "unknown column %s: dataset %s has no such column", name, from)
	}
	return ok
}

// dltStruct and dltCol match what a Delta Live Tables pipeline writes for columns in
// its Python or SQL form: `struct(ts, id)` (sequence_by on several columns) and `col("ts")`.
var (
	dltStruct = regexp.MustCompile(`(?i)^\s*struct\s*\((.*)\)\s*$`)
	dltCol    = regexp.MustCompile(`^\s*(?:F\.)?col\s*\(\s*["'](.*)["']\s*\)\s*$`)
)

// dltFormHint returns, for a column name written as Delta Live Tables writes columns in code
// (`struct(a, b)`, `col("a")`) or as several names in one string ("a, b"), the hint that says
// how a spec writes it; "" for any other name.
func dltFormHint(name string) string {
	list := func(inner string) string {
		parts := strings.Split(inner, ",")
		for i, p := range parts {
			parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	switch {
	case dltStruct.MatchString(name):
		return "write the columns as a list, compared left to right as a struct is: `" + list(dltStruct.FindStringSubmatch(name)[1]) + "`"
	case dltCol.MatchString(name):
		return "write the column's name alone: `" + dltCol.FindStringSubmatch(name)[1] + "`"
	case strings.Contains(name, ","):
		return "write several columns as a YAML list: `" + list(name) + "`"
	}
	return ""
}

// noMapColumns reports each column of refs that is a MAP, or holds one, in s: a MAP has no
// order and no equality (Spark refuses to compare, group or order by a map), so it can be
// neither a key nor a sequence_by column. role names what the column was meant to be.
func (v *validation) noMapColumns(refs []ref, s schema.Schema, role string) {
	for _, r := range refs {
		if i := s.Index(r.node.Value); i >= 0 && holdsMap(s.Fields[i].Type) {
			v.d.addAt(r.node, r.path, "choose a column of another type (a BIGINT, STRING, TIMESTAMP, or a STRUCT or ARRAY of such), or take a value out of the MAP in a query streaming table the flow reads (`SELECT "+r.node.Value+"['k'] AS k, ... FROM STREAM(...)`)",
				"column %s is of type %s, which cannot be %s: a MAP has no order or equality", r.node.Value, s.Fields[i].Type.DDL(), role)
		}
	}
}

// holdsMap reports whether t is a MAP or has one inside (a STRUCT field, an ARRAY element).
func holdsMap(t schema.Type) bool {
	switch t.Kind {
	case schema.MapKind:
		return true
	case schema.ArrayKind:
		return holdsMap(*t.Elem)
	case schema.StructKind:
		for _, f := range t.Struct.Fields {
			if holdsMap(f.Type) {
				return true
			}
		}
	}
	return false
}

// expectations compiles each expectation of in against the columns it checks.
func (v *validation) expectations(in *datasetInfo, s schema.Schema) {
	for i, x := range in.ds.Expectations {
		if x.Expect != "" {
			v.compile(x.Expect, in.expect[i], s, "expectation "+x.Name)
		}
	}
}

// expectationSyntax checks the expectations of a dataset whose columns are known only when it
// runs (a query dataset, a source whose schema is inferred) with expectations.CheckSyntax, so
// that an expression that can never compile is a spec error before anything runs.
func (v *validation) expectationSyntax(in *datasetInfo) {
	for i, x := range in.ds.Expectations {
		if x.Expect == "" {
			continue
		}
		if err := expectations.CheckSyntax(x.Expect); err != nil {
			v.report(err, x.Expect, in.expect[i], "write a condition in the expr language, e.g. `amount > 0` or `name != nil` (its columns are checked once they are known: when the query is bound, or when the dataset runs)", "expectation "+x.Name)
		}
	}
}

// compile checks a row expression with expectations.Compile and reports expr's message at the
// place inside the YAML scalar that it names.
func (v *validation) compile(code string, r ref, s schema.Schema, what string) {
	if _, err := expectations.Compile(code, s); err != nil {
		v.report(err, code, r, compileHint(err, s), what)
	}
}

// compileHint is the hint of err, the error of compiling a row expression against the columns
// of s: the columns closest to a name that is none of them, else every column.
func compileHint(err error, s schema.Schema) string {
	if m := unknownName.FindStringSubmatch(err.Error()); m != nil {
		if strings.EqualFold(m[1], "null") || m[1] == "None" {
			// SQL's NULL, Python's None: the expr language's is nil.
			return "NULL is `nil` in row expressions: write `name != nil`, `amount == nil`"
		}
		return didYouMean(m[1], s.Names(), "columns")
	}
	return "columns: " + strings.Join(s.Names(), ", ")
}

// unknownName matches expr's error for a name that is no column, taking the name.
var unknownName = regexp.MustCompile(`^unknown name ([^\s(]+)`)

// report reports err, the error of compiling the row expression code, at the place inside the
// YAML scalar that it names; hint is the hint of an error no more specific one fits.
func (v *validation) report(err error, code string, r ref, hint, what string) {
	e := expressionError(err, code, func(off int) Pos { return v.d.posIn(r.node, off) }, r.path, hint, what)
	v.d.errs = append(v.d.errs, e)
}

// expressionError is the problem of err, the error of compiling the row expression code, whose
// key path is path: "<what> does not compile: <expr's message>", at posAt(off), the place in the
// spec's file of the rune offset off of code, that expr's message names (the expression's start
// when it names none or code has several lines); hint is the hint of an error no more specific
// one fits (SQL written for expr, a result that is no condition).
func expressionError(err error, code string, posAt func(off int) Pos, path, hint, what string) *Error {
	p := posAt(0)
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
		if !strings.Contains(code, "\n") {
			p = posAt(fe.From)
		}
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if h := sqlIdiomHint(code); h != "" {
		hint = h
		if e, ok := sqlCondition(code); ok && e != code {
			hint = "row expressions use the expr language, not SQL: write " + e
		}
	}
	if errors.Is(err, expectations.ErrNotBool) {
		hint = "write a condition that is true for a good row, e.g. `amount > 0`, `name != nil` or `op in [\"I\", \"U\"]`"
		if what == "apply_as_deletes" {
			hint = "write a condition that is true for a delete event, e.g. `op == \"D\"`"
		}
	}
	return &Error{Pos: p, Path: path, Msg: fmt.Sprintf("%s does not compile: %s", what, msg), Hint: hint}
}

// sqlIdioms are SQL forms that people porting Delta Live Tables expectations (SQL) write, with
// their form in the expression language (expr).
var sqlIdioms = []struct {
	re   *regexp.Regexp
	expr string
}{
	{isNotNull, "`x IS NOT NULL` is `x != nil`"},
	{regexp.MustCompile(`(?i)\bIS\s+NULL\b`), "`x IS NULL` is `x == nil`"},
	{regexp.MustCompile(`<>`), "`<>` is `!=`"},
	{regexp.MustCompile(`(?i)\bIN\s*\(`), "`x IN ('a', 'b')` is `x in [\"a\", \"b\"]`"},
	{regexp.MustCompile(`(?i)\bLIKE\b`), "`x LIKE 'a%'` is `x startsWith \"a\"` (or `x matches \"^a\"`)"},
	{regexp.MustCompile(`(?i)\b(RLIKE|REGEXP)\b`), "`x RLIKE '^a'` is `x matches \"^a\"`"},
	{regexp.MustCompile(`(?i)\b(coalesce|nvl|ifnull)\s*\(`), "`coalesce(x, 0)` is `(x ?? 0)`"},
	{regexp.MustCompile(`(?i)\bBETWEEN\b`), "`x BETWEEN 1 AND 9` is `x >= 1 and x <= 9`"},
	{regexp.MustCompile(`(?i)\b(length|char_length|character_length|size|cardinality|array_size)\s*\(`), "`length(s)` and `size(arr)` are `len(s)` and `len(arr)`"},
	{regexp.MustCompile(`(?i)\b(lcase|ucase)\s*\(`), "`lcase(s)` and `ucase(s)` are `lower(s)` and `upper(s)`"},
	{regexp.MustCompile(`[^=!<>]=[^=]`), "`=` is `==`"},
	{regexp.MustCompile(`\b(AND|OR|NOT)\b`), "`AND`, `OR`, `NOT` are `and`, `or`, `not` (or `&&`, `||`, `!`)"},
}

// isNotNull matches SQL's IS NOT NULL.
var isNotNull = regexp.MustCompile(`(?i)\bIS\s+NOT\s+NULL\b`)

// sqlIdiomHint returns, for a row expression written in SQL, the hint that names its forms in
// the expression language; "" when code has none of them.
func sqlIdiomHint(code string) string {
	var found []string
	for _, s := range sqlIdioms {
		c := code
		if strings.Contains(s.expr, "`NOT`") {
			c = isNotNull.ReplaceAllString(c, "") // the NOT of IS NOT NULL is its own idiom's
		}
		if s.re.MatchString(c) {
			found = append(found, s.expr)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return "row expressions use the expr language, not SQL: " + strings.Join(found, ", ")
}
