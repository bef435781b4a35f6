WITH cancelled AS (
  UPDATE jobs SET state='cancelled', lease_until=NULL
  WHERE id=$1 AND state='ready'
  RETURNING id
) SELECT count(*) FROM cancelled
