package flows

import "tributary/delta"

// withoutPreimages drops the update_preimage rows of a change feed (column ct holds
// _change_type): a `source: {table: x, read: change_feed}` streams what x's rows became, so that
// an APPLY CHANGES flow reading it keeps a table in step with x (the post-image of an update is
// an upsert, a delete a delete).
func withoutPreimages(rows [][]any, ct int) [][]any {
	if ct < 0 {
		return rows
	}
	out := rows[:0]
	for _, r := range rows {
		if r[ct] != delta.ChangeUpdatePreimage {
			out = append(out, r)
		}
	}
	return out
}
