-- scd2: every event is a version of its key, from its seq to the next event's seq (window
-- function over the whole history, so late events land in their place). The bench runs it once
-- over all the files ("scd2") and, for "scd2 (10 updates)", after each arrival over the files
-- landed so far, re-exporting the whole history each time.
COPY (
  SELECT id, name, amount, seq, seq AS __START_AT,
    lead(seq) OVER (PARTITION BY id ORDER BY seq) AS __END_AT
  FROM read_json('${landing}/*.json', format = 'newline_delimited',
    columns = {op: 'VARCHAR', id: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(10,2)', seq: 'BIGINT'})
) TO '${out}/target.parquet' (FORMAT parquet);
