package flows

import (
	"reflect"
	"testing"

	"tributary/schema"
)

// TestHistEventsRoundTrip: events encoded for the state decode to the same events, with and
// without a histDecoder (whose arrays the values of thousands of events span), every kind of
// value included; bytes cut short are an error.
func TestHistEventsRoundTrip(t *testing.T) {
	t.Parallel()
	var events []histEvent
	for i := range 3000 {
		seq := []any{int64(i * 7), int32(i)}
		if i%5 == 0 {
			events = append(events, histEvent{seq: seq, delete: true})
			continue
		}
		row := []any{int64(-i), "name-" + string(rune('a'+i%26)), schema.Decimal(i * 100), schema.Date(i),
			schema.Timestamp(int64(i) * 1_000_000), float64(i) / 3, i%2 == 0, nil, []any{int64(i), "s"}}
		events = append(events, histEvent{seq: seq, row: row})
	}
	b := encodeHistEvents(nil, events)
	for _, tc := range []struct {
		name string
		dec  *histDecoder
	}{{"decodeValues", nil}, {"histDecoder", newHistDecoder()}} {
		got, err := decodeHistEvents(b, 9, len(events), tc.dec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, events) {
			for i := range events {
				if !reflect.DeepEqual(got[i], events[i]) {
					t.Fatalf("%s: event %d = %+v, want %+v", tc.name, i, got[i], events[i])
				}
			}
			t.Fatalf("%s: %d events, want %d", tc.name, len(got), len(events))
		}
		// A window ends where its event ends: appending to one leaves the next as it was.
		if tc.dec != nil {
			_ = append(got[1].row, "x")
			if !reflect.DeepEqual(got[2], events[2]) {
				t.Fatalf("%s: appending to a row changed the next event", tc.name)
			}
		}
		if _, err := decodeHistEvents(b[:len(b)-3], 9, 0, tc.dec); err == nil {
			t.Errorf("%s: bytes cut short decoded without an error", tc.name)
		}
	}
}
