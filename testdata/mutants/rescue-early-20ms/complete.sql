WITH completed AS (
  UPDATE jobs SET state = 'completed'
  WHERE id = $1 AND state = 'running' AND attempt = $2
    AND attempted_at > clock_timestamp() - interval '1 second'
  RETURNING id
) SELECT count(*) FROM completed
