-- Only the execution the job row names completes it; its row goes with the completion.
WITH done AS (
  UPDATE jobs SET state = 'done'
  WHERE id = $1 AND state = 'claimed' AND execution = $2 AND lease_until > clock_timestamp()
  RETURNING id
), gone AS (
  DELETE FROM claimed_executions c USING done WHERE c.id = $2 AND c.job_id = done.id
) SELECT count(*) FROM done
