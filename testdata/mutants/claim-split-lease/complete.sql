-- The second transaction of this session's last claim comes first; a job whose lease was never
-- set cannot be completed.
WITH second_half AS (
  UPDATE jobs SET taker=NULL WHERE taker=pg_backend_pid() AND id<>$1
), completed AS (
  UPDATE jobs SET state='done', taker=NULL
  WHERE id=$1 AND state='running' AND generation=$2
    AND lease_until>clock_timestamp() AND NOT lease_lost(taker, taker_app)
  RETURNING id
) SELECT count(*) FROM completed
