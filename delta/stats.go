package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"tributary/schema"
)

// StatsStringPrefix is the number of characters (Unicode code points) kept of string min/max
// statistics, Spark's default dataSkippingStringPrefixLength (Delta PROTOCOL.md, "Per-file
// Statistics": string columns are cut off at a fixed prefix length).
const StatsStringPrefix = 32

// colStats accumulates the statistics of one column while a file is written.
type colStats struct {
	nulls      int64
	has        bool // a non-NULL value that can be bounded was seen
	minI, maxI int64
	minF, maxF float64
	posInf     bool // DOUBLE: +Inf or NaN seen, so no JSON max
	negInf     bool // DOUBLE: -Inf seen, so no JSON min
	minS, maxS string
	minD, maxD schema.Decimal128 // DECIMAL of precision above 18
}

// dec128 folds a wide DECIMAL value into the bounds.
func (c *colStats) dec128(v schema.Decimal128) {
	if !c.has {
		c.minD, c.maxD, c.has = v, v, true
		return
	}
	if v.Cmp(c.minD) < 0 {
		c.minD = v
	}
	if v.Cmp(c.maxD) > 0 {
		c.maxD = v
	}
}

func (c *colStats) int(v int64) {
	if !c.has {
		c.minI, c.maxI, c.has = v, v, true
		return
	}
	if v < c.minI {
		c.minI = v
	}
	if v > c.maxI {
		c.maxI = v
	}
}

func (c *colStats) float(v float64) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 1):
		c.posInf = true
		return
	case math.IsInf(v, -1):
		c.negInf = true
		return
	}
	if !c.has {
		c.minF, c.maxF, c.has = v, v, true
		return
	}
	if v < c.minF {
		c.minF = v
	}
	if v > c.maxF {
		c.maxF = v
	}
}

// str folds v into the bounds. The bounds are copies, not v itself: a DataWriter keeps them
// across Write calls, and the caller may reuse the memory of its rows once a call returns.
func (c *colStats) str(v string) {
	if !c.has {
		v = strings.Clone(v)
		c.minS, c.maxS, c.has = v, v, true
		return
	}
	if v < c.minS {
		c.minS = strings.Clone(v)
	} else if v > c.maxS {
		c.maxS = strings.Clone(v)
	}
}

// statsJSON renders Delta per-file statistics (Delta PROTOCOL.md, "Per-file Statistics") as
// Spark writes them: numRecords; minValues and maxValues for each column with a non-NULL value,
// except BOOLEAN (Spark keeps no bounds for it); nullCount for every column. DECIMAL bounds are
// JSON numbers with the column's scale, DATE "2024-01-31", TIMESTAMP truncated down to
// milliseconds "2024-01-31T10:00:00.000Z" (TIMESTAMP_NTZ without the Z), strings cut to StatsStringPrefix characters (the max
// gets a tie-breaker character so that it stays an upper bound, or is left out). STRUCT columns
// get nested objects, mirroring the schema; ARRAY and MAP columns get only their nullCount (the
// rows where the column is NULL), as Spark's stats collection does. cols holds the statistics of the leaves of s, in
// the order of leaves(s).
func statsJSON(s schema.Schema, numRecords int64, cols []colStats) string {
	var b bytes.Buffer
	b.WriteString(`{"numRecords":`)
	b.WriteString(strconv.FormatInt(numRecords, 10))
	for _, key := range []string{"minValues", "maxValues", "nullCount"} {
		b.WriteString(`,"` + key + `":`)
		i := 0
		writeStatsObject(&b, s, cols, &i, key)
	}
	b.WriteByte('}')
	return b.String()
}

// writeStatsObject writes the object of one statistic for the fields of s; *next is the index
// in cols of the first leaf of s. It reports whether the object has any key.
func writeStatsObject(b *bytes.Buffer, s schema.Schema, cols []colStats, next *int, key string) bool {
	b.WriteByte('{')
	n := 0
	for _, f := range s.Fields {
		mark := b.Len()
		if n > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, f.Name)
		b.WriteByte(':')
		ok := false
		if f.Type.Kind == schema.StructKind && f.Type.Struct != nil {
			ok = writeStatsObject(b, *f.Type.Struct, cols, next, key)
		} else if f.Type.Kind == schema.ArrayKind || f.Type.Kind == schema.MapKind {
			// No bounds for an ARRAY or a MAP; its first leaf counts the column's NULLs.
			c := &cols[*next]
			*next += len(leaves(schema.Schema{Fields: []schema.Field{f}}))
			if key == "nullCount" {
				b.WriteString(strconv.FormatInt(c.nulls, 10))
				ok = true
			}
		} else {
			c := &cols[*next]
			*next++
			if key == "nullCount" {
				b.WriteString(strconv.FormatInt(c.nulls, 10))
				ok = true
			} else if v, has := c.bound(f.Type, key == "maxValues"); has {
				b.WriteString(v)
				ok = true
			}
		}
		if ok {
			n++
		} else {
			b.Truncate(mark)
		}
	}
	b.WriteByte('}')
	return n > 0
}

func writeJSONString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s)
	b.Write(j)
}

// bound returns the JSON text of the min (max == false) or max of the column, if it has one.
func (c *colStats) bound(t schema.Type, max bool) (string, bool) {
	switch t.Kind {
	case schema.Boolean:
		return "", false
	case schema.Double:
		if max && c.posInf || !max && c.negInf || !c.has {
			return "", false
		}
		v := c.minF
		if max {
			v = c.maxF
		}
		bits := 64
		if t.Storage == schema.StorageFloat {
			bits = 32 // Spark writes the float's own shortest text
		}
		return strconv.FormatFloat(v, 'g', -1, bits), true
	}
	if !c.has {
		return "", false
	}
	if t.WideDecimal() {
		if max {
			return schema.FormatDecimal128(c.maxD, t.Scale), true
		}
		return schema.FormatDecimal128(c.minD, t.Scale), true
	}
	v := c.minI
	if max {
		v = c.maxI
	}
	switch t.Kind {
	case schema.Long, schema.Integer:
		return strconv.FormatInt(v, 10), true
	case schema.DecimalKind:
		return schema.FormatDecimal(schema.Decimal(v), t.Scale), true
	case schema.DateKind:
		return `"` + schema.FormatDate(schema.Date(v)) + `"`, true
	case schema.TimestampKind:
		ms := v / 1000
		if v%1000 < 0 {
			ms--
		}
		if t.IsNTZ() { // no zone, as Spark writes a TIMESTAMP_NTZ bound
			return `"` + time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000") + `"`, true
		}
		return `"` + time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") + `"`, true
	case schema.String:
		var s string
		var ok bool
		if max {
			s, ok = truncateMax(c.maxS, StatsStringPrefix)
		} else {
			s, ok = truncateMin(c.minS, StatsStringPrefix), true
		}
		if !ok {
			return "", false
		}
		j, _ := json.Marshal(s)
		return string(j), true
	}
	return "", false
}

// prefixLen returns the byte length of the first n code points of s.
func prefixLen(s string, n int) int {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// truncateMin cuts s to n code points: a prefix is never greater than s.
func truncateMin(s string, n int) string { return s[:prefixLen(s, n)] }

const maxRune = "\U0010FFFF"

// truncateMax cuts s to about n code points and appends a tie-breaker so that the result is
// still >= s in UTF-8 byte order, as Delta Spark's truncateMaxStringAgg does: U+007F when the
// next character is below it, else U+10FFFF; it gives up (false) past 2n code points.
func truncateMax(s string, n int) (string, bool) {
	i := prefixLen(s, n)
	for k := n; k <= 2*n; k++ {
		if i >= len(s) {
			return s, true
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.MaxRune:
			i += size
			continue
		case r < 0x7F:
			return s[:i] + "\x7f", true
		default:
			return s[:i] + maxRune, true
		}
	}
	return "", false
}

// Stats is the parsed per-file statistics of an add action (Delta PROTOCOL.md, "Per-file
// Statistics"). Min and Max hold the Go values of the columns (schema package invariant) for
// the columns that have them; NullCount the number of NULLs per column. A TIMESTAMP max is
// truncated to milliseconds, so values up to 999 µs above it may exist; a string max may carry
// a tie-breaker character.
type Stats struct {
	NumRecords int64
	Min, Max   map[string]any
	NullCount  map[string]int64
}

type wireStats struct {
	NumRecords *int64                     `json:"numRecords"`
	MinValues  map[string]json.RawMessage `json:"minValues"`
	MaxValues  map[string]json.RawMessage `json:"maxValues"`
	NullCount  map[string]json.RawMessage `json:"nullCount"`
}

// NumRecords returns stats.numRecords of the file and whether the statistic is present.
func (a Add) NumRecords() (int64, bool) {
	if a.Stats == "" {
		return 0, false
	}
	var w struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if json.Unmarshal([]byte(a.Stats), &w) != nil || w.NumRecords == nil {
		return 0, false
	}
	return *w.NumRecords, true
}

// ParseStats parses the stats JSON of an add action, typing the bounds of the columns of s.
// Columns of s without a bound, nested statistics and columns not in s are left out. An empty
// stats string gives zero Stats with NumRecords -1. A bound that does not fit its column type
// is an error naming the column.
func ParseStats(stats string, s schema.Schema) (Stats, error) {
	out := Stats{NumRecords: -1, Min: map[string]any{}, Max: map[string]any{}, NullCount: map[string]int64{}}
	if stats == "" {
		return out, nil
	}
	var w wireStats
	if err := decodeAny([]byte(stats), &w); err != nil {
		return out, fmt.Errorf("delta: stats: %w", err)
	}
	if w.NumRecords != nil {
		out.NumRecords = *w.NumRecords
	}
	for _, f := range s.Fields {
		for _, side := range []struct {
			raw map[string]json.RawMessage
			dst map[string]any
		}{{w.MinValues, out.Min}, {w.MaxValues, out.Max}} {
			raw, ok := side.raw[f.Name]
			if !ok || string(raw) == "null" || (len(raw) > 0 && raw[0] == '{') {
				continue
			}
			var x any
			if err := decodeAny(raw, &x); err != nil {
				return out, fmt.Errorf("delta: stats of column %q: %w", f.Name, err)
			}
			v, err := schema.FromJSON(f.Type, x)
			if err != nil {
				return out, fmt.Errorf("delta: stats of column %q: %w", f.Name, err)
			}
			side.dst[f.Name] = v
		}
		if raw, ok := w.NullCount[f.Name]; ok {
			var n int64
			if decodeNumber(raw, &n) == nil {
				out.NullCount[f.Name] = n
			}
		}
	}
	return out, nil
}
