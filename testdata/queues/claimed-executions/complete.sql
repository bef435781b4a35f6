-- No row of its own execution, no completion: a reclaimed job's old execution row is gone.
WITH j AS (
  SELECT id FROM jobs
  WHERE id = $1 AND state = 'claimed' AND lease_until > clock_timestamp()
  FOR UPDATE
), mine AS (
  DELETE FROM claimed_executions c USING j
  WHERE c.id = $2 AND c.job_id = j.id
  RETURNING c.job_id
), done AS (
  UPDATE jobs SET state = 'done' FROM mine WHERE jobs.id = mine.job_id RETURNING jobs.id
) SELECT count(*) FROM done
