package flows

import (
	"testing"

	"tributary/delta"
)

// TestNeedsCDC: a batch that needsCDC says so whatever files it then adds is never insertsOnly
// (its change data file may be written before its data files are), and one without change rows
// needs none.
func TestNeedsCDC(t *testing.T) {
	row := []any{int64(1)}
	addOf := func(n int) delta.Add {
		return delta.Add{Path: "f", DataChange: true, Stats: `{"numRecords":` + string(rune('0'+n)) + `}`}
	}
	for _, c := range []struct {
		name string
		f    batchFiles
		want bool
	}{
		{"nothing", batchFiles{}, false},
		{"inserts", batchFiles{cdcRows: [][]any{row}, cdcTypes: []string{delta.ChangeInsert}}, false},
		{"kept-apart inserts", batchFiles{inserted: [][][]any{{row, row}}}, false},
		{"an update", batchFiles{cdcRows: [][]any{row, row}, cdcTypes: []string{delta.ChangeUpdatePreimage, delta.ChangeUpdatePostimage}}, true},
		{"a removed file", batchFiles{inserted: [][][]any{{row}}, removes: []delta.Remove{{Path: "g"}}}, true},
		{"a removed file, no change row", batchFiles{removes: []delta.Remove{{Path: "g"}}}, false},
	} {
		if got := c.f.needsCDC(); got != c.want {
			t.Errorf("%s: needsCDC %v, want %v", c.name, got, c.want)
		}
		if !c.f.needsCDC() {
			continue
		}
		for n := range 4 {
			f := c.f
			f.adds = []delta.Add{addOf(n)}
			if f.insertsOnly() {
				t.Errorf("%s: needsCDC, but insertsOnly with an added file of %d rows", c.name, n)
			}
		}
	}
}
