package flows

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"tributary/schema"
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
