package delta

import (
	"slices"
	"testing"
)

// TestReadLongColumns: the BIGINT columns of a data file with a deletion vector read typed equal
// what ReadLiveFile reads, positions included; a file whose column holds a NULL, or a column of
// another type, or a missing one, is not read (ok false, no error).
func TestReadLongColumns(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, name STRING, start BIGINT, at TIMESTAMP")
	tbl := createDVTable(t, s)
	var rows [][]any
	for i := range 3000 { // more than one page of values
		rows = append(rows, []any{int64(i*7 - 1000), "n", int64(1 << 40 * i), nil})
	}
	_, a := appendRows(t, tbl, rows)
	a = deleteRows(t, tbl, a, 0, 5, 2999, 1500)
	cols, pos, ok, err := tbl.ReadLongColumns(a, []string{"start", "id"})
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	live, wantPos, err := tbl.ReadLiveFile(a, mustDDL(t, "id BIGINT, start BIGINT"))
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2996 || !slices.Equal(pos, wantPos) || len(cols[0]) != len(live) || len(cols[1]) != len(live) {
		t.Fatalf("%d live rows, %d positions (want %d), columns of %d and %d", len(live), len(pos), len(wantPos), len(cols[0]), len(cols[1]))
	}
	for i, r := range live {
		if cols[1][i] != r[0].(int64) || cols[0][i] != r[1].(int64) {
			t.Fatalf("row %d (position %d): id %d start %d, want %v", i, pos[i], cols[1][i], cols[0][i], r)
		}
	}
	if pos[0] != 1 || cols[1][0] != -993 {
		t.Errorf("first live row at %d with id %d, want 1 and -993", pos[0], cols[1][0])
	}
	for _, names := range [][]string{{"name"}, {"at"}, {"id", "missing"}} {
		if _, _, ok, err := tbl.ReadLongColumns(a, names); ok || err != nil {
			t.Errorf("columns %v: ok %v, err %v; want not read", names, ok, err)
		}
	}
	_, b := appendRows(t, tbl, [][]any{{int64(1), "x", int64(2), nil}, {int64(2), "y", nil, nil}})
	if _, _, ok, err := tbl.ReadLongColumns(b, []string{"id", "start"}); ok || err != nil {
		t.Errorf("a column with a NULL: ok %v, err %v; want not read", ok, err)
	}
	if cols, _, ok, err := tbl.ReadLongColumns(b, []string{"id"}); !ok || err != nil || !slices.Equal(cols[0], []int64{1, 2}) {
		t.Errorf("id of the second file: %v, ok %v, err %v", cols, ok, err)
	}
}
