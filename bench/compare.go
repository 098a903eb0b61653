package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"tributary/delta"
)

// column is one compared column and the type both sides are cast to before comparing, so that
// DECIMAL(18,2) and DECIMAL(38,2) sums, say, print alike.
type column struct {
	name, typ string
}

// tableFiles returns the absolute paths of the data files of a Delta table's latest snapshot and
// their total size.
func tableFiles(dir string) ([]string, int64, error) {
	snap, err := delta.New(dir).Snapshot(-1)
	if err != nil {
		return nil, 0, err
	}
	var files []string
	var size int64
	for _, f := range snap.Files {
		if f.DeletionVector != nil {
			return nil, 0, fmt.Errorf("%s: file %s has a deletion vector; the comparison reads files as they are", dir, f.Path)
		}
		p, err := url.PathUnescape(f.Path)
		if err != nil {
			return nil, 0, err
		}
		files = append(files, filepath.Join(dir, p))
		size += f.Size
	}
	return files, size, nil
}

// compareTables checks that the latest snapshot of the Delta table at tableDir and the Parquet
// file parquet hold the same multiset of rows over cols: equal row counts and equal sums of row
// hashes; on a difference it lists up to five rows each side has that the other lacks.
func compareTables(ctx context.Context, tableDir, parquet string, cols []column) error {
	files, _, err := tableFiles(tableDir)
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf(`CAST(%q AS %s) AS %q`, c.name, c.typ, c.name)
	}
	relation := func(files []string) string {
		if len(files) == 0 {
			return fmt.Sprintf("(SELECT %s FROM (SELECT NULL AS dummy) WHERE false)", nullSelect(cols))
		}
		q := make([]string, len(files))
		for i, f := range files {
			q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
		}
		return fmt.Sprintf("(SELECT %s FROM read_parquet([%s]))", strings.Join(sel, ", "), strings.Join(q, ", "))
	}
	ours, base := relation(files), relation([]string{parquet})
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = fmt.Sprintf("%q", c.name)
	}
	digest := func(rel string) (int64, string, error) {
		var n int64
		var h string
		err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*), coalesce(sum(hash(%s)), 0)::VARCHAR FROM %s", strings.Join(names, ", "), rel)).Scan(&n, &h)
		return n, h, err
	}
	on, oh, err := digest(ours)
	if err != nil {
		return fmt.Errorf("reading our table: %w", err)
	}
	bn, bh, err := digest(base)
	if err != nil {
		return fmt.Errorf("reading the baseline's Parquet: %w", err)
	}
	if on == bn && oh == bh {
		return nil
	}
	errs := []error{fmt.Errorf("ours has %d rows, the baseline %d", on, bn)}
	for _, side := range []struct{ name, a, b string }{{"only ours", ours, base}, {"only the baseline", base, ours}} {
		rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT * FROM (FROM %s EXCEPT ALL FROM %s) LIMIT 5", side.a, side.b))
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			errs = append(errs, fmt.Errorf("%s: %v", side.name, vals))
		}
		rows.Close()
	}
	return errors.Join(errs...)
}

// nullSelect is a select list of typed NULLs named as cols (the shape of an empty table).
func nullSelect(cols []column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = fmt.Sprintf("CAST(NULL AS %s) AS %q", c.typ, c.name)
	}
	return strings.Join(s, ", ")
}
