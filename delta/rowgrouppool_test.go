package delta

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"tributary/schema"
)

// pooledGroups makes files of a table whose row groups hold every flat type the PLAIN fast path
// reads into a pool's arena (BIGINT, INT, DOUBLE, DECIMAL, DATE, TIMESTAMP, STRING), with NULLs
// at other positions in each column and group; it returns the table, its metadata and the files.
func pooledGroups(t *testing.T, files, groups, rowsPerGroup int) (*Table, Metadata, []Add) {
	t.Helper()
	s := mustDDL(t, "id BIGINT, n INT, score DOUBLE, amount DECIMAL(10,2), day DATE, at TIMESTAMP, name STRING")
	tbl := createTable(t, s)
	m := Metadata{Schema: s}
	var adds []Add
	id := 0
	for range files {
		dw, err := tbl.NewDataWriter(m)
		if err != nil {
			t.Fatal(err)
		}
		for range groups {
			rows := make([][]any, rowsPerGroup)
			for i := range rows {
				r := []any{int64(id), int32(id * 3), float64(id) / 4, schema.Decimal(id * 101), schema.Date(19000 + id), schema.Timestamp(int64(id) * 1_000_001), fmt.Sprintf("name-%d-%s", id, string(rune('a'+id%26)))}
				for c := 1; c < len(r); c++ {
					if (id+c)%(c+3) == 0 {
						r[c] = nil
					}
				}
				rows[i] = r
				id++
			}
			if err := dw.Write(rows); err != nil {
				t.Fatal(err)
			}
		}
		a, err := dw.Close()
		if err != nil || len(a) != 1 {
			t.Fatalf("adds %v, %v", a, err)
		}
		adds = append(adds, a[0])
	}
	return tbl, m, adds
}

// TestFileRowGroupsPooled: read through a pool of three groups, each group's rows equal
// FileRows' rows, and stay so while the caller holds them, two at a time, and the reader
// decodes the next groups into the pool's other memory; a group is released from another
// goroutine, twice, and its memory, values included, serves a later group (of the same file or
// the next: the pool outlives a file).
func TestFileRowGroupsPooled(t *testing.T) {
	t.Parallel()
	tbl, m, adds := pooledGroups(t, 2, 5, 40)
	var want [][]any
	for _, a := range adds {
		rows, err := tbl.FileRows(m, a)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	pool := NewRowGroupPool(3)
	type held struct {
		rows    [][]any
		copy    [][]any
		release func()
	}
	var holding []held
	var got [][]any
	firstValue := map[unsafe.Pointer]int{} // where each group's first id is boxed: its slab
	check := func(h held) {
		t.Helper()
		if !reflect.DeepEqual(h.rows, h.copy) {
			t.Fatalf("a held group's rows changed while the next groups were read:\n%v\nwas\n%v", h.rows, h.copy)
		}
	}
	groups := 0
	for _, a := range adds {
		if err := tbl.FileRowGroupsPooled(m, a, pool, func(rows [][]any, release func()) error {
			groups++
			c := make([][]any, len(rows))
			for i, r := range rows {
				c[i] = ownRow(r)
			}
			got = append(got, c...)
			firstValue[(*[2]unsafe.Pointer)(unsafe.Pointer(&rows[0][0]))[1]]++
			holding = append(holding, held{rows, c, release})
			if len(holding) == 2 {
				h := holding[0]
				check(h)
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { // released on another goroutine, twice
					defer wg.Done()
					h.release()
					h.release()
				}()
				wg.Wait()
				holding = holding[1:]
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range holding {
		check(h)
		h.release()
	}
	if groups != 10 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d groups; rows equal FileRows' %v", groups, reflect.DeepEqual(got, want))
	}
	if len(firstValue) > 3 {
		t.Errorf("the groups' first values lie in %d places: a pool of 3 groups does not reuse its values' memory", len(firstValue))
	}
}

// TestFileRowGroupsPooledStop: an error of fn, with groups held unreleased, ends the read with
// that error, as it is, without waiting for the pool; a group released later goes back to the
// pool, and the next read takes it.
func TestFileRowGroupsPooledStop(t *testing.T) {
	t.Parallel()
	tbl, m, adds := pooledGroups(t, 1, 6, 10)
	stop := errors.New("stop")
	pool := NewRowGroupPool(2)
	var releases []func()
	calls := 0
	err := tbl.FileRowGroupsPooled(m, adds[0], pool, func(rows [][]any, release func()) error {
		calls++
		releases = append(releases, release)
		if calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 {
		t.Fatalf("err %v after %d calls, want the error of fn after 2", err, calls)
	}
	for _, r := range releases {
		r()
	}
	n := 0
	if err := tbl.FileRowGroupsPooled(m, adds[0], pool, func(rows [][]any, release func()) error {
		n += len(rows)
		release()
		return nil
	}); err != nil || n != 60 {
		t.Fatalf("the read after: %d rows, %v; want 60", n, err)
	}
}

// ownRow copies r's values into memory of their own: the pool's groups box theirs in memory a
// later group reuses.
func ownRow(r []any) []any {
	out := make([]any, len(r))
	for i, v := range r {
		switch x := v.(type) {
		case int64:
			out[i] = x
		case int32:
			out[i] = x
		case float64:
			out[i] = x
		case schema.Decimal:
			out[i] = x
		case schema.Date:
			out[i] = x
		case schema.Timestamp:
			out[i] = x
		case string:
			out[i] = strings.Clone(x)
		default:
			out[i] = v
		}
	}
	return out
}

// TestWriteBatchesPanicPropagates: a panic while a batch of values is converted goes up the
// caller's stack (where the update recovers it) rather than leaving writeBatches waiting for the
// batch the panic took away.
func TestWriteBatchesPanicPropagates(t *testing.T) {
	t.Parallel()
	w := &rowGroupWriter{ncols: 1}
	got := make(chan any, 1)
	go func() {
		defer func() { got <- recover() }()
		w.writeBatches(nil, 10, func(b *valueBatch, start, end int) error { panic("converting") })
	}()
	select {
	case r := <-got:
		if r != "converting" {
			t.Fatalf("recovered %v, want the panic of convert", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writeBatches did not return or panic within 30 s of a panic of convert")
	}
}
