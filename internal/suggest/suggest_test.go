package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"sequnce", "sequence", 1}, {"héllo", "hello", 1},
		{"rwa", "raw", 1}, {"sequnece", "sequence", 1}, {"ab", "ba", 1}, {"abc", "ca", 3},
	}
	for _, c := range cases {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	if got := Closest("kys", []string{"keys", "kyss", "zzzz"}); !slices.Equal(got, []string{"keys", "kyss"}) {
		t.Errorf("Closest = %v", got)
	}
	if got := Closest("ARRY", []string{"BIGINT", "ARRAY", "MAP"}); !slices.Equal(got, []string{"ARRAY"}) {
		t.Errorf("Closest = %v", got)
	}
	if got := Closest("zzzzzz", []string{"keys"}); got != nil {
		t.Errorf("Closest = %v, want nil", got)
	}
}
