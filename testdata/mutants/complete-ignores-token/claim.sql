-- The job row is locked and updated first, so a racing claim or completion rechecks it; the
-- previous claim's execution row goes, and the new one is the token.
WITH candidate AS (
  SELECT id FROM jobs
  WHERE state = 'ready' OR (state = 'claimed' AND lease_until < clock_timestamp())
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
), job AS (
  UPDATE jobs j SET state = 'claimed', lease_until = clock_timestamp() + $1::interval
  FROM candidate WHERE j.id = candidate.id
  RETURNING j.id
), gone AS (
  DELETE FROM claimed_executions c USING job WHERE c.job_id = job.id
)
INSERT INTO claimed_executions (job_id, worker)
SELECT id, $2::text FROM job
RETURNING job_id AS id, id AS execution
