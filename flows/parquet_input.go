package flows

import (
	"fmt"
	"path/filepath"

	"tributary/delta"
	"tributary/spec"
)

// eachParquetRow reads a Parquet input file (as Spark, DuckDB or pyarrow write it; the types
// delta.Table.ReadFile reads, nested STRUCT, LIST and MAP columns included, legacy 2-level lists
// too) into rows of the declared schema, columns matched by name: a column
// the file lacks is NULL, file columns not in the schema are ignored. Row i is reported at "line"
// i+1. A file that cannot be read (not Parquet, truncated, a column of an incompatible type) is
// one malformed record: a row of NULLs with the reason (the mode applies), never a crash; when
// the damage is found in a later row group, the rows of the row groups before it are kept. The
// file is read one row group at a time, so at most two row groups are in memory at once (the
// next one is decoded while one is read).
func eachParquetRow(src *spec.Source, filePath string, fn rowFunc) error {
	width := len(src.Schema.Fields)
	if src.RescuedDataColumn != "" {
		width++
	}
	var line int64
	var fnErr error
	err := readParquetInput(filePath, src, func(rows [][]any) error {
		for i, r := range rows {
			if src.RescuedDataColumn != "" {
				r = append(r, nil)
			}
			line++
			if fnErr = fn(r, true, nil, line); fnErr != nil {
				return fnErr
			}
			rows[i] = nil // release the row as soon as it is handed on
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		row := make([]any, width)
		if src.RescuedDataColumn != "" {
			lr := newLineReader(src.Schema, src.RescuedDataColumn, filePath)
			row[len(src.Schema.Fields)] = lr.rescue(map[string]any{"_corrupt_record": err.Error()})
		}
		return fn(row, false, []badValue{{Line: line + 1, Reason: "the file cannot be read as Parquet (" + err.Error() + ")"}}, line+1)
	}
	return nil
}

// readParquetInput reads the file row group by row group, turning a panic of the Parquet
// library on a damaged file into an error (a panic of fn is not the reader's and goes on).
func readParquetInput(path string, src *spec.Source, fn func(rows [][]any) error) (err error) {
	inFn := false
	defer func() {
		if r := recover(); r != nil {
			if inFn {
				panic(r)
			}
			err = fmt.Errorf("the Parquet reader failed: %v", r)
		}
	}()
	return delta.New(filepath.Dir(path)).ReadFileGroups(path, src.Schema, func(rows [][]any) error {
		inFn = true
		err := fn(rows)
		inFn = false
		return err
	})
}
