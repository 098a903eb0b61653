package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// The generators write JSON lines files deterministically: every one seeds its own generator.

// jsonlWriter writes one JSON lines file and counts its bytes.
type jsonlWriter struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
}

func createJSONL(path string) (*jsonlWriter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &jsonlWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (j *jsonlWriter) close() (int64, error) {
	if err := j.w.Flush(); err != nil {
		j.f.Close()
		return 0, err
	}
	st, err := j.f.Stat()
	if err != nil {
		j.f.Close()
		return 0, err
	}
	return st.Size(), j.f.Close()
}

// cents formats c hundredths as a DECIMAL(10,2) JSON number.
func cents(b []byte, c int64) []byte {
	b = strconv.AppendInt(b, c/100, 10)
	b = append(b, '.')
	if c%100 < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, c%100, 10)
}

// change writes one change event {"op","id","name","amount","seq"}.
func (j *jsonlWriter) change(op string, id, amount, seq int64) {
	b := j.buf[:0]
	b = append(b, `{"op":"`...)
	b = append(b, op...)
	b = append(b, `","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"name":"name-`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, seq%1000, 10)
	b = append(b, `","amount":`...)
	b = cents(b, amount)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, "}\n"...)
	j.buf = b
	j.w.Write(b)
}

// sale writes one sales row {"id","shop","name","amount","note"} of about 100 bytes.
func (j *jsonlWriter) sale(id, shop, amount int64) {
	b := j.buf[:0]
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"shop":`...)
	b = strconv.AppendInt(b, shop, 10)
	b = append(b, `,"name":"customer-`...)
	b = strconv.AppendInt(b, id%100_000, 10)
	b = append(b, `","amount":`...)
	b = cents(b, amount)
	b = append(b, `,"note":"order placed online, paid by card"}`...)
	b = append(b, '\n')
	j.buf = b
	j.w.Write(b)
}

// genSales writes rows sales rows into files of at most perFile rows under dir.
func genSales(dir string, rows, perFile int, seed uint64) (int64, error) {
	r := rand.New(rand.NewPCG(seed, 1))
	var total int64
	for start, file := 0, 0; start < rows; start, file = start+perFile, file+1 {
		j, err := createJSONL(filepath.Join(dir, fmt.Sprintf("part-%04d.json", file)))
		if err != nil {
			return 0, err
		}
		for i := start; i < min(rows, start+perFile); i++ {
			j.sale(int64(i), int64(r.IntN(1000)), r.Int64N(100_000)+1)
		}
		n, err := j.close()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// genChanges writes events change events over keys keys, seq 1..events in order, 5% deletes
// (when deletes is set), into files of at most perFile events; late moves that share of the
// events (0.05: 5%) one to three files later than their place, so they arrive after events of
// the same key with a higher seq.
func genChanges(dir string, events, keys, perFile int, deletes bool, late float64, seed uint64) (int64, error) {
	r := rand.New(rand.NewPCG(seed, 2))
	nfiles := max(1, (events+perFile-1)/perFile)
	ws := make([]*jsonlWriter, nfiles)
	for i := range ws {
		var err error
		if ws[i], err = createJSONL(filepath.Join(dir, fmt.Sprintf("changes-%04d.json", i))); err != nil {
			return 0, err
		}
	}
	for i := 0; i < events; i++ {
		seq := int64(i + 1)
		id := int64(r.IntN(keys))
		op := "U"
		if deletes && r.IntN(20) == 0 {
			op = "D"
		}
		amount := r.Int64N(1_000_000)
		file := i / perFile
		if late > 0 && r.Float64() < late {
			file = min(nfiles-1, file+1+r.IntN(3))
		}
		ws[file].change(op, id, amount, seq)
	}
	var total int64
	for _, w := range ws {
		n, err := w.close()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
