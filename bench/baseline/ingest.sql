-- ingest: the JSON lines files, typed, written out as one Parquet file.
COPY (
  SELECT * FROM read_json('${landing}/*.json', format = 'newline_delimited',
    columns = {id: 'BIGINT', shop: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(10,2)', note: 'VARCHAR'})
) TO '${out}/sales.parquet' (FORMAT parquet);
