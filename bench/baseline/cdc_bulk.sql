-- cdc-bulk: the latest change per key (window function); deletes leave no row.
COPY (
  SELECT id, name, amount, seq FROM (
    SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) AS rn
    FROM read_json('${landing}/*.json', format = 'newline_delimited',
      columns = {op: 'VARCHAR', id: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(10,2)', seq: 'BIGINT'})
  ) WHERE rn = 1 AND op <> 'D'
) TO '${out}/target.parquet' (FORMAT parquet);
