package update

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printQuality writes the data-quality table that ends `pipeline run`'s summary: one row per
// expectation of each flow that checked rows in this update (dataset, expectation, action,
// passed and failed rows), flows in order; nothing when no flow checked an expectation.
func printQuality(w io.Writer, res *Result, order []string) {
	var rows [][]any
	for _, name := range order {
		fr := res.Flows[name]
		if fr == nil {
			continue
		}
		for _, e := range fr.Metrics.Quality.Expectations {
			dataset := e.Dataset
			if dataset != name {
				// A view over files' expectation, checked by this reader on the rows it read.
				dataset += " (read by " + name + ")"
			}
			rows = append(rows, []any{dataset, e.Name, e.Action(), e.PassedRecords, e.FailedRecords})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "data quality:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  dataset\texpectation\taction\tpassed\tfailed")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\n", r...)
	}
	tw.Flush()
}
