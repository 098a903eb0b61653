package flows

import (
	"fmt"
	"testing"
)

// TestKeepUnchanged: the rows of changed keys go, whether a key's rows are next to each other or
// apart, whatever key comes first; isChanged is asked once per run of rows of one key.
func TestKeepUnchanged(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		keys    []int64
		changed map[int64]bool
		want    string
		asked   int
	}{
		{"runs", []int64{1, 1, 2, 2, 2, 3}, map[int64]bool{2: true}, "[1 1 3]", 3},
		{"first key changed", []int64{1, 1, 2}, map[int64]bool{1: true}, "[2]", 2},
		{"a key apart", []int64{1, 2, 1, 1, 3, 2}, map[int64]bool{1: true, 3: true}, "[2 2]", 5},
		{"nothing changed", []int64{4, 5}, nil, "[4 5]", 2},
		{"empty", nil, map[int64]bool{1: true}, "[]", 0},
	}
	for _, c := range cases {
		rows := make([][]any, len(c.keys))
		for i, k := range c.keys {
			rows[i] = []any{"x", k}
		}
		asked := 0
		out := keepUnchanged(nil, rows, []int{1}, func(kb []byte) bool {
			asked++
			v, err := decodeValues(kb)
			if err != nil || len(v) != 1 {
				t.Fatalf("%s: key %x: %v", c.name, kb, err)
			}
			return c.changed[v[0].(int64)]
		})
		got := make([]int64, len(out))
		for i, r := range out {
			got[i] = r[1].(int64)
		}
		if s := fmt.Sprint(got); s != c.want || asked != c.asked {
			t.Errorf("%s: kept %s asking %d times, want %s asking %d times", c.name, s, asked, c.want, c.asked)
		}
	}
}
