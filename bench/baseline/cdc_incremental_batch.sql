-- cdc-incremental, one batch: the latest change per key of the batch merged into the table, then
-- the whole table re-exported, as a user without a lake format must.
ATTACH '${db}' AS st;
MERGE INTO st.target AS t
USING (
  SELECT * FROM read_json('${file}', format = 'newline_delimited',
    columns = {op: 'VARCHAR', id: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(10,2)', seq: 'BIGINT'})
  QUALIFY row_number() OVER (PARTITION BY id ORDER BY seq DESC) = 1
) AS c
ON t.id = c.id
WHEN MATCHED AND c.op = 'D' AND c.seq > t.seq THEN DELETE
WHEN MATCHED AND c.seq > t.seq THEN UPDATE SET name = c.name, amount = c.amount, seq = c.seq
WHEN NOT MATCHED AND c.op <> 'D' THEN INSERT (id, name, amount, seq) VALUES (c.id, c.name, c.amount, c.seq);
COPY st.target TO '${out}/target.parquet' (FORMAT parquet);
