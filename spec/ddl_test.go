package spec

import (
	"strconv"
	"strings"
	"testing"
)

// TestParseColumns checks the column-by-column reading of a `schema:`: which columns stay known
// (a "?" type is unknown), which problems are reported (at which byte offset) and whether the
// list of names is complete.
func TestParseColumns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		ddl      string
		cols     string // name:TYPE, with ? for an unknown type
		problems string // offset:message-prefix, separated by " | "
		complete bool
	}{
		{"valid", "id BIGINT, amount DECIMAL(10,2)", "id:BIGINT amount:DECIMAL(10,2)", "", true},
		{"bad type keeps the others", "op STRING, id BIGINT, amount DECIMAL(40,2), seq BIGINT",
			"op:STRING id:BIGINT amount:? seq:BIGINT", "29:DECIMAL precision 40", true},
		{"every bad column", "a VOID, b INT, c VARCHAR(3), d", "a:? b:INT c:? d:?",
			"2:type VOID | 17:type VARCHAR(3) is not supported | 30:expected a type", true},
		{"missing comma", "id BIGINT v STRING, w INT", "id:BIGINT v:STRING w:INT", "10:expected ','", true},
		{"missing comma and a bad type after it", "id BIGINT v VOID", "id:BIGINT v:?", "10:expected ','", true},
		{"commas inside brackets and backticks", "`a,b` INT, s STRUCT<x: INT, y: INT>, m MAP<STRING,INTERVAL>, n INT",
			"a,b:INT s:STRUCT<x: INT, y: INT> m:? n:INT", "50:type INTERVAL", true},
		{"blank columns", ", a INT,, b INT,", "a:INT b:INT",
			"0:expected a column name before ',' | 8:expected a column name after ',' | 16:expected a column name after ','", true},
		{"repeat", "a INT, b INT, a STRING", "a:INT b:INT", `14:column "a" is declared twice`, true},
		{"no name", "a INT, (b) INT, c INT", "a:INT c:INT", "7:expected a column name", false},
		{"unclosed bracket", "id BIGINT, amount DECIMAL(10,2, seq BIGINT", "id:BIGINT amount:?", "30:expected ')'", false},
		{"unclosed backtick", "id BIGINT, `seq BIGINT", "id:BIGINT", "11:unclosed backtick", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, problems, complete := parseColumns(c.ddl)
			var cols []string
			for _, f := range s.Fields {
				typ := "?"
				if f.Type.Kind != 0 {
					typ = f.Type.DDL()
				}
				cols = append(cols, f.Name+":"+typ)
			}
			if got := strings.Join(cols, " "); got != c.cols {
				t.Errorf("columns %q, want %q", got, c.cols)
			}
			want := []string{}
			if c.problems != "" {
				want = strings.Split(c.problems, " | ")
			}
			if len(problems) != len(want) {
				t.Fatalf("problems %v, want %q", problems, want)
			}
			for i, p := range problems {
				off, msg, _ := strings.Cut(want[i], ":")
				if !strings.HasPrefix(p.Msg, msg) || strconv.Itoa(p.Offset) != off {
					t.Errorf("problem %d = %d:%s, want %s:%s...", i, p.Offset, p.Msg, off, msg)
				}
			}
			if complete != c.complete {
				t.Errorf("complete = %v, want %v", complete, c.complete)
			}
		})
	}
}
