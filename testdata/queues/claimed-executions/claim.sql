-- The new execution row is the token, and the job row names it. Fencing reads the job row,
-- which a racing completion locks and rechecks: a statement's snapshot of claimed_executions
-- could miss an execution committed while it waited for the row, so old executions are not
-- deleted here, where a stale one could survive that way.
WITH candidate AS (
  SELECT id FROM jobs
  WHERE state = 'ready' OR (state = 'claimed' AND lease_until < clock_timestamp())
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
), execution AS (
  INSERT INTO claimed_executions (job_id, worker)
  SELECT id, $2::text FROM candidate
  RETURNING id, job_id
)
UPDATE jobs j SET state = 'claimed', lease_until = clock_timestamp() + $1::interval, execution = e.id
FROM execution e WHERE j.id = e.job_id
RETURNING j.id, e.id AS execution
