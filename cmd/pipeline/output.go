package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"tributary/schema"
)

// appendCSVField appends one CSV field of a value that is not NULL (RFC 4180): in double quotes,
// each quote doubled, when it holds a comma, a quote or a line end or starts with white space,
// and, as Spark's CSV writer does, when it is the empty string, so that it reads apart from a
// NULL (an empty field with no quotes), as the CSV reader of a `source:` reads them.
func appendCSVField(buf []byte, field string) []byte {
	r, _ := utf8.DecodeRuneInString(field)
	quote := field == "" || strings.ContainsAny(field, ",\"\r\n") || unicode.IsSpace(r)
	if !quote {
		return append(buf, field...)
	}
	buf = append(buf, '"')
	buf = append(buf, strings.ReplaceAll(field, `"`, `""`)...)
	return append(buf, '"')
}

// writeRows prints rows of s in one of the formats of spec.md §2: jsonl (one JSON object a line,
// keys in column order), csv (a header line, NULL as an empty field, an empty string as "") or
// table (aligned columns for people, NULL as "NULL", BINARY as Spark's show prints it,
// "[01 02 FF]": schema.Show); a DOUBLE or FLOAT in every format as Spark prints one, Java's
// Double.toString (2.0, 1.0E20: schema.AppendOutputJSON, schema.OutputText).
func writeRows(w io.Writer, format string, s schema.Schema, rows [][]any) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	switch format {
	case "jsonl":
		var buf []byte
		for _, r := range rows {
			buf = append(buf[:0], '{')
			for i, f := range s.Fields {
				if i > 0 {
					buf = append(buf, ", "...)
				}
				buf = strconv.AppendQuote(buf, f.Name)
				buf = append(buf, ": "...)
				buf = schema.AppendOutputJSON(buf, f.Type, r[i])
			}
			buf = append(buf, "}\n"...)
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
	case "csv":
		var buf []byte
		for i, n := range s.Names() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCSVField(buf, n)
		}
		buf = append(buf, '\n')
		for _, r := range rows {
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
			for i, f := range s.Fields {
				if i > 0 {
					buf = append(buf, ',')
				}
				if r[i] != nil {
					buf = appendCSVField(buf, schema.OutputText(f.Type, r[i]))
				}
			}
			buf = append(buf, '\n')
		}
		_, err := bw.Write(buf)
		return err
	case "table":
		cells := make([][]string, len(rows)+1)
		cells[0] = s.Names()
		widths := make([]int, len(s.Fields))
		for i, n := range cells[0] {
			widths[i] = runewidth.StringWidth(n)
		}
		for j, r := range rows {
			line := make([]string, len(s.Fields))
			for i, f := range s.Fields {
				line[i] = tableEscaper.Replace(schema.Show(f.Type, r[i]))
				widths[i] = max(widths[i], runewidth.StringWidth(line[i]))
			}
			cells[j+1] = line
		}
		for j, line := range cells {
			writeTableLine(bw, line, widths)
			if j == 0 {
				writeTableRule(bw, widths)
			}
		}
		fmt.Fprintf(bw, "(%d row(s))\n", len(rows))
	default:
		return usageError(fmt.Errorf("--format %q: use table, jsonl or csv", format))
	}
	return nil
}

// writeTableLine writes one line of a table: the cells separated by " | ", each but the last
// padded to its column's width (a cell wider than it is written whole).
func writeTableLine(bw *bufio.Writer, cells []string, widths []int) {
	for i, c := range cells {
		if i > 0 {
			bw.WriteString(" | ")
		}
		bw.WriteString(c)
		if i < len(cells)-1 {
			bw.WriteString(strings.Repeat(" ", max(widths[i]-runewidth.StringWidth(c), 0)))
		}
	}
	bw.WriteByte('\n')
}

// writeTableRule writes the line under a table's header: dashes the width of each column.
func writeTableRule(bw *bufio.Writer, widths []int) {
	for i, wd := range widths {
		if i > 0 {
			bw.WriteString("-+-")
		}
		bw.WriteString(strings.Repeat("-", wd))
	}
	bw.WriteByte('\n')
}

// tableEscaper writes a value on one line of a table: a line break as \n (\r, \t likewise) and a
// backslash as \\, so that a value holding a backslash and an n is told from one holding a line
// break.
var tableEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
