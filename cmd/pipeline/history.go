package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"tributary/delta"
	"tributary/schema"
)

func newHistoryCmd() *cobra.Command {
	var confs []string
	var format string
	var limit int
	cmd := &cobra.Command{
		Use:   "history SPEC DATASET",
		Short: "Print the versions of a dataset's table, newest first, like DESCRIBE HISTORY",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "jsonl" {
				return usageError(fmt.Errorf("--format %q: use table or jsonl", format))
			}
			if limit < 0 {
				return usageError(fmt.Errorf("--limit %d: give a number of versions, 0 (all) or more", limit))
			}
			p, err := loadStored(cmd.ErrOrStderr(), args[0], confs)
			if err != nil {
				return err
			}
			args[1] = datasetName(p, args[1])
			t, err := datasetTable(p, args[1])
			if err != nil {
				return err
			}
			noteOtherWriters(cmd.ErrOrStderr(), p, args[1])
			h, err := t.History(limit)
			if err != nil {
				return failure(err)
			}
			return writeHistory(cmd.OutOrStdout(), format, h)
		},
	}
	cmd.Flags().StringArrayVar(&confs, "conf", nil, "set a configuration value (key=value); repeatable")
	cmd.Flags().StringVar(&format, "format", "table", "table or jsonl")
	cmd.Flags().IntVar(&limit, "limit", 0, "print at most the `N` newest versions (0: all)")
	return cmd
}

// historySchema is the columns of `pipeline history`, those of DESCRIBE HISTORY that a local
// table has: the version, its commit time, the operation with its parameters and metrics, the
// version it read, whether it only appended, and the engine that wrote it.
var historySchema = schema.Schema{Fields: []schema.Field{
	{Name: "version", Type: schema.Type{Kind: schema.Long}},
	{Name: "timestamp", Type: schema.Type{Kind: schema.TimestampKind}},
	{Name: "operation", Type: schema.Type{Kind: schema.String}},
	{Name: "operationParameters", Type: schema.Type{Kind: schema.String}},
	{Name: "readVersion", Type: schema.Type{Kind: schema.Long}},
	{Name: "isBlindAppend", Type: schema.Type{Kind: schema.Boolean}},
	{Name: "operationMetrics", Type: schema.Type{Kind: schema.String}},
	{Name: "engineInfo", Type: schema.Type{Kind: schema.String}},
}}

// writeHistory prints the entries as a table (parameters and metrics as compact JSON) or as
// JSON lines with the keys of historySchema in order, parameters and metrics as JSON objects
// (values as strings, as Delta writes them) and the timestamp in the jsonl form of spec.md §2.
func writeHistory(w io.Writer, format string, h []delta.HistoryEntry) error {
	if format == "table" {
		rows := make([][]any, len(h))
		for i, e := range h {
			rows[i] = historyRow(e)
		}
		return writeRows(w, "table", historySchema, rows)
	}
	bw := bufio.NewWriter(w)
	for _, e := range h {
		r := historyRow(e)
		b := []byte{'{'}
		for i, f := range historySchema.Fields {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendQuote(b, f.Name)
			b = append(b, ": "...)
			if (f.Name == "operationParameters" || f.Name == "operationMetrics") && r[i] != nil {
				b = append(b, r[i].(string)...)
				continue
			}
			b = schema.AppendOutputJSON(b, f.Type, r[i])
		}
		b = append(b, "}\n"...)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func historyRow(e delta.HistoryEntry) []any {
	ci := e.Info
	params := map[string]string{}
	for k, v := range ci.OperationParameters {
		if s, ok := v.(string); ok {
			params[k] = s
		} else {
			j, _ := json.Marshal(v)
			params[k] = string(j)
		}
	}
	row := []any{e.Version, schema.Timestamp(e.Timestamp * 1000), ci.Operation, sortedJSON(params), nil, nil, sortedJSON(ci.OperationMetrics), nil}
	if ci.ReadVersion != nil {
		row[4] = *ci.ReadVersion
	}
	if ci.IsBlindAppend != nil {
		row[5] = *ci.IsBlindAppend
	}
	if ci.EngineInfo != "" {
		row[7] = ci.EngineInfo
	}
	return row
}

// sortedJSON writes a string map as a JSON object with its keys sorted.
func sortedJSON(m map[string]string) string {
	b := []byte{'{'}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(m[k])
		b = append(append(append(b, kj...), ':'), vj...)
	}
	return string(append(b, '}'))
}
