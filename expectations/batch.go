package expectations

import (
	"fmt"
	"strings"

	"tributary/schema"
)

// Actions on violation (spec.md §1 `on_violation`).
const (
	Warn = "warn"
	Drop = "drop"
	Fail = "fail"
	// Quarantine keeps the violating rows out of the dataset and hands them to the flow, which
	// writes them to the dataset's quarantine table (CheckQuarantine).
	Quarantine = "quarantine"
)

// Rule is one expectation of a dataset, compiled.
type Rule struct {
	Name        string
	OnViolation string // Warn, Drop, Fail or Quarantine
	Program     *Program
}

// Result is what a Set reports for one rule over one batch; it becomes an entry of
// details.flow_progress.data_quality.expectations in the event log (semantics.md "Expectations").
type Result struct {
	Name           string `json:"name"`
	Dataset        string `json:"dataset"`
	PassedRecords  int64  `json:"passed_records"`
	FailedRecords  int64  `json:"failed_records"`
	onViolation    string
	firstViolation []any
}

// Quality is the data_quality object of a flow_progress event: rows dropped by drop rules, rows
// quarantined by quarantine rules, and one Result per rule.
type Quality struct {
	DroppedRecords int64 `json:"dropped_records"`
	// QuarantinedRecords counts the rows that went to the quarantine table; it is reported only
	// when a rule quarantines.
	QuarantinedRecords int64    `json:"quarantined_records,omitempty"`
	Expectations       []Result `json:"expectations"`
}

// Action returns the on_violation action of r.
func (r Result) Action() string {
	if r.onViolation == "" {
		return Warn
	}
	return r.onViolation
}

// Add accumulates another batch's quality into q (same rules, same order).
func (q *Quality) Add(o Quality) {
	q.DroppedRecords += o.DroppedRecords
	q.QuarantinedRecords += o.QuarantinedRecords
	if len(o.Expectations) == 0 {
		return // a batch that failed before its rows were checked
	}
	if len(q.Expectations) == 0 {
		q.Expectations = append([]Result(nil), o.Expectations...)
		return
	}
	for i := range q.Expectations {
		q.Expectations[i].PassedRecords += o.Expectations[i].PassedRecords
		q.Expectations[i].FailedRecords += o.Expectations[i].FailedRecords
	}
}

// Details returns q in the event log's JSON shape.
func (q Quality) Details() map[string]any {
	exps := make([]any, len(q.Expectations))
	for i, r := range q.Expectations {
		exps[i] = map[string]any{"name": r.Name, "dataset": r.Dataset, "passed_records": r.PassedRecords, "failed_records": r.FailedRecords}
	}
	d := map[string]any{"dropped_records": q.DroppedRecords, "expectations": exps}
	for _, r := range q.Expectations {
		if r.onViolation == Quarantine {
			d["quarantined_records"] = q.QuarantinedRecords
		}
	}
	return d
}

// Set is the expectations of one dataset over one input schema.
type Set struct {
	Dataset string
	Schema  schema.Schema
	Rules   []Rule
}

// FailError is returned by Check when a fail rule is violated: nothing of the batch may be
// committed. It names the expectation, the dataset and one violating row.
type FailError struct {
	Expectation string
	Dataset     string
	Expression  string
	Row         string // the first violating row as JSON
	Failed      int64
}

// Error names the expectation, the dataset, the number of violating rows and one of them.
func (e *FailError) Error() string {
	return fmt.Sprintf("expectation %q on dataset %q failed (on_violation: fail): %d row(s) violate `%s`, e.g. %s", e.Expectation, e.Dataset, e.Failed, e.Expression, e.Row)
}

// Check evaluates every rule on every row. It returns the rows to keep (all rows but those
// violating a drop rule, in order), the quality metrics, and a *FailError when a fail rule was
// violated (then the kept rows must not be written). rows is not modified. A row violating a
// quarantine rule is left out too; use CheckQuarantine to get those rows.
func (s *Set) Check(rows [][]any) ([][]any, Quality, error) {
	kept, _, q, err := s.CheckQuarantine(rows)
	return kept, q, err
}

// Quarantined is a row that violated a quarantine rule, with the names of every rule it
// violated (of any action), in rule order.
type Quarantined struct {
	Row    []any
	Failed []string
}

// CheckQuarantine is Check that also returns the rows violating a quarantine rule (and no drop
// rule: a dropped row is dropped), in order; they are not among the kept rows.
func (s *Set) CheckQuarantine(rows [][]any) ([][]any, []Quarantined, Quality, error) {
	q := Quality{Expectations: make([]Result, len(s.Rules))}
	for i, r := range s.Rules {
		q.Expectations[i] = Result{Name: r.Name, Dataset: s.Dataset, onViolation: r.OnViolation}
	}
	if len(s.Rules) == 0 {
		return rows, nil, q, nil
	}
	kept := rows[:0:0]
	var quarantined []Quarantined
	var failed []string
	for _, row := range rows {
		drop, quarantine := false, false
		failed = failed[:0]
		for i, r := range s.Rules {
			ok, _ := r.Program.Eval(row)
			res := &q.Expectations[i]
			if ok {
				res.PassedRecords++
				continue
			}
			res.FailedRecords++
			failed = append(failed, r.Name)
			if res.firstViolation == nil {
				res.firstViolation = row
			}
			switch r.OnViolation {
			case Drop:
				drop = true
			case Quarantine:
				quarantine = true
			}
		}
		switch {
		case drop:
			q.DroppedRecords++
		case quarantine:
			q.QuarantinedRecords++
			quarantined = append(quarantined, Quarantined{Row: row, Failed: append([]string(nil), failed...)})
		default:
			kept = append(kept, row)
		}
	}
	for i, r := range s.Rules {
		res := q.Expectations[i]
		if r.OnViolation == Fail && res.FailedRecords > 0 {
			return nil, nil, q, &FailError{Expectation: r.Name, Dataset: s.Dataset, Expression: r.Program.Source, Row: RowJSON(s.Schema, res.firstViolation), Failed: res.FailedRecords}
		}
	}
	return kept, quarantined, q, nil
}

// RowJSON renders a row as a JSON object in the jsonl form of spec.md §2.
func RowJSON(s schema.Schema, row []any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: ", f.Name)
		b.Write(schema.AppendJSON(nil, f.Type, row[i]))
	}
	b.WriteByte('}')
	return b.String()
}
