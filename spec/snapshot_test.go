package spec

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const snapshotBase = `name: p
datasets:
  - name: raw
    source:
      path: in
      format: json
      schema: "id BIGINT, name STRING, city STRING"
  - name: target
    apply_changes_from_snapshot:
#SNAP
`

// TestSnapshotAccepted: the forms apply_changes_from_snapshot takes, the target schema each gives
// (the snapshot's columns; SCD type 2 adds __START_AT / __END_AT BIGINT, the snapshot version),
// and the dependency on a dataset source.
func TestSnapshotAccepted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, snap string
		check      func(t *testing.T, p *Pipeline)
	}{
		{"dataset source, SCD type 1 by default", "      source: raw\n      keys: id", func(t *testing.T, p *Pipeline) {
			s := p.Dataset("target").ApplyChangesFromSnapshot
			if s.Source != "raw" || s.Files != nil || s.StoredAsSCDType != 1 || strings.Join(s.Keys, ",") != "id" {
				t.Errorf("snapshot = %+v", s)
			}
			if got := p.Dataset("target").Schema.DDL(); got != "id BIGINT, name STRING, city STRING" {
				t.Errorf("schema = %s", got)
			}
			if p.Dataset("target").Type != StreamingTable {
				t.Errorf("type = %s", p.Dataset("target").Type)
			}
			g, err := p.Graph()
			if err != nil {
				t.Fatal(err)
			}
			if deps := g.Deps("target"); len(deps) != 1 || deps[0] != "raw" {
				t.Errorf("target depends on %v, want [raw]", deps)
			}
		}},
		{"dataset source, SCD type 2 with tracked columns", "      source: raw\n      keys: [id, name]\n      stored_as_scd_type: 2\n      track_history_column_list: [city]", func(t *testing.T, p *Pipeline) {
			s := p.Dataset("target").ApplyChangesFromSnapshot
			if s.StoredAsSCDType != 2 || strings.Join(s.TrackHistoryColumnList, ",") != "city" || len(s.Keys) != 2 {
				t.Errorf("snapshot = %+v", s)
			}
			if got := p.Dataset("target").Schema.DDL(); got != "id BIGINT, name STRING, city STRING, __START_AT BIGINT, __END_AT BIGINT" {
				t.Errorf("schema = %s", got)
			}
		}},
		{"files source with a rescued-data column", "      source:\n        path: ./snaps\n        format: json\n        schema: \"code STRING, qty INT\"\n        rescued_data_column: _rescued\n      keys: [code]\n      stored_as_scd_type: 2\n      track_history_except_column_list: [_rescued]", func(t *testing.T, p *Pipeline) {
			s := p.Dataset("target").ApplyChangesFromSnapshot
			if s.Source != "" || s.Files == nil || s.Files.Path != filepath.Join(p.Dir, "snaps") || s.Files.Format != "json" {
				t.Fatalf("snapshot = %+v", s)
			}
			if got := p.Dataset("target").Schema.DDL(); got != "code STRING, qty INT, _rescued STRING, __START_AT BIGINT, __END_AT BIGINT" {
				t.Errorf("schema = %s", got)
			}
			g, err := p.Graph()
			if err != nil {
				t.Fatal(err)
			}
			if deps := g.Deps("target"); len(deps) != 0 {
				t.Errorf("a files source depends on no dataset, got %v", deps)
			}
		}},
		{"a snapshot target read by another snapshot", "      source: raw\n      keys: [id]\n  - name: copy\n    apply_changes_from_snapshot: {source: target, keys: [id], stored_as_scd_type: 2}\n    expectations:\n      - {name: named, expect: name != nil, on_violation: drop}", func(t *testing.T, p *Pipeline) {
			if got := p.Dataset("copy").Schema.DDL(); got != "id BIGINT, name STRING, city STRING, __START_AT BIGINT, __END_AT BIGINT" {
				t.Errorf("schema = %s", got)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(snapshotBase, "#SNAP", c.snap, 1)
			p, err := Parse("p.yaml", []byte(text), nil, nil)
			if err != nil {
				t.Fatalf("%v\nspec:\n%s", err, text)
			}
			c.check(t, p)
		})
	}
}

// TestSnapshotErrors: each mistake is reported at its place with its key path (the golden file
// testdata/invalid/snapshot.errors has the full list of one run).
func TestSnapshotErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, snap, want string }{
		{"unknown source", "      source: rows\n      keys: [id]",
			"p.yaml:10:15: datasets[1].apply_changes_from_snapshot.source: unknown dataset rows"},
		{"key not in the source", "      source: raw\n      keys: [ident]",
			"p.yaml:11:14: datasets[1].apply_changes_from_snapshot.keys[0]: unknown column ident: dataset raw has no such column"},
		{"key not in the files' schema", "      source: {path: s, format: json, schema: \"a BIGINT\"}\n      keys: b",
			"p.yaml:11:13: datasets[1].apply_changes_from_snapshot.keys: unknown column b: the snapshot schema has no such column"},
		{"tracked column not in the source", "      source: raw\n      keys: [id]\n      stored_as_scd_type: 2\n      track_history_column_list: [town]",
			"p.yaml:13:35: datasets[1].apply_changes_from_snapshot.track_history_column_list[0]: unknown column town"},
		{"track_history on SCD type 1", "      source: raw\n      keys: [id]\n      track_history_except_column_list: [city]",
			"p.yaml:12:42: datasets[1].apply_changes_from_snapshot.track_history_except_column_list: track_history_except_column_list applies to SCD type 2 only"},
		{"both track lists", "      source: raw\n      keys: [id]\n      stored_as_scd_type: 2\n      track_history_column_list: [city]\n      track_history_except_column_list: [name]",
			"p.yaml:14:42: datasets[1].apply_changes_from_snapshot.track_history_except_column_list: track_history_column_list and track_history_except_column_list cannot be used together"},
		{"scd type 3", "      source: raw\n      keys: [id]\n      stored_as_scd_type: 3",
			"p.yaml:12:27: datasets[1].apply_changes_from_snapshot.stored_as_scd_type: stored_as_scd_type must be 1 or 2, found 3"},
		{"sequence_by", "      source: raw\n      keys: [id]\n      sequence_by: id",
			"p.yaml:12:7: datasets[1].apply_changes_from_snapshot.sequence_by: apply_changes_from_snapshot takes no sequence_by"},
		{"no keys", "      source: raw",
			"p.yaml:10:7: datasets[1].apply_changes_from_snapshot.keys: apply_changes_from_snapshot has no keys"},
		{"reads itself", "      source: target\n      keys: [id]",
			"p.yaml:8:5: datasets[1]: dataset target is part of a cycle: target -> target"},
		{"SCD type 2 over an SCD type 2 target", "      source: raw\n      keys: [id]\n      stored_as_scd_type: 2\n  - name: copy\n    apply_changes_from_snapshot: {source: target, keys: [id], stored_as_scd_type: 2}",
			"p.yaml:14:43: datasets[2].apply_changes_from_snapshot.source: dataset target has a column __START_AT, which an SCD type 2 target adds itself"},
		{"expectation over an unknown column", "      source: raw\n      keys: [id]\n    expectations:\n      - {name: e, expect: town != nil}",
			"p.yaml:13:27: datasets[1].expectations[0].expect: expectation e does not compile: unknown name town"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(snapshotBase, "#SNAP", c.snap, 1)
			_, err := Parse("p.yaml", []byte(text), nil, nil)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want Errors\nspec:\n%s", err, text)
			}
			if len(es) != 1 || !strings.HasPrefix(es[0].Error(), c.want) {
				t.Fatalf("got:\n%v\nwant exactly one problem starting with:\n%s", err, c.want)
			}
		})
	}
}
