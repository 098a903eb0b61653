package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"tributary/delta"
	"tributary/sqlengine"
)

// column is one compared column and the type both sides are cast to before comparing, so that
// DECIMAL(18,2) and DECIMAL(38,2) sums, say, print alike.
type column struct {
	name, typ string
}

// tableFiles returns the absolute paths of the data files of a Delta table's latest snapshot,
// the rows of those files their deletion vectors delete (0-based physical positions, ascending,
// by path; nil when no file has a DV) and their total size.
func tableFiles(dir string) ([]string, map[string][]int64, int64, error) {
	t := delta.New(dir)
	snap, err := t.Snapshot(-1)
	if err != nil {
		return nil, nil, 0, err
	}
	var files []string
	var deleted map[string][]int64
	var size int64
	for _, f := range snap.Files {
		p, err := url.PathUnescape(f.Path)
		if err != nil {
			return nil, nil, 0, err
		}
		name := filepath.Join(dir, p)
		files = append(files, name)
		size += f.Size
		if f.DeletionVector == nil {
			continue
		}
		rows, err := t.ReadDeletionVector(f.DeletionVector)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s: file %s: %w", dir, f.Path, err)
		}
		if deleted == nil {
			deleted = map[string][]int64{}
		}
		for _, r := range rows {
			deleted[name] = append(deleted[name], int64(r))
		}
	}
	return files, deleted, size, nil
}

// compareTables checks that the latest snapshot of the Delta table at tableDir (without the rows
// its deletion vectors delete) and the Parquet file parquet hold the same multiset of rows over
// cols: equal row counts and equal sums of row hashes; on a difference it lists up to five rows
// each side has that the other lacks.
func compareTables(ctx context.Context, tableDir, parquet string, cols []column) error {
	files, deleted, _, err := tableFiles(tableDir)
	if err != nil {
		return err
	}
	db, err := sqlengine.OpenDB("") // every connection in UTC, as the product's
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // one connection: the temporary table of deleted rows lives on it
	if err != nil {
		return err
	}
	defer conn.Close()
	if len(deleted) > 0 {
		for _, c := range cols {
			for _, r := range sqlengine.ReservedColumns {
				if strings.EqualFold(c.name, r) {
					return fmt.Errorf("%s has deletion vectors and a column %s, the name of a column read_parquet adds to find deleted rows", tableDir, c.name)
				}
			}
		}
		if err := sqlengine.LoadDeletedRows(ctx, conn, "deleted_rows", deleted); err != nil {
			return fmt.Errorf("loading the deleted rows of %s: %w", tableDir, err)
		}
	}
	sel := make([]string, len(cols))
	selP := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf(`CAST(%q AS %s) AS %q`, c.name, c.typ, c.name)
		selP[i] = fmt.Sprintf(`CAST(p.%q AS %s) AS %q`, c.name, c.typ, c.name)
	}
	relation := func(files []string, withDeleted bool) string {
		if len(files) == 0 {
			return fmt.Sprintf("(SELECT %s FROM (SELECT NULL AS dummy) WHERE false)", nullSelect(cols))
		}
		q := make([]string, len(files))
		for i, f := range files {
			q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
		}
		if withDeleted {
			return fmt.Sprintf("(SELECT %s FROM read_parquet([%s], filename = true, file_row_number = true) AS p ANTI JOIN deleted_rows AS d ON p.filename = d.file AND p.file_row_number = d.pos)",
				strings.Join(selP, ", "), strings.Join(q, ", "))
		}
		return fmt.Sprintf("(SELECT %s FROM read_parquet([%s]))", strings.Join(sel, ", "), strings.Join(q, ", "))
	}
	ours, base := relation(files, len(deleted) > 0), relation([]string{parquet}, false)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = fmt.Sprintf("%q", c.name)
	}
	digest := func(rel string) (int64, string, error) {
		var n int64
		var h string
		err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*), coalesce(sum(hash(%s)), 0)::VARCHAR FROM %s", strings.Join(names, ", "), rel)).Scan(&n, &h)
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
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT * FROM (FROM %s EXCEPT ALL FROM %s) LIMIT 5", side.a, side.b))
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
