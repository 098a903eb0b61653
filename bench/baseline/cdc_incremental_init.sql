-- cdc-incremental, set-up (not timed): the initial table in a DuckDB database file, exported.
ATTACH '${db}' AS st;
CREATE TABLE st.target AS
  SELECT id, name, amount, seq
  FROM read_json('${file}', format = 'newline_delimited',
    columns = {op: 'VARCHAR', id: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(10,2)', seq: 'BIGINT'});
COPY st.target TO '${out}/target.parquet' (FORMAT parquet);
