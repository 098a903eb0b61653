package flows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// eachParquetRow reads a Parquet input file (as Spark, DuckDB or pyarrow write it; the types
// delta.Table.ReadFile reads, nested STRUCT, LIST and MAP columns included, legacy 2-level lists
// too) into rows of the declared schema, columns matched by name: a column the file lacks is
// NULL, file columns not in the schema are ignored. A column (or nested field) the file spells
// in another case is read into its column (fileSpelling), but with a rescued data column such a
// column goes there (caseVariants) and such a nested field is NULL. A file with none of the
// columns is reported to warn (parquetMismatch). Row i is reported at "line" i+1. A file that
// cannot be read (not Parquet, truncated, a column of an incompatible type) is one malformed
// record: a row of NULLs with the reason (the mode applies), never a crash; when
// the damage is found in a later row group, the rows of the row groups before it are kept. The
// file is read one row group at a time, so at most two row groups are in memory at once (the
// next one is decoded while one is read). A file that starts as Parquet does and has no footer
// yet (parquetUnfinished) is an *incompleteInput instead: still being written, most likely, it
// is read once complete.
func eachParquetRow(src *spec.Source, filePath string, fn rowFunc, warn func(msg string)) error {
	if reason := parquetUnfinished(filePath); reason != "" {
		return &incompleteInput{path: filePath, reason: reason}
	}
	width := len(src.Schema.Fields)
	if src.RescuedDataColumn != "" {
		width++
	}
	var variants []schema.Field
	fields, spelled := src.Schema.Fields, false                     // the columns as the file is read (fileSpelling)
	if fileCols, err := delta.ParquetSchema(filePath); err == nil { // else: a malformed record when read
		variants = caseVariants(src, fileCols)
		if msg := parquetMismatch(filePath, src.Schema, fileCols, src.RescuedDataColumn); msg != "" && warn != nil {
			warn(msg)
		}
		if src.RescuedDataColumn == "" {
			fields, spelled = fileSpelling(src.Schema.Fields, fileCols)
		} else if nested := nestedCaseVariants(src.Schema, fileCols); len(nested) > 0 && warn != nil {
			warn(fmt.Sprintf("%s: the Parquet file spells nested fields in another case than the schema (%s): with a rescued_data_column names are matched as written (a column so spelt is rescued), and a nested field is not rescued, so those fields are read as NULL; declare them as the file does",
				filePath, strings.Join(nested, ", ")))
		}
	}
	read := src
	narrow := narrowColumns(src.Schema)
	if len(variants) > 0 || len(narrow) > 0 || spelled {
		// Read the columns under the file's spellings; read the variants after the columns, and
		// move their values to the rescued data; read SMALLINT and TINYINT columns as INT, so
		// that a value beyond their range is one bad value (checkNarrow), not a file that cannot
		// be read.
		c := *src
		c.Schema = schema.Schema{Fields: append(append([]schema.Field(nil), fields...), variants...)}
		for _, j := range narrow {
			c.Schema.Fields[j].Type.Storage = ""
		}
		read = &c
	}
	n := len(src.Schema.Fields)
	var line int64
	var fnErr error
	err := readParquetInput(filePath, read, func(rows [][]any) error {
		for i, r := range rows {
			if len(variants) > 0 {
				r = rescueVariants(r, n, variants, filePath)
			} else if src.RescuedDataColumn != "" {
				r = append(r, nil)
			}
			line++
			var bad []badValue
			if len(narrow) > 0 {
				bad = checkNarrow(r, src, narrow, filePath, line)
			}
			if fnErr = fn(r, true, bad, line); fnErr != nil {
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
		// The reader's error names the file, which the WARN names already.
		why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "delta: "), "read "+filePath+": ")
		return fn(row, false, []badValue{{Line: line + 1, Reason: "the file cannot be read as Parquet (" + why + ")", RestOfFile: true}}, line+1)
	}
	return nil
}

// narrowColumns returns the columns of s stored narrower than INT (SMALLINT, TINYINT), by index.
func narrowColumns(s schema.Schema) []int {
	var out []int
	for j, f := range s.Fields {
		if f.Type.Kind == schema.Integer && f.Type.Storage != "" {
			out = append(out, j)
		}
	}
	return out
}

// checkNarrow sets to NULL each value of row r (a row of src, read with its narrow columns as
// INT) that its SMALLINT or TINYINT column cannot hold, as the other sources do with a value that
// does not fit (semantics.md "Ingestion"): it is kept in the rescued data column when the source
// has one, and returned as a bad value of the row's line.
func checkNarrow(r []any, src *spec.Source, narrow []int, filePath string, line int64) []badValue {
	var bad []badValue
	var rescued map[string]any
	for _, j := range narrow {
		f := src.Schema.Fields[j]
		v, ok := r[j].(int32)
		if !ok || fitsInteger(&f.Type, int64(v)) {
			continue
		}
		bad = append(bad, badValue{Line: line, Column: f.Name, Reason: fmt.Sprintf("%d does not fit %s", v, f.Type.DDL())})
		if src.RescuedDataColumn != "" {
			if rescued == nil {
				rescued = map[string]any{}
				if prev, ok := r[len(src.Schema.Fields)].(string); ok {
					json.Unmarshal([]byte(prev), &rescued)
				}
				rescued["_file_path"] = filePath
			}
			rescued[f.Name] = r[j]
		}
		r[j] = nil
	}
	if rescued != nil {
		b, _ := json.Marshal(rescued)
		r[len(src.Schema.Fields)] = string(b)
	}
	return bad
}

// caseVariants returns the columns fs of a Parquet file whose names differ only in case from a
// column of src's schema (whether the file has that column too or not): Delta column names are
// case-insensitive, so such a column is never a column of its own, and its values go to the
// source's rescued data column (semantics.md "Ingestion"). Without a rescued data column it
// returns none.
func caseVariants(src *spec.Source, fs schema.Schema) []schema.Field {
	if src.RescuedDataColumn == "" {
		return nil
	}
	var out []schema.Field
	for _, f := range fs.Fields {
		if src.Schema.Index(f.Name) >= 0 || strings.EqualFold(f.Name, src.RescuedDataColumn) {
			continue
		}
		if foldIndex(src.Schema, f.Name) >= 0 {
			out = append(out, f)
		}
	}
	return out
}

// fileSpelling returns the declared fields with each column, and each nested field (inside
// STRUCT columns, LIST elements and MAP values), that the Parquet file's columns fileCols lack
// but spell in another case renamed to the file's spelling, and whether it renamed any: read so,
// the file's values fill them, as Spark's Parquet reader matches names without regard to case
// under its default spark.sql.caseSensitive=false (ParquetReadSupport.clipParquetSchema). The
// fields themselves are returned when none is renamed; a copy otherwise. For a source without a
// rescued data column only: with one, a column so spelt is rescued (caseVariants).
func fileSpelling(declared []schema.Field, fileCols schema.Schema) ([]schema.Field, bool) {
	var out []schema.Field
	for k, df := range declared {
		i, name := fileCols.Index(df.Name), df.Name
		if i < 0 {
			if i = foldIndex(fileCols, df.Name); i < 0 {
				continue
			}
			name = fileCols.Fields[i].Name
		}
		t, nested := spellType(df.Type, fileCols.Fields[i].Type)
		if name == df.Name && !nested {
			continue
		}
		if out == nil {
			out = append([]schema.Field(nil), declared...)
		}
		out[k].Name, out[k].Type = name, t
	}
	if out == nil {
		return declared, false
	}
	return out, true
}

// spellType is fileSpelling for the fields nested in d, a declared type, that f, the file's type
// at its place, spells in another case.
func spellType(d, f schema.Type) (schema.Type, bool) {
	switch {
	case d.Kind == schema.StructKind && f.Kind == schema.StructKind && d.Struct != nil && f.Struct != nil:
		fs, ok := fileSpelling(d.Struct.Fields, *f.Struct)
		if ok {
			st := *d.Struct
			st.Fields = fs
			d.Struct = &st
		}
		return d, ok
	case d.Kind == schema.ArrayKind && f.Kind == schema.ArrayKind && d.Elem != nil && f.Elem != nil:
		e, ok := spellType(*d.Elem, *f.Elem)
		if ok {
			d.Elem = &e
		}
		return d, ok
	case d.Kind == schema.MapKind && f.Kind == schema.MapKind && d.Value != nil && f.Value != nil:
		v, ok := spellType(*d.Value, *f.Value)
		if ok {
			d.Value = &v
		}
		return d, ok
	}
	return d, false
}

// nestedCaseVariants returns the nested fields of a Parquet file's columns fileCols (inside
// STRUCT columns, LIST elements and MAP values) whose names differ only in case from a field the
// declared schema has at the same place and the file lacks ("info.name for info.Name"; an
// element's fields under "x[]", a value's under "x{}"): read by name, that declared field is
// NULL in every row. Top-level columns are caseVariants' and parquetMismatch's.
func nestedCaseVariants(declared, fileCols schema.Schema) []string {
	var out []string
	var walk func(d, f schema.Type, path string)
	walk = func(d, f schema.Type, path string) {
		switch {
		case d.Kind == schema.StructKind && f.Kind == schema.StructKind && d.Struct != nil && f.Struct != nil:
			for _, df := range d.Struct.Fields {
				if i := f.Struct.Index(df.Name); i >= 0 {
					walk(df.Type, f.Struct.Fields[i].Type, path+"."+df.Name)
				} else if i := foldIndex(*f.Struct, df.Name); i >= 0 {
					out = append(out, path+"."+f.Struct.Fields[i].Name+" for "+path+"."+df.Name)
				}
			}
		case d.Kind == schema.ArrayKind && f.Kind == schema.ArrayKind && d.Elem != nil && f.Elem != nil:
			walk(*d.Elem, *f.Elem, path+"[]")
		case d.Kind == schema.MapKind && f.Kind == schema.MapKind && d.Value != nil && f.Value != nil:
			walk(*d.Value, *f.Value, path+"{}")
		}
	}
	for _, df := range declared.Fields {
		if i := fileCols.Index(df.Name); i >= 0 {
			walk(df.Type, fileCols.Fields[i].Type, df.Name)
		}
	}
	return out
}

// parquetMismatch says that the Parquet file at filePath, whose columns are fileCols, has none of
// the columns of declared (read all the same, its rows NULL in them: a file of another table, or
// columns renamed), as a CSV header that names none of them is reported (headerMismatch), with
// the columns that differ only in case, which go to rescued (when set; without it they are read
// into their columns, fileSpelling); "" when the file has one of them, or no columns.
func parquetMismatch(filePath string, declared, fileCols schema.Schema, rescued string) string {
	if len(declared.Fields) == 0 || len(fileCols.Fields) == 0 {
		return ""
	}
	var cases []string
	for _, f := range declared.Fields {
		if fileCols.Index(f.Name) >= 0 {
			return ""
		}
		if i := foldIndex(fileCols, f.Name); i >= 0 {
			if rescued == "" {
				return ""
			}
			cases = append(cases, fileCols.Fields[i].Name+" for "+f.Name)
		}
	}
	msg := fmt.Sprintf("%s: the Parquet file has none of the schema's columns (%s): its columns are %s; every row of the file is read with NULL in those columns. ",
		filePath, strings.Join(declared.Names(), ", "), strings.Join(fileCols.Names(), ", "))
	if len(cases) > 0 {
		return msg + fmt.Sprintf("With a rescued_data_column columns are matched by name as written, and the file spells some in another case (%s): their values are kept in %s; declare them as the file does, or leave rescued_data_column unset to read them into their columns", strings.Join(cases, ", "), rescued)
	}
	return msg + "Check that the file belongs to this source, and the schema's column names"
}

// rescueVariants makes r, a row of the n columns of the schema followed by the values of
// variants, a row of the n columns followed by the rescued data: the variants' non-NULL values
// as JSON under their names, with the file's path (NULL when every value is NULL).
func rescueVariants(r []any, n int, variants []schema.Field, filePath string) []any {
	var m map[string]any
	for k, f := range variants {
		if v := r[n+k]; v != nil {
			if m == nil {
				m = map[string]any{"_file_path": filePath}
			}
			m[f.Name] = json.RawMessage(schema.AppendJSON(nil, f.Type, v))
		}
	}
	r = r[:n]
	if m == nil {
		return append(r, nil)
	}
	b, _ := json.Marshal(m)
	return append(r, string(b))
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

// parquetMagic starts and ends every Parquet file (Parquet format specification, "File
// Format"): a writer writes the first one at once and the last one after the footer, at the end.
var parquetMagic = []byte("PAR1")

// parquetUnfinished says why the file at path looks like a Parquet file still being written: it
// starts with "PAR1" (or with the start of it) and does not end with the "PAR1" after the
// footer. It returns "" for a file that ends as a Parquet file does, for one that does not start
// as one (not Parquet at all: a malformed record), and when the file cannot be read (reading it
// reports that).
func parquetUnfinished(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, len(parquetMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return ""
	}
	if n == 0 || !bytes.HasPrefix(parquetMagic, head[:n]) {
		return ""
	}
	if n < len(parquetMagic) {
		return fmt.Sprintf("the file holds %d bytes, the start of a Parquet file's first \"PAR1\": it is still being written, or truncated", n)
	}
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	tail := make([]byte, len(parquetMagic))
	if st.Size() < int64(2*len(parquetMagic)) {
		return fmt.Sprintf("the file holds %d bytes and has no Parquet footer (a Parquet file ends with \"PAR1\"): it is still being written, or truncated", st.Size())
	}
	if _, err := f.ReadAt(tail, st.Size()-int64(len(tail))); err != nil {
		return ""
	}
	if bytes.Equal(tail, parquetMagic) {
		return ""
	}
	return `the file starts as a Parquet file but has no footer yet (it does not end with "PAR1"): it is still being written, or truncated`
}
