package flows

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"tributary/schema"
)

// TestEachJSONLineOrder parses lines in parallel batches and hands them on in line order, with
// blank lines skipped but counted, malformed lines reported in place, and fn's error stopping
// the read.
func TestEachJSONLineOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := schema.Schema{Fields: []schema.Field{{Name: "id", Type: schema.Type{Kind: schema.Long}, Nullable: true}}}
	var text strings.Builder
	const n = 3*jsonLineBatch + 17
	for i := range n {
		switch {
		case i == 700:
			text.WriteString("\n") // a blank line: no row
		case i == 1000:
			text.WriteString("{broken\n")
		default:
			fmt.Fprintf(&text, "{\"id\": %d}\r\n", i)
		}
	}
	var got []string
	err := eachJSONLine(newLineReader(s, "", "f.json"), strings.NewReader(text.String()), func(row []any, parsed bool, bad []badValue, lineNo int64) error {
		got = append(got, fmt.Sprintf("%d:%v:%v:%d", lineNo, row[0], parsed, len(bad)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n-1 {
		t.Fatalf("%d rows, want %d", len(got), n-1)
	}
	for i, line := 0, 1; i < len(got); i, line = i+1, line+1 {
		if line == 701 {
			line++ // the blank line
		}
		want := fmt.Sprintf("%d:%d:true:0", line, line-1)
		if line == 1001 {
			want = "1001:<nil>:false:1"
		}
		if got[i] != want {
			t.Fatalf("row %d is %s, want %s", i, got[i], want)
		}
	}

	stop := errors.New("stop")
	calls := 0
	err = eachJSONLine(newLineReader(s, "", "f.json"), strings.NewReader(text.String()), func([]any, bool, []badValue, int64) error {
		calls++
		if calls == jsonLineBatch+3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != jsonLineBatch+3 {
		t.Errorf("after fn's error: err %v after %d calls; want the error after %d", err, calls, jsonLineBatch+3)
	}

	broken := io.MultiReader(strings.NewReader("{\"id\": 1}\n"), errReader{})
	calls = 0
	err = eachJSONLine(newLineReader(s, "", "f.json"), broken, func([]any, bool, []badValue, int64) error { calls++; return nil })
	if err == nil || err.Error() != "disk on fire" || calls != 1 {
		t.Errorf("read error: got %v after %d rows, want disk on fire after 1", err, calls)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }
