package flows

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"tributary/schema"
)

// TestRewriteRows: the rows of changed keys go, but for those their keep keeps, whether a
// key's rows are next to each other or apart, whatever key comes first; a changed key's new rows
// follow its first run when its position is to be placed here, and only then; changeOf is asked
// once per run of rows of one key.
func TestRewriteRows(t *testing.T) {
	t.Parallel()
	type change struct {
		keep  rowKeep
		fresh []int64 // the __START_AT of its new rows
		here  bool    // its new rows go to this file
	}
	cases := []struct {
		name    string
		rows    [][2]int64 // key, __START_AT
		changed map[int64]change
		want    string
		left    string // the positions left in place
		asked   int
	}{
		{"runs", [][2]int64{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 3}, {3, 1}}, map[int64]change{2: {}}, "[1/1 1/2 3/1]", "[]", 3},
		{"first key changed", [][2]int64{{1, 1}, {1, 2}, {2, 1}}, map[int64]change{1: {fresh: []int64{1, 5}, here: true}}, "[1/1 1/5 2/1]", "[]", 2},
		{"a key apart", [][2]int64{{1, 1}, {2, 1}, {1, 2}, {1, 3}, {3, 1}, {2, 2}}, map[int64]change{1: {fresh: []int64{9}, here: true}, 3: {}},
			"[1/9 2/1 2/2]", "[]", 5},
		{"nothing changed", [][2]int64{{4, 1}, {5, 1}}, nil, "[4/1 5/1]", "[]", 2},
		{"empty", nil, map[int64]change{1: {fresh: []int64{1}, here: true}}, "[]", "[1]", 0},
		{"kept up to a start", [][2]int64{{1, 10}, {1, 20}, {1, 30}, {2, 5}, {2, 40}},
			map[int64]change{1: {keep: rowKeep{before: int64(21)}, fresh: []int64{25, 35}, here: true}, 2: {keep: rowKeep{before: int64(5)}, fresh: []int64{6}, here: true}},
			"[1/10 1/20 1/25 1/35 2/6]", "[]", 2},
		{"all kept", [][2]int64{{1, 10}, {1, 20}, {2, 5}}, map[int64]change{1: {keep: rowKeep{all: true}, fresh: []int64{30}, here: true}},
			"[1/10 1/20 1/30 2/5]", "[]", 2},
		{"kept up to a start, apart", [][2]int64{{1, 30}, {2, 5}, {1, 10}, {1, 20}}, map[int64]change{1: {keep: rowKeep{before: int64(21)}, fresh: []int64{21}, here: true}},
			"[1/21 2/5 1/10 1/20]", "[]", 3},
		{"new rows that go elsewhere", [][2]int64{{1, 1}, {2, 1}}, map[int64]change{1: {fresh: []int64{3}}, 3: {fresh: []int64{4}, here: true}},
			"[2/1]", "[3]", 2},
	}
	for _, c := range cases {
		rows := make([][]any, len(c.rows))
		for i, r := range c.rows {
			rows[i] = []any{"x", r[0], r[1]}
		}
		place := map[int]bool{}
		for k, ch := range c.changed {
			if ch.here {
				place[int(k)] = true
			}
		}
		asked := 0
		out := rewriteRows(nil, rows, []int{1}, 2, func(kb []byte) (int, rowKeep, [][]any) {
			asked++
			v, err := decodeValues(kb)
			if err != nil || len(v) != 1 {
				t.Fatalf("%s: key %x: %v", c.name, kb, err)
			}
			k := v[0].(int64)
			ch, ok := c.changed[k]
			if !ok {
				return -1, rowKeep{}, nil
			}
			var fresh [][]any
			for _, st := range ch.fresh {
				fresh = append(fresh, []any{"y", k, st})
			}
			return int(k), ch.keep, fresh
		}, place, nil)
		got := make([]string, len(out))
		for i, r := range out {
			got[i] = fmt.Sprintf("%d/%d", r[1], r[2])
		}
		var left []int
		for k := range place {
			left = append(left, k)
		}
		if s, l := fmt.Sprint(got), fmt.Sprint(left); s != c.want || l != c.left || asked != c.asked {
			t.Errorf("%s: kept %s, left %s, asking %d times; want %s, left %s, asking %d times", c.name, s, l, asked, c.want, c.left, c.asked)
		}
	}
}

// TestValueSlabRebox: a re-boxed value equals the original and has its type; a short string's
// bytes are copied, and a nested or boolean value comes back as it is.
func TestValueSlabRebox(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	vals := []any{nil, int64(-7), int64(1 << 40), int32(3), 2.5, true, schema.Decimal(1234), schema.Date(19000),
		schema.Timestamp(1_700_000_000_000_000), "", "hello", long, []any{int64(1), "a"}}
	s := newValueSlab()
	for range 3 { // more than one array of each kind
		for i := 0; i < 5000; i++ {
			s.rebox(int64(i))
			s.rebox(strings.Repeat("y", i%40))
		}
		for _, v := range vals {
			got := s.rebox(v)
			if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", v, v) {
				t.Errorf("rebox(%T %v) = %T %v", v, v, got, got)
			}
		}
	}
	str := strings.Clone("hello")
	if got := s.rebox(str).(string); got != str || unsafe.StringData(got) == unsafe.StringData(str) {
		t.Errorf("rebox(%q) = %q, its bytes not copied", str, got)
	}
}
