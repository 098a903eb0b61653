package spec

// inferredReads refuses a dataset that reads a dataset whose schema is inferred: its columns are
// known only once the source's files are read, and the reader's are checked before that.
func (v *validation) inferredReads(infos []*datasetInfo) {
	for _, in := range infos {
		var name string
		var r ref
		switch {
		case in.kind == kindApplyChanges && in.apply != nil:
			name, r = in.ds.ApplyChanges.Source, in.apply.source
		case in.kind == kindSnapshot && in.snapshot != nil && in.ds.ApplyChangesFromSnapshot.Source != "":
			name, r = in.ds.ApplyChangesFromSnapshot.Source, in.snapshot.source
		case in.kind == kindSource && in.source != nil && in.ds.Source != nil && in.ds.Source.Table != "":
			name, r = in.ds.Source.Table, ref{in.source.tableNode, child(in.source.path, "table")}
		default:
			continue
		}
		src, ok := v.byName[name]
		if !ok || src.ds.Source == nil || !src.ds.Source.InferSchema || r.node == nil {
			continue
		}
		v.d.addAt(r.node, r.path, "declare `schema:` on dataset "+name,
			"reading dataset %s, whose schema is inferred, is not supported yet", name)
	}
}
