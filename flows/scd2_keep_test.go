package flows

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"tributary/schema"
)

// TestKeepUnchanged: the rows of changed keys go, but for those up to the key's keepTo, whether
// a key's rows are next to each other or apart, whatever key comes first; isChanged is asked once
// per run of rows of one key.
func TestKeepUnchanged(t *testing.T) {
	t.Parallel()
	type change struct{ keepTo any }
	cases := []struct {
		name    string
		rows    [][2]int64 // key, __START_AT
		changed map[int64]change
		want    string
		asked   int
	}{
		{"runs", [][2]int64{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 3}, {3, 1}}, map[int64]change{2: {}}, "[1/1 1/2 3/1]", 3},
		{"first key changed", [][2]int64{{1, 1}, {1, 2}, {2, 1}}, map[int64]change{1: {}}, "[2/1]", 2},
		{"a key apart", [][2]int64{{1, 1}, {2, 1}, {1, 2}, {1, 3}, {3, 1}, {2, 2}}, map[int64]change{1: {}, 3: {}}, "[2/1 2/2]", 5},
		{"nothing changed", [][2]int64{{4, 1}, {5, 1}}, nil, "[4/1 5/1]", 2},
		{"empty", nil, map[int64]change{1: {}}, "[]", 0},
		{"kept up to a start", [][2]int64{{1, 10}, {1, 20}, {1, 30}, {2, 5}, {2, 40}}, map[int64]change{1: {int64(20)}, 2: {int64(4)}},
			"[1/10 1/20]", 2},
		{"kept up to a start, apart", [][2]int64{{1, 30}, {2, 5}, {1, 10}, {1, 20}}, map[int64]change{1: {int64(20)}},
			"[2/5 1/10 1/20]", 3},
	}
	for _, c := range cases {
		rows := make([][]any, len(c.rows))
		for i, r := range c.rows {
			rows[i] = []any{"x", r[0], r[1]}
		}
		asked := 0
		out := keepUnchanged(nil, rows, []int{1}, 2, func(kb []byte) (bool, any) {
			asked++
			v, err := decodeValues(kb)
			if err != nil || len(v) != 1 {
				t.Fatalf("%s: key %x: %v", c.name, kb, err)
			}
			ch, ok := c.changed[v[0].(int64)]
			return ok, ch.keepTo
		})
		got := make([]string, len(out))
		for i, r := range out {
			got[i] = fmt.Sprintf("%d/%d", r[1], r[2])
		}
		if s := fmt.Sprint(got); s != c.want || asked != c.asked {
			t.Errorf("%s: kept %s asking %d times, want %s asking %d times", c.name, s, asked, c.want, c.asked)
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
