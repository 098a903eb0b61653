-- mv: the materialized view's query run directly on the bronze table's Parquet files.
COPY (
  SELECT shop, count(*) AS n, sum(amount) AS total FROM read_parquet([${files}]) GROUP BY shop
) TO '${out}/by_shop.parquet' (FORMAT parquet);
