package spec

import (
	"errors"
	"fmt"
)

// inferredReads refuses a dataset that reads, as a Delta table or as snapshots, a dataset whose
// schema is inferred, or an APPLY CHANGES target of one: its columns are known only once the
// source's files are read, and the reader's are checked before that. An APPLY CHANGES flow
// reading such a source is checked when the update has inferred them (deferApply).
func (v *validation) inferredReads(infos []*datasetInfo) {
	for _, in := range infos {
		var name string
		var r ref
		switch {
		case in.kind == kindSnapshot && in.snapshot != nil && in.ds.ApplyChangesFromSnapshot.Source != "":
			name, r = in.ds.ApplyChangesFromSnapshot.Source, in.snapshot.source
		case in.kind == kindSource && in.source != nil && in.ds.Source != nil && in.ds.Source.Table != "":
			name, r = in.ds.Source.Table, ref{in.source.tableNode, child(in.source.path, "table")}
		default:
			continue
		}
		src, ok := v.byName[name]
		if !ok || r.node == nil {
			continue
		}
		switch {
		case inferredSource(src):
			v.d.addAt(r.node, r.path, "declare `schema:` on dataset "+name,
				"reading dataset %s, whose schema is inferred, is not supported yet", name)
		case src.kind == kindApplyChanges:
			// An APPLY CHANGES target of an inferred source or a query: its columns too are
			// known only when an update runs.
			from, ok := v.byName[src.ds.ApplyChanges.Source]
			switch {
			case !ok:
			case inferredSource(from):
				v.d.addAt(r.node, r.path, "declare `schema:` on dataset "+from.ds.Name,
					"reading dataset %s, whose columns come from dataset %s, whose schema is inferred, is not supported yet", name, from.ds.Name)
			case from.kind == kindQuery:
				v.d.addAt(r.node, r.path, "read "+name+" in a query (`query: SELECT ... FROM "+name+"`)",
					"reading dataset %s, whose columns come from the query of dataset %s, as a table or as snapshots is not supported yet", name, from.ds.Name)
			}
		}
	}
}

// inferredSource reports whether in is a file source whose schema is inferred.
func inferredSource(in *datasetInfo) bool {
	return in.kind == kindSource && in.ds.Source != nil && in.ds.Source.InferSchema
}

// atRunSource reports whether in is a source an APPLY CHANGES flow reads whose columns are known
// only when an update runs: a file source whose schema is inferred, or a query streaming table
// (its query's result).
func atRunSource(in *datasetInfo) bool {
	return inferredSource(in) || (in.kind == kindQuery && in.ds.Type == StreamingTable)
}

// deferApply makes the checks of in's APPLY CHANGES flow against the columns of src, a source
// whose columns are known only when an update runs (atRunSource), wait until the update knows
// them (Dataset.ResolveSchema): they are the checks applyOutput makes, run again then, with the
// validation's positions. The expectations' syntax is checked now.
func (v *validation) deferApply(in, src *datasetInfo) {
	v.expectationSyntax(in)
	in.ds.resolveFrom = src.ds
	in.ds.resolve = func() error {
		if len(src.ds.Schema.Fields) == 0 {
			return fmt.Errorf("dataset %s: its columns come from dataset %s, whose columns are not known yet", in.ds.Name, src.ds.Name)
		}
		outer := v.d.errs
		v.d.errs = nil
		defer func() { v.d.errs = outer }()
		v.state[src], v.ok[src] = visited, true
		delete(v.state, in)
		ok := v.output(in)
		if len(v.d.errs) > 0 {
			return sortErrors(v.d.errs)
		}
		if !ok {
			return errors.New("dataset " + in.ds.Name + ": its APPLY CHANGES flow does not fit the columns of dataset " + src.ds.Name)
		}
		return nil
	}
}
