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
)

// Rule is one expectation of a dataset, compiled.
type Rule struct {
	Name        string
	OnViolation string // Warn, Drop or Fail
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

// Quality is the data_quality object of a flow_progress event: rows dropped by drop rules and
// one Result per rule.
type Quality struct {
	DroppedRecords int64    `json:"dropped_records"`
	Expectations   []Result `json:"expectations"`
}

// Add accumulates another batch's quality into q (same rules, same order).
func (q *Quality) Add(o Quality) {
	q.DroppedRecords += o.DroppedRecords
	if q.Expectations == nil {
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
	return map[string]any{"dropped_records": q.DroppedRecords, "expectations": exps}
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
// violated (then the kept rows must not be written). rows is not modified.
func (s *Set) Check(rows [][]any) ([][]any, Quality, error) {
	q := Quality{Expectations: make([]Result, len(s.Rules))}
	for i, r := range s.Rules {
		q.Expectations[i] = Result{Name: r.Name, Dataset: s.Dataset, onViolation: r.OnViolation}
	}
	if len(s.Rules) == 0 {
		return rows, q, nil
	}
	kept := rows[:0:0]
	for _, row := range rows {
		drop := false
		for i, r := range s.Rules {
			ok, _ := r.Program.Eval(row)
			res := &q.Expectations[i]
			if ok {
				res.PassedRecords++
				continue
			}
			res.FailedRecords++
			if res.firstViolation == nil {
				res.firstViolation = row
			}
			if r.OnViolation == Drop {
				drop = true
			}
		}
		if drop {
			q.DroppedRecords++
			continue
		}
		kept = append(kept, row)
	}
	for i, r := range s.Rules {
		res := q.Expectations[i]
		if r.OnViolation == Fail && res.FailedRecords > 0 {
			return nil, q, &FailError{Expectation: r.Name, Dataset: s.Dataset, Expression: r.Program.Source, Row: RowJSON(s.Schema, res.firstViolation), Failed: res.FailedRecords}
		}
	}
	return kept, q, nil
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
