package flows

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"tributary/schema"
)

// TestBoxSlab: values boxed in a slab are interfaces like any others (type, ==, reflect, fmt),
// stay intact through garbage collections and as the slab fills and starts new arrays, and a
// nil slab boxes the ordinary way.
func TestBoxSlab(t *testing.T) {
	t.Parallel()
	for _, slab := range []*boxSlab{nil, newBoxSlab(1, 1)} {
		var got, want []any
		for i := range 300 {
			n := int64(i)*1_000_003 - 7
			s := fmt.Sprint("value-", i)
			got = append(got, slab.int64(n), slab.int32(int32(n)), slab.float64(float64(n)/3),
				slab.decimal(schema.Decimal(n)), slab.date(schema.Date(i)), slab.timestamp(schema.Timestamp(n)), slab.string(s))
			want = append(want, n, int32(n), float64(n)/3, schema.Decimal(n), schema.Date(i), schema.Timestamp(n), s)
		}
		runtime.GC()
		runtime.GC()
		for i := range got {
			if got[i] != want[i] || !reflect.DeepEqual(got[i], want[i]) || fmt.Sprintf("%T %v", got[i], got[i]) != fmt.Sprintf("%T %v", want[i], want[i]) {
				t.Fatalf("value %d: %T %v, want %T %v", i, got[i], got[i], want[i], want[i])
			}
		}
		if x, ok := got[len(got)-1].(string); !ok || x != "value-299" {
			t.Errorf("the last value is %#v, want \"value-299\"", got[len(got)-1])
		}
	}
}
