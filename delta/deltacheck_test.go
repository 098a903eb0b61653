package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tributary/schema"
)

// deltacheck runs the independent reader named by $DELTACHECK (built from
// shared/tools/deltacheck: its own log replay, DuckDB for Parquet) and returns its output lines.
func deltacheck(t *testing.T, args ...string) []string {
	t.Helper()
	bin := os.Getenv("DELTACHECK")
	if bin == "" {
		t.Skip("DELTACHECK is not set; build shared/tools/deltacheck and set DELTACHECK to run this test")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deltacheck %v: %v\n%s", args, err, stderr.String())
	}
	var lines []string
	for _, ln := range strings.Split(string(out), "\n") {
		if ln != "" {
			lines = append(lines, ln)
		}
	}
	return lines
}

// fromDuckJSON types a value of DuckDB's to_json as a value of t.
func fromDuckJSON(t schema.Type, v any) (any, error) {
	if m, ok := v.(map[string]any); ok && t.Kind == schema.StructKind {
		out := make([]any, len(t.Struct.Fields))
		for i, f := range t.Struct.Fields {
			x, err := fromDuckJSON(f.Type, m[f.Name])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			out[i] = x
		}
		return out, nil
	}
	if s, ok := v.(string); ok && t.Storage == schema.StorageBinary {
		// DuckDB writes a BLOB as text with \xHH for bytes outside printable ASCII.
		var b []byte
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
				n, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
				if err != nil {
					return nil, fmt.Errorf("blob %q", s)
				}
				b = append(b, byte(n))
				i += 3
				continue
			}
			b = append(b, s[i])
		}
		return string(b), nil
	}
	if s, ok := v.(string); ok && t.IsNTZ() {
		// DuckDB reads a Parquet TIMESTAMP(isAdjustedToUTC=false) as its TIMESTAMP, printed
		// without offset; an offset here means the file holds an instant, not a wall clock.
		return schema.ParseTimestampNTZ(s)
	}
	if s, ok := v.(string); ok && t.Kind == schema.TimestampKind {
		for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00"} {
			if tm, err := time.Parse(layout, s); err == nil {
				return schema.Timestamp(tm.UnixMicro()), nil
			}
		}
		// deltacheck prints a partition value as the log's text ("1970-01-01 00:00:00").
		if v, err := ParsePartitionValue(t, s); err == nil {
			return v, nil
		}
		return nil, fmt.Errorf("timestamp %q", s)
	}
	return schema.FromJSON(t, v)
}

// canonical renders rows of s as sorted JSON lines in the form of schema.AppendJSON.
func canonical(s schema.Schema, rows [][]any) []string {
	var out []string
	for _, r := range rows {
		b := []byte{'['}
		for j, f := range s.Fields {
			if j > 0 {
				b = append(b, ',')
			}
			b = schema.AppendJSON(b, f.Type, r[j])
		}
		out = append(out, string(append(b, ']')))
	}
	slices.Sort(out)
	return out
}

// parseDeltacheck reads deltacheck's JSON lines into rows of s (by column name).
func parseDeltacheck(t *testing.T, s schema.Schema, lines []string) [][]any {
	t.Helper()
	var rows [][]any
	for _, ln := range lines {
		d := json.NewDecoder(strings.NewReader(ln))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			t.Fatalf("deltacheck line %q: %v", ln, err)
		}
		row := make([]any, len(s.Fields))
		for j, f := range s.Fields {
			v, ok := obj[f.Name]
			if !ok {
				t.Fatalf("deltacheck line %q has no column %q", ln, f.Name)
			}
			x, err := fromDuckJSON(f.Type, v)
			if err != nil {
				t.Fatalf("deltacheck line %q, column %q: %v", ln, f.Name, err)
			}
			row[j] = x
		}
		rows = append(rows, row)
	}
	return rows
}

// TestDeltacheckReadsOurTables writes tables with every type, removes, change data files and a
// partition column, and checks that the independent reader sees the same rows and changes.
func TestDeltacheckReadsOurTables(t *testing.T) {
	t.Parallel()
	if os.Getenv("DELTACHECK") == "" {
		t.Skip("DELTACHECK is not set; build shared/tools/deltacheck and set DELTACHECK to run this test")
	}
	s := mustDDL(t, "id BIGINT, i INT, s STRING, d DOUBLE, b BOOLEAN, dec DECIMAL(10,2), small DECIMAL(5,3), dt DATE, ts TIMESTAMP")
	tbl := createTable(t, s)
	_, first := appendRows(t, tbl, [][]any{
		{int64(1), int32(-2), "héllo", 1.5, true, schema.Decimal(-1250), schema.Decimal(-1), date("2024-01-31"), ts("2024-01-31T10:00:00.123456Z")},
		{int64(2), int32(2147483647), "", -0.25, false, schema.Decimal(9999999999), schema.Decimal(99999), date("1969-12-31"), schema.Timestamp(-1)},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil},
	})
	appendRows(t, tbl, [][]any{
		{int64(9223372036854775807), int32(-2147483648), "a\"quote\" and \\ slash", 1e300, true, schema.Decimal(-9999999999), schema.Decimal(-99999), date("2000-02-29"), ts("2000-02-29T23:59:59.999999Z")},
	})
	// Version 3: an UPDATE of row 1 with a change data file.
	updated := [][]any{
		{int64(1), int32(-2), "updated", 1.5, true, schema.Decimal(-1250), schema.Decimal(-1), date("2024-01-31"), ts("2024-01-31T10:00:00.123456Z")},
		{int64(2), int32(2147483647), "", -0.25, false, schema.Decimal(9999999999), schema.Decimal(99999), date("1969-12-31"), schema.Timestamp(-1)},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
	rewritten, err := tbl.WriteFile(s, updated)
	if err != nil {
		t.Fatal(err)
	}
	cdc, err := tbl.WriteCDCFile(s, [][]any{
		{int64(1), int32(-2), "héllo", 1.5, true, schema.Decimal(-1250), schema.Decimal(-1), date("2024-01-31"), ts("2024-01-31T10:00:00.123456Z")},
		updated[0],
	}, []string{ChangeUpdatePreimage, ChangeUpdatePostimage})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(mustSnapshot(t, tbl, -1))
	tx.Remove(tbl.RemoveFor(first, 0))
	tx.Add(rewritten)
	tx.AddCDC(cdc)
	if _, err := tx.Commit("UPDATE", nil); err != nil {
		t.Fatal(err)
	}

	snap := mustSnapshot(t, tbl, -1)
	ours, err := tbl.Rows(snap)
	if err != nil {
		t.Fatal(err)
	}
	theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
	if got, want := canonical(s, theirs), canonical(s, ours); !slices.Equal(got, want) {
		t.Errorf("deltacheck rows:\n%s\nours:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// An older version, by time travel.
	old, err := tbl.Rows(mustSnapshot(t, tbl, 1))
	if err != nil {
		t.Fatal(err)
	}
	theirs = parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir, "1"))
	if got, want := canonical(s, theirs), canonical(s, old); !slices.Equal(got, want) {
		t.Errorf("deltacheck rows at version 1:\n%s\nours:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The change data feed, without _commit_timestamp, which deltacheck does not print.
	cs, changes, err := tbl.Changes(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	cs.Fields = cs.Fields[:len(cs.Fields)-1]
	theirs = parseDeltacheck(t, cs, deltacheck(t, "changes", tbl.Dir, "0"))
	if got, want := canonical(cs, theirs), canonical(cs, changes); !slices.Equal(got, want) {
		t.Errorf("deltacheck changes:\n%s\nours:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(changes) != 6 {
		t.Errorf("%d change rows, want 4 inserts and 2 update images", len(changes))
	}
}

func TestDeltacheckPartitionedTable(t *testing.T) {
	t.Parallel()
	if os.Getenv("DELTACHECK") == "" {
		t.Skip("DELTACHECK is not set; build shared/tools/deltacheck and set DELTACHECK to run this test")
	}
	s := mustDDL(t, "id BIGINT, region STRING")
	tbl := createTable(t, s, "region")
	data := mustDDL(t, "id BIGINT")
	snap := mustSnapshot(t, tbl, -1)
	tx := tbl.Begin(snap)
	for _, region := range []string{"eu west", "", "us"} {
		a, err := tbl.WriteFile(data, [][]any{{int64(len(region))}})
		if err != nil {
			t.Fatal(err)
		}
		a.PartitionValues = map[string]string{"region": region}
		tx.Add(a)
	}
	if _, err := tx.Commit("WRITE", nil); err != nil {
		t.Fatal(err)
	}
	ours, err := tbl.Rows(mustSnapshot(t, tbl, -1))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(7), "eu west"}, {int64(0), nil}, {int64(2), "us"}}
	assertRows(t, ours, want)
	theirs := parseDeltacheck(t, s, deltacheck(t, "rows", tbl.Dir))
	if got, want := canonical(s, theirs), canonical(s, want); !slices.Equal(got, want) {
		t.Errorf("deltacheck rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
