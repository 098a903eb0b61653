package flows

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"

	"tributary/schema"
	"tributary/spec"
)

// toastUnchanged marks a column an update did not send (an unchanged TOASTed value): it is filled
// from the key's previous row before the batch is written; from is the key to take it from when
// the update changed the primary key ("" for the row's own key).
type toastUnchanged struct{ from string }

// pgTable is what the flow knows of the PostgreSQL table it streams.
type pgTable struct {
	src     *spec.Source
	data    int            // the number of declared table columns (before the change columns)
	index   map[string]int // declared column index by name
	keys    []string       // the primary key's columns
	keyIdx  []int          // their indexes among the declared columns
	relID   uint32         // the relation id of the table in the stream, 0 until its Relation message
	relCols []string       // the relation's column names, in tuple order
}

func newPGTable(src *spec.Source, keys []string) (*pgTable, error) {
	t := &pgTable{src: src, data: len(src.Schema.Fields) - len(spec.PostgresColumns()), index: map[string]int{}, keys: keys}
	for i := 0; i < t.data; i++ {
		t.index[src.Schema.Fields[i].Name] = i
	}
	for _, k := range keys {
		i, ok := t.index[k]
		if !ok {
			return nil, fmt.Errorf("the schema does not declare the primary key column %s of %s.%s; add it", k, src.Postgres.Schema, src.Postgres.Table)
		}
		t.keyIdx = append(t.keyIdx, i)
	}
	return t, nil
}

// pgText converts a value in PostgreSQL's text output format to a column's type.
func pgText(t schema.Type, s string) (any, error) {
	switch t.Kind {
	case schema.Long:
		return strconv.ParseInt(s, 10, 64)
	case schema.Integer:
		if t.Storage != "" {
			return schema.FromJSON(t, s) // SMALLINT, TINYINT: the range is checked
		}
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case schema.String:
		if t.IsBinary() {
			return pgBytea(s)
		}
		return s, nil
	case schema.Double:
		f, err := t.ParseFloat(s)
		return t.Float(f), err
	case schema.Boolean:
		switch s {
		case "t", "true":
			return true, nil
		case "f", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a boolean", s)
	case schema.DecimalKind:
		if !pgDecimalFits(s, t.Scale) {
			return nil, fmt.Errorf("%s has more fraction digits than DECIMAL scale %d", s, t.Scale)
		}
		return schema.ParseDecimalValue(s, t)
	case schema.DateKind:
		return schema.ParseDate(s)
	case schema.TimestampKind:
		if t.IsNTZ() {
			// A timestamp without time zone column prints no offset; a timestamptz one does,
			// and its instant is not a wall clock: schema.ParseTimestampNTZ refuses it.
			return schema.ParseTimestampNTZ(s)
		}
		for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999"} {
			if tm, err := time.Parse(layout, s); err == nil {
				return schema.Timestamp(tm.UnixMicro()), nil
			}
		}
		return nil, fmt.Errorf("%q is not a timestamp", s)
	}
	return nil, fmt.Errorf("type %s is not supported for format postgres", t.DDL())
}

// pgBytea returns the bytes of s, PostgreSQL's text output of a bytea value (PostgreSQL
// documentation, "Binary Data Types"): the hex format, "\x" then two hex digits a byte
// (bytea_output hex, the default, which the source sets), or the escape format, printable bytes
// as they are, a backslash as "\\" and other bytes as "\ooo" in octal (bytea_output escape).
func pgBytea(s string) (string, error) {
	if hexText, ok := strings.CutPrefix(s, `\x`); ok {
		b, err := hex.DecodeString(hexText)
		if err != nil {
			return "", fmt.Errorf("%q is not a bytea in hex format: %w", s, err)
		}
		return string(b), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) && s[i+1] <= '3':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return "", fmt.Errorf("%q is not a bytea in escape format: a backslash at byte %d is not followed by a backslash or three octal digits", s, i+1)
		}
	}
	return string(out), nil
}

// isOctal reports whether c is an octal digit.
func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// pgDecimalFits reports whether the number s (PostgreSQL's text of a numeric, or of a double)
// has no nonzero digit past scale digits after the point: the source copies the table, so a
// value that a DECIMAL of that scale would round (1.235 in DECIMAL(10,2)) is refused, not changed.
// Text that is no number is left to ParseDecimal to refuse.
func pgDecimalFits(s string, scale int) bool {
	if !strings.ContainsAny(s, "eE") {
		_, frac, _ := strings.Cut(s, ".")
		return len(strings.TrimRight(frac, "0")) <= scale
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return true
	}
	return r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))).IsInt()
}

// pgValueError is a value of the PostgreSQL table that its column's declared type cannot hold.
type pgValueError struct {
	table  string // schema.name
	column string
	typ    schema.Type
	value  string // PostgreSQL's text of the value
}

// Error names the column, the table, the value (its first 40 bytes) and the declared type.
func (e *pgValueError) Error() string {
	v := e.value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return fmt.Sprintf("column %s of %s holds %q, which its declared type %s cannot hold", e.column, e.table, v, e.typ.DDL())
}

// value converts the text s of the declared column i, or fails with a *pgValueError.
func (t *pgTable) value(i int, s string) (any, error) {
	f := t.src.Schema.Fields[i]
	v, err := pgText(f.Type, s)
	if err != nil {
		return nil, &pgValueError{table: t.src.Postgres.Schema + "." + t.src.Postgres.Table, column: f.Name, typ: f.Type, value: s}
	}
	return v, nil
}

// pgMissingColumnError is a declared column the stream does not send: dropped since the run
// started, generated, or left out by the publication's column list.
type pgMissingColumnError struct {
	table, column string
	sent          []string // the columns the stream sends
}

// Error names the columns the stream sends, the table and the declared column it lacks.
func (e *pgMissingColumnError) Error() string {
	return fmt.Sprintf("the stream sends the columns (%s) of %s, not the declared column %s (dropped, generated, or left out of the publication's column list), so its changes would leave it NULL",
		strings.Join(e.sent, ", "), e.table, e.column)
}

// checkStreamColumns checks that the stream's columns of the table (relCols, from its Relation
// message) hold every declared column: one missing would be NULL in every change.
func (t *pgTable) checkStreamColumns() error {
	for _, f := range t.src.Schema.Fields[:t.data] {
		if !slices.Contains(t.relCols, f.Name) {
			return &pgMissingColumnError{table: t.src.Postgres.Schema + "." + t.src.Postgres.Table, column: f.Name, sent: slices.Clone(t.relCols)}
		}
	}
	return nil
}

// tupleRow turns a tuple of the stream into a row of the declared columns (change columns
// left NULL); columns the schema does not declare are left out.
func (t *pgTable) tupleRow(tup *pglogrepl.TupleData) ([]any, error) {
	row := make([]any, len(t.src.Schema.Fields))
	if tup == nil {
		return row, nil
	}
	for i, c := range tup.Columns {
		if i >= len(t.relCols) {
			break
		}
		j, ok := t.index[t.relCols[i]]
		if !ok {
			continue
		}
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
		case pglogrepl.TupleDataTypeToast:
			row[j] = toastUnchanged{}
		case pglogrepl.TupleDataTypeText:
			v, err := t.value(j, string(c.Data))
			if err != nil {
				return nil, err
			}
			row[j] = v
		default:
			return nil, fmt.Errorf("column %s: binary tuple data is not supported", t.relCols[i])
		}
	}
	return row, nil
}

// keyText is the primary key of a row as text, to compare keys and index rows by key.
func (t *pgTable) keyText(row []any) string {
	var b strings.Builder
	for _, i := range t.keyIdx {
		fmt.Fprintf(&b, "%v\x00", row[i])
	}
	return b.String()
}

// change sets the change columns of a row.
func (t *pgTable) change(row []any, op string, lsn pglogrepl.LSN, commit time.Time, xid uint32) []any {
	row[t.data] = op
	row[t.data+1] = int64(lsn)
	if op != "r" {
		row[t.data+2] = schema.Timestamp(commit.UnixMicro())
		row[t.data+3] = int64(xid)
	}
	return row
}

// changeRows turns one change message into rows: an insert is c, an update u (or, when it
// changes the primary key, d of the old key then c of the new one), a delete d (the old tuple:
// the key alone under replica identity DEFAULT), a truncate t.
func (t *pgTable) changeRows(msg pglogrepl.Message, lsn pglogrepl.LSN, commit time.Time, xid uint32) ([][]any, error) {
	switch m := msg.(type) {
	case *pglogrepl.InsertMessage:
		if m.RelationID != t.relID {
			return nil, nil
		}
		row, err := t.tupleRow(m.Tuple)
		if err != nil {
			return nil, err
		}
		return [][]any{t.change(row, "c", lsn, commit, xid)}, nil
	case *pglogrepl.UpdateMessage:
		if m.RelationID != t.relID {
			return nil, nil
		}
		row, err := t.tupleRow(m.NewTuple)
		if err != nil {
			return nil, err
		}
		if m.OldTuple != nil {
			old, err := t.tupleRow(m.OldTuple)
			if err != nil {
				return nil, err
			}
			for i, v := range row {
				if _, ok := v.(toastUnchanged); ok && m.OldTupleType == pglogrepl.UpdateMessageTupleTypeOld {
					if _, oldToo := old[i].(toastUnchanged); !oldToo {
						row[i] = old[i] // replica identity FULL: the old tuple has the value
					}
				}
			}
			if oldKey := t.keyText(old); oldKey != t.keyText(row) {
				for i, v := range row {
					if _, ok := v.(toastUnchanged); ok {
						row[i] = toastUnchanged{from: oldKey}
					}
				}
				del := make([]any, len(row))
				for _, i := range t.keyIdx {
					del[i] = old[i]
				}
				if m.OldTupleType == pglogrepl.UpdateMessageTupleTypeOld {
					copy(del, old)
				}
				clearToast(del)
				return [][]any{t.change(del, "d", lsn, commit, xid), t.change(row, "c", lsn, commit, xid)}, nil
			}
		}
		return [][]any{t.change(row, "u", lsn, commit, xid)}, nil
	case *pglogrepl.DeleteMessage:
		if m.RelationID != t.relID {
			return nil, nil
		}
		row, err := t.tupleRow(m.OldTuple)
		if err != nil {
			return nil, err
		}
		clearToast(row)
		return [][]any{t.change(row, "d", lsn, commit, xid)}, nil
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if id == t.relID {
				return [][]any{t.change(make([]any, len(t.src.Schema.Fields)), "t", lsn, commit, xid)}, nil
			}
		}
	}
	return nil, nil
}

// clearToast makes unsent values of a delete's image NULL (a deleted row keeps no values).
func clearToast(row []any) {
	for i, v := range row {
		if _, ok := v.(toastUnchanged); ok {
			row[i] = nil
		}
	}
}

// needsLookup returns the keys whose first row in rows has an unchanged TOASTed value: their
// stored values must come from the bronze table.
func (t *pgTable) needsLookup(rows [][]any) map[string]bool {
	seen, out := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		k := t.keyText(r)
		if from, ok := toastKey(r); ok {
			if from == "" {
				from = k
			}
			if !seen[from] {
				out[from] = true
			}
		}
		if op, _ := r[t.data].(string); op != "d" { // as fillToast: a delete leaves no values
			seen[k] = true
		}
	}
	return out
}

// toastKey reports whether r has an unchanged TOASTed value, and the key it comes from ("": r's).
func toastKey(r []any) (string, bool) {
	for _, v := range r {
		if u, ok := v.(toastUnchanged); ok {
			return u.from, true
		}
	}
	return "", false
}

// fillToast replaces unchanged TOASTed values with the key's previous value: from an earlier
// row of the batch, or from stored (the key's latest row in the bronze table).
func (t *pgTable) fillToast(rows [][]any, stored map[string][]any) error {
	last := stored
	for _, r := range rows {
		k := t.keyText(r)
		if from, ok := toastKey(r); ok {
			if from == "" {
				from = k
			}
			prev := last[from]
			for i, v := range r {
				if _, ok := v.(toastUnchanged); ok {
					if prev == nil {
						return fmt.Errorf("an update of %s.%s (key %s, LSN %v) left column %s unchanged (TOAST) but no earlier value of the key is known; run a full refresh", t.src.Postgres.Schema, t.src.Postgres.Table, strings.ReplaceAll(strings.TrimSuffix(from, "\x00"), "\x00", ", "), r[t.data+1], t.src.Schema.Fields[i].Name)
					}
					r[i] = prev[i]
				}
			}
		}
		switch op, _ := r[t.data].(string); op {
		case "d": // the key's last values stay: an update that changes the key takes them
		case "t":
			clear(last)
		default:
			last[k] = r
		}
	}
	return nil
}
