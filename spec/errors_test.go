package spec

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestPosString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		pos  Pos
		want string
	}{
		{"full", Pos{"pipeline.yaml", 12, 7}, "pipeline.yaml:12:7"},
		{"no column", Pos{"pipeline.yaml", 3, 0}, "pipeline.yaml:3"},
		{"whole file", Pos{File: "pipeline.yaml"}, "pipeline.yaml"},
	}
	for _, c := range cases {
		if got := c.pos.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  *Error
		want string
	}{
		{"everything", &Error{Pos{"pipeline.yaml", 12, 7}, "datasets[1].apply_changes.keys", "unknown column idd", "did you mean `id`?", ""},
			"pipeline.yaml:12:7: datasets[1].apply_changes.keys: unknown column idd (hint: did you mean `id`?)"},
		{"no hint", &Error{Pos{"p.yaml", 1, 1}, "name", "the pipeline has no name", "", ""}, "p.yaml:1:1: name: the pipeline has no name"},
		{"no path", &Error{Pos{"p.yaml", 4, 1}, "", "invalid YAML: x", "", ""}, "p.yaml:4:1: invalid YAML: x"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestErrorsSortedAndJoined(t *testing.T) {
	t.Parallel()
	b := &Error{Pos: Pos{"p.yaml", 3, 1}, Msg: "b"}
	a := &Error{Pos: Pos{"p.yaml", 2, 9}, Msg: "a"}
	c := &Error{Pos: Pos{"p.yaml", 3, 2}, Msg: "c"}
	es := sortErrors(Errors{c, b, a, &Error{Pos: Pos{"p.yaml", 3, 1}, Msg: "b"}})
	if want := "p.yaml:2:9: a\np.yaml:3:1: b\np.yaml:3:2: c"; es.Error() != want {
		t.Errorf("got:\n%s\nwant:\n%s", es.Error(), want)
	}
	var target *Error
	if !errors.As(error(es), &target) || target != a {
		t.Errorf("errors.As did not find the first problem")
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	keys := []string{"source", "keys", "sequence_by", "apply_as_deletes", "column_list", "except_column_list"}
	cases := []struct {
		name, word string
		cands      []string
		want       string
	}{
		{"one letter off", "sequnce_by", keys, "did you mean `sequence_by`?"},
		{"plural", "key", keys, "did you mean `keys`?"},
		{"case", "Source", keys, "did you mean `source`? names are case-sensitive"},
		{"case beats near", "ID", []string{"d", "id", "di"}, "did you mean `id`? names are case-sensitive"},
		{"two close", "colum_list", []string{"column_list", "colum_lists", "x"}, "did you mean `column_list` or `colum_lists`?"},
		{"nothing close lists all", "partition", []string{"a", "bb"}, "valid keys: a, bb"},
		{"no candidates", "x", nil, ""},
	}
	for _, c := range cases {
		if got := didYouMean(c.word, c.cands, "valid keys"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestErrorJSON checks the JSON form of `pipeline validate --json`: snake_case keys, the position
// flattened, every key present, and a round trip.
func TestErrorJSON(t *testing.T) {
	t.Parallel()
	es := Errors{
		{Pos{"p.yaml", 15, 18}, "datasets[1].apply_changes.keys[1]", "unknown column idd", "did you mean `id`?", ""},
		{Pos: Pos{File: "p.yaml"}, Msg: "cannot read the spec: no such file"},
	}
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"file":"p.yaml","line":15,"column":18,"path":"datasets[1].apply_changes.keys[1]","message":"unknown column idd","hint":"did you mean ` + "`id`" + `?"},` +
		`{"file":"p.yaml","line":0,"column":0,"path":"","message":"cannot read the spec: no such file","hint":""}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Errors
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || *back[0] != *es[0] || *back[1] != *es[1] {
		t.Errorf("round trip: %v", back)
	}
	if b, _ := json.Marshal(Pos{"p.yaml", 3, 7}); string(b) != `{"file":"p.yaml","line":3,"column":7}` {
		t.Errorf("Pos: %s", b)
	}
}
