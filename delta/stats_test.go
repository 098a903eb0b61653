package delta

import (
	"math"
	"strings"
	"testing"

	"tributary/schema"
)

// TestStats checks the stats JSON of written files against Delta PROTOCOL.md, "Per-file
// Statistics", in the form Spark writes it.
func TestStats(t *testing.T) {
	t.Parallel()
	long40 := strings.Repeat("a", 40)
	tests := []struct {
		name string
		ddl  string
		rows [][]any
		want string
	}{
		{
			name: "every type",
			ddl:  "id BIGINT, i INT, s STRING, d DOUBLE, b BOOLEAN, dec DECIMAL(10,2), dt DATE, ts TIMESTAMP",
			rows: [][]any{
				{int64(5), int32(-3), "pear", 2.5, true, schema.Decimal(-1250), date("2024-01-31"), ts("2024-01-31T10:00:00.123456Z")},
				{int64(-2), int32(9), "apple", -0.5, false, schema.Decimal(7), date("1969-12-31"), schema.Timestamp(-1)},
				{nil, nil, nil, nil, nil, nil, nil, nil},
			},
			want: `{"numRecords":3,` +
				`"minValues":{"id":-2,"i":-3,"s":"apple","d":-0.5,"dec":-12.50,"dt":"1969-12-31","ts":"1969-12-31T23:59:59.999Z"},` +
				`"maxValues":{"id":5,"i":9,"s":"pear","d":2.5,"dec":0.07,"dt":"2024-01-31","ts":"2024-01-31T10:00:00.123Z"},` +
				`"nullCount":{"id":1,"i":1,"s":1,"d":1,"b":1,"dec":1,"dt":1,"ts":1}}`,
		},
		{
			name: "all NULL column has no bounds",
			ddl:  "a BIGINT, b STRING",
			rows: [][]any{{int64(1), nil}, {int64(1), nil}},
			want: `{"numRecords":2,"minValues":{"a":1},"maxValues":{"a":1},"nullCount":{"a":0,"b":2}}`,
		},
		{
			name: "no rows",
			ddl:  "a BIGINT",
			rows: nil,
			want: `{"numRecords":0,"minValues":{},"maxValues":{},"nullCount":{"a":0}}`,
		},
		{
			name: "long strings are cut to 32 characters, max with a tie-breaker",
			ddl:  "s STRING",
			rows: [][]any{{long40}, {"b" + long40}},
			want: `{"numRecords":2,"minValues":{"s":"` + long40[:32] + `"},"maxValues":{"s":"b` + long40[:31] + "\u007f" + `"},"nullCount":{"s":0}}`,
		},
		{
			name: "non-ASCII tie-breaker is U+10FFFF",
			ddl:  "s STRING",
			rows: [][]any{{strings.Repeat("é", 33)}},
			want: `{"numRecords":1,"minValues":{"s":"` + strings.Repeat("é", 32) + `"},"maxValues":{"s":"` + strings.Repeat("é", 32) + "\U0010FFFF" + `"},"nullCount":{"s":0}}`,
		},
		{
			name: "infinities and NaN leave the bound out",
			ddl:  "d DOUBLE, e DOUBLE",
			rows: [][]any{{math.NaN(), math.Inf(-1)}, {1.0, 2.0}},
			want: `{"numRecords":2,"minValues":{"d":1},"maxValues":{"e":2},"nullCount":{"d":0,"e":0}}`,
		},
		{
			name: "column names are JSON-escaped",
			ddl:  "`a\"b` BIGINT",
			rows: [][]any{{int64(1)}},
			want: `{"numRecords":1,"minValues":{"a\"b":1},"maxValues":{"a\"b":1},"nullCount":{"a\"b":0}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := New(t.TempDir()).WriteFile(mustDDL(t, tc.ddl), tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			if a.Stats != tc.want {
				t.Errorf("stats\n got %s\nwant %s", a.Stats, tc.want)
			}
		})
	}
}

func TestTruncateMax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
		ok   bool
	}{
		{"abc", 3, "abc", true},
		{"abcd", 3, "abc\x7f", true},
		{"abcé", 3, "abc\U0010FFFF", true},
		{"ab\U0010FFFFcd", 2, "ab\U0010FFFF\x7f", true},
		{"a" + strings.Repeat("\U0010FFFF", 5), 1, "", false},
	}
	for _, tc := range tests {
		got, ok := truncateMax(tc.in, tc.n)
		if got != tc.want || ok != tc.ok {
			t.Errorf("truncateMax(%q, %d) = %q, %v; want %q, %v", tc.in, tc.n, got, ok, tc.want, tc.ok)
		}
		if ok && got < tc.in {
			t.Errorf("truncateMax(%q) = %q is below the value", tc.in, got)
		}
	}
}

func TestParseStats(t *testing.T) {
	t.Parallel()
	s := mustDDL(t, "id BIGINT, s STRING, dec DECIMAL(10,2), dt DATE, ts TIMESTAMP, b BOOLEAN")
	a, err := New(t.TempDir()).WriteFile(s, [][]any{
		{int64(5), "pear", schema.Decimal(-1250), date("2024-01-31"), ts("2024-01-31T10:00:00.123456Z"), true},
		{int64(-2), nil, schema.Decimal(7), date("1969-12-31"), schema.Timestamp(-1), nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStats(a.Stats, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumRecords != 2 {
		t.Errorf("NumRecords %d, want 2", st.NumRecords)
	}
	wantMin := map[string]any{"id": int64(-2), "s": "pear", "dec": schema.Decimal(-1250), "dt": date("1969-12-31"), "ts": ts("1969-12-31T23:59:59.999Z")}
	wantMax := map[string]any{"id": int64(5), "s": "pear", "dec": schema.Decimal(7), "dt": date("2024-01-31"), "ts": ts("2024-01-31T10:00:00.123Z")}
	for k, v := range wantMin {
		if !sameValue(st.Min[k], v) {
			t.Errorf("Min[%s] = %#v, want %#v", k, st.Min[k], v)
		}
	}
	for k, v := range wantMax {
		if !sameValue(st.Max[k], v) {
			t.Errorf("Max[%s] = %#v, want %#v", k, st.Max[k], v)
		}
	}
	if _, ok := st.Min["b"]; ok {
		t.Errorf("BOOLEAN has a min bound")
	}
	if st.NullCount["s"] != 1 || st.NullCount["b"] != 1 || st.NullCount["id"] != 0 {
		t.Errorf("NullCount %v", st.NullCount)
	}
	// Stats written by Spark (testdata/simple_table_with_cdc, version 1).
	st, err = ParseStats(`{"numRecords":1,"minValues":{"id":0,"name":"Mario"},"maxValues":{"id":0,"name":"Mario"},"nullCount":{"id":0,"name":0}}`, mustDDL(t, "id INT, name STRING"))
	if err != nil || st.NumRecords != 1 || st.Min["id"] != int32(0) || st.Max["name"] != "Mario" {
		t.Errorf("Spark stats: %+v, %v", st, err)
	}
}
