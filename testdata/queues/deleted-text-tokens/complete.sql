WITH deleted AS (
  DELETE FROM jobs
  WHERE id = $1 AND state = 'running' AND token = $2
    AND lease_until > clock_timestamp()
  RETURNING id
) SELECT count(*) FROM deleted
