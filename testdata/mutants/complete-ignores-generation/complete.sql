WITH completed AS (
  UPDATE jobs SET state='done'
  WHERE id=$1 AND state='running' AND $2::bigint IS NOT NULL
    AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM completed
