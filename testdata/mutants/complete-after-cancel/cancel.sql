WITH cancelled AS (
  UPDATE jobs SET state='cancelled'
  WHERE id=$1 AND state IN ('ready','running')
  RETURNING id
) SELECT count(*) FROM cancelled
