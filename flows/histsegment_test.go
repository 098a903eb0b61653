package flows

import (
	"os"
	"path/filepath"
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

// TestWriteSegmentKeepsEncodings: a segment written of a key still encoded (its blob, as a
// batch's fold or a segment read back leaves it, its capacity ending with it) and then of a key
// whose events were decoded holds both keys' events, and leaves the first key's encoding as it
// was: the state keeps it in memory for the next batch.
func TestWriteSegmentKeepsEncodings(t *testing.T) {
	t.Parallel()
	data := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}}, {Name: "name", Type: schema.Type{Kind: schema.String}}}}
	evA := []histEvent{{seq: []any{int64(1)}, row: []any{int64(1), "first-a"}}, {seq: []any{int64(4)}, delete: true}}
	evB := []histEvent{{seq: []any{int64(2)}, row: []any{int64(2), "b"}}}
	blobA := encodeHistEvents(nil, evA)
	blobA = blobA[:len(blobA):len(blobA)]
	saved := append([]byte(nil), blobA...)
	s := &histState{dataSch: data, keys: map[string]*histKey{
		"a": {blob: blobA, nEvents: len(evA), lastDelete: true},
		"b": {events: evB, nEvents: len(evB)},
	}}
	dir := t.TempDir()
	sg, err := s.writeSegment(dir, []string{"a", "b"}, []*histKey{s.keys["a"], s.keys["b"]}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.keys["a"].blob, saved) {
		t.Fatalf("writing the segment changed key a's encoding: %q, want %q", s.keys["a"].blob, saved)
	}
	b, err := os.ReadFile(filepath.Join(dir, sg.Name))
	if err != nil {
		t.Fatal(err)
	}
	back := &histState{dataSch: data, keys: map[string]*histKey{}}
	if err := back.decodeSegment(b); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string][]histEvent{"a": evA, "b": evB} {
		hk := back.keys[k]
		if hk == nil {
			t.Fatalf("key %s is not in the segment", k)
		}
		if got := back.eventsOf(hk); !reflect.DeepEqual(got, want) {
			t.Errorf("key %s: events %+v, want %+v", k, got, want)
		}
	}
}
