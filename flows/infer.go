package flows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"tributary/delta"
	"tributary/schema"
	"tributary/spec"
)

// Schema inference reads at most this many files, and stops after this many bytes of input, as
// Auto Loader samples the first files (cloudFiles.schemaInference.sampleSize.numFiles).
const (
	inferMaxFiles = 1000
	inferMaxBytes = 64 << 20
)

// resolveInferred fills the schema of a source whose schema is inferred (spec.Source.InferSchema)
// before its table is set up: an existing table's schema is reused as it is stored, never
// inferred again; otherwise the schema is inferred from the files present (an error when there
// are none). The dataset's schema is then the columns plus the rescued-data and metadata columns.
func resolveInferred(p *spec.Pipeline, d *spec.Dataset) error {
	src := d.Source
	if src == nil || !src.InferSchema || len(src.Schema.Fields) > 0 {
		return nil
	}
	snap, err := delta.New(TableDir(p.Storage, d.Name)).Snapshot(-1)
	switch {
	case err == nil:
		var cols []schema.Field
		for _, f := range snap.Metadata.Schema.Fields {
			if f.Name == src.RescuedDataColumn || (src.IncludeMetadata && (f.Name == spec.FilePathColumn || f.Name == spec.FileModificationTimeColumn)) {
				continue
			}
			cols = append(cols, f)
		}
		src.Schema = schema.Schema{Fields: cols}
		d.Schema = snap.Metadata.Schema
		return nil
	case !errors.Is(err, delta.ErrNoTable):
		return err
	}
	cols, err := inferSchema(src)
	if err != nil {
		return fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	src.Schema = cols
	out := schema.Schema{Fields: append([]schema.Field(nil), cols.Fields...)}
	if src.RescuedDataColumn != "" && cols.Index(src.RescuedDataColumn) < 0 {
		out.Fields = append(out.Fields, schema.Field{Name: src.RescuedDataColumn, Type: schema.Type{Kind: schema.String}, Nullable: true})
	}
	if src.IncludeMetadata {
		out.Fields = append(out.Fields, spec.MetadataColumns()...)
	}
	for i, c := range d.PartitionBy {
		// A declared schema's partition columns are checked by spec validation; an inferred one's
		// only now, before the table exists.
		j := out.Index(c)
		switch {
		case j < 0:
			return fmt.Errorf("dataset %s: partition_by[%d]: column %s is not among the columns inferred from %s (%s); hint: pin it with `schema_hints: \"%s STRING\"`, or partition by one of them",
				d.Name, i, c, src.Path, strings.Join(out.Names(), ", "), c)
		case out.Fields[j].Type.Nested():
			return fmt.Errorf("dataset %s: partition_by[%d]: column %s was inferred as %s, which cannot be a partition column; hint: partition by a column of a primitive type, or pin it with `schema_hints: \"%s STRING\"`",
				d.Name, i, c, out.Fields[j].Type.DDL(), c)
		}
	}
	d.Schema = out
	return nil
}

// inferSchema infers a source's columns from its files: typed for JSON and STRING for CSV unless
// the source's infer_column_types says otherwise (see inferTypes; STRING columns hold JSON nested
// values as their text); a typed column is the narrowest of INT (csv only), BIGINT, DOUBLE, BOOLEAN and STRING that holds every value
// seen, and for JSON objects STRUCT and arrays ARRAY, nested (see shape.typ). JSON columns are sorted by name; CSV columns are in header order (_c0, _c1, ...
// without a header). schema_hints then set the type of the columns they name (in any case), and add those not
// seen.
func inferSchema(src *spec.Source) (schema.Schema, error) {
	_, files, _, err := listInputs(src.Path)
	if err != nil {
		return schema.Schema{}, err
	}
	if len(files) == 0 {
		return schema.Schema{}, fmt.Errorf("cannot infer the schema: %s has no files yet; land a file first, or declare `schema:`", src.Path)
	}
	if src.Format == spec.FormatParquet {
		return inferParquet(src, files)
	}
	typed := inferTypes(src)
	inf := newInferrer()
	var budget int64 = inferMaxBytes
	for i, f := range files {
		if i >= inferMaxFiles || budget <= 0 {
			break
		}
		in, err := openInput(f.abs, readLines(src))
		if err != nil {
			return schema.Schema{}, err
		}
		text, why := sniffText(in, string(src.Format))
		if why != "" {
			in.Close() // not UTF-8 text: a malformed record when read, and no columns
			continue
		}
		r := io.Reader(&limitCounter{r: text, left: &budget})
		if src.Format == spec.FormatCSV {
			err = inf.csv(src, r)
		} else {
			err = inf.json(src, r)
		}
		in.Close()
		if err != nil && !damaged(err) {
			return schema.Schema{}, fmt.Errorf("inferring the schema from %s: %w", f.abs, err)
		}
	}
	if src.Format != spec.FormatCSV {
		sort.Strings(inf.order)
	}
	var out schema.Schema
	for _, name := range inf.order {
		t := schema.Type{Kind: schema.String}
		if typed {
			t = inf.typeOf(name, src.Format == spec.FormatCSV)
		}
		out.Fields = append(out.Fields, schema.Field{Name: name, Type: t, Nullable: true})
	}
	return withHints(src, out)
}

// inferTypes reports whether inference types the columns of src: the source's
// infer_column_types when it is set; otherwise true for JSON, whose values carry their kinds
// (issue "Bronze ingestion": "JSON value types"), and false for CSV, whose columns are STRING
// unless asked, as Auto Loader's cloudFiles.inferColumnTypes.
func inferTypes(src *spec.Source) bool {
	if v, ok := src.Options[spec.InferColumnTypes]; ok {
		return v == "true"
	}
	return src.Format != spec.FormatCSV
}

// withHints applies the source's schema_hints to inferred columns, once the columns whose names
// the source reserves (reservedColumns) are left out: the files' fields of those names are
// rescued when read, as fields not in the schema are.
func withHints(src *spec.Source, out schema.Schema) (schema.Schema, error) {
	reserved := reservedColumns(src)
	kept := out.Fields[:0]
	for _, f := range out.Fields {
		if !reserved[strings.ToLower(f.Name)] {
			kept = append(kept, f)
		}
	}
	out.Fields = kept
	for _, h := range src.SchemaHints.Fields {
		if i := foldIndex(out, h.Name); i >= 0 {
			out.Fields[i].Type = h.Type // the column keeps the files' spelling, which reads its values
		} else {
			out.Fields = append(out.Fields, h)
		}
	}
	if len(out.Fields) == 0 {
		return out, fmt.Errorf("cannot infer the schema: no column found in the files of %s; declare `schema:`", src.Path)
	}
	return out, nil
}

// reservedColumns returns the lower-case names of the columns a file source adds after the
// files' own: its rescued data column and, under include_metadata, _file_path and
// _file_modification_time. A field of one of these names in a file is never a column of its own
// (the table would have two columns of one name).
func reservedColumns(src *spec.Source) map[string]bool {
	reserved := map[string]bool{}
	if src.RescuedDataColumn != "" {
		reserved[strings.ToLower(src.RescuedDataColumn)] = true
	}
	if src.IncludeMetadata {
		for _, f := range spec.MetadataColumns() {
			reserved[strings.ToLower(f.Name)] = true
		}
	}
	return reserved
}

// foldIndex returns the index of the column of s named name without regard to case (as Delta
// column names and Spark's schema hints match), or -1.
func foldIndex(s schema.Schema, name string) int {
	for i, f := range s.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// limitCounter reads until the shared byte budget is spent.
type limitCounter struct {
	r    io.Reader
	left *int64
}

func (l *limitCounter) Read(p []byte) (int, error) {
	if *l.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > *l.left {
		p = p[:*l.left]
	}
	n, err := l.r.Read(p)
	*l.left -= int64(n)
	return n, err
}

// kindSet records which kinds of values a column held. bigDigits is the most digits of an
// integer literal seen that BIGINT does not hold (0 when none was).
type kindSet struct {
	int32, int64, double, boolean, str bool
	bigDigits                          int
}

// bigInteger records the integer literal s (digits, an optional sign) that BIGINT does not
// hold: as Spark's JSON and CSV inference type it, a DECIMAL(digits, 0) when it has at most 38
// digits (JsonInferSchema: Jackson's BIG_INTEGER is a DecimalType; CSVInferSchema.tryParseDecimal),
// a DOUBLE beyond. It reports false when s is no such literal.
func (k *kindSet) bigInteger(s string) bool {
	digits := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+"), "0")
	if digits == "" || strings.Trim(digits, "0123456789") != "" || len(digits) < 19 {
		return false
	}
	if len(digits) > 38 {
		k.double = true
	} else {
		k.bigDigits = max(k.bigDigits, len(digits))
	}
	return true
}

// widest returns the narrowest type that holds every value seen (STRING when none was). An
// integer beyond BIGINT makes the column a DECIMAL of scale 0 wide enough for it and for every
// BIGINT (20 digits) or INT (10) seen, as Spark widens LongType and DecimalType(p, 0); with a
// DOUBLE, a DOUBLE.
func (k kindSet) widest(allowInt bool) schema.Type {
	switch {
	case k.str, k.boolean && (k.int32 || k.int64 || k.double || k.bigDigits > 0):
		return schema.Type{Kind: schema.String}
	case k.boolean:
		return schema.Type{Kind: schema.Boolean}
	case k.double:
		return schema.Type{Kind: schema.Double}
	case k.bigDigits > 0:
		p := k.bigDigits
		if k.int64 || (k.int32 && !allowInt) {
			p = max(p, 20)
		}
		return schema.Type{Kind: schema.DecimalKind, Precision: p}
	case k.int64 || (k.int32 && !allowInt):
		return schema.Type{Kind: schema.Long}
	case k.int32:
		return schema.Type{Kind: schema.Integer}
	}
	return schema.Type{Kind: schema.String}
}

// inferrer collects the columns seen, in first-seen order, and the kinds of their values (for
// JSON, the shape of their values). A name that differs only in case from one seen before is not
// a column of its own (Delta column names are case-insensitive): its values are rescued when
// read (semantics.md "Ingestion").
type inferrer struct {
	order  []string
	kinds  map[string]kindSet
	shapes map[string]*shape
	lower  map[string]bool
	// known, when set, says whether the table has a column of a name (schema evolution): a CSV
	// header name it has keeps that name (headerNames).
	known func(name string) bool
}

func newInferrer() *inferrer {
	return &inferrer{kinds: map[string]kindSet{}, shapes: map[string]*shape{}}
}

// typeOf is the inferred type of column name: its JSON shape's type, else the widest of its kinds.
func (inf *inferrer) typeOf(name string, allowInt bool) schema.Type {
	if sh := inf.shapes[name]; sh != nil {
		return sh.typ()
	}
	return inf.kinds[name].widest(allowInt)
}

// shape is what the JSON values at one place (a column, a struct field, the elements of an
// array) were: the primitive kinds seen, and the shapes of the objects and arrays seen.
type shape struct {
	kinds  kindSet
	fields map[string]*shape // the objects' fields, nil when no object was seen
	elem   *shape            // the arrays' elements, nil when no array was seen
}

// add folds one decoded JSON value (numbers as json.Number) into the shape.
func (sh *shape) add(v any) {
	switch x := v.(type) {
	case nil:
	case bool:
		sh.kinds.boolean = true
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			sh.kinds.int64 = true
		} else if !sh.kinds.bigInteger(string(x)) {
			sh.kinds.double = true
		}
	case string:
		sh.kinds.str = true
	case map[string]any:
		if sh.fields == nil {
			sh.fields = map[string]*shape{}
		}
		for k, fv := range x {
			f := sh.fields[k]
			if f == nil {
				f = &shape{}
				sh.fields[k] = f
			}
			f.add(fv)
		}
	case []any:
		if sh.elem == nil {
			sh.elem = &shape{}
		}
		for _, e := range x {
			sh.elem.add(e)
		}
	default:
		sh.kinds.str = true
	}
}

// typ is the type that holds every value of the shape, as Spark's JSON schema inference
// (JsonInferSchema) merges types: primitives widen as kindSet.widest says; objects give a STRUCT
// of every field seen in any of them, sorted by name as Spark sorts inferred fields; arrays an
// ARRAY of their elements' type (STRING when no element was ever seen, as for `[]`); values of
// incompatible kinds (an object and a number, an array and an object, ...), objects with no
// field, and objects with two fields whose names differ only in case give STRING, their JSON text.
func (sh *shape) typ() schema.Type {
	prim := sh.kinds != kindSet{}
	switch {
	case sh.fields != nil && !prim && sh.elem == nil:
		if len(sh.fields) == 0 {
			break
		}
		names := make([]string, 0, len(sh.fields))
		for n := range sh.fields {
			names = append(names, n)
		}
		sort.Strings(names)
		lower := make(map[string]bool, len(names))
		for _, n := range names {
			if lower[strings.ToLower(n)] {
				// Fields differing only in case cannot both be fields (Delta names are
				// case-insensitive): the column keeps the objects whole, as JSON text.
				return schema.Type{Kind: schema.String}
			}
			lower[strings.ToLower(n)] = true
		}
		var st schema.Schema
		for _, n := range names {
			st.Fields = append(st.Fields, schema.Field{Name: n, Type: sh.fields[n].typ(), Nullable: true})
		}
		return schema.Type{Kind: schema.StructKind, Struct: &st}
	case sh.elem != nil && !prim && sh.fields == nil:
		return schema.ArrayOf(sh.elem.typ())
	case sh.fields == nil && sh.elem == nil:
		return sh.kinds.widest(false)
	}
	return schema.Type{Kind: schema.String}
}

// column records name; it reports whether name is a column (not a case variant of one). An
// empty name (a JSON key "") is no column, which no Delta table may have: its values are rescued
// when read.
func (inf *inferrer) column(name string) bool {
	if name == "" {
		return false
	}
	if _, ok := inf.kinds[name]; ok {
		return true
	}
	if inf.lower == nil {
		inf.lower = map[string]bool{}
	}
	if inf.lower[strings.ToLower(name)] {
		return false
	}
	inf.lower[strings.ToLower(name)] = true
	inf.kinds[name] = kindSet{}
	inf.order = append(inf.order, name)
	return true
}

// text records a CSV value: its kind as Spark's CSV inference tries them (INT, BIGINT, an integer
// beyond BIGINT as DECIMAL, DOUBLE, BOOLEAN, else STRING). As there, white space around the value
// leaves it no integer or BOOLEAN (Java's parsers take none) but may make it a DOUBLE
// (Double.parseDouble trims it).
func (inf *inferrer) text(name, v string) {
	k := inf.kinds[name]
	if _, err := strconv.ParseInt(v, 10, 32); err == nil {
		k.int32 = true
	} else if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		k.int64 = true
	} else if k.bigInteger(v) {
	} else if _, err := strconv.ParseFloat(strings.TrimFunc(v, isCSVSpace), 64); err == nil {
		k.double = true
	} else if lv := strings.ToLower(v); lv == "true" || lv == "false" {
		k.boolean = true
	} else {
		k.str = true
	}
	inf.kinds[name] = k
}

func (inf *inferrer) csv(src *spec.Source, in io.Reader) error {
	cfg := csvConfigOf(src.Options)
	cr := newCSVReader(cfg, in)
	var names []string
	first := true
	for {
		fields, _, malformed, err := cr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		cfg.trimFields(fields)
		if first && cfg.header {
			first = false
			for _, name := range headerNames(fields, cfg.nullValue, inf.known) {
				names = append(names, name)
				inf.column(name)
			}
			continue
		}
		first = false
		if malformed != "" {
			continue
		}
		for i, f := range fields {
			if i >= len(names) {
				if cfg.header {
					break // fields past the header are not columns
				}
				names = append(names, "_c"+strconv.Itoa(i))
				inf.column(names[i])
			}
			if _, isColumn := inf.kinds[names[i]]; !isColumn || f.text == "" || f.text == cfg.nullValue {
				continue
			}
			inf.text(names[i], f.text)
		}
	}
}

func (inf *inferrer) json(src *spec.Source, in io.Reader) error {
	record := func(raw []byte) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			// A non-numeric number token (NaN, Infinity) is a DOUBLE, as Spark's JsonInferSchema
			// infers Jackson's VALUE_NUMBER_FLOAT of NumberType DOUBLE.
			v, _ := decodeJSONText(string(raw))
			if obj, _ = v.(map[string]any); obj == nil {
				return // not an object: a malformed record when read
			}
		} else if moreText(string(raw), dec) {
			return // not an object: a malformed record when read
		}
		names := make([]string, 0, len(obj))
		for name := range obj {
			names = append(names, name)
		}
		sort.Strings(names) // of two case variants in one record, the first by name is the column
		for _, name := range names {
			v := obj[name]
			if !inf.column(name) {
				continue
			}
			sh := inf.shapes[name]
			if sh == nil {
				sh = &shape{}
				inf.shapes[name] = sh
			}
			sh.add(v)
		}
	}
	if src.Options[spec.JSONMultiline] == "true" {
		return eachJSONValue(newLineReader(schema.Schema{}, "", ""), in, func([]any, bool, []badValue, int64) error { return nil }, record)
	}
	return eachLine(in, func(line []byte, _ int64) error {
		if elems, ok := arrayElements(string(line)); ok {
			for _, e := range elems {
				record(e) // a line holding an array of objects: a record of each
			}
			return nil
		}
		record(line)
		return nil
	})
}

// evolveSchema applies the source's schema_evolution_mode to the columns that the batch's files
// have and the schema does not (names match without regard to case, as Spark's do):
// failOnNewColumns fails naming the first file and column; addNewColumns adds them after the
// source's columns (typed as inference types them, schema_hints applying), updates the
// dataset's schema and meta, and reports true so that the batch's commit carries the new
// metadata (rows already in the table read NULL there).
// refresh is the command failOnNewColumns's error advises (newColumnError).
// rescue and none need nothing here: the readers rescue or ignore unknown fields.
func evolveSchema(d *spec.Dataset, todo []inputFile, meta *delta.Metadata, refresh string) (bool, error) {
	src := d.Source
	mode := src.SchemaEvolutionMode
	if mode != spec.EvolutionAddNewColumns && mode != spec.EvolutionFailOnNewColumns {
		return false, nil
	}
	known := reservedColumns(src) // by lower-case name
	for _, f := range d.Schema.Fields {
		known[strings.ToLower(f.Name)] = true
	}
	if src.Format == spec.FormatParquet {
		return evolveParquet(d, todo, meta, known, refresh)
	}
	typed := inferTypes(src)
	inf := newInferrer()
	inf.known = func(name string) bool { return known[strings.ToLower(name)] }
	var added []string
	for _, f := range todo {
		in, err := openInput(f.abs, readLines(src))
		if err != nil {
			return false, err
		}
		text, why := sniffText(in, string(src.Format))
		if why != "" {
			in.Close() // not UTF-8 text: a malformed record when read, and no columns
			continue
		}
		budget := int64(1 << 62)
		r := &limitCounter{r: text, left: &budget}
		seen := len(inf.order)
		if src.Format == spec.FormatCSV {
			err = inf.csv(src, r)
		} else {
			err = inf.json(src, r)
		}
		in.Close()
		if err != nil && !damaged(err) {
			return false, fmt.Errorf("reading %s for new columns: %w", f.abs, err)
		}
		fresh := append([]string(nil), inf.order[seen:]...)
		if src.Format != spec.FormatCSV {
			sort.Strings(fresh)
		}
		for _, name := range fresh {
			if known[strings.ToLower(name)] {
				continue // a known column, or a case variant of one: rescued when read
			}
			if mode == spec.EvolutionFailOnNewColumns {
				return false, newColumnError(d, f.abs, name, refresh)
			}
			known[strings.ToLower(name)] = true
			added = append(added, name)
		}
	}
	if len(added) == 0 {
		return false, nil
	}
	cols := append([]schema.Field(nil), src.Schema.Fields...)
	for _, name := range added {
		t := schema.Type{Kind: schema.String}
		if typed {
			t = inf.typeOf(name, src.Format == spec.FormatCSV)
		}
		if i := foldIndex(src.SchemaHints, name); i >= 0 {
			t = src.SchemaHints.Fields[i].Type
		}
		cols = append(cols, schema.Field{Name: name, Type: t, Nullable: true})
	}
	setColumns(d, cols, meta)
	return true, nil
}

// setColumns makes cols the source's columns and rebuilds the dataset's schema (and meta's).
func setColumns(d *spec.Dataset, cols []schema.Field, meta *delta.Metadata) {
	src := d.Source
	src.Schema = schema.Schema{Fields: cols}
	out := schema.Schema{Fields: append([]schema.Field(nil), cols...)}
	if src.RescuedDataColumn != "" {
		out.Fields = append(out.Fields, schema.Field{Name: src.RescuedDataColumn, Type: schema.Type{Kind: schema.String}, Nullable: true})
	}
	if src.IncludeMetadata {
		out.Fields = append(out.Fields, spec.MetadataColumns()...)
	}
	d.Schema = out
	meta.Schema = out
}

// inferParquet takes the columns of the Parquet files, in the first file's order, then the new
// columns of later files; a column keeps the type of the file it was first seen in. A file whose
// schema cannot be read is skipped (it is a malformed record when read).
func inferParquet(src *spec.Source, files []inputFile) (schema.Schema, error) {
	var out schema.Schema
	lower := map[string]bool{}
	for i, f := range files {
		if i >= inferMaxFiles {
			break
		}
		fs, err := delta.ParquetSchema(f.abs)
		if err != nil {
			continue
		}
		for _, c := range fs.Fields {
			if !lower[strings.ToLower(c.Name)] {
				lower[strings.ToLower(c.Name)] = true
				out.Fields = append(out.Fields, c)
			}
		}
	}
	return withHints(src, out)
}

// newColumnError is the error of schema_evolution_mode failOnNewColumns: file has column name,
// which the schema of dataset d (a streaming table, or a view over files that another dataset
// reads) does not have; refresh is the command that rebuilds the table that holds d's rows (d's
// own, or that of the dataset reading view d), RefreshHint. With an inferred schema there is no
// `schema:` to add the column to, and the full refresh alone is the fix.
func newColumnError(d *spec.Dataset, file, name, refresh string) error {
	if d.Source.InferSchema {
		// No `schema:` to add it to: a full refresh infers the schema again, from this file too.
		return fmt.Errorf("%s has column %s, which the schema of %s does not have (schema_evolution_mode: failOnNewColumns); the schema of %s is inferred: run %s to infer it again from the files, which then gives it the column, or choose another schema_evolution_mode", file, name, d.Name, d.Name, refresh)
	}
	return fmt.Errorf("%s has column %s, which the schema of %s does not have (schema_evolution_mode: failOnNewColumns); add it to the schema of %s and run %s, or choose another schema_evolution_mode", file, name, d.Name, d.Name, refresh)
}

// evolveParquet is evolveSchema for Parquet files: their own schemas say which columns they have.
func evolveParquet(d *spec.Dataset, todo []inputFile, meta *delta.Metadata, known map[string]bool, refresh string) (bool, error) {
	src := d.Source
	var added []schema.Field
	for _, f := range todo {
		fs, err := delta.ParquetSchema(f.abs)
		if err != nil {
			continue // a malformed record when read
		}
		for _, c := range fs.Fields {
			if known[strings.ToLower(c.Name)] {
				continue
			}
			if src.SchemaEvolutionMode == spec.EvolutionFailOnNewColumns {
				return false, newColumnError(d, f.abs, c.Name, refresh)
			}
			known[strings.ToLower(c.Name)] = true
			if i := foldIndex(src.SchemaHints, c.Name); i >= 0 {
				c.Type = src.SchemaHints.Fields[i].Type
			}
			added = append(added, c)
		}
	}
	if len(added) == 0 {
		return false, nil
	}
	setColumns(d, append(append([]schema.Field(nil), src.Schema.Fields...), added...), meta)
	return true, nil
}
