package flows

import (
	"fmt"
	"strings"
	"testing"
)

func he(seq int64, v string) histEvent {
	if v == "" {
		return histEvent{seq: []any{seq}, delete: true}
	}
	parts := strings.Split(v, "/")
	row := make([]any, len(parts))
	for i, p := range parts {
		row[i] = p
	}
	return histEvent{seq: []any{seq}, row: row}
}

func render(vs []version) string {
	var b []string
	for _, v := range vs {
		end := "null"
		if v.end != nil {
			end = fmt.Sprint(v.end[0])
		}
		b = append(b, fmt.Sprintf("%v[%v,%s)", v.row, v.start[0], end))
	}
	return strings.Join(b, " ")
}

func TestFoldHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		events  []histEvent
		tracked []int
		want    string
	}{
		{"each tracked change opens a version", []histEvent{he(1, "a/x"), he(3, "b/x"), he(5, "c/x")}, []int{0, 1},
			"[a x][1,3) [b x][3,5) [c x][5,null)"},
		{"untracked change rewrites in place", []histEvent{he(1, "a/x"), he(3, "a/y"), he(5, "b/z")}, []int{0},
			"[a y][1,5) [b z][5,null)"},
		{"no change opens nothing", []histEvent{he(1, "a/x"), he(3, "a/x")}, []int{0, 1},
			"[a x][1,null)"},
		{"delete closes, re-insert opens", []histEvent{he(1, "a/x"), he(4, ""), he(6, "a/x")}, []int{0, 1},
			"[a x][1,4) [a x][6,null)"},
		{"delete of nothing", []histEvent{he(2, ""), he(3, "a/x")}, []int{0, 1},
			"[a x][3,null)"},
	}
	for _, c := range cases {
		if got := render(foldHistory(c.events, c.tracked, false)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestMergeHistoryLateEvents(t *testing.T) {
	t.Parallel()
	// In order: 1 a, 3 b, 5 c. The event at 3 arrives last: history must equal in-order arrival.
	hist := []histEvent{he(1, "a"), he(5, "c")}
	late := event{seq: []any{int64(3)}, row: []any{"b"}}
	hist, changed, ties := mergeHistory(hist, []*event{&late})
	if !changed || ties != 0 {
		t.Fatalf("changed=%v ties=%d", changed, ties)
	}
	if got, want := render(foldHistory(hist, []int{0}, false)), "[a][1,3) [b][3,5) [c][5,null)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// A re-delivered event changes nothing; a delete at a stored sequence wins the tie.
	dup := event{seq: []any{int64(3)}, row: []any{"b"}}
	if _, changed, ties = mergeHistory(hist, []*event{&dup}); changed || ties != 0 {
		t.Errorf("duplicate: changed=%v ties=%d", changed, ties)
	}
	del := event{seq: []any{int64(5)}, delete: true}
	hist, changed, ties = mergeHistory(hist, []*event{&del})
	if !changed || ties != 1 {
		t.Errorf("delete tie: changed=%v ties=%d", changed, ties)
	}
	if got, want := render(foldHistory(hist, []int{0}, false)), "[a][1,3) [b][3,5)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
