-- Bug: the completion releases the job instead of deleting it: it reports the job done, and
-- the job comes back, ready to run again.
WITH released AS (
  UPDATE jobs SET state = 'ready', lease_until = NULL
  WHERE id = $1 AND state = 'running' AND generation = $2
    AND lease_until > clock_timestamp()
  RETURNING id
) SELECT count(*) FROM released
