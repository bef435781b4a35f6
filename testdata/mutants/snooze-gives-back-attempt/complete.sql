WITH completed AS (
  UPDATE jobs SET state='done'
  WHERE id=$1 AND state='running' AND generation=$2
    AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM completed
