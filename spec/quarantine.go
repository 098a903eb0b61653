package spec

import "strings"

// QuarantineSuffix names the quarantine table of a dataset: the rows violating its `quarantine`
// expectations go to the Delta table <dataset>_quarantine.
const QuarantineSuffix = "_quarantine"

// FailedExpectationsColumn is the column a quarantine table adds after the dataset's columns:
// the names of the expectations the row failed, as a JSON array of strings.
const FailedExpectationsColumn = "_failed_expectations"

// Quarantines reports whether any expectation of d has on_violation: quarantine.
func (d *Dataset) Quarantines() bool {
	for _, e := range d.Expectations {
		if e.OnViolation == OnViolationQuarantine {
			return true
		}
	}
	return false
}

// checkQuarantine refuses on_violation: quarantine on datasets not fed by a file source (json or
// csv): the APPLY CHANGES and Delta-source flows do not write a quarantine table yet.
func (d *decoder) checkQuarantine(in *datasetInfo) {
	ds := in.ds
	if in.kind == kindSource && ds.Source != nil && ds.Source.Format != FormatDelta && ds.Source.Format != FormatPostgres {
		return
	}
	for i, e := range ds.Expectations {
		if e.OnViolation == OnViolationQuarantine {
			d.add(e.Pos, child(item(child(in.path, "expectations"), i), "on_violation"),
				"use drop, or quarantine on the bronze dataset that reads the files",
				"on_violation quarantine is not supported yet for a dataset not fed by a json or csv source")
		}
	}
}

// quarantineNames reports a dataset whose name is the quarantine table of another.
func (v *validation) quarantineNames(infos []*datasetInfo) {
	for _, in := range infos {
		if in.ds.Quarantines() {
			if other, ok := v.byLower[strings.ToLower(in.ds.Name+QuarantineSuffix)]; ok && other.nameNode != nil {
				v.d.addAt(other.nameNode, child(other.path, "name"), "rename this dataset",
					"dataset %s has the name of the quarantine table of dataset %s", other.ds.Name, in.ds.Name)
			}
		}
	}
}

// QuarantineOf returns the dataset whose quarantine table is named name, or nil.
func (p *Pipeline) QuarantineOf(name string) *Dataset {
	base, ok := strings.CutSuffix(name, QuarantineSuffix)
	if !ok {
		return nil
	}
	if d := p.Dataset(base); d != nil && d.Quarantines() {
		return d
	}
	return nil
}
