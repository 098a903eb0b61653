package flows

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"tributary/delta"
	"tributary/eventlog"
	"tributary/schema"
	"tributary/spec"
)

// tieRule is the rule of semantics.md ("Decision" on ties) that decided a tie.
type tieRule uint8

const (
	deleteBeatUpsert tieRule = iota // a delete beat an upsert, in the batch or against the table
	laterArrivalWon                 // between upserts of the batch, the later arrival won
	storedSeqKept                   // an upsert at the sequence the table held changed nothing
)

// String is the rule as the WARN about ties says it.
func (r tieRule) String() string {
	switch r {
	case deleteBeatUpsert:
		return "a delete beat an upsert"
	case laterArrivalWon:
		return "between upserts of this batch the later arrival won"
	}
	return "an upsert equal in sequence to what the table held already changed nothing"
}

// tie is one tie of a batch: the key and sequence at which two different events met, the arrival
// of the later of them in the batch (the one counted), the arrival of the other (-1: it is the
// event the table held), and the rule that decided. key and seq are not written once recorded.
type tie struct {
	key, seq       []any
	arrival, other int
	rule           tieRule
}

// tieCount is the number of a batch's ties and the first of them: the one whose counted event
// arrived first (the lowest arrival), so that which tie is named does not depend on how the
// batch was split between goroutines.
type tieCount struct {
	n     int64
	first tie // when n > 0
}

// add counts t. A fold calls it only when it meets a tie.
func (c *tieCount) add(t tie) {
	if c.n == 0 || t.arrival < c.first.arrival {
		c.first = t
	}
	c.n++
}

// merge adds the ties of o (of another fold of the same batch) to c. Of two firsts of one arrival
// c's stays: the same inputs merged in the same order name the same tie.
func (c *tieCount) merge(o tieCount) {
	if o.n == 0 {
		return
	}
	if c.n == 0 || o.first.arrival < c.first.arrival {
		c.first = o.first
	}
	c.n += o.n
}

// tieCount returns the count of the ties in r.tieList and the first of them.
func (r *reduceResult) tieCount() tieCount {
	var c tieCount
	for _, t := range r.tieList {
		c.add(t)
	}
	return c
}

// arrivalSpans maps the arrival of a batch's change event (its position in the batch) to its
// origin. A span holds the events from its arrival up to the next span's; when run is set their
// origins follow one another (the i-th event after the first is at row at.row+i of version
// at.version), else only the version is known past the first (a span stops being split once
// there are maxArrivalSpans, so that events of scattered rows do not make a span each).
type arrivalSpans struct {
	spans []arrivalSpan
}

// arrivalSpan is one span of arrivalSpans.
type arrivalSpan struct {
	arrival int
	at      origin
	run     bool
}

// maxArrivalSpans is how many spans an arrivalSpans splits into at most where rows skip (a
// variable for tests); a new version (a file of a view, a version of a table) always starts one.
var maxArrivalSpans = 1 << 14

// addRun records that the n events from arrival on have the consecutive origins from at.
func (s *arrivalSpans) addRun(arrival int, at origin, n int) {
	if n == 0 {
		return
	}
	if k := len(s.spans); k > 0 {
		if l := &s.spans[k-1]; l.run && l.at.version == at.version && l.at.row+int64(arrival-l.arrival) == at.row {
			return // the last span goes on
		}
	}
	s.spans = append(s.spans, arrivalSpan{arrival: arrival, at: at, run: true})
}

// addLines records the origins of the events made of rows read by column from the file of index
// version (a view's), which arrive from arrival on, the i-th from line lines[i].
func (s *arrivalSpans) addLines(arrival int, version int64, lines []int64) {
	for i, line := range lines {
		s.addOrigin(arrival+i, origin{version: version, row: line})
	}
}

// addRows records the origins of the events made of rows, which arrive from arrival on, each row
// with a pointer to its origin at position at.
func (s *arrivalSpans) addRows(arrival int, rows [][]any, at int) {
	for i, r := range rows {
		s.addOrigin(arrival+i, *r[at].(*origin))
	}
}

// addOrigin records that the event of this arrival, the one after those recorded, comes from o:
// the last span goes on when o follows its origins, else a span starts (or, past
// maxArrivalSpans, the last span of o's version stops telling its rows apart).
func (s *arrivalSpans) addOrigin(arrival int, o origin) {
	if k := len(s.spans); k > 0 {
		l := &s.spans[k-1]
		if l.at.version == o.version {
			if !l.run || l.at.row+int64(arrival-l.arrival) == o.row {
				return
			}
			if k >= maxArrivalSpans {
				l.run = false
				return
			}
		}
	}
	s.spans = append(s.spans, arrivalSpan{arrival: arrival, at: o, run: true})
}

// origin returns the origin of the event that arrived at arrival, and whether its row is known
// (else only its version is); ok is false when no span holds it.
func (s *arrivalSpans) origin(arrival int) (o origin, exact, ok bool) {
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].arrival > arrival }) - 1
	if i < 0 {
		return origin{}, false, false
	}
	sp := s.spans[i]
	if sp.run {
		sp.at.row += int64(arrival - sp.arrival)
		return sp.at, true, true
	}
	return sp.at, arrival == sp.arrival, true
}

// place is where a change event came from: a file (relative to the pipeline's folder when below
// it) and its line (line) or row (a data file of a table); n is 0 when unknown. desc, when set,
// says it instead (a table's version and row, when no file is known).
type place struct {
	file string
	n    int64
	line bool
	desc string
}

// String is the place as the WARN about ties writes it: file:line, "file row n", or file.
func (p place) String() string {
	switch {
	case p.desc != "":
		return p.desc
	case p.n > 0 && p.line:
		return p.file + ":" + strconv.FormatInt(p.n, 10)
	case p.n > 0:
		return p.file + " row " + strconv.FormatInt(p.n, 10)
	}
	return p.file
}

// pipelinePath returns path relative to the pipeline's folder when it lies below it, else path
// (also when p is nil).
func pipelinePath(p *spec.Pipeline, path string) string {
	if p == nil {
		return path
	}
	if rel, err := filepath.Rel(p.Dir, path); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return path
}

// placeOf returns where the event that arrived at arrival came from: the file of the view, or
// the input file of the source table's ingest flow (else the table's data file), with the line
// or row when the batch knows it. ok is false when the batch does not know.
func (b *changeBatch) placeOf(p *spec.Pipeline, source string, arrival int) (_ place, ok bool) {
	o, exact, ok := b.spans.origin(arrival)
	if !ok {
		return place{}, false
	}
	if b.view != nil {
		if o.version < 0 || int(o.version) >= len(b.view.files) {
			return place{}, false
		}
		pl := place{file: pipelinePath(p, b.view.files[o.version].abs), line: true}
		if exact {
			pl.n = o.row
		}
		return pl, true
	}
	pl := place{desc: fmt.Sprintf("source table %s, version %d", source, o.version)}
	if !exact {
		return pl, true
	}
	pl.desc += fmt.Sprintf(", row %d", o.row+1)
	c, err := delta.New(TableDir(p.Storage, source)).ReadCommit(o.version)
	if err != nil {
		return pl, true
	}
	if file, line, ok := ingestLine(p, source, c, o.row); ok {
		return place{file: pipelinePath(p, file), n: line, line: true}, true
	}
	// Not read by an ingest flow of this pipeline: the data file that holds the row, when the
	// commit's statistics count the rows of each.
	row := o.row
	for _, a := range c.Adds {
		if !a.DataChange {
			continue
		}
		n, ok := a.NumRecords()
		if !ok {
			break
		}
		if row < n {
			return place{file: pipelinePath(p, filepath.Join(TableDir(p.Storage, source), filepath.FromSlash(a.Path))), n: row + 1}, true
		}
		row -= n
	}
	return pl, true
}

// valuesText writes the values of columns s as `name=value`, joined by ", ".
func valuesText(s schema.Schema, vals []any) string {
	var b strings.Builder
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(s.Fields) {
			b.WriteString(s.Fields[i].Name)
			b.WriteByte('=')
			b.WriteString(schema.Text(s.Fields[i].Type, v))
		} else {
			b.WriteString(schema.Text(schema.Type{}, v))
		}
	}
	return b.String()
}

// reportTies emits the once-per-batch WARN event about ties (semantics.md, Decision on ties): how
// many, and the first (tieCount): its key, sequence, where its events came from, and the rule
// that decided it. The details carry the same: ties, key, sequence, rule, and file and line (or
// row), or place, when known.
func reportTies(env *Env, d *spec.Dataset, b *changeBatch, ties tieCount) {
	if ties.n == 0 {
		return
	}
	p := env.Pipeline
	t := ties.first
	key, seq := valuesText(b.keySch, t.key), valuesText(b.seqSch, t.seq)
	details := map[string]any{"ties": ties.n, "key": key, "sequence": seq, "rule": t.rule.String()}
	where := ""
	if pl, ok := b.placeOf(p, d.ApplyChanges.Source, t.arrival); ok {
		where = " in " + pl.String()
		switch {
		case pl.desc != "":
			details["place"] = pl.desc
		case pl.line:
			details["file"] = pl.file
			if pl.n > 0 {
				details["line"] = pl.n
			}
		default:
			details["file"] = pl.file
			if pl.n > 0 {
				details["row"] = pl.n
			}
		}
		if o, ok := b.placeOf(p, d.ApplyChanges.Source, t.other); ok && t.other >= 0 {
			where += ", tied with " + o.String()
			details["tied_with"] = o.String()
		}
	}
	if t.other < 0 {
		where += ", tied with what the table held"
	}
	env.Events.Emit(eventlog.Warn, eventlog.FlowProgress, d.Name, d.Name,
		fmt.Sprintf("%d change event(s) tied on key and sequence with a different event; the first: %s at %s%s: %s. On a tie a delete beats an upsert, an upsert equal in sequence to what the table holds changes nothing, and between upserts of one batch the later arrival wins", ties.n, key, seq, where, t.rule),
		details, "")
}
