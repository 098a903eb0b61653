package flows

import (
	"fmt"
	"path/filepath"

	"tributary/delta"
	"tributary/spec"
)

// eachParquetRow reads a Parquet input file (as Spark, DuckDB or pyarrow write it; the types
// delta.Table.ReadFile reads) into rows of the declared schema, columns matched by name: a column
// the file lacks is NULL, file columns not in the schema are ignored. Row i is reported at "line"
// i+1. A file that cannot be read (not Parquet, truncated, a column of an incompatible type) is
// one malformed record: a row of NULLs with the reason (the mode applies), never a crash. The
// file is read whole into memory.
func eachParquetRow(src *spec.Source, filePath string, fn rowFunc) error {
	width := len(src.Schema.Fields)
	if src.RescuedDataColumn != "" {
		width++
	}
	rows, err := readParquetInput(filePath, src)
	if err != nil {
		row := make([]any, width)
		if src.RescuedDataColumn != "" {
			lr := newLineReader(src.Schema, src.RescuedDataColumn, filePath)
			row[len(src.Schema.Fields)] = lr.rescue(map[string]any{"_corrupt_record": err.Error()})
		}
		return fn(row, false, []badValue{{Line: 1, Reason: "the file cannot be read as Parquet (" + err.Error() + ")"}}, 1)
	}
	for i, r := range rows {
		if src.RescuedDataColumn != "" {
			r = append(r, nil)
		}
		if err := fn(r, true, nil, int64(i+1)); err != nil {
			return err
		}
	}
	return nil
}

// readParquetInput reads the file, turning a panic of the Parquet library on a damaged file into
// an error.
func readParquetInput(path string, src *spec.Source) (rows [][]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("the Parquet reader failed: %v", r)
		}
	}()
	return delta.New(filepath.Dir(path)).ReadFile(path, src.Schema)
}
