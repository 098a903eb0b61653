package spec

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tributary/internal/suggest"
)

// Draft is what LoadDraft and ParseDraft decoded of a spec, with its problems: the checks that
// need the datasets (the query bind check of `pipeline validate`) go on past the spec's
// problems on the datasets they do not touch, so that one report holds every problem (README:
// validate reports every problem at once).
type Draft struct {
	// Pipeline is the pipeline as far as it decoded: for a spec without problems, the one Load
	// returns; otherwise its top-level keys and every dataset entry that is a mapping, in spec
	// order, each with what of it decoded (Dataset.Schema only where its columns are known).
	// It is nil when the document is not a mapping (a YAML syntax error, an empty file).
	Pipeline *Pipeline
	// Errors is every problem of the spec, sorted by position, as Load returns them; nil when
	// there is none.
	Errors Errors
	// sound and bindable are Sound and Bindable of the datasets of a spec with problems.
	sound, bindable map[*Dataset]bool
}

// Sound reports whether ds, a dataset of d.Pipeline, has no problem of its own that may change
// its columns (none reported in its entry but under keys that shape no column, such as
// `expectations` or `comment`, or a misspelling of one; no ${} in it that is not set), nor has
// any dataset it reads, directly or through others: what the spec says of its columns (Dataset.Schema, or its query, which is Bindable) is
// what a valid spec would say. A query that reads a dataset that is not sound is not bound, so
// that one mistake makes one problem. Every dataset of a spec without problems is sound.
func (d *Draft) Sound(ds *Dataset) bool {
	return len(d.Errors) == 0 || d.sound[ds]
}

// Bindable reports whether the query of ds, a dataset of d.Pipeline, can be bound: ds gets its
// data from its query alone, its name is its own (given, valid, not a repeat) and its `query:`
// has no problem (it parses, every dataset it reads exists, ...). Other keys of the dataset's
// entry may have problems: its query is bound all the same, though it is not Sound. Every query
// of a spec without problems is bindable.
func (d *Draft) Bindable(ds *Dataset) bool {
	if len(d.Errors) == 0 {
		return ds.Query != nil
	}
	return d.bindable[ds]
}

// judge fills d.sound and d.bindable from the problems of the decoded spec (d.Errors, and the
// broken ${} scalars of dec); v is its validation, which knows the datasets by name.
func (d *Draft) judge(dec *decoder, v *validation, infos []*datasetInfo) {
	d.sound, d.bindable = map[*Dataset]bool{}, map[*Dataset]bool{}
	has := func(path string, exact bool) bool { // a problem at path (exact) or under it
		for _, e := range d.Errors {
			if e.Path == path || (!exact && (strings.HasPrefix(e.Path, path+".") || strings.HasPrefix(e.Path, path+"["))) {
				return true
			}
		}
		return false
	}
	// affects reports whether the dataset entry at path has a problem that may change what the
	// spec says of its columns: anywhere in it but under a key that shapes no column.
	affects := func(path string) bool {
		for _, e := range d.Errors {
			if e.Path == path {
				return true
			}
			if rest, ok := strings.CutPrefix(e.Path, path+"."); ok && !columnNeutral(rest) {
				return true
			}
		}
		return false
	}
	own := map[*datasetInfo]bool{} // the dataset's entry has no problem that touches its columns
	for _, in := range infos {
		own[in] = !affects(in.path) && !dec.brokenUnder(in.node)
		d.bindable[in.ds] = in.kind == kindQuery && in.ds.Query != nil && in.query != nil && in.nameNode != nil &&
			!has(in.path, true) && !has(child(in.path, "name"), false) && !has(in.query.path, false)
	}
	state := map[*datasetInfo]int{}
	var sound func(in *datasetInfo) bool
	sound = func(in *datasetInfo) bool {
		switch state[in] {
		case visiting:
			return false // a cycle, reported at its members
		case visited:
			return d.sound[in.ds]
		}
		state[in] = visiting
		ok := own[in] && (in.kind != kindQuery || d.bindable[in.ds])
		for _, dep := range in.ds.deps() {
			src, found := v.byName[dep]
			ok = ok && found && sound(src)
		}
		state[in], d.sound[in.ds] = visited, ok
		return ok
	}
	for _, in := range infos {
		if in.nameNode != nil && v.byName[in.ds.Name] == in {
			sound(in)
		}
	}
}

// neutralKeys are the keys of a dataset entry that shape none of its columns: a problem under
// one leaves what the spec says of the columns as a valid spec would say it.
var neutralKeys = []string{"comment", "expectations", "table_properties", "partition_by", "skip_change_commits"}

// columnNeutral reports whether a problem at the key path rest, inside a dataset's entry
// ("expectations[0].expect", "coment"), shapes none of its columns: it is under one of
// neutralKeys, or it is an unknown key whose nearest known keys are all such keys (`coment` for
// `comment`; `schma` for `schema` is not).
func columnNeutral(rest string) bool {
	key := rest
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		key = rest[:i]
	}
	if slices.Contains(neutralKeys, key) {
		return true
	}
	if slices.Contains(datasetKeys.known, key) {
		return false
	}
	near := suggest.Closest(key, datasetKeys.known)
	if len(near) == 0 {
		return false
	}
	for _, k := range near {
		if !slices.Contains(neutralKeys, k) {
			return false
		}
	}
	return true
}

// brokenUnder reports whether n or a node under it is a scalar whose ${} substitution failed
// (reported once, maybe elsewhere: at the first use of a name that is not set).
func (d *decoder) brokenUnder(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if d.broken[n] {
		return true
	}
	for _, c := range n.Content {
		if d.brokenUnder(c) {
			return true
		}
	}
	return false
}
