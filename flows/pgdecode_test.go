package flows

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"tributary/schema"
	"tributary/spec"
)

func pgTestTable(t testing.TB) *pgTable {
	t.Helper()
	s, err := schema.ParseDDL("id BIGINT, note STRING, amount DECIMAL(10,2), at TIMESTAMP")
	if err != nil {
		t.Fatal(err)
	}
	s.Fields = append(s.Fields, spec.PostgresColumns()...)
	src := &spec.Source{Format: spec.FormatPostgres, Schema: s, Postgres: &spec.PostgresSource{Schema: "public", Table: "t"}}
	tbl, err := newPGTable(src, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	tbl.relID, tbl.relCols = 7, []string{"id", "extra", "note", "amount", "at"}
	return tbl
}

// tuple builds tuple data: "NULL" is a NULL, "TOAST" an unchanged TOASTed value.
func tuple(vals ...string) *pglogrepl.TupleData {
	td := &pglogrepl.TupleData{}
	for _, v := range vals {
		c := &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeText, Data: []byte(v)}
		switch v {
		case "NULL":
			c = &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeNull}
		case "TOAST":
			c = &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeToast}
		}
		td.Columns = append(td.Columns, c)
	}
	return td
}

func renderPG(tbl *pgTable, rows [][]any) string {
	var out []string
	for _, r := range rows {
		var b []byte
		for i, f := range tbl.src.Schema.Fields {
			if i == tbl.data+2 { // _commit_time: not compared
				continue
			}
			if i > 0 {
				b = append(b, ' ')
			}
			if _, ok := r[i].(toastUnchanged); ok {
				b = append(b, "TOAST"...)
				continue
			}
			b = schema.AppendJSON(b, f.Type, r[i])
		}
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestPGChangeRows: each pgoutput change becomes the rows the issue asks for, under replica
// identity DEFAULT (K: key-only old tuple) and FULL (O: the whole old row): an update that
// changes the primary key is a delete of the old key and a create of the new one; columns the
// schema does not declare are left out; text values are typed.
func TestPGChangeRows(t *testing.T) {
	t.Parallel()
	commit := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		msg  pglogrepl.Message
		want string
	}{
		{"insert", &pglogrepl.InsertMessage{RelationID: 7, Tuple: tuple("1", "x", "hello", "12.5", "2026-01-02 03:04:05.123456")},
			`1 "hello" 12.50 "2026-01-02T03:04:05.123456Z" "c" 100 9`},
		{"update, TOAST unchanged", &pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple("1", "x", "TOAST", "13", "NULL")},
			`1 TOAST 13.00 null "u" 100 9`},
		{"update of the key, DEFAULT", &pglogrepl.UpdateMessage{RelationID: 7, OldTupleType: pglogrepl.UpdateMessageTupleTypeKey,
			OldTuple: tuple("1", "NULL", "NULL", "NULL", "NULL"), NewTuple: tuple("2", "x", "TOAST", "13", "NULL")},
			"1 null null null \"d\" 100 9\n2 TOAST 13.00 null \"c\" 100 9"},
		{"update of the key, FULL: the old tuple's value fills TOAST", &pglogrepl.UpdateMessage{RelationID: 7, OldTupleType: 'O',
			OldTuple: tuple("1", "x", "old note", "12", "NULL"), NewTuple: tuple("2", "x", "TOAST", "13", "NULL")},
			"1 \"old note\" 12.00 null \"d\" 100 9\n2 \"old note\" 13.00 null \"c\" 100 9"},
		{"update, FULL, same key", &pglogrepl.UpdateMessage{RelationID: 7, OldTupleType: 'O',
			OldTuple: tuple("1", "x", "old note", "12", "NULL"), NewTuple: tuple("1", "x", "TOAST", "14", "NULL")},
			`1 "old note" 14.00 null "u" 100 9`},
		{"delete, DEFAULT", &pglogrepl.DeleteMessage{RelationID: 7, OldTupleType: 'K', OldTuple: tuple("1", "NULL", "NULL", "NULL", "NULL")},
			`1 null null null "d" 100 9`},
		{"truncate", &pglogrepl.TruncateMessage{RelationNum: 2, RelationIDs: []uint32{3, 7}},
			`null null null null "t" 100 9`},
		{"another table", &pglogrepl.InsertMessage{RelationID: 8, Tuple: tuple("1")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl := pgTestTable(t)
			rows, err := tbl.changeRows(tc.msg, 100, commit, 9)
			if err != nil {
				t.Fatal(err)
			}
			if got := renderPG(tbl, rows); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestPGFillToast: an unchanged TOASTed value takes the key's previous value: from an earlier row
// of the batch, from the old key when the update changed the key, or from the stored rows.
func TestPGFillToast(t *testing.T) {
	t.Parallel()
	tbl := pgTestTable(t)
	var rows [][]any
	add := func(m pglogrepl.Message, lsn pglogrepl.LSN) {
		r, err := tbl.changeRows(m, lsn, time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	add(&pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple("1", "x", "TOAST", "1", "NULL")}, 10)                                          // stored value
	add(&pglogrepl.InsertMessage{RelationID: 7, Tuple: tuple("5", "x", "five", "5", "NULL")}, 11)                                              // in the batch
	add(&pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple("5", "x", "TOAST", "6", "NULL")}, 12)                                          // from row 2
	add(&pglogrepl.UpdateMessage{RelationID: 7, OldTupleType: 'K', OldTuple: tuple("5"), NewTuple: tuple("6", "x", "TOAST", "7", "NULL")}, 13) // key change
	need := tbl.needsLookup(rows)
	if fmt.Sprint(len(need)) != "1" || !need[tbl.keyText([]any{int64(1)})] {
		t.Fatalf("needsLookup = %v, want key 1 only", need)
	}
	stored := map[string][]any{tbl.keyText([]any{int64(1)}): {int64(1), "stored", nil, nil, "r", int64(0), nil, nil}}
	if err := tbl.fillToast(rows, stored); err != nil {
		t.Fatal(err)
	}
	want := `1 "stored" 1.00 null "u" 10 1
5 "five" 5.00 null "c" 11 1
5 "five" 6.00 null "u" 12 1
5 null null null "d" 13 1
6 "five" 7.00 null "c" 13 1`
	if got := renderPG(tbl, rows); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A key with no known value fails and says so.
	rows = rows[:0]
	add(&pglogrepl.UpdateMessage{RelationID: 7, NewTuple: tuple("9", "x", "TOAST", "1", "NULL")}, 20)
	if err := tbl.fillToast(rows, map[string][]any{}); err == nil || !strings.Contains(err.Error(), "key 9") {
		t.Fatalf("err = %v, want one naming key 9", err)
	}
}

// TestPGServerVersion: servers before PostgreSQL 14, whose pgoutput cannot send the logical
// message a run stops at, are refused naming their version; 14 and later pass.
func TestPGServerVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"15.8 (Debian 15.8-1.pgdg120+1)", true},
		{"14.0", true},
		{"17beta1", true},
		{"13beta2", false},
		{"13.16", false},
		{"10.23", false},
		{"9.6.24", false},
	} {
		err := pgServerVersion(tc.version)
		if tc.ok && err != nil {
			t.Errorf("%s: %v, want no error", tc.version, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "the server is PostgreSQL "+tc.version+", and format postgres needs PostgreSQL 14 or later")) {
			t.Errorf("%s: err = %v, want one naming the version and 14", tc.version, err)
		}
	}
}

// TestPGTextDecimalExact: a DECIMAL column takes PostgreSQL's text of a number only when its
// scale holds every nonzero digit (trailing zeros are none; a double's exponent form counts as
// its value), and never rounds it.
func TestPGTextDecimalExact(t *testing.T) {
	typ := schema.Type{Kind: schema.DecimalKind, Precision: 10, Scale: 2}
	for s, want := range map[string]schema.Decimal{"2.5": 250, "2.500": 250, "-0.10": -10, "7": 700, "1.5e-01": 15, "1e+03": 100000} {
		if v, err := pgText(typ, s); err != nil || v != want {
			t.Errorf("pgText(%q) = %v, %v; want %d", s, v, err, want)
		}
	}
	for _, s := range []string{"1.235", "0.001", "-9.999", "1.2345e+00", "NaN", "Infinity"} {
		if v, err := pgText(typ, s); err == nil {
			t.Errorf("pgText(%q) = %v, want an error (DECIMAL(10,2) cannot hold it)", s, v)
		}
	}
}

// TestPGTextTimestampNTZ: a TIMESTAMP_NTZ column takes the text of a PostgreSQL timestamp
// without time zone as its wall clock, and refuses a timestamptz's text (with an offset), whose
// instant is not a wall clock; a TIMESTAMP column applies the offset.
func TestPGTextTimestampNTZ(t *testing.T) {
	if v, err := pgText(schema.TimestampNTZ, "2024-01-31 10:00:00.5"); err != nil || v != schema.Timestamp(1706695200_500000) {
		t.Errorf("pgText(TIMESTAMP_NTZ) = %v, %v; want 1706695200500000", v, err)
	}
	if v, err := pgText(schema.TimestampNTZ, "2024-01-31 10:00:00+02"); err == nil {
		t.Errorf("pgText(TIMESTAMP_NTZ, with offset) = %v, want an error", v)
	}
	if v, err := pgText(schema.Type{Kind: schema.TimestampKind}, "2024-01-31 12:00:00.5+02"); err != nil || v != schema.Timestamp(1706695200_500000) {
		t.Errorf("pgText(TIMESTAMP, +02) = %v, %v; want 1706695200500000", v, err)
	}
}
