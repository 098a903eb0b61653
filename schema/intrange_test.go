package schema

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestIntRange: an INT column holds 32-bit values, SMALLINT 16-bit and TINYINT 8-bit (Delta
// PROTOCOL.md, "Primitive Types": integer, short, byte), and FromJSON refuses one past either end.
func TestIntRange(t *testing.T) {
	for _, c := range []struct {
		ddl    string
		lo, hi int64
	}{
		{"x INT", -2147483648, 2147483647},
		{"x SMALLINT", -32768, 32767},
		{"x TINYINT", -128, 127},
	} {
		s, err := ParseDDL(c.ddl)
		if err != nil {
			t.Fatal(err)
		}
		typ := s.Fields[0].Type
		if lo, hi := typ.IntRange(); lo != c.lo || hi != c.hi {
			t.Errorf("%s: IntRange() = [%d, %d], want [%d, %d]", c.ddl, lo, hi, c.lo, c.hi)
		}
		for _, n := range []int64{c.lo, c.hi} {
			if _, err := FromJSON(typ, json.Number(strconv.FormatInt(n, 10))); err != nil {
				t.Errorf("%s: %d refused: %v", c.ddl, n, err)
			}
		}
		for _, n := range []int64{c.lo - 1, c.hi + 1} {
			if _, err := FromJSON(typ, json.Number(strconv.FormatInt(n, 10))); err == nil {
				t.Errorf("%s: %d accepted", c.ddl, n)
			}
		}
	}
}
