package flows

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestStruct: a declared STRUCT column (nested too) takes a JSON object by field name
// (unknown fields ignored, missing ones NULL); a value that is not an object, or a field that
// does not fit, makes the column NULL and is reported; expectations see the struct's fields.
func TestIngestStruct(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadPipeline(t, dir, `name: t
storage: ./storage
datasets:
  - name: raw
    source:
      path: ./landing
      format: json
      schema: "id BIGINT, addr STRUCT<city: STRING, geo: STRUCT<lat DOUBLE, lon DOUBLE>>"
    expectations:
      - {name: in_oslo, expect: 'addr.city == "Oslo"', on_violation: drop}
`)
	write(t, filepath.Join(dir, "landing", "a.json"), []byte(`{"id": 1, "addr": {"city": "Oslo", "geo": {"lat": 59.9, "lon": 10.7}, "zip": "0150"}}
{"id": 2, "addr": {"city": "Oslo"}}
{"id": 3, "addr": {"city": "Bergen"}}
{"id": 4, "addr": "Oslo"}
{"id": 5, "addr": {"city": "Oslo", "geo": {"lat": "north"}}}
`))
	m, rec, err := ingest(t, p)
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, p, `1 {"city":"Oslo","geo":{"lat":59.9,"lon":10.7}}`, `2 {"city":"Oslo","geo":null}`)
	if m.BadRecords != 2 || m.Quality.DroppedRecords != 3 || !strings.Contains(rec.all(), "a.json:5: column addr: field geo: field lat:") {
		t.Errorf("bad %d dropped %d, events:\n%s", m.BadRecords, m.Quality.DroppedRecords, rec.all())
	}
	if got := p.Dataset("raw").Schema.DDL(); got != "id BIGINT, addr STRUCT<city: STRING, geo: STRUCT<lat: DOUBLE, lon: DOUBLE>>" {
		t.Errorf("schema %s", got)
	}
}
